//===- DistributedTest.cpp - The job, its device and its backend ----------===//
//
// Part of fpc. The environment a job is read from, the device each process
// trains on, the backend --dist-backend names, and a process group of one
// process (fp_train_distributed.py runs jobs of two).
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/Distributed.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>

using namespace fp::rt;
using ::testing::HasSubstr;

namespace {

/// Sets environment variables for one test and restores them after it.
class ScopedEnvironment {
public:
  explicit ScopedEnvironment(const std::map<std::string, std::string> &values) {
    for (const char *name :
         {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}) {
      if (const char *old = std::getenv(name))
        saved[name] = old;
      ::unsetenv(name);
    }
    for (const auto &[name, value] : values)
      ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnvironment() {
    for (const char *name :
         {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"})
      ::unsetenv(name);
    for (const auto &[name, value] : saved)
      ::setenv(name.c_str(), value.c_str(), 1);
  }

private:
  std::map<std::string, std::string> saved;
};

/// A TCP port on the loopback interface that nothing listened on a moment
/// ago.
int64_t freePort() {
  int socket = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (socket < 0 ||
      ::bind(socket, reinterpret_cast<sockaddr *>(&address), length) != 0 ||
      ::getsockname(socket, reinterpret_cast<sockaddr *>(&address), &length) !=
          0) {
    if (socket >= 0)
      ::close(socket);
    return -1;
  }
  ::close(socket);
  return ntohs(address.sin_port);
}

template <typename Call> std::string invalidArgumentOf(Call &&call) {
  try {
    call();
  } catch (const std::invalid_argument &error) {
    return error.what();
  }
  return "(no std::invalid_argument thrown)";
}

} // namespace

TEST(Distributed, EnvironmentDefaultsToAJobOfOne) {
  ScopedEnvironment environment({});
  DistributedEnv env = distributedEnvFromEnvironment();
  EXPECT_EQ(env.worldSize, 1);
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.localRank, 0);
  EXPECT_FALSE(env.distributed());
}

TEST(Distributed, LocalRankDefaultsToTheRank) {
  ScopedEnvironment environment(
      {{"WORLD_SIZE", "4"}, {"RANK", "3"}, {"MASTER_PORT", "1234"}});
  DistributedEnv env = distributedEnvFromEnvironment();
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.localRank, 3);
  EXPECT_EQ(env.masterPort, 1234);
  EXPECT_TRUE(env.distributed());
}

TEST(Distributed, MalformedEnvironmentIsRefused) {
  {
    ScopedEnvironment environment({{"WORLD_SIZE", std::string("2")}});
    EXPECT_THAT(invalidArgumentOf(distributedEnvFromEnvironment),
                HasSubstr("RANK is not set"));
  }
  {
    ScopedEnvironment environment({{"WORLD_SIZE", std::string("two")}});
    EXPECT_THAT(invalidArgumentOf(distributedEnvFromEnvironment),
                HasSubstr("WORLD_SIZE=two is not an integer"));
  }
  {
    ScopedEnvironment environment({{"WORLD_SIZE", "2"}, {"RANK", "2"}});
    EXPECT_THAT(invalidArgumentOf(distributedEnvFromEnvironment),
                HasSubstr("RANK=2"));
  }
}

TEST(Distributed, AutoIsGlooOffCuda) {
  EXPECT_EQ(chooseBackend("auto", torch::kCPU), CollectiveBackend::Gloo);
  EXPECT_EQ(chooseBackend("gloo", torch::kCPU), CollectiveBackend::Gloo);
  EXPECT_STREQ(backendName(CollectiveBackend::Nccl), "nccl");
}

TEST(Distributed, NcclOffCudaAndUnknownBackendsAreRefused) {
  EXPECT_THAT(invalidArgumentOf([] { chooseBackend("nccl", torch::kCPU); }),
              HasSubstr("sums tensors on CUDA devices; this run trains on "
                        "cpu"));
  EXPECT_THAT(invalidArgumentOf([] { chooseBackend("mpi", torch::kCPU); }),
              HasSubstr("expected auto, gloo or nccl"));
}

TEST(Distributed, AutoIsNcclOnCudaWhereBuiltWithIt) {
  if (!torch::cuda::is_available())
    GTEST_SKIP() << "no CUDA device here";
  torch::Device cuda(torch::kCUDA, 0);
  if (backendAvailable(CollectiveBackend::Nccl)) {
    EXPECT_EQ(chooseBackend("auto", cuda), CollectiveBackend::Nccl);
    EXPECT_EQ(chooseBackend("nccl", cuda), CollectiveBackend::Nccl);
  } else {
    EXPECT_EQ(chooseBackend("auto", cuda), CollectiveBackend::Gloo);
    EXPECT_THAT(invalidArgumentOf([&] { chooseBackend("nccl", cuda); }),
                HasSubstr("built without NCCL"));
  }
}

TEST(Distributed, TrainingDeviceNamesAndRefusals) {
  EXPECT_EQ(trainingDevice("cpu", std::nullopt), torch::Device(torch::kCPU));
  EXPECT_EQ(trainingDevice("cpu", 3), torch::Device(torch::kCPU));
  EXPECT_THAT(invalidArgumentOf([] { trainingDevice("gpu", std::nullopt); }),
              HasSubstr("unknown device 'gpu'"));
  EXPECT_THAT(invalidArgumentOf([] { trainingDevice("meta", std::nullopt); }),
              HasSubstr("unknown device 'meta'"));
  if (!torch::cuda::is_available()) {
    EXPECT_THAT(invalidArgumentOf([] { trainingDevice("cuda", 0); }),
                HasSubstr("CUDA is not available"));
  }
}

TEST(Distributed, BareCudaIsTheLocalRanksDevice) {
  if (!torch::cuda::is_available())
    GTEST_SKIP() << "no CUDA device here";
  const auto visible = static_cast<int64_t>(torch::cuda::device_count());
  EXPECT_EQ(trainingDevice("cuda", std::nullopt), torch::Device(torch::kCUDA));
  EXPECT_EQ(
      trainingDevice("cuda", visible - 1),
      torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(visible - 1)));
  EXPECT_EQ(trainingDevice("cuda:0", visible), torch::Device(torch::kCUDA, 0));
  EXPECT_THAT(invalidArgumentOf([&] { trainingDevice("cuda", visible); }),
              HasSubstr("(LOCAL_RANK)"));
}

