//===- HostEntryTest.cpp - Entry points of generated libraries -*- C++ -*-===//
//
// The schedule choice of fp/Runtime/Kernels/HostEntry.h: a CUDA call of a
// layer that holds a split schedule next to its fused one takes the split
// one exactly where the fused one would run its samples in chunks, and
// buffer_sizes, forward and backward of one call shape agree on it (the
// buffers they lay out and the functions they call); FP_CUDA_SCHEDULE forces
// one, and names a schedule the library lacks with a clear error. The
// layer's functions here record which of them ran; nothing touches a device.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Kernels/HostEntry.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

/// Which fake function ran last.
std::string ran;

void fusedForward(const fp_forward_args &, char *, const size_t *) {
  ran = "fused forward";
}
void splitForward(const fp_forward_args &, char *, const size_t *) {
  ran = "split forward";
}
void cpuForward(const fp_forward_args &, char *, const size_t *) {
  ran = "cpu forward";
}
void fusedBackward(const fp_backward_args &, char *, const size_t *) {
  ran = "fused backward";
}
void splitBackward(const fp_backward_args &, char *, const size_t *) {
  ran = "split backward";
}

/// The fake fused schedule runs samples in chunks below 64 samples.
int64_t fusedChunks(int64_t batch, int64_t length) {
  return batch < 64 ? std::max<int64_t>(1, length / 64) : 1;
}

// Per-token element counts that tell the schedules' buffers apart.
const fp::host::BufferSpec kFusedBuffers[] = {{10, true, true}};
const fp::host::BufferSpec kFusedSaved[] = {{3, true, true}};
const fp::host::BufferSpec kFusedBackward[] = {{20, true, true}};
const fp::host::BufferSpec kSplitBuffers[] = {{30, true, true}};
const fp::host::BufferSpec kSplitSaved[] = {{5, true, true}};
const fp::host::BufferSpec kSplitBackward[] = {{40, true, true}};

const fp::host::SplitSchedule kSplit = {kSplitBuffers,
                                        1,
                                        kSplitSaved,
                                        1,
                                        kSplitBackward,
                                        1,
                                        {&splitForward, nullptr, nullptr},
                                        {&splitBackward, nullptr, nullptr},
                                        {&fusedChunks, nullptr, nullptr}};

fp::host::LayerDescriptor layer(const fp::host::SplitSchedule *split) {
  return {"layer",
          0,
          kFusedBuffers,
          1,
          {&cpuForward, nullptr, nullptr},
          {&fusedForward, nullptr, nullptr},
          kFusedSaved,
          1,
          kFusedBackward,
          1,
          {},
          {&fusedBackward, nullptr, nullptr},
          "fused",
          split};
}

/// Sets FP_CUDA_SCHEDULE for one test and restores it after.
class ScheduleTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (const char *value = std::getenv("FP_CUDA_SCHEDULE"))
      saved = value;
    unsetenv("FP_CUDA_SCHEDULE");
    ran.clear();
  }
  void TearDown() override {
    if (saved)
      setenv("FP_CUDA_SCHEDULE", saved->c_str(), 1);
    else
      unsetenv("FP_CUDA_SCHEDULE");
  }
  std::optional<std::string> saved;
};

fp_buffer_sizes sizesOf(const fp::host::LayerDescriptor &descriptor,
                        fp_target target, int64_t batch, int64_t length) {
  fp_buffer_sizes sizes{};
  EXPECT_EQ(fp::host::bufferSizes(descriptor, target, FP_DTYPE_F32, batch,
                                  length, &sizes),
            FP_OK)
      << fp::host::lastError;
  return sizes;
}

