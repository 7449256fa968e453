//===- TeamCheck.cpp - Fused kernels on teams of host threads --*- C++ -*-===//
//
// fp-team-check: runs every layer of two host libraries of one model on the
// same random parameters and inputs (--seed, by default TestSeed.h's) and
// compares their results. The reference is the library fpc builds (its fused
// kernels on one-thread teams); the other was compiled from fpc's host C++ with
// FP_HOST_TEAM_SIZE, so that each fused kernel runs its tokens on a team of
// host threads, as a CUDA block does (Host.h, forEachTeamItem). Built with
// ThreadSanitizer, a barrier that a kernel lacks between one member's write and
// another's read of its scratch, state or results is reported as a data race,
// and the process exits non-zero; an element that a member computes from the
// wrong part of its inputs shows as a difference. docs/build.md, "The fused
// kernels' barrier check".
//
// Each layer runs a training forward with a fixed number of solver steps
// (both libraries then run the same steps), its backward where the library
// has one, and an inference forward; once with each sample's tokens in one
// run and once in chunks (FP_TIME_CHUNKS), for kernels that chunk.
//
//===----------------------------------------------------------------------===//

#include "TestSeed.h"
#include "fp/Runtime/ModelLibrary.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using Buffer = std::vector<double>;

struct Options {
  std::string reference, threaded;
  int64_t batch = 3, seqLen = 7, steps = 3;
  std::optional<uint64_t> seed; ///< --seed; TestSeed.h's when absent
  double tolerance = 1e-9;
  std::vector<std::string> chunks = {"1", "3"};
};

[[noreturn]] void usage(const std::string &problem) {
  std::fprintf(stderr,
               "fp-team-check: %s\n"
               "usage: fp-team-check --reference REF.so --threaded TEAM.so "
               "[--batch B] [--seq-len T] [--steps K] [--seed S] "
               "[--tolerance R]\n",
               problem.c_str());
  std::exit(2);
}

int64_t positive(const std::string &flag, const char *text) {
  char *end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value < 1)
    usage(flag + " " + text + ": expected a positive integer");
  return value;
}

Options parse(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc)
      usage(flag + ": missing value");
    const char *value = argv[++i];
    if (flag == "--reference")
      options.reference = value;
    else if (flag == "--threaded")
      options.threaded = value;
    else if (flag == "--batch")
      options.batch = positive(flag, value);
    else if (flag == "--seq-len")
      options.seqLen = positive(flag, value);
    else if (flag == "--steps")
      options.steps = positive(flag, value);
    else if (flag == "--seed")
      options.seed = uint64_t(positive(flag, value));
    else if (flag == "--tolerance") {
      char *end = nullptr;
      options.tolerance = std::strtod(value, &end);
      if (*end != '\0' || !(options.tolerance > 0))
        usage(flag + " " + value + ": expected a positive number");
    } else
      usage("unknown option " + flag);
  }
  if (options.reference.empty() || options.threaded.empty())
    usage("--reference and --threaded are required");
  return options;
}

/// What one library computed for one layer.
struct Results {
  Buffer trainOutput, evalOutput, gradInput;
  std::vector<Buffer> gradParams;
  int32_t steps = 0, backwardSteps = 0;
};

struct Inputs {
  std::vector<Buffer> params;
  Buffer input, gradOutput;
};

Buffer randomBuffer(std::mt19937_64 &rng, int64_t n, double scale) {
  std::uniform_real_distribution<double> uniform(-scale, scale);
  Buffer values(static_cast<size_t>(n));
  for (double &v : values)
    v = uniform(rng);
  return values;
}

void check(fp_status status, const fp::rt::ModelLibrary &library,
           const char *what) {
  if (status != FP_OK)
    throw std::runtime_error(library.path() + ": " + what +
                             " failed: " + library.lastError());
}

Results run(const fp::rt::ModelLibrary &library, size_t layer,
            const Inputs &inputs, const Options &options) {
  const fp::rt::LayerInfo &info = library.manifest().layers.at(layer);
  const fp::rt::LayerEntryPoints &entry = library.entryPoints(layer);
  const int64_t batch = options.batch, seqLen = options.seqLen;
  const int64_t tokens = batch * seqLen * info.dModel;
  fp_buffer_sizes sizes{};
  check(entry.bufferSizes(FP_TARGET_CPU, FP_DTYPE_F64, batch, seqLen, &sizes),
        library, "buffer_sizes");
  std::vector<char> workspace(
      std::max({sizes.forward_workspace_bytes, sizes.backward_workspace_bytes,
                size_t(1)}));
  std::vector<char> saved(std::max<size_t>(sizes.saved_bytes, 1));
  std::vector<const void *> params;
  for (const Buffer &p : inputs.params)
    params.push_back(p.data());

  Results results;
  results.trainOutput.assign(size_t(tokens), 0.0);
  results.evalOutput.assign(size_t(tokens), 0.0);
  fp_solver_overrides solver{-1, int32_t(options.steps), NAN, NAN};
  fp_solver_stats stats{};
  fp_forward_args forward{};
  forward.struct_size = sizeof(forward);
  forward.target = FP_TARGET_CPU;
  forward.dtype = FP_DTYPE_F64;
  forward.batch = batch;
  forward.seq_len = seqLen;
  forward.training = 1;
  forward.num_params = int32_t(params.size());
  forward.params = params.data();
  forward.input = inputs.input.data();
  forward.output = results.trainOutput.data();
  forward.saved = saved.data();
  forward.workspace = workspace.data();
  forward.workspace_bytes = sizes.forward_workspace_bytes;
  forward.solver = &solver;
  forward.stats = &stats;
  check(entry.forward(&forward), library, "training forward");
  results.steps = stats.steps;

  if (entry.backward) {
    results.gradInput.assign(size_t(tokens), 0.0);
    std::vector<void *> grads;
    for (const Buffer &p : inputs.params) {
      results.gradParams.emplace_back(p.size(), 0.0);
      grads.push_back(results.gradParams.back().data());
    }
    fp_solver_stats backwardStats{};
    fp_backward_args backward{};
    backward.struct_size = sizeof(backward);
    backward.target = FP_TARGET_CPU;
    backward.dtype = FP_DTYPE_F64;
    backward.batch = batch;
    backward.seq_len = seqLen;
    backward.num_params = int32_t(params.size());
    backward.params = params.data();
    backward.input = inputs.input.data();
    backward.saved = saved.data();
    backward.grad_output = inputs.gradOutput.data();
    backward.grad_input = results.gradInput.data();
    backward.grad_params = grads.data();
    backward.workspace = workspace.data();
    backward.workspace_bytes = sizes.backward_workspace_bytes;
    backward.stats = &backwardStats;
    check(entry.backward(&backward), library, "backward");
    results.backwardSteps = backwardStats.backward_steps;
  }

  forward.training = 0;
  forward.output = results.evalOutput.data();
  forward.saved = nullptr;
  forward.stats = nullptr;
  check(entry.forward(&forward), library, "inference forward");
  return results;
}

