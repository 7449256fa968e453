//===- fp-bench.cpp - Compiled layer vs eager reference ---------*- C++ -*-===//
//
// Benchmarks one layer of a model library against the eager reference layer
// that computes the same function (fp/Runtime/ReferenceImport.h): both built
// in one process on the same weights (the reference's, drawn from --seed and
// imported into the compiled layer) and the same random input, on the CPU or
// a CUDA device. Per implementation it times the forward without gradients
// and, in training mode, the training step (the forward with gradients and
// the backward of ⟨w, layer(x)⟩ for a fixed random w), and reports the
// fixed-point iterations, the time per iteration and, where it can count
// them, the kernels per iteration, the blocking host syncs per call and the
// peak device memory of a call; then the largest relative differences of the
// outputs, the input gradients and the parameter gradients, and the
// speedups. Last, the roofline of one
// compiled solver step (Roofline.h): its FLOPs and bytes as the compiler
// counted them, the machine's measured ceilings, and the step's measured
// time against the bound they give; then the same bound for the whole
// forward call and training step, against both sides' measured times.
//
// With --dtype bf16 both sides compute in bf16 as training would: the
// compiled layer over f32 weights cast per call (CompiledLayer::computeDtype),
// the eager reference under autocast to bf16, the reference code's own
// regime (docs/spec.md §1.9); an untimed eager run in f32 on the same weights
// and input measures how far each is from the f32 result.
//
// Exit status: 0 done; 1 an error while loading or running; 2 a bad command
// line (one line on stderr).
//
//===----------------------------------------------------------------------===//

#include "DeviceCounters.h"
#include "Roofline.h"

#include "fp/Runtime/DeviceMemory.h"
#include "fp/Runtime/HostMemory.h"
#include "fp/Runtime/Reference/Autocast.h"
#include "fp/Runtime/Reference/Primitives.h"
#include "fp/Runtime/ReferenceImport.h"

#include <ATen/Context.h>
#include <fmt/format.h>
#include <torch/cuda.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace fp::rt;