/// Runs forward and backward of one shape; returns what each ran.
std::pair<std::string, std::string>
callBoth(const fp::host::LayerDescriptor &descriptor, fp_target target,
         int64_t batch, int64_t length) {
  fp_buffer_sizes sizes = sizesOf(descriptor, target, batch, length);
  std::vector<char> workspace(
      std::max(sizes.forward_workspace_bytes, sizes.backward_workspace_bytes));
  std::vector<char> saved(sizes.saved_bytes);
  float dummy = 0;
  fp_forward_args forward{};
  forward.struct_size = sizeof(forward);
  forward.target = target;
  forward.dtype = FP_DTYPE_F32;
  forward.batch = batch;
  forward.seq_len = length;
  forward.input = &dummy;
  forward.output = &dummy;
  forward.saved = saved.data();
  forward.workspace = workspace.data();
  forward.workspace_bytes = sizes.forward_workspace_bytes;
  EXPECT_EQ(fp::host::forward(&forward, descriptor), FP_OK)
      << fp::host::lastError;
  std::string forwardRan = ran;
  fp_backward_args backward{};
  backward.struct_size = sizeof(backward);
  backward.target = target;
  backward.dtype = FP_DTYPE_F32;
  backward.batch = batch;
  backward.seq_len = length;
  backward.input = &dummy;
  backward.saved = saved.data();
  backward.grad_output = &dummy;
  backward.grad_input = &dummy;
  backward.workspace = workspace.data();
  backward.workspace_bytes = sizes.backward_workspace_bytes;
  ran.clear();
  fp_status status = fp::host::backward(&backward, descriptor);
  return {forwardRan, status == FP_OK ? ran : fp::host::lastError};
}

TEST_F(ScheduleTest, CudaCallsTakeTheSplitScheduleWhereTheFusedOneChunks) {
  const fp::host::LayerDescriptor both = layer(&kSplit);
  // 16 samples of 2048 tokens: the fused schedule would run 32 chunks.
  EXPECT_STREQ(
      fp::host::scheduleName(both, FP_TARGET_CUDA, FP_DTYPE_F32, 16, 2048),
      "split");
  fp_buffer_sizes split = sizesOf(both, FP_TARGET_CUDA, 16, 2048);
  EXPECT_EQ(split.forward_workspace_bytes, 30u * 4 * 16 * 2048);
  EXPECT_EQ(split.saved_bytes, 5u * 4 * 16 * 2048);
  EXPECT_EQ(split.backward_workspace_bytes, 40u * 4 * 16 * 2048);
  EXPECT_EQ(callBoth(both, FP_TARGET_CUDA, 16, 2048),
            std::make_pair(std::string("split forward"),
                           std::string("split backward")));

  // 512 samples of 17 tokens fill the device: the fused schedule.
  EXPECT_STREQ(
      fp::host::scheduleName(both, FP_TARGET_CUDA, FP_DTYPE_F32, 512, 17),
      "fused");
  fp_buffer_sizes fused = sizesOf(both, FP_TARGET_CUDA, 512, 17);
  EXPECT_EQ(fused.forward_workspace_bytes, 10u * 4 * 512 * 17);
  EXPECT_EQ(fused.saved_bytes, 3u * 4 * 512 * 17);
  EXPECT_EQ(callBoth(both, FP_TARGET_CUDA, 512, 17),
            std::make_pair(std::string("fused forward"),
                           std::string("fused backward")));
  // Few samples of few tokens: one chunk each, so fused as well.
  EXPECT_STREQ(
      fp::host::scheduleName(both, FP_TARGET_CUDA, FP_DTYPE_F32, 4, 17),
      "fused");
}

TEST_F(ScheduleTest, TheCpuAndSingleScheduleLibrariesKeepTheirOwn) {
  const fp::host::LayerDescriptor both = layer(&kSplit);
  EXPECT_STREQ(
      fp::host::scheduleName(both, FP_TARGET_CPU, FP_DTYPE_F32, 16, 2048),
      "fused");
  fp_buffer_sizes cpu = sizesOf(both, FP_TARGET_CPU, 16, 2048);
  EXPECT_EQ(cpu.forward_workspace_bytes, 10u * 4 * 16 * 2048);
  EXPECT_EQ(callBoth(both, FP_TARGET_CPU, 16, 2048).first, "cpu forward");

  const fp::host::LayerDescriptor fusedOnly = layer(nullptr);
  EXPECT_STREQ(
      fp::host::scheduleName(fusedOnly, FP_TARGET_CUDA, FP_DTYPE_F32, 16, 2048),
      "fused");
  EXPECT_EQ(callBoth(fusedOnly, FP_TARGET_CUDA, 16, 2048),
            std::make_pair(std::string("fused forward"),
                           std::string("fused backward")));
}