/// max |a − b| / max |b|; infinite where either holds a NaN or infinity.
double relativeDifference(const Buffer &a, const Buffer &b) {
  double difference = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i]))
      return INFINITY;
    difference = std::max(difference, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return scale > 0 ? difference / scale : difference;
}

/// Compares one result; prints it and returns whether it is within the
/// tolerance.
bool compare(const std::string &what, const Buffer &threaded,
             const Buffer &reference, double tolerance) {
  const double difference = relativeDifference(threaded, reference);
  const bool ok = difference <= tolerance;
  std::printf("  %-40s %.3e%s\n", what.c_str(), difference,
              ok ? "" : "  MISMATCH");
  return ok;
}

bool checkLayer(const fp::rt::ModelLibrary &reference,
                const fp::rt::ModelLibrary &threaded, size_t layer,
                const Options &options, std::mt19937_64 &rng) {
  const fp::rt::LayerInfo &info = reference.manifest().layers.at(layer);
  if (threaded.manifest().layers.size() <= layer ||
      threaded.manifest().layers[layer].name != info.name)
    throw std::runtime_error("the libraries' layers differ");
  Inputs inputs;
  for (const fp::rt::ParamInfo &param : info.params) {
    // Values of the size of a default initialisation: a map's weights
    // scaled by its fan-in.
    const double scale = param.shape.size() > 1
                             ? 1.0 / std::sqrt(double(param.shape.back()))
                             : 0.5;
    inputs.params.push_back(randomBuffer(rng, param.numElements(), scale));
  }
  const int64_t tokens = options.batch * options.seqLen * info.dModel;
  inputs.input = randomBuffer(rng, tokens, 1.0);
  inputs.gradOutput = randomBuffer(rng, tokens, 1.0);

  bool ok = true;
  for (const std::string &chunks : options.chunks) {
    setenv("FP_TIME_CHUNKS", chunks.c_str(), 1);
    std::printf("layer %s, FP_TIME_CHUNKS=%s\n", info.name.c_str(),
                chunks.c_str());
    const Results want = run(reference, layer, inputs, options);
    const Results got = run(threaded, layer, inputs, options);
    if (got.steps != want.steps || got.backwardSteps != want.backwardSteps) {
      std::printf("  solver steps %d/%d, backward %d/%d  MISMATCH\n", got.steps,
                  want.steps, got.backwardSteps, want.backwardSteps);
      ok = false;
    }
    ok &= compare("training output", got.trainOutput, want.trainOutput,
                  options.tolerance);
    ok &= compare("inference output", got.evalOutput, want.evalOutput,
                  options.tolerance);
    if (!want.gradInput.empty()) {
      ok &= compare("input gradient", got.gradInput, want.gradInput,
                    options.tolerance);
      for (size_t p = 0; p < info.params.size(); ++p)
        ok &= compare(info.params[p].name + " gradient", got.gradParams[p],
                      want.gradParams[p], options.tolerance);
    }
  }
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  const Options options = parse(argc, argv);
  try {
    const fp::rt::ModelLibrary reference =
        fp::rt::ModelLibrary::open(options.reference);
    const fp::rt::ModelLibrary threaded =
        fp::rt::ModelLibrary::open(options.threaded);
    const uint64_t seed = options.seed ? *options.seed : fp::test::testSeed();
    std::printf("fp-team-check: seed %llu, B = %lld, T = %lld, %lld solver "
                "steps, f64\n",
                static_cast<unsigned long long>(seed),
                static_cast<long long>(options.batch),
                static_cast<long long>(options.seqLen),
                static_cast<long long>(options.steps));
    std::mt19937_64 rng(seed);
    bool ok = true;
    for (size_t layer = 0; layer < reference.numLayers(); ++layer)
      ok &= checkLayer(reference, threaded, layer, options, rng);
    std::printf("%s\n", ok ? "fp-team-check: the threaded library agrees"
                           : "fp-team-check: the libraries differ");
    return ok ? 0 : 1;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "fp-team-check: %s\n", error.what());
    return 1;
  }
}
