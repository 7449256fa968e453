//===- Distributed.cpp - Data parallelism over c10d process groups -------===//
//
// Part of fpc. See Distributed.h.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/Distributed.h"

#include <fmt/format.h>

#ifndef FP_HAVE_GLOO
#define FP_HAVE_GLOO 0
#endif
#ifndef FP_HAVE_NCCL
#define FP_HAVE_NCCL 0
#endif

#if FP_HAVE_GLOO || FP_HAVE_NCCL
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#if FP_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if FP_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>

using namespace fp::rt;

namespace {

/// The integer in environment variable `name`, or `fallback` when unset.
int64_t integerVariable(const char *name, int64_t fallback, int64_t low,
                        int64_t high) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return fallback;
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < low || value > high)
    throw std::invalid_argument(
        fmt::format("environment variable {}={} is not an integer in [{}, {}]",
                    name, text, low, high));
  return value;
}

} // namespace

DistributedEnv fp::rt::distributedEnvFromEnvironment() {
  DistributedEnv env;
  constexpr int64_t most = std::numeric_limits<int32_t>::max();
  env.worldSize = integerVariable("WORLD_SIZE", 1, 1, most);
  if (env.worldSize > 1 && !std::getenv("RANK"))
    throw std::invalid_argument(fmt::format(
        "WORLD_SIZE is {} but RANK is not set; launch the processes with "
        "torchrun, srun or fp-train --nproc-per-node",
        env.worldSize));
  env.rank = integerVariable("RANK", 0, 0, env.worldSize - 1);
  env.localRank = integerVariable("LOCAL_RANK", env.rank, 0, most);
  if (const char *addr = std::getenv("MASTER_ADDR"); addr && *addr)
    env.masterAddr = addr;
  env.masterPort = integerVariable("MASTER_PORT", 29500, 1, 65535);
  return env;
}

const char *fp::rt::backendName(CollectiveBackend backend) {
  return backend == CollectiveBackend::Nccl ? "nccl" : "gloo";
}

bool fp::rt::backendAvailable(CollectiveBackend backend) {
  switch (backend) {
  case CollectiveBackend::Gloo:
    return FP_HAVE_GLOO != 0;
  case CollectiveBackend::Nccl:
    return FP_HAVE_NCCL != 0;
  }
  return false;
}

CollectiveBackend fp::rt::chooseBackend(const std::string &name,
                                        torch::Device device) {
  if (name == "auto")
    return device.is_cuda() && backendAvailable(CollectiveBackend::Nccl)
               ? CollectiveBackend::Nccl
               : CollectiveBackend::Gloo;
  if (name == "gloo")
    return CollectiveBackend::Gloo;
  if (name != "nccl")
    throw std::invalid_argument(
        fmt::format("--dist-backend {}: expected auto, gloo or nccl", name));
  if (!device.is_cuda())
    throw std::invalid_argument(fmt::format(
        "--dist-backend nccl sums tensors on CUDA devices; this run trains "
        "on {} (use --device cuda, or --dist-backend gloo)",
        device.str()));
  if (!backendAvailable(CollectiveBackend::Nccl))
    throw std::invalid_argument(
        "--dist-backend nccl: this fp-train was built without NCCL (its "
        "LibTorch has no CUDA, or no nccl.h was found); use --dist-backend "
        "gloo");
  return CollectiveBackend::Nccl;
}

torch::Device fp::rt::trainingDevice(const std::string &name,
                                     std::optional<int64_t> localRank) {
  std::optional<torch::Device> parsed;
  try {
    parsed = torch::Device(name);
  } catch (const c10::Error &) {
  }
  if (!parsed || !(parsed->is_cpu() || parsed->is_cuda()))
    throw std::invalid_argument(fmt::format(
        "unknown device '{}'; expected cpu, cuda or cuda:<index>", name));
  torch::Device device = *parsed;
  if (!device.is_cuda())
    return device;
  if (!torch::cuda::is_available())
    throw std::invalid_argument(fmt::format(
        "--device {}: CUDA is not available (this LibTorch has no CUDA "
        "support or no GPU is visible); use --device cpu",
        name));
  const auto visible = static_cast<int64_t>(torch::cuda::device_count());
  if (!device.has_index() && localRank) {
    if (*localRank >= visible)
      throw std::invalid_argument(fmt::format(
          "--device {} on local rank {} (LOCAL_RANK) needs CUDA device {}, "
          "but only {} are visible; start at most {} processes a machine",
          name, *localRank, *localRank, visible, visible));
    return {torch::kCUDA, static_cast<c10::DeviceIndex>(*localRank)};
  }
  if (device.has_index() && device.index() >= visible)
    throw std::invalid_argument(fmt::format(
        "--device {}: only {} CUDA device(s) visible", name, visible));
  return device;
}