/// A fused schedule whose device cannot be asked.
int64_t noDevice(int64_t, int64_t) {
  throw fp::host::DeviceError("no CUDA device");
}

TEST_F(ScheduleTest, BufferSizesWithoutADeviceFitEitherSchedule) {
  fp::host::SplitSchedule split = kSplit;
  split.fusedChunks = {&noDevice, nullptr, nullptr};
  const fp::host::LayerDescriptor both = layer(&split);
  // Fused: 10, 3, 20 elements per token; split: 30, 5, 40.
  fp_buffer_sizes sizes = sizesOf(both, FP_TARGET_CUDA, 2, 8);
  EXPECT_EQ(sizes.forward_workspace_bytes, 30u * 4 * 2 * 8);
  EXPECT_EQ(sizes.saved_bytes, 5u * 4 * 2 * 8);
  EXPECT_EQ(sizes.backward_workspace_bytes, 40u * 4 * 2 * 8);
  // A call needs the device, and says so.
  float dummy = 0;
  std::vector<char> workspace(sizes.forward_workspace_bytes);
  fp_forward_args forward{};
  forward.struct_size = sizeof(forward);
  forward.target = FP_TARGET_CUDA;
  forward.dtype = FP_DTYPE_F32;
  forward.batch = 2;
  forward.seq_len = 8;
  forward.input = &dummy;
  forward.output = &dummy;
  forward.workspace = workspace.data();
  forward.workspace_bytes = workspace.size();
  EXPECT_EQ(fp::host::forward(&forward, both), FP_ERROR_DEVICE);
  EXPECT_EQ(fp::host::lastError, "layer forward: no CUDA device");
  EXPECT_TRUE(ran.empty());
}

TEST_F(ScheduleTest, DeviceStatsAreForCudaCallsAlone) {
  const fp::host::LayerDescriptor both = layer(&kSplit);
  fp_buffer_sizes sizes = sizesOf(both, FP_TARGET_CPU, 2, 8);
  float dummy = 0;
  std::vector<char> workspace(sizes.forward_workspace_bytes);
  fp_device_stats device{};
  fp_forward_args forward{};
  forward.struct_size = sizeof(forward);
  forward.target = FP_TARGET_CPU;
  forward.dtype = FP_DTYPE_F32;
  forward.batch = 2;
  forward.seq_len = 8;
  forward.input = &dummy;
  forward.output = &dummy;
  forward.workspace = workspace.data();
  forward.workspace_bytes = workspace.size();
  forward.device_stats = &device;
  EXPECT_EQ(fp::host::forward(&forward, both), FP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fp::host::lastError,
            "layer forward: device_stats is set on a CPU call; a CPU call "
            "reports its statistics in stats");
  EXPECT_TRUE(ran.empty());
}

TEST_F(ScheduleTest, FpCudaScheduleForcesOne) {
  const fp::host::LayerDescriptor both = layer(&kSplit);
  setenv("FP_CUDA_SCHEDULE", "fused", 1);
  EXPECT_STREQ(
      fp::host::scheduleName(both, FP_TARGET_CUDA, FP_DTYPE_F32, 16, 2048),
      "fused");
  EXPECT_EQ(callBoth(both, FP_TARGET_CUDA, 16, 2048).first, "fused forward");
  setenv("FP_CUDA_SCHEDULE", "split", 1);
  EXPECT_STREQ(
      fp::host::scheduleName(both, FP_TARGET_CUDA, FP_DTYPE_F32, 512, 17),
      "split");
  EXPECT_EQ(callBoth(both, FP_TARGET_CUDA, 512, 17).first, "split forward");
  // The CPU has one schedule, whatever the variable says.
  EXPECT_STREQ(
      fp::host::scheduleName(both, FP_TARGET_CPU, FP_DTYPE_F32, 512, 17),
      "fused");
}

