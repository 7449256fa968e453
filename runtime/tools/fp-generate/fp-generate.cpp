//===- fp-generate.cpp - Sample from a trained language model ---*- C++ -*-===//
//
// Loads an fp-train run of the lm task (config.json and checkpoint.pt),
// encodes a prompt, and samples a continuation token by token with
// temperature, top-k and a seed, printing each token as it comes.
//
// Each new token's logits come from the model on the whole sequence so far,
// the computation the model was trained and validated with. --chunked runs
// the model in chunks instead (the prompt, then one token at a time, carrying
// each layer's state; docs/streaming.md): an eager reference model through
// its forwardChunk, a compiled one through its library's chunked forward.
// That is linear rather than quadratic in the length, and for FP-Mamba a
// different computation, since the sequential solver may reach another
// fixed point.
//
// Exit status: 0 done; 1 an error while running; 2 a bad command line or a
// run that cannot generate (one line on stderr).
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/CompiledLayer.h"
#include "fp/Runtime/Reference/LanguageModel.h"
#include "fp/Runtime/Tasks/TokenCorpus.h"
#include "fp/Runtime/Train/CommandLine.h"
#include "fp/Runtime/Train/ToolArguments.h"
#include "fp/Runtime/Train/Trainer.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace fp::rt;
namespace fs = std::filesystem;