namespace {

/// A command-line mistake: exit 2 with the message.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

constexpr const char *usage =
    R"(usage: fp-bench --model PATH [options]

Runs one layer of a compiled model library and the eager reference layer that
computes the same function on the same weights and input, and prints per
implementation the time per forward call (no gradients) and, with --mode
train, per training step (forward with gradients and backward), the
fixed-point iterations and the time per iteration; on CUDA also the kernels
per iteration, the blocking host syncs per call and the peak device memory of
a call; then the largest relative differences and the speedups; last, the
roofline of one compiled solver step: its FLOPs and bytes (from the library's
manifest), the copy bandwidth and matrix-product throughput measured on the
device, the bound they give, and the step's measured time; and the bound of a
whole forward call and training step (the launches outside the loop, the
loop's steps and the backward's) against both sides' measured times. On the host, freed
memory is kept for later allocations (glibc: no allocation gets its own
mapping, the heap is not trimmed), as a caching allocator does on CUDA, so
that neither side's time is spent faulting in fresh pages.

options:
  --model PATH        the model library (.so) built by fpc (required)
  --device cpu|cuda   where both run (default cpu); cuda needs a LibTorch with
                      CUDA and a library compiled with --target=cuda or all
  --batch N           batch size B (default 64)
  --seq-len N         sequence length T (default 17)
  --dtype f32|f64|bf16
                      element type (default f32); bf16 keeps the weights and
                      the input in f32 and computes in bf16 as training
                      does: the compiled layer casts them per call, the
                      eager reference runs under autocast; both are also
                      compared with the eager reference in f32 (and an f32
                      run on CUDA with it in f64)
  --tf32              with --device cuda and --dtype f32: both sides' GEMMs
                      may use TF32 tensor cores (PyTorch's
                      torch.backends.cuda.matmul.allow_tf32, the ABI's
                      allow_tf32), the matrix-product ceiling too; the
                      comparison with f64 shows what it costs
  --mode eval|train   solver rule: evaluation (every sample converges, cap
                      max_iter_eval) or training (quantile, max_iter_train,
                      and the training step is timed too) (default eval)
  --repeats N         timed calls per implementation (default 5)
  --warmup N          untimed calls before them (default 1)
  --threads N         CPU threads for both (default: LibTorch's choice)
  --seed S            seed of the weights and the input (default 0)
  --reference NAME    the models/*.fp model whose reference to use (default:
                      the library's model name)
  --kernels N         on CUDA, after each table, the N kernels that took the
                      most device time in the counted call of each side,
                      by name, with their launches (default 0: none)
  --cost-only         print the FLOPs and bytes of one compiled solver step,
                      and of a call's launches outside the loop, for
                      --batch, --seq-len and --dtype, and exit (runs
                      nothing)
  --steps N           with --cost-only: also the totals of a forward call
                      and a training step that run N solver steps
  --ceilings B,F      with --cost-only and --steps: also their bounds at a
                      copy bandwidth of B bytes/s and a matrix-product
                      throughput of F FLOP/s (e.g. ones fp-bench measured
                      on a GPU)
  -h, --help          this text

exit status: 0 done, 1 an error while loading or running, 2 a bad command line
)";

struct Options {
  std::string model;
  bool cuda = false;
  int64_t batch = 64;
  int64_t seqLen = 17;
  torch::Dtype dtype = torch::kFloat32;
  bool tf32 = false;
  bool training = false;
  int64_t repeats = 5;
  int64_t warmup = 1;
  int64_t threads = 0;
  uint64_t seed = 0;
  std::string reference;
  int64_t kernels = 0;
  bool costOnly = false;
  /// With --cost-only: solver steps of the whole call to total (-1: none),
  /// and ceilings to bound it at (copy bytes/s, matrix product FLOP/s; 0:
  /// none).
  int64_t steps = -1;
  double bytesPerSecond = 0, flopsPerSecond = 0;
  bool help = false;
  /// Whether the host allocator keeps freed memory (HostMemory.h); not a flag.
  bool keptFreedMemory = false;
};

int64_t parseInteger(const std::string &flag, const std::string &text,
                     int64_t least) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw UsageError(
        fmt::format("--{} needs an integer, got '{}'", flag, text));
  if (value < least)
    throw UsageError(
        fmt::format("--{} must be at least {}, got {}", flag, least, value));
  return value;
}

/// --ceilings BYTES,FLOPS: two positive numbers.
std::pair<double, double> parseCeilings(const std::string &text) {
  const size_t comma = text.find(',');
  auto number = [&](const std::string &part) {
    size_t used = 0;
    double value = 0;
    try {
      value = std::stod(part, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used == 0 || used != part.size() || !(value > 0) ||
        !std::isfinite(value))
      throw UsageError(fmt::format(
          "--ceilings is COPY_BYTES_PER_S,GEMM_FLOPS_PER_S (two positive "
          "numbers, e.g. 2.955e12,51.7e12), got '{}'",
          text));
    return value;
  };
  if (comma == std::string::npos)
    number("");
  return {number(text.substr(0, comma)), number(text.substr(comma + 1))};
}

Options parseOptions(const std::vector<std::string> &args) {
  Options options;
  std::map<std::string, std::function<void(const std::string &)>> flags = {
      {"model", [&](const std::string &v) { options.model = v; }},
      {"device",
       [&](const std::string &v) {
         if (v != "cpu" && v != "cuda")
           throw UsageError(
               fmt::format("--device is 'cpu' or 'cuda', got '{}'", v));
         options.cuda = v == "cuda";
       }},
      {"batch",
       [&](const std::string &v) {
         options.batch = parseInteger("batch", v, 1);
       }},
      {"seq-len",
       [&](const std::string &v) {
         options.seqLen = parseInteger("seq-len", v, 1);
       }},
      {"dtype",
       [&](const std::string &v) {
         if (v == "f32")
           options.dtype = torch::kFloat32;
         else if (v == "f64")
           options.dtype = torch::kFloat64;
         else if (v == "bf16")
           options.dtype = torch::kBFloat16;
         else
           throw UsageError(
               fmt::format("--dtype is 'f32', 'f64' or 'bf16', got '{}'", v));
       }},
      {"mode",
       [&](const std::string &v) {
         if (v != "eval" && v != "train")
           throw UsageError(
               fmt::format("--mode is 'eval' or 'train', got '{}'", v));
         options.training = v == "train";
       }},
      {"repeats",
       [&](const std::string &v) {
         options.repeats = parseInteger("repeats", v, 1);
       }},
      {"warmup",
       [&](const std::string &v) {
         options.warmup = parseInteger("warmup", v, 0);
       }},
      {"threads",
       [&](const std::string &v) {
         options.threads = parseInteger("threads", v, 1);
       }},
      {"seed",
       [&](const std::string &v) {
         options.seed = static_cast<uint64_t>(parseInteger("seed", v, 0));
       }},
      {"reference", [&](const std::string &v) { options.reference = v; }},
      {"kernels",
       [&](const std::string &v) {
         options.kernels = parseInteger("kernels", v, 0);
       }},
      {"steps",
       [&](const std::string &v) {
         options.steps = parseInteger("steps", v, 0);
       }},
      {"ceilings",
       [&](const std::string &v) {
         std::tie(options.bytesPerSecond, options.flopsPerSecond) =
             parseCeilings(v);
       }},
  };
  std::vector<std::string> seen;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg == "-h" || arg == "--help") {
      options.help = true;
      continue;
    }
    if (arg == "--cost-only") {
      options.costOnly = true;
      continue;
    }
    if (arg == "--tf32") {
      options.tf32 = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0)
      throw UsageError(fmt::format(
          "unexpected argument '{}'; every option is a --flag (see --help)",
          arg));
    std::string name = arg.substr(2), value;
    bool hasValue = false;
    if (size_t equals = name.find('='); equals != std::string::npos) {
      value = name.substr(equals + 1);
      name = name.substr(0, equals);
      hasValue = true;
    }
    auto flag = flags.find(name);
    if (flag == flags.end())
      throw UsageError(fmt::format("unknown option '--{}' (see --help)", name));
    if (std::find(seen.begin(), seen.end(), name) != seen.end())
      throw UsageError(fmt::format("--{} is given twice", name));
    seen.push_back(name);
    if (!hasValue) {
      if (i + 1 >= args.size())
        throw UsageError(fmt::format("--{} needs a value", name));
      value = args[++i];
    }
    flag->second(value);
  }
  if (!options.help && options.model.empty())
    throw UsageError("--model PATH is required (see --help)");
  if (!options.costOnly && (options.steps >= 0 || options.bytesPerSecond > 0))
    throw UsageError("--steps and --ceilings go with --cost-only (a run "
                     "measures both)");
  if (options.tf32 && (!options.cuda || options.dtype != torch::kFloat32))
    throw UsageError("--tf32 goes with --device cuda and --dtype f32 (TF32 "
                     "rounds f32 GEMMs on CUDA; it changes nothing else)");
  if (options.bytesPerSecond > 0 && options.steps < 0)
    throw UsageError("--ceilings needs --steps (the solver steps of the call "
                     "to bound)");
  return options;
}

/// The spelling of a --dtype.
const char *dtypeName(torch::Dtype dtype) {
  return dtype == torch::kFloat64    ? "f64"
         : dtype == torch::kBFloat16 ? "bf16"
                                     : "f32";
}

/// The dtype of the weights and the input: f32 for a bf16 run, whose
/// computation casts them.
torch::Dtype storageDtype(torch::Dtype dtype) {
  return dtype == torch::kBFloat16 ? torch::kFloat32 : dtype;
}

/// Sets the thread count of LibTorch, OpenMP and, when loaded, OpenBLAS.
void setThreads(int64_t threads) {
  std::string text = std::to_string(threads);
  setenv("OMP_NUM_THREADS", text.c_str(), 1);
  setenv("OPENBLAS_NUM_THREADS", text.c_str(), 1);
  torch::set_num_threads(static_cast<int>(threads));
  using SetThreadsFn = void (*)(int);
  if (auto set = reinterpret_cast<SetThreadsFn>(
          dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(static_cast<int>(threads));
}

/// What one implementation's calls of one kind took.
struct Timing {
  std::vector<double> calls;  ///< milliseconds
  double meanIterations = 0;  ///< per sample, of the last call
  double batchIterations = 0; ///< the largest per-sample count
  std::optional<fp::bench::DeviceCounts> counts; ///< of one extra call
  int64_t solverWaits = 0;                       ///< of that call
  std::optional<double> peakBytes;               ///< of that call
  torch::Tensor output, inputGrad;

  double median() const {
    std::vector<double> sorted = calls;
    std::sort(sorted.begin(), sorted.end());
    size_t n = sorted.size();
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }
  double min() const { return *std::min_element(calls.begin(), calls.end()); }
};

/// One call of an implementation: its output, its input's gradient (for a
/// training step) and the per-sample iterations it reports.
struct Call {
  std::function<std::pair<torch::Tensor, torch::Tensor>()> run;
  std::function<torch::Tensor()> iterations;
  std::function<int64_t()> solverWaits;
};

void synchronize(const torch::Device &device) {
  if (device.is_cuda())
    torch::cuda::synchronize(device.index());
}

/// Times `call` (after the warm-up calls), then runs it once more to count
/// kernels and syncs and to measure memory where that is possible.
Timing measure(const Call &call, const Options &options,
               const torch::Device &device, fp::bench::DeviceCounter *counter) {
  Timing timing;
  for (int64_t i = 0; i < options.warmup; ++i)
    call.run();
  synchronize(device);
  for (int64_t i = 0; i < options.repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto [output, inputGrad] = call.run();
    synchronize(device);
    auto stop = std::chrono::steady_clock::now();
    timing.calls.push_back(
        std::chrono::duration<double, std::milli>(stop - start).count());
    if (i == 0) {
      timing.output = output;
      timing.inputGrad = inputGrad;
    }
  }
  torch::Tensor counts = call.iterations();
  if (counts.defined()) {
    counts = counts.to(torch::kCPU, torch::kDouble);
    timing.meanIterations = counts.mean().item<double>();
    timing.batchIterations = counts.max().item<double>();
  } else {
    timing.meanIterations = timing.batchIterations = 1;
  }

  fp::rt::DevicePeakMemory memory(device);
  if (counter || memory.available()) {
    if (memory.available())
      memory.begin();
    if (counter)
      counter->begin();
    call.run();
    if (counter)
      timing.counts = counter->end();
    if (memory.available())
      timing.peakBytes = memory.peakBytesBeyondStart();
    timing.solverWaits = call.solverWaits();
  }
  return timing;
}

double relativeDifference(const torch::Tensor &actual,
                          const torch::Tensor &expected) {
  return ((actual - expected).abs().max() / expected.abs().max())
      .item<double>();
}

/// The memory the compiled layer asks its caller for at this shape
/// (buffer_sizes): what its planned buffers hold, apart from the input,
/// the output and the parameters.
void printBuffers(const ModelLibrary &library, const LayerInfo &layer,
                  fp_target target, const Options &options) {
  fp_buffer_sizes sizes{};
  if (library.entryPoints(layer.name)
          .bufferSizes(target, toAbiDType(options.dtype), options.batch,
                       options.seqLen, &sizes) != FP_OK) {
    fmt::print("buffers of the compiled layer: buffer_sizes failed: {}\n\n",
               library.lastError());
    return;
  }
  const double mib = 1024.0 * 1024.0;
  fmt::print("buffers of the compiled layer (buffer_sizes, MiB): forward "
             "workspace {:.1f}, saved for the backward {:.1f}, backward "
             "workspace {:.1f}\n\n",
             double(sizes.forward_workspace_bytes) / mib,
             double(sizes.saved_bytes) / mib,
             double(sizes.backward_workspace_bytes) / mib);
}

/// The gradients the compiled layer's parameters hold (zeros where
/// undefined), in manifest order.
std::vector<torch::Tensor> compiledGradients(const CompiledLayer &compiled) {
  std::vector<torch::Tensor> gradients;
  for (const torch::Tensor &param : compiled.orderedParameters())
    gradients.push_back(param.grad().defined() ? param.grad()
                                               : torch::zeros_like(param));
  return gradients;
}

/// The largest relative difference between two sets of gradients of the
/// layer's parameters (manifest order), and the parameter's name. A
/// parameter whose expected gradient is zero counts 0 when the other is
/// zero too, infinity otherwise.
std::pair<double, std::string>
worstGradientDifference(const std::vector<torch::Tensor> &actual,
                        const std::vector<torch::Tensor> &expected,
                        const LayerInfo &layer) {
  std::pair<double, std::string> worst{0.0, "-"};
  for (size_t i = 0; i < actual.size(); ++i) {
    const double scale = expected[i].abs().max().item<double>();
    const double error = (actual[i] - expected[i].to(actual[i].device()))
                             .abs()
                             .max()
                             .item<double>();
    const double difference =
        scale > 0 ? error / scale
                  : (error > 0 ? std::numeric_limits<double>::infinity() : 0.0);
    if (difference > worst.first || worst.second == "-")
      worst = {difference, layer.params[i].name};
  }
  return worst;
}

/// The `count` kernels of each side's counted call that took the most
/// device time.
void printKernelTimes(const Timing &compiled, const Timing &eager,
                      int64_t count) {
  for (const auto &[side, timing] :
       {std::pair<const char *, const Timing &>{"compiled", compiled},
        std::pair<const char *, const Timing &>{"eager", eager}}) {
    if (!timing.counts)
      continue;
    const std::vector<fp::bench::KernelTime> &times =
        timing.counts->kernelTimes;
    double total = 0;
    for (const fp::bench::KernelTime &time : times)
      total += time.ms;
    fmt::print("  kernel time of one {} call: {:.3f} ms in {} kernels of {} "
               "names; the longest:\n",
               side, total, timing.counts->kernels, times.size());
    for (size_t i = 0; i < times.size() && int64_t(i) < count; ++i)
      fmt::print("    {:>9.3f} ms {:>5.1f}% {:>6}x  {}\n", times[i].ms,
                 total > 0 ? 100 * times[i].ms / total : 0.0, times[i].launches,
                 times[i].name);
  }
  fmt::print("\n");
}

void printTable(const char *title, const Timing &compiled,
                const Timing &eager) {
  fmt::print("{}\n", title);
  fmt::print("{:<10} {:>11} {:>11} {:>11} {:>13} {:>15} {:>13} {:>10}\n", "",
             "median ms", "min ms", "iterations", "ms/iteration",
             "kernels/iter.", "host syncs", "peak MiB");
  for (const auto &[name, timing] :
       {std::pair<const char *, const Timing &>{"compiled", compiled},
        std::pair<const char *, const Timing &>{"eager", eager}}) {
    std::string kernels = "-", syncs = "-", peak = "-";
    if (timing.counts) {
      kernels = fmt::format("{:.1f}", double(timing.counts->kernels) /
                                          timing.batchIterations);
      syncs = fmt::format("{}", timing.counts->syncs + timing.solverWaits);
    }
    if (timing.peakBytes)
      peak = fmt::format("{:.1f}", *timing.peakBytes / (1024.0 * 1024.0));
    fmt::print("{:<10} {:>11.3f} {:>11.3f} {:>11.2f} {:>13.4f} {:>15} {:>13} "
               "{:>10}\n",
               name, timing.median(), timing.min(), timing.meanIterations,
               timing.median() / timing.batchIterations, kernels, syncs, peak);
  }
  fmt::print("speedup {:.2f}x (median eager / median compiled)\n\n",
             eager.median() / compiled.median());
}

/// The time of one solver step of the compiled forward (no gradients):
/// calls that run exactly `many` and `few` steps, the difference of their
/// median times over `many - few`. Negative when noise swamps it.
double measureStepSeconds(CompiledLayer &layer, const torch::Tensor &input,
                          const Options &options, const torch::Device &device) {
  constexpr int32_t few = 2, many = 10;
  torch::NoGradGuard noGrad;
  const fp_solver_overrides compiled = layer.solverOverrides;
  auto median = [&](int32_t steps) {
    layer.solverOverrides.fixed_iters = steps;
    Timing timing;
    layer.forward(input);
    synchronize(device);
    for (int64_t i = 0; i < options.repeats; ++i) {
      auto start = std::chrono::steady_clock::now();
      layer.forward(input);
      synchronize(device);
      auto stop = std::chrono::steady_clock::now();
      timing.calls.push_back(
          std::chrono::duration<double>(stop - start).count());
    }
    return timing.median();
  };
  const double slow = median(many), fast = median(few);
  layer.solverOverrides = compiled;
  return (slow - fast) / (many - few);
}

/// The schedule a compiled call of the benchmark's shape runs, as the
/// library says (a CUDA library may hold the fused and the split one).
std::string scheduleOf(const ModelLibrary &library, const LayerInfo &layer,
                       fp_target target, const Options &options) {
  const LayerEntryPoints &entryPoints = library.entryPoints(layer.name);
  if (!entryPoints.schedule)
    return layer.schedule.empty() ? "as compiled" : layer.schedule;
  const char *name = entryPoints.schedule(target, toAbiDType(options.dtype),
                                          options.batch, options.seqLen);
  if (!name)
    throw std::runtime_error(library.lastError());
  return name;
}

/// The launches of one solver step of the schedule a call runs.
const std::vector<LaunchCost> &stepCostOf(const LayerInfo &layer,
                                          const std::string &schedule,
                                          const Options &options) {
  return options.cuda && layer.hasCudaSplit && schedule == "split"
             ? layer.splitIterationCost
             : layer.iterationCost;
}

/// The launches of a call outside the loop, of the schedule a call runs.
const CallCost &callCostOf(const LayerInfo &layer, const std::string &schedule,
                           const Options &options) {
  return options.cuda && layer.hasCudaSplit && schedule == "split"
             ? layer.splitCallCost
             : layer.callCost;
}

/// One side's measured time of a call.
struct MeasuredCall {
  const Timing *compiled = nullptr;
  const Timing *eager = nullptr;
};

/// A whole forward call and training step on the roofline: the bound of the
/// compiled launches at the measured ceilings, the share of it the GEMMs
/// take, and both sides' measured times against it.
void printCallRoofline(const CallCost &cost, const fp::bench::StepCost &step,
                       const Options &options,
                       const fp::bench::Ceilings &ceilings,
                       MeasuredCall forward, MeasuredCall training,
                       double backwardSteps) {
  if (!cost.present) {
    fmt::print("roofline of a whole call: '{}' gives no call cost (recompile "
               "it with this fpc)\n\n",
               options.model);
    return;
  }
  const int64_t elementBytes = int64_t(torch::elementSize(options.dtype));
  fmt::print("roofline of a whole compiled call (the launches outside the "
             "loop, the loop's steps{}):\n",
             training.compiled ? ", the backward's launches" : "");
  fmt::print("  {:<14} {:>5} {:>11} {:>9} {:>10} {:>10} {:>12} {:>8} {:>10} "
             "{:>12}\n",
             "call", "steps", "GFLOP", "GB", "bound ms", "GEMMs ms",
             "compiled ms", "of bound", "eager ms", "eager/bound");
  auto line = [&](const char *name, const MeasuredCall &call, bool withGrad) {
    const double steps = call.compiled->batchIterations;
    fp::bench::StepCost total = fp::bench::callCostOf(
        cost, step, steps, withGrad, backwardSteps, options.batch,
        options.seqLen, elementBytes, &ceilings);
    const double compiledMs = call.compiled->median();
    const double eagerMs = call.eager->median();
    const double boundMs = total.boundSeconds * 1e3;
    fmt::print("  {:<14} {:>5.0f} {:>11.4f} {:>9.4f} {:>10.3f} {:>10.3f} "
               "{:>12.3f} {:>7.1f}% {:>10.3f} {:>11.2f}×\n",
               name, steps, total.flops / 1e9, total.bytes / 1e9, boundMs,
               total.gemmBoundSeconds * 1e3, compiledMs,
               100.0 * boundMs / compiledMs, eagerMs, eagerMs / boundMs);
  };
  line("forward", forward, false);
  if (training.compiled) {
    if (cost.hasBackward)
      line("training step", training, true);
    else
      fmt::print("  training step: '{}' gives no cost of its backward\n",
                 options.model);
  }
  std::string backwardSolve =
      training.compiled && !cost.backwardStep.empty()
          ? fmt::format(", and {:.0f} of the backward's solve", backwardSteps)
          : std::string();
  fmt::print("bound: the sum over the call's launches of max(FLOPs / matrix "
             "product ceiling, bytes / copy ceiling); GEMMs: the part of it "
             "of the GEMM launches (fp.linear, fp.weight_grad); steps: the "
             "solver steps the compiled call ran{}. eager/bound: the largest "
             "speedup over the eager call that the compiled launches could "
             "reach at these ceilings.\n\n",
             backwardSolve);
}

/// The roofline section: the step's cost, the ceilings, the measured step;
/// then the whole forward call and training step.
void printRoofline(const LayerInfo &layer, const std::string &schedule,
                   CompiledLayer &compiled, const torch::Tensor &input,
                   const Options &options, const torch::Device &device,
                   MeasuredCall forward, MeasuredCall training,
                   double backwardSteps) {
  const int64_t elementBytes = int64_t(torch::elementSize(options.dtype));
  // The host kernels multiply bf16 matrices as f32 ones (Host.h); on CUDA
  // they run on the bf16 tensor cores.
  const torch::Dtype gemmDtype =
      options.dtype == torch::kBFloat16 && !options.cuda ? torch::kFloat32
                                                         : options.dtype;
  fp::bench::Ceilings ceilings = fp::bench::measureCeilings(device, gemmDtype);
  const double stepSeconds =
      measureStepSeconds(compiled, input, options, device);
  fmt::print("roofline of one compiled solver step ({}, B·T = {} tokens, {} "
             "schedule):\n",
             dtypeName(options.dtype), options.batch * options.seqLen,
             schedule);
  fp::bench::StepCost cost = fp::bench::printStepCost(
      stepCostOf(layer, schedule, options), options.batch, options.seqLen,
      elementBytes, &ceilings);
  fmt::print("ceilings measured on this {}: copy {:.1f} GB/s ({} MiB "
             "buffer), {} matrix product {:.1f} GFLOP/s ({}³){}\n",
             options.cuda ? "device" : "CPU", ceilings.bytesPerSecond / 1e9,
             ceilings.copyBytes >> 20, dtypeName(gemmDtype),
             ceilings.flopsPerSecond / 1e9, ceilings.gemmSize,
             gemmDtype != options.dtype ? " (the host's bf16 GEMMs run in f32)"
                                        : "");
  if (stepSeconds <= 0) {
    fmt::print("step time: not measurable (calls of 10 steps were not slower "
               "than calls of 2); the bound is {:.4f} ms\n\n",
               cost.boundSeconds * 1e3);
  } else {
    fmt::print("step time {:.4f} ms (median of {} calls of 10 steps minus "
               "that of 2 steps, over 8); the bound is {:.4f} ms: {:.1f}% of "
               "the roofline\n",
               stepSeconds * 1e3, options.repeats, cost.boundSeconds * 1e3,
               100.0 * cost.boundSeconds / stepSeconds);
    fmt::print("achieved {:.1f} GFLOP/s and {:.1f} GB/s over the step\n\n",
               cost.flops / stepSeconds / 1e9, cost.bytes / stepSeconds / 1e9);
  }
  printCallRoofline(callCostOf(layer, schedule, options), cost, options,
                    ceilings, forward, training, backwardSteps);
}

/// How far the compiled and the eager results are from the eager
/// reference's in a wider type on the same weights and input, one untimed
/// call (and step) of it: a bf16 run against f32, an f32 run against f64.
/// `config` is the run's reference configuration (its weights in f32).
void printWiderDifferences(ref::BlockMixer &reference, ModelConfig config,
                           torch::Dtype narrow, torch::Dtype wider,
                           const CompiledLayer &compiledLayer,
                           const torch::Tensor &runInput,
                           const torch::Tensor &runWeights,
                           const Timing &compiled, const Timing &eager,
                           const Timing *compiledStep,
                           const Timing *eagerStep) {
  config.dtype = wider;
  std::shared_ptr<ref::BlockMixer> wide = ref::makeBlockMixer(config);
  {
    torch::NoGradGuard noGrad;
    auto from = reference.parameters();
    auto to = wide->parameters();
    for (size_t i = 0; i < from.size(); ++i)
      to[i].copy_(from[i]);
  }
  wide->to(runInput.device());
  wide->train(reference.is_training());
  const torch::Tensor input = runInput.to(wider);
  const torch::Tensor weights = runWeights.to(wider);
  torch::Tensor output;
  {
    torch::NoGradGuard noGrad;
    output = wide->forward(input);
  }
  const std::string n = dtypeName(narrow), w = dtypeName(wider);
  fmt::print("{} against the eager reference in {} (max|{} - {}| / "
             "max|{}|; the {} solve may stop at another step):\n",
             n, w, n, w, w, w);
  fmt::print("  forward output          compiled {:.3e}, eager {:.3e}\n",
             relativeDifference(compiled.output, output),
             relativeDifference(eager.output, output));
  if (!compiledStep || !eagerStep)
    return;
  torch::Tensor x = input.detach().requires_grad_(true);
  (wide->forward(x) * weights).sum().backward();
  fmt::print("  training-step dL/dx     compiled {:.3e}, eager {:.3e}\n",
             relativeDifference(compiledStep->inputGrad, x.grad()),
             relativeDifference(eagerStep->inputGrad, x.grad()));
  const LayerInfo &layer = compiledLayer.info();
  const std::vector<torch::Tensor> exact = referenceGradientsFor(*wide, layer);
  auto [compiledDifference, compiledName] =
      worstGradientDifference(compiledGradients(compiledLayer), exact, layer);
  auto [eagerDifference, eagerName] = worstGradientDifference(
      referenceGradientsFor(reference, layer), exact, layer);
  fmt::print("  training-step dL/dparams compiled {:.3e} ({}), eager {:.3e} "
             "({})\n",
             compiledDifference, compiledName, eagerDifference, eagerName);
}

/// --cost-only's lines of a call's launches outside the loop, and with
/// --steps the totals of a forward call and a training step of that many
/// solver steps (`step` is the loop's launches), bounded with --ceilings.
void printCallCostOnly(const CallCost &cost,
                       const std::vector<LaunchCost> &step,
                       const Options &options) {
  if (!cost.present)
    return;
  const int64_t elementBytes = int64_t(torch::elementSize(options.dtype));
  auto line = [&](const char *name, const std::vector<LaunchCost> &launches) {
    fp::bench::StepCost total = fp::bench::costOf(
        launches, options.batch, options.seqLen, elementBytes, nullptr);
    fmt::print("  {:<34} {:>4} launches {:>12.3f} MFLOP {:>12.3f} MB\n", name,
               launches.size(), total.flops / 1e6, total.bytes / 1e6);
  };
  fmt::print("  outside the loop (a forward call adds its steps; a training "
             "step adds the backward):\n");
  line("forward", cost.forward);
  if (cost.hasBackward) {
    line("backward", cost.backward);
    if (!cost.backwardStep.empty())
      line("one step of the backward's solve", cost.backwardStep);
  }
  if (options.steps < 0)
    return;
  const fp::bench::Ceilings given{options.bytesPerSecond,
                                  options.flopsPerSecond};
  const fp::bench::Ceilings *ceilings =
      options.bytesPerSecond > 0 ? &given : nullptr;
  const fp::bench::StepCost stepCost = fp::bench::costOf(
      step, options.batch, options.seqLen, elementBytes, ceilings);
  auto total = [&](const char *name, bool training) {
    fp::bench::StepCost call = fp::bench::callCostOf(
        cost, stepCost, double(options.steps), training, 0, options.batch,
        options.seqLen, elementBytes, ceilings);
    std::string bound =
        ceilings
            ? fmt::format(", bound {:.3f} ms (GEMMs {:.3f} ms)",
                          call.boundSeconds * 1e3, call.gemmBoundSeconds * 1e3)
            : std::string();
    fmt::print("  {} of {} solver steps: {:.4f} GFLOP, {:.4f} GB{}\n", name,
               options.steps, call.flops / 1e9, call.bytes / 1e9, bound);
  };
  total("forward call", false);
  if (cost.hasBackward)
    total("training step", true);
  if (ceilings)
    fmt::print("  (bound: the sum over the launches of max(FLOPs / {:.4g} "
               "FLOP/s, bytes / {:.4g} B/s){})\n",
               options.flopsPerSecond, options.bytesPerSecond,
               cost.backwardStep.empty()
                   ? ""
                   : "; the backward's own solve is not counted");
}

/// --cost-only: the step's FLOPs and bytes for the shape, without running.
int printCostOnly(const Options &options) {
  std::shared_ptr<const ModelLibrary> library = loadModelLibrary(options.model);
  for (const LayerInfo &layer : library->manifest().layers) {
    if (layer.iterationCost.empty()) {
      fmt::print("layer '{}': the manifest gives no solver step cost "
                 "(recompile it with this fpc)\n",
                 layer.name);
      continue;
    }
    fmt::print("layer '{}', one compiled solver step ({}, B = {}, T = {}):\n",
               layer.name, dtypeName(options.dtype), options.batch,
               options.seqLen);
    fp::bench::printStepCost(layer.iterationCost, options.batch, options.seqLen,
                             int64_t(torch::elementSize(options.dtype)),
                             nullptr);
    printCallCostOnly(layer.callCost, layer.iterationCost, options);
    if (layer.hasCudaSplit && !layer.splitIterationCost.empty()) {
      fmt::print("layer '{}', one step of its CUDA split schedule (taken where "
                 "the batch is too small for one block per sample to fill the "
                 "GPU):\n",
                 layer.name);
      fp::bench::printStepCost(
          layer.splitIterationCost, options.batch, options.seqLen,
          int64_t(torch::elementSize(options.dtype)), nullptr);
      printCallCostOnly(layer.splitCallCost, layer.splitIterationCost, options);
    }
  }
  return 0;
}

int run(const Options &options) {
  if (options.costOnly)
    return printCostOnly(options);
  if (options.threads > 0)
    setThreads(options.threads);
  // Read by the eager side's matmuls, the ceilings' GEMM and every compiled
  // call (CompiledLayer passes it as allow_tf32).
  at::globalContext().setAllowTF32CuBLAS(options.tf32);
  if (options.tf32)
    fmt::print("note: --tf32: f32 GEMMs of both sides may use TF32 tensor "
               "cores\n");
  if (options.cuda && !torch::cuda::is_available())
    throw std::runtime_error(
        "--device cuda: this LibTorch has no CUDA support or sees no CUDA "
        "device");
  const torch::Device device = options.cuda ? torch::Device(torch::kCUDA, 0)
                                            : torch::Device(torch::kCPU);
  const fp_target target = options.cuda ? FP_TARGET_CUDA : FP_TARGET_CPU;
  std::shared_ptr<const ModelLibrary> library = loadModelLibrary(options.model);
  const Manifest &manifest = library->manifest();
  const LayerInfo &layer = referenceLayerOf(manifest);
  if (!manifest.hasDType(toAbiDType(options.dtype)))
    throw std::runtime_error(fmt::format("'{}' was not compiled for {}",
                                         options.model,
                                         dtypeName(options.dtype)));
  if (options.reference.empty() &&
      (!manifest.model || manifest.model->name.empty()))
    throw std::runtime_error(fmt::format(
        "'{}' names no model, so its reference is unknown; pass --reference "
        "NAME with the models/*.fp model it was compiled from",
        options.model));
  const bool bf16 = options.dtype == torch::kBFloat16;
  const torch::Dtype storage = storageDtype(options.dtype);
  ModelConfig config = referenceConfigFor(manifest, options.reference, storage);
  const std::string modelName =
      options.reference.empty() ? manifest.model->name : options.reference;
  if (layer.solver)
    for (const std::string &difference :
         solverDifferences(*layer.solver, config))
      fmt::print("note: the reference differs from the library in {}\n",
                 difference);

  torch::manual_seed(options.seed);
  std::shared_ptr<ref::BlockMixer> reference = ref::makeBlockMixer(config);
  auto compiled = std::make_shared<CompiledLayer>(library, layer.name,
                                                  options.seed, storage);
  importReferenceWeights(*reference, *compiled);
  if (bf16)
    compiled->computeDtype = torch::kBFloat16;
  reference->to(device);
  compiled->to(device);
  reference->train(options.training);
  compiled->train(options.training);
  const auto tensorOptions = torch::TensorOptions().dtype(storage);
  torch::Tensor input =
      torch::randn({options.batch, options.seqLen, layer.dModel}, tensorOptions)
          .to(device);
  torch::Tensor weights = torch::randn_like(input);

  std::string countsUnavailable;
  std::unique_ptr<fp::bench::DeviceCounter> counter;
  if (options.cuda)
    counter = fp::bench::DeviceCounter::create(countsUnavailable);
  else
    countsUnavailable = "counted on CUDA only";

  auto forwardOf =
      [&](torch::nn::Module &module,
          const std::function<torch::Tensor(const torch::Tensor &)> &forward) {
        (void)module;
        return [forward, &input]() {
          torch::NoGradGuard noGrad;
          return std::make_pair(forward(input), torch::Tensor());
        };
      };
  auto stepOf =
      [&](torch::nn::Module &module,
          const std::function<torch::Tensor(const torch::Tensor &)> &forward) {
        return [&module, forward, &input, &weights]() {
          module.zero_grad();
          torch::Tensor x = input.detach().requires_grad_(true);
          torch::Tensor output = forward(x);
          (output * weights).sum().backward();
          return std::make_pair(output.detach(), x.grad());
        };
      };
  auto compiledForward = [&](const torch::Tensor &x) {
    return compiled->forward(x);
  };
  auto eagerForward = [&](const torch::Tensor &x) {
    if (!bf16)
      return reference->forward(x);
    // The output in the input's dtype, as the compiled side returns it.
    ref::AutocastGuard autocast(device.type(), torch::kBFloat16);
    return reference->forward(x).to(x.scalar_type());
  };
  auto compiledIterations = [&] { return compiled->lastIterations; };
  auto eagerIterations = [&] { return reference->lastIterations; };
  auto compiledWaits = [&] { return compiled->lastHostWaits; };
  auto noWaits = [] { return int64_t(0); };

  Timing compiledForwardTiming = measure({forwardOf(*compiled, compiledForward),
                                          compiledIterations, compiledWaits},
                                         options, device, counter.get());
  Timing eagerForwardTiming =
      measure({forwardOf(*reference, eagerForward), eagerIterations, noWaits},
              options, device, counter.get());

  const bool withStep = options.training && layer.hasBackward(target);
  std::optional<Timing> compiledStep, eagerStep;
  int32_t backwardSteps = 0;
  if (withStep) {
    compiledStep = measure(
        {stepOf(*compiled, compiledForward), compiledIterations, compiledWaits},
        options, device, counter.get());
    backwardSteps = compiled->lastBackwardSteps();
    eagerStep =
        measure({stepOf(*reference, eagerForward), eagerIterations, noWaits},
                options, device, counter.get());
  }

  const std::string schedule = scheduleOf(*library, layer, target, options);
  fmt::print("fp-bench: model {} ({}), layer '{}', d_model {}\n", modelName,
             options.model, layer.name, layer.dModel);
  fmt::print("          {}, batch {}, seq-len {}, {}, {}, {} repeats after {} "
             "warmup, {} threads, seed {}\n",
             options.cuda ? "cuda" : "cpu", options.batch, options.seqLen,
             dtypeName(options.dtype), options.training ? "train" : "eval",
             options.repeats, options.warmup, torch::get_num_threads(),
             options.seed);
  fmt::print("          compiled schedule: {}{}\n", schedule,
             options.cuda && layer.hasCudaSplit
                 ? " (the library holds the fused and the split one; a call "
                   "takes the split one where one block per sample would "
                   "leave the GPU idle)"
                 : "");
  fmt::print("          eager selective scan: {}\n",
             options.cuda && ref::haveCudaScanKernels()
                 ? "one CUDA kernel forward and one backward, as the "
                   "reference code's (mamba_ssm's selective_scan_cuda)"
                 : "a loop of LibTorch ops over time");
  if (bf16)
    fmt::print("          bf16: f32 weights and input; compiled computes in "
               "bf16 (cast per call), eager under autocast to bf16\n");
  if (!options.cuda)
    fmt::print("          host allocator: {}\n",
               options.keptFreedMemory
                   ? "keeps freed memory (no fresh pages per call, as a "
                     "caching allocator)"
                   : "the C library's defaults (freed memory may return to "
                     "the kernel)");
  fmt::print("\n");
  printTable("forward (no gradients)", compiledForwardTiming,
             eagerForwardTiming);
  if (counter && options.kernels > 0)
    printKernelTimes(compiledForwardTiming, eagerForwardTiming,
                     options.kernels);
  if (withStep) {
    printTable("training step (forward with gradients + backward)",
               *compiledStep, *eagerStep);
    if (counter && options.kernels > 0)
      printKernelTimes(*compiledStep, *eagerStep, options.kernels);
  } else if (options.training)
    fmt::print("training step: not timed: '{}' has no backward for {} "
               "(compile it with fpc --backward{})\n\n",
               options.model, options.cuda ? "cuda" : "cpu",
               options.cuda ? " --target=cuda or all" : "");

  printBuffers(*library, layer, target, options);

  if (!stepCostOf(layer, schedule, options).empty())
    printRoofline(
        layer, schedule, *compiled, input, options, device,
        {&compiledForwardTiming, &eagerForwardTiming},
        {withStep ? &*compiledStep : nullptr, withStep ? &*eagerStep : nullptr},
        backwardSteps);
  else
    fmt::print("roofline: '{}' gives no solver step cost (recompile it with "
               "this fpc)\n\n",
               options.model);

  fmt::print("max relative difference, max|compiled - eager| / max|eager|:\n");
  fmt::print("  forward output          {:.3e}\n",
             relativeDifference(compiledForwardTiming.output,
                                eagerForwardTiming.output));
  if (withStep) {
    fmt::print(
        "  training-step dL/dx     {:.3e}\n",
        relativeDifference(compiledStep->inputGrad, eagerStep->inputGrad));
    // Both modules hold the parameter gradients of their last step, on the
    // same input, weights and cotangent.
    auto [difference, name] = worstGradientDifference(
        compiledGradients(*compiled), referenceGradientsFor(*reference, layer),
        layer);
    fmt::print("  training-step dL/dparams {:.3e} ({})\n", difference, name);
  }
  // How much of that difference is each side's rounding: both against the
  // reference in a wider type (an f32 run on CUDA, whose kernels sum in
  // other orders than the reference's; on the host the f64 run costs more
  // than the benchmark).
  if (bf16 || (options.cuda && options.dtype == torch::kFloat32))
    printWiderDifferences(
        *reference, config, options.dtype,
        bf16 ? torch::kFloat32 : torch::kFloat64, *compiled, input, weights,
        compiledForwardTiming, eagerForwardTiming,
        withStep ? &*compiledStep : nullptr, withStep ? &*eagerStep : nullptr);
  fmt::print("\niterations: per-sample mean of the last call; ms/iteration "
             "and kernels/iter. divide by the largest per-sample count.\n");
  if (counter)
    fmt::print("host syncs: CUDA calls that blocked the host in one call, "
               "plus the compiled solver's waits for its progress.\n");
  else
    fmt::print("kernels and host syncs: not counted ({}).\n",
               countsUnavailable);
  if (!fp::rt::DevicePeakMemory(device).available())
    fmt::print("peak MiB: measured on CUDA only.\n");
  else
    fmt::print("peak MiB: device memory of one call beyond what was "
               "allocated before it.\n");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  Options options;
  try {
    options = parseOptions(args);
  } catch (const UsageError &error) {
    fmt::print(stderr, "fp-bench: {}\n", error.what());
    return 2;
  }
  if (options.help) {
    fmt::print("{}", usage);
    return 0;
  }
  // Both implementations allocate their temporaries per call; without this
  // the CPU columns time the kernel's page faults as much as the layers.
  options.keptFreedMemory = fp::rt::keepFreedHostMemory();
  try {
    return run(options);
  } catch (const std::exception &error) {
    fmt::print(stderr, "fp-bench: {}\n", error.what());
    return 1;
  }
}
