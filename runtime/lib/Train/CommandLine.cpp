//===- CommandLine.cpp - fp-train's flags -----------------------*- C++ -*-===//
//
// The flag table, the parser, the help text, and the mapping of flags onto
// a TrainConfig. applyFlag() is the single place a flag's value reaches the
// configuration; a resumed run reuses it to find out whether a flag would
// change the stored configuration.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Train/CommandLine.h"
#include "fp/Runtime/Train/ToolArguments.h"

#include "fp/Runtime/CompiledLayer.h"
#include "fp/Runtime/Reference/Layers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

namespace fp::rt {

namespace fs = std::filesystem;

namespace {

constexpr const char *kModelKinds[] = {"fp_mamba",   "mamba",  "fp_mamba2",
                                       "mamba2",     "fp_rnn", "lstm",
                                       "transformer"};
constexpr const char *kMixers[] = {"householder", "dplr",         "kronecker",
                                   "monarch",     "nonselective", "identity"};

[[noreturn]] void usage(const std::string &message) {
  throw UsageError(message);
}

} // namespace

//===----------------------------------------------------------------------===//
// The flag table
//===----------------------------------------------------------------------===//

const std::vector<FlagInfo> &trainFlags() {
  static const std::vector<FlagInfo> flags = {
      // Model.
      {"model", "SOURCE", "reference:fp_mamba",
       "the model: reference:<kind>, kind one of fp_mamba, mamba, "
       "fp_mamba2, mamba2, fp_rnn (the eager reference), lstm, transformer "
       "(baselines); or a model "
       "library PATH.so built by `fpc --backward`, whose source fixes the "
       "architecture",
       "Model"},
      {"d-model", "N", "64", "model width D", "Model"},
      {"layers", "N", "1", "number of layers (blocks)", "Model"},
      {"d-state", "N", "16", "state size N per channel (Mamba kinds)", "Model"},
      {"expand", "N", "2", "inner width factor E, d = E*D", "Model"},
      {"dt-rank", "N", "0", "rank of the step-size projection; 0: ceil(D/16)",
       "Model"},
      {"d-conv", "N", "4", "width of the short causal convolution", "Model"},
      {"head-dim", "N", "64",
       "fp_mamba2, mamba2: channels per head of the SSD scan", "Model"},
      {"groups", "N", "1", "fp_mamba2, mamba2: groups of heads sharing B and C",
       "Model"},
      {"mixer", "NAME", "kronecker",
       "channel mixer: householder, dplr, kronecker, monarch, nonselective "
       "or identity",
       "Model"},
      {"mixer-rank", "N", "1",
       "Householder reflections or DPLR rank of the mixer", "Model"},
      {"short-conv", nullptr, "off", "use the short causal convolution",
       "Model"},
      {"glu-in-loop", nullptr, "off",
       "apply the GLU gate inside the fixed-point map", "Model"},
      {"no-bc-norm", nullptr, "off (B, C normalised)",
       "do not L2-normalise B and C", "Model"},
      {"symm-mixer", nullptr, "off (concatenated input)",
       "symmetric mixer input instead of [x; shift(y)]", "Model"},
      {"no-mixer-h-dep", nullptr, "off (mixer depends on the iterate)",
       "mixer parameters from the input only, not the shifted iterate",
       "Model"},
      {"kronecker-norm", "NAME", "per kind: row (fp_mamba), spectral (fp_rnn)",
       "Kronecker factor normalisation: row or spectral", "Model"},
      {"norm-eps", "X", "task's", "epsilon of the norms", "Model"},
      {"heads", "N", "4", "attention heads (transformer)", "Model"},
      {"n-backwards", "N", "1",
       "differentiable map applications after the solve", "Model"},
      {"dtype", "f32|f64|bf16", "f32",
       "parameter and activation precision; bf16 computes in bf16 under "
       "autocast with f32 weights and optimiser (spec 1.9)",
       "Model"},
      // Fixed-point solver.
      {"max-iter", "N", "100", "iteration cap while training",
       "Fixed-point solver"},
      {"max-iter-eval", "N", "1000", "iteration cap in evaluation",
       "Fixed-point solver"},
      {"tolerance", "X", "0.1", "relative residual that counts as converged",
       "Fixed-point solver"},
      {"quantile", "X", "per kind: 0.75 (fp_mamba), 0.9 (fp_mamba2, fp_rnn)",
       "fraction of the batch that must converge while training (evaluation "
       "waits for all)",
       "Fixed-point solver"},
      {"gamma-cap", nullptr, "off",
       "draw the training cap before every batch as ceil(Gamma(shape 4, "
       "scale k/16 + 1)), k the training length (spec 3.5)",
       "Fixed-point solver"},
      // Task and evaluation.
      {"task", "NAME", "required", "a5, s5, copy, arith, parity, lm or catbabi",
       "Task and evaluation"},
      {"train-len", "N", "task's",
       "longest training length (docs/tasks.md says what a length counts)",
       "Task and evaluation"},
      {"train-min-len", "N", "task's", "shortest training length",
       "Task and evaluation"},
      {"eval-min-len", "N", "task's", "shortest evaluated length",
       "Task and evaluation"},
      {"eval-max-len", "N", "task's", "longest evaluated length",
       "Task and evaluation"},
      {"eval-step", "N", "task's", "step between evaluated lengths",
       "Task and evaluation"},
      {"eval-count", "N", "256",
       "sequences per evaluated length, and in the validation set",
       "Task and evaluation"},
      {"eval-batch", "N", "--batch / --grad-accum",
       "sequences per forward pass in evaluation (bounds memory)",
       "Task and evaluation"},
      {"context-len", "N", "task's",
       "copy: tokens per training row; lm: the context, tokens per "
       "sequence; catbabi: tokens per chunk",
       "Task and evaluation"},
      {"alphabet", "N", "task's", "copy: number of letters",
       "Task and evaluation"},
      {"data", "PATH[,PATH...]", "required for lm and catbabi",
       "lm: a directory holding train.bin and val.bin, a token file (.bin), "
       "or text files read one after another by the tokenizer (bytes, or "
       "--tokenizer; a .jsonl file's documents are its lines' \"text\"); "
       "catbabi: the directory of bAbI v1.2's en-valid-10k files",
       "Task and evaluation"},
      {"val-data", "PATH", "none",
       "lm: the validation data (a token file or a text file); default: "
       "val.bin of a data directory, else the held-out end of --data",
       "Task and evaluation"},
      {"val-fraction", "X", "0.05",
       "lm: fraction of --data held out for validation when there is no "
       "validation file",
       "Task and evaluation"},
      {"vocab-size", "N", "none",
       "lm: vocabulary of token files; every id must be below it",
       "Task and evaluation"},
      {"token-bytes", "N", "2",
       "lm: bytes per id of bare token files, 2 or 4 (llm.c headers say "
       "their own)",
       "Task and evaluation"},
      {"doc-sep", "TEXT", "none (a file is one document)",
       "lm: a text line equal to TEXT ends a document (\"%\" in fortune "
       "files)",
       "Task and evaluation"},
      {"tokenizer", "DIR", "byte-level",
       "lm: GPT-2's BPE from DIR's vocab.json and merges.txt (or "
       "encoder.json and vocab.bpe): text is tokenised with it, and token "
       "files take its vocabulary",
       "Task and evaluation"},
      // Optimisation.
      {"lr", "X", "task's", "peak learning rate of AdamW", "Optimisation"},
      {"weight-decay", "X", "task's", "AdamW weight decay", "Optimisation"},
      {"beta1", "X", "task's", "AdamW beta1", "Optimisation"},
      {"beta2", "X", "task's", "AdamW beta2", "Optimisation"},
      {"adam-eps", "X", "task's", "AdamW epsilon", "Optimisation"},
      {"clip", "X", "task's", "gradient-norm clipping threshold; 0: none",
       "Optimisation"},
      {"decay", "RULE", "task's",
       "which parameters are decayed: no-bias-no-norm-no-ssm, all-but-ssm or "
       "all",
       "Optimisation"},
      {"schedule", "NAME", "task's",
       "learning-rate schedule: constant, cosine, warmup-cosine or linear",
       "Optimisation"},
      {"warmup", "N", "task's, scaled by --steps / the task's steps",
       "steps of linear warmup from 0 (every schedule)", "Optimisation"},
      {"min-lr-ratio", "X", "task's",
       "final learning rate of cosine and linear decay, as a fraction of "
       "--lr",
       "Optimisation"},
      {"recipe", "NAME", "task's",
       "task: the task's recipe; lm: the language-model recipe of spec 7.5 "
       "(AdamW 0.9/0.95, weight decay 0.1, warmup 10 % then cosine to "
       "1e-5, clipping at 1) for any task",
       "Optimisation"},
      {"batch", "N", "task's", "sequences per training step", "Optimisation"},
      {"grad-accum", "K", "1",
       "run each step's batch as K micro-batches of --batch / K sequences, "
       "adding their gradients (bounds memory)",
       "Optimisation"},
      {"steps", "N", "task's", "optimiser steps of the run", "Optimisation"},
      {"epochs", "E", "none",
       "train E * --steps-per-epoch steps instead of --steps (data is "
       "generated on the fly, so an epoch is a block of steps)",
       "Optimisation"},
      {"steps-per-epoch", "N", "none", "steps per epoch, with --epochs",
       "Optimisation"},
      // Run.
      {"seed", "N", "0",
       "seed of the initialisation, the data and the trainer's RNG", "Run"},
      {"device", "NAME", "cpu", "cpu, cuda or cuda:<index>", "Run"},
      {"tf32", "on|off", "off",
       "on CUDA, f32 matrix products (GEMMs) may round their inputs to "
       "TF32 on tensor cores, as PyTorch's "
       "torch.backends.cuda.matmul.allow_tf32",
       "Run"},
      {"threads", "N", "0 (LibTorch's default)", "LibTorch intra-op threads",
       "Run"},
      {"out", "DIR", "required for a fresh run",
       "run directory; must be new or empty", "Run"},
      {"resume", "DIR", "none",
       "continue the run in DIR; only --steps, --progress, --tf32 and the "
       "process flags (--dist-*, --bucket-mib, --overlap-allreduce) may "
       "change",
       "Run"},
      {"log-every", "N", "10", "log a metrics line every N steps", "Run"},
      {"eval-every", "N", "100",
       "validate at the training length every N steps; 0: never", "Run"},
      {"checkpoint-every", "N", "100",
       "write checkpoint.pt every N steps (and at the end); 0: only at the "
       "end",
       "Run"},
      {"keep-best", "on|off", "task's (on for catbabi)",
       "keep the parameters of the lowest validation loss in best.pt and "
       "evaluate them at the end",
       "Run"},
      {"nonfinite-limit", "K", "3",
       "a step with a non-finite loss or gradient makes no update; K in a "
       "row stop the run with exit 1",
       "Run"},
      {"progress", "MODE", "auto",
       "auto (a bar on a terminal, log lines otherwise), bar, lines or none",
       "Run"},
      {"nproc-per-node", "N", "1",
       "train in N processes on this machine, each on its share of every "
       "batch; leave it out under torchrun or srun, which start the "
       "processes",
       "Run"},
      {"dist-timeout", "S", "300",
       "seconds a process of a job waits for the others before failing", "Run"},
      {"dist-backend", "NAME", "auto",
       "the processes' transport: gloo, nccl (CUDA), or auto (nccl on CUDA "
       "where built with it, else gloo); naming one opens a process group "
       "even for one process",
       "Run"},
      {"bucket-mib", "M", "25",
       "sum the gradients over the processes in buckets of at most M MiB",
       "Run"},
      {"overlap-allreduce", "on|off", "off",
       "start summing a bucket as soon as the backward has written its "
       "gradients (off: after the backward)",
       "Run"},
      {"help", nullptr, "", "print this help and exit", "Run"},
  };
  return flags;
}

namespace {

const FlagInfo *findFlag(const std::string &name) {
  for (const FlagInfo &flag : trainFlags())
    if (name == flag.name)
      return &flag;
  return nullptr;
}

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

[[noreturn]] void unknownFlag(const std::string &name) {
  const FlagInfo *best = nullptr;
  size_t bestDistance = 3;
  for (const FlagInfo &flag : trainFlags()) {
    size_t distance = editDistance(name, flag.name);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = &flag;
    }
  }
  if (best)
    usage(fmt::format("unknown flag '--{}'; did you mean '--{}'?", name,
                      best->name));
  usage(fmt::format("unknown flag '--{}'", name));
}

} // namespace