TEST_F(ScheduleTest, AScheduleTheLibraryLacksIsAClearError) {
  const fp::host::LayerDescriptor fusedOnly = layer(nullptr);
  setenv("FP_CUDA_SCHEDULE", "split", 1);
  fp_buffer_sizes sizes{};
  EXPECT_EQ(fp::host::bufferSizes(fusedOnly, FP_TARGET_CUDA, FP_DTYPE_F32, 16,
                                  2048, &sizes),
            FP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fp::host::lastError,
            "layer buffer_sizes: FP_CUDA_SCHEDULE=split, but this library "
            "holds only the fused schedule (fpc --no-split-schedule or "
            "--no-fuse)");
  EXPECT_EQ(
      fp::host::scheduleName(fusedOnly, FP_TARGET_CUDA, FP_DTYPE_F32, 16, 2048),
      nullptr);

  const fp::host::LayerDescriptor both = layer(&kSplit);
  setenv("FP_CUDA_SCHEDULE", "fastest", 1);
  float dummy = 0;
  fp_forward_args forward{};
  forward.struct_size = sizeof(forward);
  forward.target = FP_TARGET_CUDA;
  forward.dtype = FP_DTYPE_F32;
  forward.batch = 16;
  forward.seq_len = 2048;
  forward.input = &dummy;
  forward.output = &dummy;
  EXPECT_EQ(fp::host::forward(&forward, both), FP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fp::host::lastError,
            "layer forward: FP_CUDA_SCHEDULE=fastest: expected fused or split");
  EXPECT_TRUE(ran.empty());
}

/// A chunked forward that records what it was called with.
void cpuChunk(const fp_chunk_args &, char *, const size_t *) {
  ran = "cpu chunk";
}

const fp::host::BufferSpec kChunkBuffers[] = {{7, true, true}};
const fp::host::BufferSpec kChunkStates[] = {{4, true, false},
                                             {6, true, false}};
const fp::host::ChunkSchedule kChunk = {
    kChunkBuffers, 1, {&cpuChunk, nullptr, nullptr}, {}, 2, kChunkStates};

TEST_F(ScheduleTest, ChunkedForwardChecksItsStatesAndWorkspace) {
  fp::host::LayerDescriptor chunked = layer(nullptr);
  chunked.chunk = &kChunk;
  const fp_buffer_sizes sizes = sizesOf(chunked, FP_TARGET_CPU, 2, 3);
  EXPECT_EQ(sizes.chunk_workspace_bytes, 7u * 2 * 3 * sizeof(float));
  EXPECT_EQ(sizesOf(layer(nullptr), FP_TARGET_CPU, 2, 3).chunk_workspace_bytes,
            0u);

  std::vector<char> workspace(sizes.chunk_workspace_bytes);
  float dummy = 0, state0[8] = {}, state1[12] = {};
  const void *in[] = {state0, state1};
  void *out[] = {state0, state1};
  fp_chunk_args args{};
  args.struct_size = sizeof(args);
  args.target = FP_TARGET_CPU;
  args.dtype = FP_DTYPE_F32;
  args.batch = 2;
  args.seq_len = 3;
  args.input = &dummy;
  args.output = &dummy;
  args.num_states = 2;
  args.state_in = in;
  args.state_out = out;
  args.workspace = workspace.data();
  args.workspace_bytes = workspace.size();
  EXPECT_EQ(fp::host::forwardChunk(&args, chunked), FP_OK)
      << fp::host::lastError;
  EXPECT_EQ(ran, "cpu chunk");

  fp_chunk_args wrong = args;
  wrong.num_states = 1;
  EXPECT_EQ(fp::host::forwardChunk(&wrong, chunked), FP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fp::host::lastError,
            "layer forward_chunk: expected 2 states, got 1");
  wrong = args;
  wrong.state_out = nullptr;
  EXPECT_EQ(fp::host::forwardChunk(&wrong, chunked), FP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(fp::host::lastError,
            "layer forward_chunk: state_in or state_out is NULL");
  wrong = args;
  wrong.workspace_bytes = 8;
  EXPECT_EQ(fp::host::forwardChunk(&wrong, chunked), FP_ERROR_WORKSPACE);
  EXPECT_NE(fp::host::lastError.find("(chunk_workspace_bytes)"),
            std::string::npos)
      << fp::host::lastError;
  EXPECT_EQ(fp::host::forwardChunk(&args, layer(nullptr)),
            FP_ERROR_UNSUPPORTED);
  EXPECT_EQ(fp::host::lastError, "layer forward_chunk: this library has no "
                                 "chunked forward (fpc --no-chunked)");
}

} // namespace