PendingCollective::~PendingCollective() = default;

Collectives::~Collectives() = default;

#if FP_HAVE_GLOO || FP_HAVE_NCCL

namespace {

/// Collectives over a c10d process group of type `Group` (the backends share
/// their collectives' interface, whichever base class a LibTorch version
/// gives them). Numbers are reduced in a tensor on `scalarDevice`: the CPU
/// for Gloo, the process's device for NCCL. A collective's wait has
/// `waitTimeout`: the run's timeout for Gloo; none for NCCL, whose wait then
/// only orders the current stream after the collective (a host wait with a
/// timeout would poll), and whose own watchdog ends a collective that
/// outlives the group's timeout.
template <typename Group> class GroupCollectives final : public Collectives {
public:
  using MakeGroup = c10::intrusive_ptr<Group> (*)(
      const c10::intrusive_ptr<c10d::Store> &, const DistributedEnv &,
      std::chrono::milliseconds);

  GroupCollectives(DistributedEnv env, std::chrono::milliseconds timeout,
                   std::chrono::milliseconds waitTimeout,
                   torch::Device scalarDevice, MakeGroup makeGroup)
      : Collectives(std::move(env)), timeout(timeout), waitTimeout(waitTimeout),
        scalarDevice(scalarDevice) {
    guard("meeting the other processes", [&] {
      // The options form: LibTorch 2.6 and newer have no other.
      c10d::TCPStoreOptions options;
      options.port = static_cast<uint16_t>(this->env.masterPort);
      options.isServer = this->env.rank == 0;
      options.numWorkers = static_cast<size_t>(this->env.worldSize);
      options.waitWorkers = true;
      options.timeout = timeout;
      store =
          c10::make_intrusive<c10d::TCPStore>(this->env.masterAddr, options);
      group = makeGroup(store, this->env, timeout);
    });
  }

  void broadcastFromRoot(const std::vector<torch::Tensor> &tensors) override {
    guard("broadcasting the parameters", [&] {
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      for (const torch::Tensor &tensor : tensors) {
        std::vector<torch::Tensor> one = {tensor};
        c10d::BroadcastOptions options;
        options.rootRank = 0;
        works.push_back(group->broadcast(one, options));
      }
      for (auto &work : works)
        work->wait(waitTimeout);
    });
  }

  std::unique_ptr<PendingCollective>
  startSum(const torch::Tensor &tensor) override {
    c10::intrusive_ptr<c10d::Work> work;
    guard("summing the gradients", [&] {
      std::vector<torch::Tensor> one = {tensor};
      work = group->allreduce(one);
    });
    return std::make_unique<PendingSum>(*this, std::move(work));
  }

  void allReduceSum(std::vector<double> &values) override {
    reduceScalars(values, c10d::ReduceOp::SUM, "summing the step's statistics");
  }

  void allReduceMax(std::vector<double> &values) override {
    reduceScalars(values, c10d::ReduceOp::MAX, "agreeing on the step");
  }

  /// A sum of one number that every rank reads back: unlike the process
  /// groups' own barriers it needs no guess of NCCL's device.
  void barrier() override {
    std::vector<double> one = {1.0};
    reduceScalars(one, c10d::ReduceOp::SUM, "waiting at a barrier");
  }

private:
  class PendingSum final : public PendingCollective {
  public:
    PendingSum(GroupCollectives &owner, c10::intrusive_ptr<c10d::Work> work)
        : owner(owner), work(std::move(work)) {}
    void wait() override {
      owner.guard("summing the gradients",
                  [&] { work->wait(owner.waitTimeout); });
    }

  private:
    GroupCollectives &owner;
    c10::intrusive_ptr<c10d::Work> work;
  };

  void reduceScalars(std::vector<double> &values, const c10d::ReduceOp &op,
                     const char *what) {
    if (values.empty())
      return;
    guard(what, [&] {
      torch::Tensor tensor =
          torch::tensor(values, torch::kFloat64).to(scalarDevice);
      std::vector<torch::Tensor> one = {tensor};
      c10d::AllreduceOptions options;
      options.reduceOp = op;
      group->allreduce(one, options)->wait(waitTimeout);
      torch::Tensor host = tensor.cpu();
      std::copy_n(host.data_ptr<double>(), values.size(), values.begin());
    });
  }

  /// Runs `body`, turning a failure of the transport into a
  /// DistributedError that names this rank.
  template <typename Body> void guard(const char *what, Body &&body) {
    try {
      body();
    } catch (const c10::Error &error) {
      fail(what, error.what_without_backtrace());
    } catch (const std::exception &error) {
      fail(what, error.what());
    }
  }

  [[noreturn]] void fail(const char *what, const std::string &reason) {
    std::string first = reason.substr(0, reason.find('\n'));
    throw DistributedError(fmt::format(
        "rank {} of {}: {} failed: {}; another process of the job died or "
        "did not answer within --dist-timeout ({} s)",
        env.rank, env.worldSize, what, first,
        std::chrono::duration_cast<std::chrono::seconds>(timeout).count()));
  }

  std::chrono::milliseconds timeout;
  std::chrono::milliseconds waitTimeout;
  torch::Device scalarDevice;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Group> group;
};

#if FP_HAVE_GLOO
c10::intrusive_ptr<c10d::ProcessGroupGloo>
makeGlooGroup(const c10::intrusive_ptr<c10d::Store> &store,
              const DistributedEnv &env, std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->timeout = timeout;
  options->devices.push_back(
      env.masterAddr == "127.0.0.1" || env.masterAddr == "localhost"
          ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
          : c10d::ProcessGroupGloo::createDefaultDevice());
  return c10::make_intrusive<c10d::ProcessGroupGloo>(
      store, static_cast<int>(env.rank), static_cast<int>(env.worldSize),
      options);
}
#endif

#if FP_HAVE_NCCL
c10::intrusive_ptr<c10d::ProcessGroupNCCL>
makeNcclGroup(const c10::intrusive_ptr<c10d::Store> &store,
              const DistributedEnv &env, std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(
      store, static_cast<int>(env.rank), static_cast<int>(env.worldSize),
      options);
}
#endif

} // namespace