//===----------------------------------------------------------------------===//
// CommandLine
//===----------------------------------------------------------------------===//

CommandLine CommandLine::parse(const std::vector<std::string> &args) {
  CommandLine result;
  std::set<std::string> seen;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg == "-h" || arg == "--help") {
      result.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      usage(
          fmt::format("unexpected argument '{}'; flags start with '--'", arg));
    std::string name = arg.substr(2);
    std::optional<std::string> inlineValue;
    if (size_t equals = name.find('='); equals != std::string::npos) {
      inlineValue = name.substr(equals + 1);
      name = name.substr(0, equals);
    }
    const FlagInfo *flag = findFlag(name);
    if (!flag)
      unknownFlag(name);
    if (!seen.insert(name).second)
      usage(fmt::format("--{} is given more than once", name));

    std::string value;
    if (!flag->valueName) {
      if (inlineValue)
        usage(fmt::format("--{} takes no value", name));
    } else if (inlineValue) {
      value = *inlineValue;
    } else {
      // A following "--flag" is not a value; "-1" is (so that a negative
      // number gets its range error rather than this one).
      if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0)
        usage(fmt::format("--{} needs a value ({})", name, flag->valueName));
      value = args[++i];
    }
    if (name == "help") {
      result.help = true;
      continue;
    }
    result.given.emplace_back(name, value);
  }
  return result;
}

