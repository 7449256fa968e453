//===- fp-bench.cpp - Compiled layer vs eager reference ---------*- C++ -*-===//
//
// Benchmarks one layer of a model library against the eager reference layer
// that computes the same function (fp/Runtime/ReferenceImport.h): both built
// in one process on the same weights (the reference's, drawn from --seed and
// imported into the compiled layer) and the same random input, forward only.
// Prints per implementation the median and minimum time per call over the
// repeats, the fixed-point iterations and the time per iteration, then the
// largest relative difference of the outputs and the speedup.
//
// Exit status: 0 done; 1 an error while loading or running; 2 a bad command
// line (one line on stderr).
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/ReferenceImport.h"

#include <fmt/format.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
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
computes the same function on the same weights and input, forward only, and
prints the time per call, the fixed-point iterations, the largest relative
difference of the outputs and the speedup of the compiled layer.

options:
  --model PATH        the model library (.so) built by fpc (required)
  --batch N           batch size B (default 64)
  --seq-len N         sequence length T (default 17)
  --dtype f32|f64     element type (default f32)
  --mode eval|train   solver rule: evaluation (every sample converges, cap
                      max_iter_eval) or training (quantile, max_iter_train)
                      (default eval)
  --repeats N         timed calls per implementation (default 5)
  --warmup N          untimed calls before them (default 1)
  --threads N         CPU threads for both (default: LibTorch's choice)
  --seed S            seed of the weights and the input (default 0)
  --reference NAME    the models/*.fp model whose reference to use (default:
                      the library's model name)
  -h, --help          this text

exit status: 0 done, 1 an error while loading or running, 2 a bad command line
)";

struct Options {
  std::string model;
  int64_t batch = 64;
  int64_t seqLen = 17;
  torch::Dtype dtype = torch::kFloat32;
  bool training = false;
  int64_t repeats = 5;
  int64_t warmup = 1;
  int64_t threads = 0;
  uint64_t seed = 0;
  std::string reference;
  bool help = false;
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

Options parseOptions(const std::vector<std::string> &args) {
  Options options;
  std::map<std::string, std::function<void(const std::string &)>> flags = {
      {"model", [&](const std::string &v) { options.model = v; }},
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
         else
           throw UsageError(
               fmt::format("--dtype is 'f32' or 'f64', got '{}'", v));
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
  };
  std::vector<std::string> seen;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg == "-h" || arg == "--help") {
      options.help = true;
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
  return options;
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

/// Times of one implementation's calls, in milliseconds.
struct Timing {
  std::vector<double> calls;
  double meanIterations = 0;
  torch::Tensor output;

  double median() const {
    std::vector<double> sorted = calls;
    std::sort(sorted.begin(), sorted.end());
    size_t n = sorted.size();
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }
  double min() const { return *std::min_element(calls.begin(), calls.end()); }
};

Timing measure(const std::function<torch::Tensor()> &call,
               const std::function<torch::Tensor()> &iterations,
               const Options &options) {
  Timing timing;
  for (int64_t i = 0; i < options.warmup; ++i)
    call();
  for (int64_t i = 0; i < options.repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    torch::Tensor output = call();
    auto stop = std::chrono::steady_clock::now();
    timing.calls.push_back(
        std::chrono::duration<double, std::milli>(stop - start).count());
    if (i == 0)
      timing.output = output;
  }
  torch::Tensor counts = iterations();
  timing.meanIterations =
      counts.defined() ? counts.to(torch::kDouble).mean().item<double>() : 1;
  return timing;
}

int run(const Options &options) {
  if (options.threads > 0)
    setThreads(options.threads);
  std::shared_ptr<const ModelLibrary> library = loadModelLibrary(options.model);
  const Manifest &manifest = library->manifest();
  const LayerInfo &layer = referenceLayerOf(manifest);
  if (!manifest.hasDType(toAbiDType(options.dtype)))
    throw std::runtime_error(
        fmt::format("'{}' was not compiled for {}", options.model,
                    options.dtype == torch::kFloat64 ? "f64" : "f32"));
  if (options.reference.empty() &&
      (!manifest.model || manifest.model->name.empty()))
    throw std::runtime_error(fmt::format(
        "'{}' names no model, so its reference is unknown; pass --reference "
        "NAME with the models/*.fp model it was compiled from",
        options.model));
  ModelConfig config =
      referenceConfigFor(manifest, options.reference, options.dtype);
  const std::string modelName =
      options.reference.empty() ? manifest.model->name : options.reference;

  torch::manual_seed(options.seed);
  std::shared_ptr<ref::BlockMixer> reference = ref::makeBlockMixer(config);
  auto compiled = std::make_shared<CompiledLayer>(library, layer.name,
                                                  options.seed, options.dtype);
  importReferenceWeights(*reference, *compiled);
  reference->train(options.training);
  compiled->train(options.training);
  torch::Tensor input =
      torch::randn({options.batch, options.seqLen, layer.dModel},
                   torch::TensorOptions().dtype(options.dtype));

  torch::NoGradGuard noGrad;
  Timing compiledTiming =
      measure([&] { return compiled->forward(input); },
              [&] { return compiled->lastIterations; }, options);
  Timing eagerTiming =
      measure([&] { return reference->forward(input); },
              [&] { return reference->lastIterations; }, options);

  torch::Tensor difference =
      (compiledTiming.output - eagerTiming.output).abs().max() /
      eagerTiming.output.abs().max();

  fmt::print("fp-bench: model {} ({}), layer '{}', d_model {}\n", modelName,
             options.model, layer.name, layer.dModel);
  fmt::print("          batch {}, seq-len {}, {}, {}, {} repeats after {} "
             "warmup, {} threads, seed {}\n\n",
             options.batch, options.seqLen,
             options.dtype == torch::kFloat64 ? "f64" : "f32",
             options.training ? "train" : "eval", options.repeats,
             options.warmup, torch::get_num_threads(), options.seed);
  fmt::print("{:<10} {:>12} {:>12} {:>12} {:>16}\n", "", "median ms", "min ms",
             "iterations", "ms / iteration");
  for (const auto &[name, timing] :
       {std::pair<const char *, const Timing &>{"compiled", compiledTiming},
        std::pair<const char *, const Timing &>{"eager", eagerTiming}})
    fmt::print("{:<10} {:>12.3f} {:>12.3f} {:>12.2f} {:>16.4f}\n", name,
               timing.median(), timing.min(), timing.meanIterations,
               timing.median() / timing.meanIterations);
  fmt::print("\nmax relative difference  {:.3e}  (max|compiled - eager| / "
             "max|eager|)\n",
             difference.item<double>());
  fmt::print("speedup                  {:.2f}x  (median eager / median "
             "compiled)\n",
             eagerTiming.median() / compiledTiming.median());
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
  try {
    return run(options);
  } catch (const std::exception &error) {
    fmt::print(stderr, "fp-bench: {}\n", error.what());
    return 1;
  }
}