namespace {

/// Every collective of a group of one process leaves its operands as they
/// were; `device` holds the gradient.
void checkGroupOfOne(CollectiveBackend backend, torch::Device device) {
  DistributedEnv env;
  env.masterPort = freePort();
  ASSERT_GT(env.masterPort, 0);
  std::shared_ptr<Collectives> collectives =
      Collectives::connect(env, std::chrono::seconds(20), backend, device);
  EXPECT_EQ(collectives->worldSize(), 1);
  EXPECT_TRUE(collectives->isRoot());

  std::vector<double> values = {1.5, -2.0, 0.25};
  collectives->allReduceSum(values);
  EXPECT_EQ(values, (std::vector<double>{1.5, -2.0, 0.25}));
  collectives->allReduceMax(values);
  EXPECT_EQ(values, (std::vector<double>{1.5, -2.0, 0.25}));

  torch::Tensor gradient =
      torch::arange(6, torch::TensorOptions(torch::kFloat32).device(device));
  torch::Tensor expected = gradient.clone();
  collectives->startSum(gradient)->wait();
  EXPECT_TRUE(torch::equal(gradient.cpu(), expected.cpu()));
  collectives->broadcastFromRoot({gradient});
  EXPECT_TRUE(torch::equal(gradient.cpu(), expected.cpu()));
  collectives->barrier();
}

} // namespace

TEST(Distributed, AGlooGroupOfOneReducesToItself) {
  if (!backendAvailable(CollectiveBackend::Gloo))
    GTEST_SKIP() << "this build has no Gloo";
  checkGroupOfOne(CollectiveBackend::Gloo, torch::kCPU);
}

TEST(Distributed, AnNcclGroupOfOneReducesToItself) {
  if (!torch::cuda::is_available() ||
      !backendAvailable(CollectiveBackend::Nccl))
    GTEST_SKIP() << "no CUDA device, or this build has no NCCL";
  checkGroupOfOne(CollectiveBackend::Nccl, torch::Device(torch::kCUDA, 0));
}