bool CommandLine::has(const std::string &name) const {
  return value(name).has_value();
}

std::optional<std::string> CommandLine::value(const std::string &name) const {
  for (const auto &[flag, value] : given)
    if (flag == name)
      return value;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Help
//===----------------------------------------------------------------------===//

std::string trainHelpText() {
  std::string text =
      "usage: fp-train --task NAME --out DIR [flags]\n"
      "       fp-train --resume DIR [--steps N]\n"
      "\n"
      "Trains a model on a task, writing DIR/config.json, DIR/metrics.jsonl,\n"
      "DIR/checkpoint.pt and, at the end, DIR/eval.json (docs/training.md).\n"
      "Values are given as '--flag VALUE' or '--flag=VALUE'. \"task's\"\n"
      "defaults come from the task's recipe (docs/tasks.md).\n";
  const int column = 30, width = 79;
  std::string section;
  for (const FlagInfo &flag : trainFlags()) {
    if (section != flag.section) {
      section = flag.section;
      text += fmt::format("\n{}:\n", section);
    }
    std::string head = fmt::format("  --{}", flag.name);
    if (flag.valueName)
      head += fmt::format(" {}", flag.valueName);
    // '\x01' keeps "[default:" on the line of the default's first word.
    std::string body = flag.help;
    if (*flag.defaultText)
      body += fmt::format(" [default:\x01{}]", flag.defaultText);

    // Word-wrap the description into the right-hand column.
    std::vector<std::string> lines(1);
    size_t start = 0;
    while (start < body.size()) {
      size_t end = body.find(' ', start);
      if (end == std::string::npos)
        end = body.size();
      std::string word = body.substr(start, end - start);
      if (!lines.back().empty() &&
          static_cast<int>(lines.back().size() + 1 + word.size()) >
              width - column)
        lines.emplace_back();
      lines.back() += (lines.back().empty() ? "" : " ") + word;
      start = end + 1;
    }
    if (static_cast<int>(head.size()) + 1 >= column)
      text += head + "\n" + std::string(column, ' ');
    else
      text += head + std::string(column - head.size(), ' ');
    for (std::string &line : lines)
      std::replace(line.begin(), line.end(), '\x01', ' ');
    for (size_t i = 0; i < lines.size(); ++i)
      text += (i ? std::string(column, ' ') : "") + lines[i] + "\n";
  }
  text += "\nExit status: 0 done, 1 error while running (a loss that stayed\n"
          "non-finite included), 2 bad command line, configuration or data (a\n"
          "run too large for the memory here included), 130 interrupted (a\n"
          "checkpoint was written; continue with --resume DIR).\n";
  return text;
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

namespace {

int64_t parseInteger(const std::string &flag, const std::string &text) {
  int64_t value = 0;
  const char *first = text.data(), *last = text.data() + text.size();
  auto [end, error] = std::from_chars(first, last, value);
  if (text.empty() || error != std::errc() || end != last)
    usage(fmt::format("--{} expects an integer, got '{}'", flag, text));
  return value;
}

uint64_t parseUnsigned(const std::string &flag, const std::string &text) {
  uint64_t value = 0;
  const char *first = text.data(), *last = text.data() + text.size();
  auto [end, error] = std::from_chars(first, last, value);
  if (text.empty() || error != std::errc() || end != last)
    usage(fmt::format("--{} expects a non-negative integer, got '{}'", flag,
                      text));
  return value;
}

double parseNumber(const std::string &flag, const std::string &text) {
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE ||
      !std::isfinite(value))
    usage(fmt::format("--{} expects a number, got '{}'", flag, text));
  return value;
}

template <size_t N>
std::string oneOf(const std::string &flag, const std::string &text,
                  const char *const (&choices)[N]) {
  for (const char *choice : choices)
    if (text == choice)
      return text;
  std::string list;
  for (size_t i = 0; i < N; ++i)
    list += (i == 0       ? ""
             : i + 1 == N ? " or "
                          : ", ") +
            std::string(choices[i]);
  usage(fmt::format("--{}: unknown value '{}'; expected {}", flag, text, list));
}

std::string absolutePath(const std::string &path) {
  return fs::absolute(path).lexically_normal().string();
}

/// Whether a --model value names a compiled model library.
bool isLibraryPath(const std::string &source) {
  return source.size() > 3 && source.compare(source.size() - 3, 3, ".so") == 0;
}

/// The flags that set the architecture of a reference model; a compiled
/// model's comes from its source.
constexpr const char *kArchitectureFlags[] = {
    "d-model",        "layers",         "d-state",    "expand",
    "dt-rank",        "d-conv",         "mixer",      "mixer-rank",
    "short-conv",     "glu-in-loop",    "no-bc-norm", "symm-mixer",
    "no-mixer-h-dep", "kronecker-norm", "norm-eps",   "heads",
    "n-backwards",    "head-dim",       "groups"};

/// The model kind of a --model value: "compiled" for a model library.
std::string modelKind(const std::string &source) {
  if (isLibraryPath(source))
    return "compiled";
  std::string kind = source;
  if (kind.rfind("reference:", 0) == 0)
    kind = kind.substr(std::string("reference:").size());
  for (const char *known : kModelKinds)
    if (kind == known)
      return kind;
  usage(fmt::format("--model {}: unknown model; expected reference:<kind> "
                    "with kind fp_mamba, mamba, fp_mamba2, mamba2, fp_rnn, "
                    "lstm or transformer, "
                    "or a model library PATH.so",
                    source));
}

/// Applies one configuration flag to `config`. Flags that are not part of
/// the configuration (--out, --resume, --progress, --epochs,
/// --steps-per-epoch) are ignored here.
void applyFlag(TrainConfig &config, const std::string &name,
               const std::string &value) {
  ModelConfig &model = config.model;
  SolverConfig &solver = model.solver;
  TaskOptions &task = config.taskOptions;
  OptimizerConfig &optimizer = config.optimizer;
  auto integer = [&] { return parseInteger(name, value); };
  auto number = [&] { return parseNumber(name, value); };

  // Model.
  if (name == "model") {
    model.kind = modelKind(value);
    config.modelSource = model.kind == "compiled" ? absolutePath(value)
                                                  : "reference:" + model.kind;
  } else if (name == "d-model") {
    model.dModel = integer();
  } else if (name == "layers") {
    model.nLayers = integer();
  } else if (name == "d-state") {
    model.dState = integer();
  } else if (name == "expand") {
    model.expand = integer();
  } else if (name == "dt-rank") {
    model.dtRank = integer();
  } else if (name == "d-conv") {
    model.dConv = integer();
  } else if (name == "head-dim") {
    model.headDim = integer();
  } else if (name == "groups") {
    model.nGroups = integer();
  } else if (name == "mixer") {
    model.mixer = oneOf(name, value, kMixers);
  } else if (name == "mixer-rank") {
    model.mixerRank = integer();
  } else if (name == "short-conv") {
    model.useShortConv = true;
  } else if (name == "glu-in-loop") {
    model.gluInLoop = true;
  } else if (name == "no-bc-norm") {
    model.bcNorm = false;
  } else if (name == "symm-mixer") {
    model.symmMixer = true;
  } else if (name == "no-mixer-h-dep") {
    model.mixerHDep = false;
  } else if (name == "kronecker-norm") {
    static const char *const norms[] = {"row", "spectral"};
    model.kroneckerNorm = oneOf(name, value, norms);
  } else if (name == "norm-eps") {
    model.normEps = number();
  } else if (name == "heads") {
    model.nHeads = integer();
  } else if (name == "n-backwards") {
    model.nBackwards = integer();
  } else if (name == "dtype") {
    config.autocastBf16 = value == "bf16";
    auto dtype = config.autocastBf16 ? std::optional(torch::kFloat32)
                                     : parseDtype(value);
    if (!dtype)
      usage(fmt::format(
          "--dtype: unknown value '{}'; expected f32, f64 or bf16", value));
    model.dtype = *dtype;
  }
  // Fixed-point solver.
  else if (name == "max-iter") {
    solver.maxIterTrain = integer();
  } else if (name == "max-iter-eval") {
    solver.maxIterEval = integer();
  } else if (name == "tolerance") {
    solver.tolerance = number();
  } else if (name == "quantile") {
    solver.trainQuantile = number();
  } else if (name == "gamma-cap") {
    config.gammaCap = true;
  }
  // Task and evaluation.
  else if (name == "task") {
    config.task = value;
  } else if (name == "train-len") {
    task.trainLength = integer();
  } else if (name == "train-min-len") {
    task.trainMinLength = integer();
  } else if (name == "eval-min-len") {
    task.evalMinLength = integer();
  } else if (name == "eval-max-len") {
    task.evalMaxLength = integer();
  } else if (name == "eval-step") {
    task.evalStep = integer();
  } else if (name == "eval-count") {
    config.evalCount = integer();
  } else if (name == "eval-batch") {
    config.evalBatch = integer();
  } else if (name == "context-len") {
    task.contextLength = integer();
  } else if (name == "alphabet") {
    task.alphabetSize = integer();
  } else if (name == "data") {
    task.dataPaths.clear();
    for (const std::string &path : splitAtCommas(value)) {
      if (path.empty())
        usage(fmt::format("--data '{}': an empty path", value));
      task.dataPaths.push_back(absolutePath(path));
    }
  } else if (name == "val-data") {
    if (value.empty())
      usage("--val-data: an empty path");
    task.validationPath = absolutePath(value);
  } else if (name == "val-fraction") {
    task.validationFraction = number();
  } else if (name == "vocab-size") {
    task.vocabSize = integer();
  } else if (name == "token-bytes") {
    task.tokenBytes = integer();
  } else if (name == "doc-sep") {
    task.documentSeparator = value;
  } else if (name == "tokenizer") {
    if (value.empty())
      usage("--tokenizer: an empty path");
    task.tokenizer = absolutePath(value);
  }
  // Optimisation.
  else if (name == "lr") {
    optimizer.lr = number();
  } else if (name == "weight-decay") {
    optimizer.weightDecay = number();
  } else if (name == "beta1") {
    optimizer.beta1 = number();
  } else if (name == "beta2") {
    optimizer.beta2 = number();
  } else if (name == "adam-eps") {
    optimizer.eps = number();
  } else if (name == "clip") {
    optimizer.clipNorm = number();
  } else if (name == "decay") {
    auto rule = parseDecayRule(value);
    if (!rule)
      usage(fmt::format("--decay: unknown value '{}'; expected "
                        "no-bias-no-norm-no-ssm, all-but-ssm or all",
                        value));
    optimizer.decay = *rule;
  } else if (name == "schedule") {
    auto schedule = parseSchedule(value);
    if (!schedule)
      usage(fmt::format("--schedule: unknown value '{}'; expected constant, "
                        "cosine, warmup-cosine or linear",
                        value));
    optimizer.schedule = *schedule;
  } else if (name == "warmup") {
    optimizer.warmupSteps = integer();
  } else if (name == "min-lr-ratio") {
    optimizer.minLrRatio = number();
  } else if (name == "batch") {
    config.batchSize = integer();
  } else if (name == "grad-accum") {
    config.gradAccum = integer();
  } else if (name == "steps") {
    config.steps = integer();
  }
  // Run.
  else if (name == "seed") {
    config.seed = parseUnsigned(name, value);
  } else if (name == "device") {
    config.device = value;
  } else if (name == "tf32") {
    static const char *const choices[] = {"on", "off"};
    config.tf32 = oneOf("tf32", value, choices) == "on";
  } else if (name == "threads") {
    config.threads = integer();
  } else if (name == "log-every") {
    config.logEvery = integer();
  } else if (name == "eval-every") {
    config.evalEvery = integer();
  } else if (name == "checkpoint-every") {
    config.checkpointEvery = integer();
  } else if (name == "nonfinite-limit") {
    config.nonFiniteLimit = integer();
  } else if (name == "keep-best") {
    static const char *const choices[] = {"on", "off"};
    config.keepBest = oneOf("keep-best", value, choices) == "on";
  } else if (name == "dist-timeout") {
    config.distTimeout = integer();
  } else if (name == "dist-backend") {
    static const char *const choices[] = {"auto", "gloo", "nccl"};
    config.distBackend = oneOf("dist-backend", value, choices);
  } else if (name == "bucket-mib") {
    config.bucketMiB = integer();
  } else if (name == "overlap-allreduce") {
    static const char *const choices[] = {"on", "off"};
    config.overlapAllReduce =
        oneOf("overlap-allreduce", value, choices) == "on";
  }
}

/// Flags that are not part of the configuration.
bool isRunFlag(const std::string &name) {
  return name == "out" || name == "resume" || name == "progress" ||
         name == "epochs" || name == "steps-per-epoch" || name == "recipe" ||
         name == "nproc-per-node";
}

/// The flags of TaskOptions.
bool isTaskFlag(const std::string &name) {
  static const char *const flags[] = {
      "train-len", "train-min-len", "eval-min-len", "eval-max-len",
      "eval-step", "context-len",   "alphabet",     "data",
      "val-data",  "val-fraction",  "vocab-size",   "token-bytes",
      "doc-sep",   "tokenizer"};
  return std::find(std::begin(flags), std::end(flags), name) != std::end(flags);
}

} // namespace

std::string taskNameFromFlags(const CommandLine &commandLine) {
  auto task = commandLine.value("task");
  if (!task || task->empty())
    usage("--task is required (a5, s5, copy, arith, parity or lm)");
  return *task;
}

TaskOptions taskOptionsFromFlags(const CommandLine &commandLine) {
  TrainConfig config;
  config.taskOptions = TaskOptions{};
  for (const auto &[name, value] : commandLine.flags())
    if (isTaskFlag(name))
      applyFlag(config, name, value);
  return config.taskOptions;
}

ProgressMode progressModeFromFlags(const CommandLine &commandLine) {
  auto text = commandLine.value("progress");
  if (!text)
    return ProgressMode::Auto;
  auto mode = parseProgressMode(*text);
  if (!mode)
    usage(fmt::format("--progress: unknown value '{}'; expected auto, bar, "
                      "lines or none",
                      *text));
  return *mode;
}

//===----------------------------------------------------------------------===//
// Configurations
//===----------------------------------------------------------------------===//

TrainConfig makeTrainConfig(const CommandLine &commandLine,
                            const TaskDefaults &taskDefaults,
                            int64_t vocabSize) {
  TaskDefaults defaults = taskDefaults;
  if (auto recipe = commandLine.value("recipe")) {
    static const char *const recipes[] = {"task", "lm"};
    if (oneOf("recipe", *recipe, recipes) == "lm") {
      // The task's own batch, steps and vocabulary padding stay.
      TaskDefaults lm = languageModelRecipe();
      lm.batchSize = taskDefaults.batchSize;
      lm.steps = taskDefaults.steps;
      lm.warmupSteps = lm.steps / 10;
      lm.padVocabMultiple = taskDefaults.padVocabMultiple;
      lm.normEps = taskDefaults.normEps;
      defaults = lm;
    }
  }
  TrainConfig config;
  config.task = taskNameFromFlags(commandLine);
  if (!commandLine.has("out"))
    usage("--out DIR is required for a fresh run (or --resume DIR to "
          "continue one)");

  // The task's recipe.
  OptimizerConfig &optimizer = config.optimizer;
  optimizer.lr = defaults.lr;
  optimizer.weightDecay = defaults.weightDecay;
  optimizer.beta1 = defaults.beta1;
  optimizer.beta2 = defaults.beta2;
  optimizer.eps = defaults.adamEps;
  optimizer.clipNorm = std::max(defaults.clipNorm, 0.0);
  optimizer.decay = defaults.decay;
  optimizer.schedule = defaults.schedule;
  optimizer.warmupSteps = defaults.warmupSteps;
  optimizer.minLrRatio = defaults.minLrRatio;
  config.batchSize = defaults.batchSize;
  config.steps = defaults.steps;
  config.model.vocabSize = vocabSize;
  config.model.padVocabMultiple = defaults.padVocabMultiple;
  config.model.normEps = defaults.normEps;
  config.keepBest = defaults.keepBest;

  // The model kind's solver constants (docs/spec.md §3.4), or what a compiled
  // model's manifest fixes, before any solver flag.
  if (auto model = commandLine.value("model"))
    applyFlag(config, "model", *model);
  if (config.model.kind == "compiled") {
    const std::string &path = config.modelSource;
    for (const char *flag : kArchitectureFlags)
      if (commandLine.has(flag))
        usage(fmt::format("--{} does not apply to a compiled model: the "
                          "architecture of {} is fixed by its source; change "
                          "it there and recompile with fpc",
                          flag, path));
    try {
      ModelLibrary library = ModelLibrary::open(path);
      config.model = compiledModelConfig(library.manifest(), config.model);
    } catch (const LoadError &error) {
      usage(fmt::format("--model: {}", error.what()));
    } catch (const std::invalid_argument &error) {
      usage(fmt::format("--model {}: {}", path, error.what()));
    }
  } else {
    config.model.solver = ref::referenceSolverConfig(config.model.kind);
  }

  for (const auto &[name, value] : commandLine.flags())
    if (!isRunFlag(name))
      applyFlag(config, name, value);

  auto epochs = commandLine.value("epochs");
  auto perEpoch = commandLine.value("steps-per-epoch");
  if (epochs || perEpoch) {
    if (commandLine.has("steps"))
      usage("--epochs and --steps both set the length of the run; give one");
    if (!epochs || !perEpoch)
      usage("--epochs and --steps-per-epoch go together");
    int64_t e = parseInteger("epochs", *epochs);
    int64_t s = parseInteger("steps-per-epoch", *perEpoch);
    if (e < 1)
      usage(fmt::format("--epochs must be at least 1, got {}", e));
    if (s < 1)
      usage(fmt::format("--steps-per-epoch must be at least 1, got {}", s));
    config.steps = e * s;
  }
  // The recipe's warmup is a fraction of its run: it follows a changed
  // number of steps unless --warmup is given.
  if (!commandLine.has("warmup") && defaults.steps > 0 &&
      config.steps != defaults.steps)
    config.optimizer.warmupSteps =
        defaults.warmupSteps * config.steps / defaults.steps;
  // What fits in a training step fits in an evaluation chunk.
  if (!commandLine.has("eval-batch"))
    config.evalBatch = std::max<int64_t>(
        config.batchSize / std::max<int64_t>(config.gradAccum, 1), 1);
  validateTrainConfig(config);
  return config;
}

TrainConfig resumeTrainConfig(const CommandLine &commandLine,
                              const TrainConfig &stored) {
  TrainConfig config = stored;
  const nlohmann::ordered_json storedJson = toJson(stored);
  auto resumeDir = commandLine.value("resume");
  for (const auto &[name, value] : commandLine.flags()) {
    if (name == "resume" || name == "progress" || name == "nproc-per-node")
      continue;
    if (name == "steps" || name == "dist-timeout" || name == "dist-backend" ||
        name == "bucket-mib" || name == "overlap-allreduce" || name == "tf32") {
      applyFlag(config, name, value);
      continue;
    }
    if (name == "recipe")
      usage("--recipe cannot be used with --resume; the run keeps the "
            "recipe it was started with");
    if (name == "epochs" || name == "steps-per-epoch")
      usage(fmt::format("--{} cannot be used with --resume; give the new "
                        "total number of steps with --steps",
                        name));
    if (name == "out") {
      auto normal = [](const std::string &path) {
        return (fs::path(path) / "").lexically_normal();
      };
      if (resumeDir && normal(value) != normal(*resumeDir))
        usage(fmt::format("--out {} conflicts with --resume {}; a resumed run "
                          "stays in its directory",
                          value, *resumeDir));
      continue;
    }
    TrainConfig changed = stored;
    applyFlag(changed, name, value);
    nlohmann::ordered_json changedJson = toJson(changed);
    if (changedJson == storedJson)
      continue;
    // Name the first stored field the flag would change.
    nlohmann::ordered_json before = storedJson.flatten();
    nlohmann::ordered_json after = changedJson.flatten();
    std::string field, old;
    for (auto it = before.begin(); it != before.end(); ++it)
      if (after[it.key()] != it.value()) {
        field = it.key().substr(1);
        std::replace(field.begin(), field.end(), '/', '.');
        old = it.value().dump();
        break;
      }
    std::string given =
        value.empty() ? "--" + name : fmt::format("--{} {}", name, value);
    usage(fmt::format("{} conflicts with the run being resumed (it has {} = "
                      "{}); only --steps, --progress, --tf32 and the process "
                      "flags may change on --resume",
                      given, field, old));
  }
  validateTrainConfig(config);
  return config;
}

void validateTrainConfig(const TrainConfig &config) {
  auto atLeast = [](const char *flag, int64_t value, int64_t minimum) {
    if (value < minimum)
      usage(fmt::format("--{} must be at least {}, got {}", flag, minimum,
                        value));
  };
  auto positive = [](const char *flag, double value) {
    if (!(value > 0))
      usage(fmt::format("--{} must be positive, got {}", flag, value));
  };
  auto inRange = [](const char *flag, double value, double low, double high,
                    bool highOpen) {
    if (!(value >= low && (highOpen ? value < high : value <= high)))
      usage(fmt::format("--{} must be in [{}, {}{}, got {}", flag, low, high,
                        highOpen ? ")" : "]", value));
  };
  const ModelConfig &model = config.model;
  if (model.kind != modelKind(config.modelSource))
    usage(fmt::format("model kind '{}' does not match --model {}", model.kind,
                      config.modelSource));
  atLeast("d-model", model.dModel, 1);
  atLeast("layers", model.nLayers, 1);
  atLeast("d-state", model.dState, 1);
  atLeast("expand", model.expand, 1);
  atLeast("dt-rank", model.dtRank, 0);
  atLeast("d-conv", model.dConv, 1);
  atLeast("head-dim", model.headDim, 1);
  atLeast("groups", model.nGroups, 1);
  // A compiled model's mixer is part of its source.
  if (model.kind != "compiled")
    oneOf("mixer", model.mixer, kMixers);
  atLeast("mixer-rank", model.mixerRank, 1);
  if (!model.kroneckerNorm.empty() && model.kroneckerNorm != "row" &&
      model.kroneckerNorm != "spectral")
    usage(fmt::format("--kronecker-norm: unknown value '{}'; expected row or "
                      "spectral",
                      model.kroneckerNorm));
  positive("norm-eps", model.normEps);
  atLeast("heads", model.nHeads, 1);
  atLeast("n-backwards", model.nBackwards, 1);
  if (model.vocabSize < 1)
    usage(fmt::format("the task's vocabulary is empty ({} tokens)",
                      model.vocabSize));

  const SolverConfig &solver = model.solver;
  atLeast("max-iter", solver.maxIterTrain, 1);
  atLeast("max-iter-eval", solver.maxIterEval, 1);
  positive("tolerance", solver.tolerance);
  if (!(solver.trainQuantile > 0 && solver.trainQuantile <= 1))
    usage(fmt::format("--quantile must be in (0, 1], got {}",
                      solver.trainQuantile));

  atLeast("batch", config.batchSize, 1);
  atLeast("grad-accum", config.gradAccum, 1);
  if (config.batchSize % config.gradAccum != 0)
    usage(fmt::format("--batch {} is not a multiple of --grad-accum {}; each "
                      "micro-batch must have the same number of sequences",
                      config.batchSize, config.gradAccum));
  if (config.autocastBf16 && model.dtype != torch::kFloat32)
    usage("--dtype bf16 keeps f32 weights; the configuration has another "
          "weight dtype");
  atLeast("steps", config.steps, 1);
  const TaskOptions &task = config.taskOptions;
  atLeast("train-len", task.trainLength, 0);
  atLeast("train-min-len", task.trainMinLength, 0);
  atLeast("eval-min-len", task.evalMinLength, 0);
  atLeast("eval-max-len", task.evalMaxLength, 0);
  atLeast("eval-step", task.evalStep, 0);
  atLeast("context-len", task.contextLength, 0);
  atLeast("alphabet", task.alphabetSize, 0);
  atLeast("eval-count", config.evalCount, 1);
  atLeast("eval-batch", config.evalBatch, 1);

  const OptimizerConfig &optimizer = config.optimizer;
  positive("lr", optimizer.lr);
  if (!(optimizer.weightDecay >= 0))
    usage(fmt::format("--weight-decay must be at least 0, got {}",
                      optimizer.weightDecay));
  inRange("beta1", optimizer.beta1, 0, 1, /*highOpen=*/true);
  inRange("beta2", optimizer.beta2, 0, 1, /*highOpen=*/true);
  positive("adam-eps", optimizer.eps);
  if (!(optimizer.clipNorm >= 0))
    usage(fmt::format("--clip must be at least 0 (0: no clipping), got {}",
                      optimizer.clipNorm));
  atLeast("warmup", optimizer.warmupSteps, 0);
  inRange("min-lr-ratio", optimizer.minLrRatio, 0, 1, /*highOpen=*/false);

  if (optimizer.warmupSteps > 0 && optimizer.warmupSteps >= config.steps)
    usage(fmt::format("--warmup {} must be below --steps {}",
                      optimizer.warmupSteps, config.steps));
  atLeast("log-every", config.logEvery, 1);
  atLeast("eval-every", config.evalEvery, 0);
  atLeast("checkpoint-every", config.checkpointEvery, 0);
  atLeast("nonfinite-limit", config.nonFiniteLimit, 1);
  atLeast("threads", config.threads, 0);
  atLeast("dist-timeout", config.distTimeout, 1);
  atLeast("bucket-mib", config.bucketMiB, 1);
  if (config.bucketMiB > (int64_t(1) << 20))
    usage(fmt::format("--bucket-mib must be at most 1048576 (1 TiB), got {}",
                      config.bucketMiB));

  const std::string &device = config.device;
  bool deviceOk = device == "cpu" || device == "cuda";
  if (device.rfind("cuda:", 0) == 0 && device.size() > 5)
    deviceOk = std::all_of(device.begin() + 5, device.end(),
                           [](char c) { return c >= '0' && c <= '9'; });
  if (!deviceOk)
    usage(fmt::format("--device: unknown value '{}'; expected cpu, cuda or "
                      "cuda:<index>",
                      device));
  if (config.tf32 && device == "cpu")
    usage("--tf32 on lets f32 matrix products on CUDA use TF32 tensor cores; "
          "this run trains on cpu (use --device cuda, or leave --tf32 off)");
}

void checkFreshOutputDirectory(const fs::path &directory) {
  std::error_code error;
  if (!fs::exists(directory, error))
    return;
  if (!fs::is_directory(directory, error))
    usage(fmt::format("--out {}: exists and is not a directory",
                      directory.string()));
  if (fs::exists(directory / "config.json", error))
    usage(fmt::format("--out {}: holds a previous run; continue it with "
                      "--resume {} or choose a fresh directory",
                      directory.string(), directory.string()));
  if (!fs::is_empty(directory, error))
    usage(fmt::format("--out {}: exists and is not empty; choose a fresh "
                      "directory",
                      directory.string()));
}

} // namespace fp::rt