namespace {

constexpr const char *kUsage =
    "usage: fp-generate RUN_DIR [--prompt TEXT | --prompt-file PATH |\n"
    "                   --prompt-ids ID,ID,...] [--tokens N] "
    "[--temperature X]\n"
    "                   [--top-k K] [--seed N] [--device NAME] "
    "[--threads N]\n"
    "                   [--chunked] [--ignore-eos] [--tokenizer DIR]\n"
    "\n"
    "Samples a continuation from the language model of an fp-train run\n"
    "(--task lm), printing each token as it comes (docs/training.md).\n"
    "\n"
    "  --prompt TEXT        the prompt, for runs on text or with a tokenizer\n"
    "                       [default: none, the start of a document]\n"
    "  --prompt-file PATH   the prompt read from a file\n"
    "  --prompt-ids IDS     comma-separated token ids, for token-file runs\n"
    "  --tokens N           tokens to generate [default: 200]\n"
    "  --temperature X      softmax temperature; 0: greedy [default: 1]\n"
    "  --top-k K            sample among the K likeliest; 0: all "
    "[default: 0]\n"
    "  --seed N             seed of the sampling [default: 0]\n"
    "  --device NAME        cpu, cuda or cuda:<index> [default: cpu]\n"
    "  --threads N          LibTorch intra-op threads [default: LibTorch's]\n"
    "  --chunked            run the model in chunks carrying its state, one\n"
    "                       token at a time (docs/streaming.md)\n"
    "  --ignore-eos         keep going past the end of a document\n"
    "  --tokenizer DIR      GPT-2's BPE files (vocab.json and merges.txt, or\n"
    "                       encoder.json and vocab.bpe) for a run on token\n"
    "                       files [default: the run's --tokenizer]\n";

struct Options {
  fs::path run;
  std::string prompt;
  bool promptGiven = false;
  std::vector<int64_t> promptIds;
  int64_t tokens = 200;
  double temperature = 1.0;
  int64_t topK = 0;
  uint64_t seed = 0;
  std::string device = "cpu";
  int64_t threads = 0;
  bool chunked = false;
  bool ignoreEos = false;
  fs::path tokenizer;
};

[[noreturn]] void usage(const std::string &message) {
  throw UsageError(message);
}

Options parse(const std::vector<std::string> &args, bool &help) {
  Options options;
  bool haveRun = false;
  ToolArguments arguments(args);
  while (arguments.next()) {
    if (arguments.isHelp()) {
      help = true;
      return options;
    }
    const std::string &flag = arguments.flag();
    if (flag.empty()) {
      if (haveRun)
        usage(fmt::format("unexpected argument '{}'; give one run directory",
                          arguments.argument()));
      options.run = arguments.argument();
      haveRun = true;
    } else if (flag == "prompt") {
      options.prompt = arguments.value();
      options.promptGiven = true;
    } else if (flag == "prompt-file") {
      std::string path = arguments.value();
      std::ifstream in(path, std::ios::binary);
      if (!in)
        usage(fmt::format("--prompt-file '{}': cannot read it", path));
      std::ostringstream text;
      text << in.rdbuf();
      options.prompt = text.str();
      options.promptGiven = true;
    } else if (flag == "prompt-ids") {
      for (const std::string &id : splitAtCommas(arguments.value()))
        options.promptIds.push_back(ToolArguments::parseInteger(flag, id, 0));
    } else if (flag == "tokens") {
      options.tokens = arguments.integer(1);
    } else if (flag == "temperature") {
      options.temperature =
          arguments.number([](double x) { return x >= 0; }, ">= 0");
    } else if (flag == "top-k") {
      options.topK = arguments.integer(0);
    } else if (flag == "seed") {
      options.seed = uint64_t(arguments.integer(0));
    } else if (flag == "device") {
      options.device = arguments.value();
    } else if (flag == "threads") {
      options.threads = arguments.integer(0);
    } else if (flag == "chunked") {
      options.chunked = true;
    } else if (flag == "ignore-eos") {
      options.ignoreEos = true;
    } else if (flag == "tokenizer") {
      options.tokenizer = arguments.value();
      if (options.tokenizer.empty())
        usage("--tokenizer: an empty path");
    } else {
      usage(fmt::format("unknown flag '--{}' (fp-generate --help lists them)",
                        flag));
    }
  }
  if (!haveRun)
    usage("give the run directory of an fp-train --task lm run");
  if (options.promptGiven && !options.promptIds.empty())
    usage("give the prompt as text or as ids, not both");
  return options;
}

/// The next token from `logits` [V] as the options say.
int64_t sample(const torch::Tensor &logits, const Options &options,
               at::Generator &generator) {
  if (options.temperature == 0)
    return logits.argmax().item<int64_t>();
  torch::Tensor scaled = logits.to(torch::kFloat64) / options.temperature;
  if (options.topK > 0 && options.topK < scaled.size(0)) {
    torch::Tensor threshold = std::get<0>(scaled.topk(options.topK)).min();
    scaled = scaled.masked_fill(scaled < threshold, -INFINITY);
  }
  torch::Tensor probabilities = torch::softmax(scaled, 0);
  return torch::multinomial(probabilities, 1, /*replacement=*/false, generator)
      .item<int64_t>();
}

int run(const std::vector<std::string> &args) {
  bool help = false;
  Options options = parse(args, help);
  if (help) {
    fmt::print("{}", kUsage);
    return 0;
  }
  TrainConfig config;
  std::string idsTokenizer;
  try {
    config = readRunConfig(options.run);
    idsTokenizer = readRunIdsTokenizer(options.run);
  } catch (const std::runtime_error &error) {
    usage(error.what());
  }
  if (config.task != "lm")
    usage(fmt::format("{} trained task '{}'; fp-generate needs a language "
                      "model (fp-train --task lm)",
                      options.run.string(), config.task));
  // What the run's ids are: config.json says ("ids"); a run written before
  // it did is byte-level where it read text (no --vocab-size) with no
  // tokenizer.
  const bool byteLevel =
      idsTokenizer.empty()
          ? options.tokenizer.empty() && config.taskOptions.tokenizer.empty() &&
                config.taskOptions.vocabSize == 0 &&
                config.model.vocabSize == kByteVocabSize
          : idsTokenizer == TokenDirectoryMeta::name(
                                TokenDirectoryMeta::Tokenizer::ByteLevel);
  if (byteLevel && !options.tokenizer.empty())
    usage("this run's ids are byte-level (text in and out); --tokenizer "
          "does not apply");
  // The run's tokenizer: GPT-2's BPE where the run or the command names
  // one, else bytes for byte-level ids, else none (ids in and out).
  std::shared_ptr<const BpeTokenizer> bpe;
  const fs::path bpeDirectory = !options.tokenizer.empty()
                                    ? options.tokenizer
                                    : fs::path(config.taskOptions.tokenizer);
  if (!bpeDirectory.empty()) {
    try {
      bpe = BpeTokenizer::open(bpeDirectory);
    } catch (const DataError &error) {
      usage(fmt::format("--tokenizer: {}", error.what()));
    }
    if (bpe->vocabSize() > config.model.vocabSize)
      usage(fmt::format("the tokenizer {} has {} ids, more than the model's "
                        "vocabulary of {}",
                        bpeDirectory.string(), bpe->vocabSize(),
                        config.model.vocabSize));
  }
  if (options.promptGiven && !byteLevel && !bpe)
    usage(idsTokenizer == TokenDirectoryMeta::name(
                              TokenDirectoryMeta::Tokenizer::Gpt2Bpe)
              ? "this run's ids are GPT-2's BPE; give its files with "
                "--tokenizer, or the prompt with --prompt-ids"
              : "this run read token files, whose tokenizer fp-generate does "
                "not have; give the prompt with --prompt-ids, or the "
                "tokenizer's files with --tokenizer");
  for (int64_t id : options.promptIds)
    if (id >= config.model.vocabSize)
      usage(fmt::format("--prompt-ids: {} is not below the vocabulary size {}",
                        id, config.model.vocabSize));
  if (options.threads > 0)
    torch::set_num_threads(int(options.threads));

  torch::Device device(torch::kCPU);
  try {
    device = torch::Device(options.device);
  } catch (const c10::Error &) {
    usage(fmt::format("--device: unknown value '{}'", options.device));
  }
  if (device.is_cuda() && !torch::cuda::is_available())
    usage("--device cuda: CUDA is not available; use --device cpu");

  std::shared_ptr<SequenceModel> model;
  try {
    model = config.model.kind == "compiled"
                ? std::shared_ptr<SequenceModel>(makeCompiledModel(
                      config.modelSource, config.model, config.seed))
                : makeReferenceModel(config.model);
  } catch (const std::invalid_argument &error) {
    usage(error.what());
  } catch (const LoadError &error) {
    usage(error.what());
  }
  const fs::path checkpoint = options.run / RunFiles::checkpoint;
  if (!fs::exists(checkpoint))
    usage(fmt::format("{}: no checkpoint (the run wrote none yet)",
                      checkpoint.string()));
  model->to(device);
  loadCheckpointModel(checkpoint, *model, device);
  model->eval();
  // The chunked call, where --chunked asks for one.
  std::function<torch::Tensor(const torch::Tensor &,
                              std::vector<ref::ChunkState> &)>
      forwardChunk;
  if (options.chunked) {
    if (auto eager = std::dynamic_pointer_cast<ref::LanguageModel>(model)) {
      forwardChunk = [eager](const torch::Tensor &tokens,
                             std::vector<ref::ChunkState> &state) {
        return eager->forwardChunk(tokens, state);
      };
    } else if (auto compiled =
                   std::dynamic_pointer_cast<CompiledModel>(model)) {
      for (const auto &layer : compiled->layers)
        if (!layer->info().hasChunkedForward())
          usage(fmt::format("--chunked: {} has no chunked forward (it was "
                            "compiled with `fpc --no-chunked`); recompile "
                            "it, or generate without --chunked",
                            config.modelSource));
      forwardChunk = [compiled](const torch::Tensor &tokens,
                                std::vector<ref::ChunkState> &state) {
        return compiled->forwardChunk(tokens, state);
      };
    } else {
      usage(fmt::format("--chunked runs language models; this run's model "
                        "is {}",
                        config.modelSource));
    }
  }

  // A token as it is printed: its text for byte-level or BPE ids (EOS a
  // newline), else its id.
  const int64_t eos = bpe ? bpe->eos() : kByteEos;
  auto print = [&](int64_t id) {
    if (!byteLevel && !bpe)
      fmt::print("{} ", id);
    else if (id == eos)
      std::fputc('\n', stdout);
    else if (bpe)
      std::fwrite(bpe->bytes(id).data(), 1, bpe->bytes(id).size(), stdout);
    else
      std::fputc(int(id), stdout);
  };

  // A document starts with EOS (docs/tasks.md).
  std::vector<int64_t> ids = options.promptIds;
  if (!ids.empty()) {
    for (int64_t id : ids)
      print(id);
  } else if (byteLevel) {
    ids = {kByteEos};
    for (unsigned char byte : options.prompt)
      ids.push_back(byte);
    std::fwrite(options.prompt.data(), 1, options.prompt.size(), stdout);
  } else if (bpe) {
    ids = {bpe->eos()};
    bpe->encode(options.prompt, ids);
    std::fwrite(options.prompt.data(), 1, options.prompt.size(), stdout);
  } else {
    usage("give the prompt's token ids with --prompt-ids");
  }
  std::fflush(stdout);

  torch::NoGradGuard noGrad;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  const int64_t vocab = config.model.vocabSize;
  std::vector<ref::ChunkState> state;
  torch::Tensor pending = torch::tensor(ids, torch::kLong).unsqueeze(0);
  double iterations = 0;
  int64_t solves = 0, generated = 0;
  auto start = std::chrono::steady_clock::now();
  for (; generated < options.tokens; ++generated) {
    torch::Tensor logits;
    if (forwardChunk) {
      logits = forwardChunk(pending.to(device), state);
    } else {
      logits = model->forward(
          torch::tensor(ids, torch::kLong).unsqueeze(0).to(device));
    }
    const ForwardStats &stats = model->lastStats();
    if (!stats.iterations.empty()) {
      iterations += stats.summarize().meanIterations;
      ++solves;
    }
    torch::Tensor last =
        logits[0][logits.size(1) - 1].narrow(0, 0, vocab).cpu();
    int64_t next = sample(last, options, generator);
    ids.push_back(next);
    pending = torch::tensor({next}, torch::kLong).unsqueeze(0);
    if ((byteLevel || bpe) && next == eos && !options.ignoreEos) {
      ++generated;
      break;
    }
    print(next);
    std::fflush(stdout);
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::string note = fmt::format("fp-generate: {} tokens in {:.2f} s ({:.1f} "
                                 "tokens/s)",
                                 generated, seconds, generated / seconds);
  if (solves > 0)
    note += fmt::format(", fixed-point iterations {:.1f} per {}",
                        iterations / double(solves),
                        forwardChunk ? "token" : "forward");
  fmt::print(stderr, "{}\n", note);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return runTool("fp-generate", [&] { return run(args); });
}
