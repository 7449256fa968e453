//===- Distributed.h - Data parallelism over c10d ---------------*- C++ -*-===//
//
// Several fp-train processes train one model on shards of each batch
// (docs/training.md, "Several processes"). They find each other the way
// torchrun and SLURM launch jobs, through RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR and MASTER_PORT, meet at a c10d TCPStore served by rank 0,
// and talk through a c10d process group: PyTorch's own transports, Gloo
// (the one torch.distributed uses on CPUs) or NCCL (on CUDA devices, one
// device per local rank). Collectives is the little the trainer
// needs of it: the parameters broadcast from rank 0, gradients and
// statistics summed, a barrier; each failing with the rank and what to
// suspect rather than hanging (every collective has the run's timeout).
// GradientReducer.h sums the gradients with them, during the backward.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TRAIN_DISTRIBUTED_H
#define FP_RUNTIME_TRAIN_DISTRIBUTED_H

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp::rt {

/// Where this process stands in a job.
struct DistributedEnv {
  int64_t rank = 0;
  int64_t worldSize = 1;
  int64_t localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int64_t masterPort = 29500;

  bool distributed() const { return worldSize > 1; }
};

/// Reads the job from the environment: RANK, WORLD_SIZE, LOCAL_RANK
/// (default RANK), MASTER_ADDR (default 127.0.0.1), MASTER_PORT (default
/// 29500). Without WORLD_SIZE, a job of one. Throws std::invalid_argument
/// naming a variable that is malformed or inconsistent (RANK outside
/// [0, WORLD_SIZE), RANK missing from a job of several).
DistributedEnv distributedEnvFromEnvironment();

/// The transport of a job's collectives.
enum class CollectiveBackend { Gloo, Nccl };

const char *backendName(CollectiveBackend backend);

/// Whether this build has `backend` (LibTorch's c10d Gloo, or its NCCL,
/// which a CUDA LibTorch may have).
bool backendAvailable(CollectiveBackend backend);

/// The backend `name` ("auto", "gloo" or "nccl", as --dist-backend takes
/// it) means for a process training on `device`: auto is NCCL on a CUDA
/// device where this build has it, else Gloo. Throws std::invalid_argument
/// for a backend this build lacks or NCCL off a CUDA device.
CollectiveBackend chooseBackend(const std::string &name, torch::Device device);

/// The device a process trains on, from --device ("cpu", "cuda" or
/// "cuda:<index>"): in a job (`localRank` given) a bare "cuda" is the
/// local rank's device, as torchrun's convention is. Throws
/// std::invalid_argument for a malformed name, CUDA where there is none,
/// and an index past the visible devices (naming LOCAL_RANK where that
/// chose it).
torch::Device trainingDevice(const std::string &name,
                             std::optional<int64_t> localRank);

/// A collective failed: a peer died, hung past the timeout, or the job's
/// processes could not meet. The message names this process's rank.
class DistributedError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A collective in flight (Collectives::startSum).
class PendingCollective {
public:
  virtual ~PendingCollective();
  /// Waits for the collective to end. Throws DistributedError as the
  /// blocking collectives do.
  virtual void wait() = 0;
};

/// The collectives of one process of a job.
class Collectives {
public:
  /// Meets the other processes of `env` (rank 0 serves the store) and opens
  /// a process group of `backend` for tensors on `device` (NCCL: this
  /// process's CUDA device); every later collective, and the meeting
  /// itself, fails after `timeout`. Throws DistributedError, or
  /// std::invalid_argument where this build lacks the backend.
  static std::shared_ptr<Collectives> connect(const DistributedEnv &env,
                                              std::chrono::milliseconds timeout,
                                              CollectiveBackend backend,
                                              torch::Device device);
  virtual ~Collectives();

  int64_t rank() const { return env.rank; }
  int64_t localRank() const { return env.localRank; }
  int64_t worldSize() const { return env.worldSize; }
  bool isRoot() const { return env.rank == 0; }

  /// Overwrites `tensors` on every rank with rank 0's.
  virtual void broadcastFromRoot(const std::vector<torch::Tensor> &tensors) = 0;
  /// Starts summing `tensor` (contiguous) over the ranks, in place; it
  /// holds the sum once the returned collective has been waited for. Every
  /// rank must start the same sums, of the same sizes, in the same order.
  virtual std::unique_ptr<PendingCollective>
  startSum(const torch::Tensor &tensor) = 0;
  /// Sums, or takes the maximum of, a few numbers over the ranks.
  virtual void allReduceSum(std::vector<double> &values) = 0;
  virtual void allReduceMax(std::vector<double> &values) = 0;
  virtual void barrier() = 0;

protected:
  explicit Collectives(DistributedEnv env) : env(std::move(env)) {}
  DistributedEnv env;
};

} // namespace fp::rt

#endif // FP_RUNTIME_TRAIN_DISTRIBUTED_H