#endif // FP_HAVE_GLOO || FP_HAVE_NCCL

std::shared_ptr<Collectives>
Collectives::connect(const DistributedEnv &env,
                     std::chrono::milliseconds timeout,
                     CollectiveBackend backend, torch::Device device) {
#if FP_HAVE_NCCL
  if (backend == CollectiveBackend::Nccl)
    return std::make_shared<GroupCollectives<c10d::ProcessGroupNCCL>>(
        env, timeout, /*waitTimeout=*/std::chrono::milliseconds(0), device,
        &makeNcclGroup);
#endif
#if FP_HAVE_GLOO
  if (backend == CollectiveBackend::Gloo)
    return std::make_shared<GroupCollectives<c10d::ProcessGroupGloo>>(
        env, timeout, timeout, torch::Device(torch::kCPU), &makeGlooGroup);
#endif
  (void)timeout;
  (void)device;
  throw std::invalid_argument(fmt::format(
      "a job of {} process(es) over {} needs LibTorch's {} process group, "
      "which this fp-train was built without ({})",
      env.worldSize, backendName(backend),
      backend == CollectiveBackend::Nccl ? "NCCL" : "Gloo",
      backend == CollectiveBackend::Nccl
          ? "a CUDA LibTorch and nccl.h are needed"
          : "no gloo headers: Debian's libgloo-dev"));
}
