//===- Distributed.cpp - Data parallelism over c10d process groups -------===//
//
// Part of fpc. See Distributed.h.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/Distributed.h"

#include <fmt/format.h>

#if FP_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

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

PendingCollective::~PendingCollective() = default;

Collectives::~Collectives() = default;

#if FP_HAVE_GLOO

namespace {

class GlooCollectives final : public Collectives {
public:
  GlooCollectives(DistributedEnv env, std::chrono::milliseconds timeout)
      : Collectives(std::move(env)), timeout(timeout) {
    guard("meeting the other processes", [&] {
      store = c10::make_intrusive<c10d::TCPStore>(
          this->env.masterAddr, static_cast<uint16_t>(this->env.masterPort),
          static_cast<int>(this->env.worldSize), this->env.rank == 0, timeout,
          /*waitWorkers=*/true);
      auto options = c10d::ProcessGroupGloo::Options::create();
      options->timeout = timeout;
      options->devices.push_back(
          this->env.masterAddr == "127.0.0.1" ||
                  this->env.masterAddr == "localhost"
              ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
              : c10d::ProcessGroupGloo::createDefaultDevice());
      group = c10::make_intrusive<c10d::ProcessGroupGloo>(
          store, static_cast<int>(this->env.rank),
          static_cast<int>(this->env.worldSize), options);
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
        work->wait(timeout);
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

  void barrier() override {
    guard("waiting at a barrier", [&] { group->barrier()->wait(timeout); });
  }

private:
  class PendingSum final : public PendingCollective {
  public:
    PendingSum(GlooCollectives &owner, c10::intrusive_ptr<c10d::Work> work)
        : owner(owner), work(std::move(work)) {}
    void wait() override {
      owner.guard("summing the gradients", [&] { work->wait(owner.timeout); });
    }

  private:
    GlooCollectives &owner;
    c10::intrusive_ptr<c10d::Work> work;
  };

  void reduceScalars(std::vector<double> &values, c10d::ReduceOp op,
                     const char *what) {
    if (values.empty())
      return;
    guard(what, [&] {
      torch::Tensor tensor = torch::tensor(values, torch::kFloat64);
      std::vector<torch::Tensor> one = {tensor};
      c10d::AllreduceOptions options;
      options.reduceOp = op;
      group->allreduce(one, options)->wait(timeout);
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = tensor[static_cast<int64_t>(i)].item<double>();
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
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
};

} // namespace

bool fp::rt::distributedAvailable() { return true; }

std::shared_ptr<Collectives>
Collectives::connect(const DistributedEnv &env,
                     std::chrono::milliseconds timeout) {
  return std::make_shared<GlooCollectives>(env, timeout);
}

#else // !FP_HAVE_GLOO

bool fp::rt::distributedAvailable() { return false; }

std::shared_ptr<Collectives> Collectives::connect(const DistributedEnv &env,
                                                  std::chrono::milliseconds) {
  throw std::invalid_argument(fmt::format(
      "a job of {} processes needs LibTorch's Gloo process group, which this "
      "fp-train was built without (no gloo headers: Debian's libgloo-dev)",
      env.worldSize));
}

#endif // FP_HAVE_GLOO
