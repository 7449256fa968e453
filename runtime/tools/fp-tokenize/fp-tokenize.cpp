//===- fp-tokenize.cpp - Text to a token directory, once --------*- C++ -*-===//
//
// Tokenises text files the way fp-train --task lm reads them (documents as
// `EOS text EOS`, the byte-level tokenizer or GPT-2's BPE) and writes a
// token directory: train.bin and val.bin, bare little-endian uint16 ids
// (nanoGPT's layout), and meta.json, which tells fp-train what the ids are.
// The validation split is the one fp-train holds out of the same text (the
// stream's last --val-fraction), or --val-data's files, so a run on the
// directory reads the blocks a run on the text would, without tokenising at
// every start and resume.
//
// Every file is written to a temporary name and renamed into place; meta.json
// comes last (an existing one is removed first), so a directory with a
// meta.json is whole, and fp-train checks the token counts it records.
//
// Exit status: 0 done; 1 an error while writing; 2 a bad command line or bad
// input (one line on stderr).
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Tasks/TokenCorpus.h"
#include "fp/Runtime/Train/CommandLine.h"
#include "fp/Runtime/Train/ToolArguments.h"
#include "fp/Runtime/Train/Trainer.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

using namespace fp::rt;
namespace fs = std::filesystem;

namespace {

constexpr const char *kUsage =
    "usage: fp-tokenize TEXT... --out DIR [--tokenizer DIR] [--doc-sep TEXT]\n"
    "                   [--val-fraction F | --val-data TEXT,...] [--force]\n"
    "\n"
    "Tokenises text files once into a token directory for\n"
    "fp-train --task lm --data DIR: train.bin and val.bin (bare little-endian\n"
    "uint16 ids, nanoGPT's layout) and meta.json (docs/tasks.md, lm). The\n"
    "split is the one fp-train makes of the same text.\n"
    "\n"
    "  --out DIR            the directory to write (made if missing)\n"
    "  --tokenizer DIR      GPT-2's BPE files (vocab.json and merges.txt, or\n"
    "                       encoder.json and vocab.bpe) [default: the\n"
    "                       byte-level tokenizer]\n"
    "  --doc-sep TEXT       a line holding exactly TEXT ends a document\n"
    "                       (\"%\" in fortune files) [default: a document a "
    "file]\n"
    "  --val-fraction F     the share of the stream's end held out for\n"
    "                       validation [default: 0.05]\n"
    "  --val-data TEXT,...  text files to tokenise into val.bin instead\n"
    "  --force              replace train.bin, val.bin and meta.json in DIR\n";

struct Options {
  std::vector<fs::path> texts;
  std::vector<fs::path> validationTexts;
  fs::path out;
  fs::path tokenizer;
  std::string documentSeparator;
  double validationFraction = kDefaultValidationFraction;
  bool fractionGiven = false;
  bool force = false;
};

[[noreturn]] void usage(const std::string &message) {
  throw UsageError(message);
}

std::vector<fs::path> commaSeparated(const std::string &flag,
                                     const std::string &text) {
  std::vector<fs::path> paths;
  for (const std::string &path : splitAtCommas(text)) {
    if (path.empty())
      usage(fmt::format("--{}: an empty file name in '{}'", flag, text));
    paths.emplace_back(path);
  }
  return paths;
}

Options parse(const std::vector<std::string> &args, bool &help) {
  Options options;
  bool validationGiven = false;
  ToolArguments arguments(args);
  while (arguments.next()) {
    if (arguments.isHelp()) {
      help = true;
      return options;
    }
    const std::string &flag = arguments.flag();
    if (flag.empty()) {
      options.texts.emplace_back(arguments.argument());
    } else if (flag == "out") {
      options.out = arguments.value();
    } else if (flag == "tokenizer") {
      options.tokenizer = arguments.value();
      if (options.tokenizer.empty())
        usage("--tokenizer: an empty path");
    } else if (flag == "doc-sep") {
      options.documentSeparator = arguments.value();
    } else if (flag == "val-fraction") {
      options.validationFraction = arguments.number(
          [](double x) { return x > 0 && x < 1; }, "in (0, 1)");
      options.fractionGiven = true;
    } else if (flag == "val-data") {
      options.validationTexts = commaSeparated(flag, arguments.value());
      validationGiven = true;
    } else if (flag == "force") {
      options.force = true;
    } else {
      usage(fmt::format("unknown flag '--{}' (fp-tokenize --help lists them)",
                        flag));
    }
  }
  if (options.texts.empty())
    usage("give the text files to tokenise");
  if (options.out.empty())
    usage("--out is required: the directory to write train.bin, val.bin "
          "and meta.json into");
  if (validationGiven && options.fractionGiven)
    usage("give --val-fraction or --val-data, not both");
  return options;
}

/// The files fp-tokenize writes into `out`.
struct OutputFiles {
  fs::path train, validation, meta;
  explicit OutputFiles(const fs::path &out)
      : train(out / "train.bin"), validation(out / "val.bin"),
        meta(out / TokenDirectoryMeta::kFileName) {}
};

/// Refuses, before any work, to replace the token files in `out` unless
/// --force.
void checkOutput(const Options &options, const OutputFiles &files) {
  std::error_code error;
  if (fs::exists(options.out, error) && !fs::is_directory(options.out, error))
    usage(fmt::format("--out '{}': not a directory", options.out.string()));
  if (!options.force)
    for (const fs::path &path : {files.train, files.validation, files.meta})
      if (fs::exists(path, error))
        usage(fmt::format("'{}' exists; give --force to replace it",
                          path.string()));
}

/// Makes `out` where missing and removes its meta.json, which describes the
/// files beside it, before they change.
void prepareOutput(const Options &options, const OutputFiles &files) {
  std::error_code error;
  fs::create_directories(options.out, error);
  if (error)
    throw std::runtime_error(fmt::format(
        "cannot make '{}': {}", options.out.string(), error.message()));
  fs::remove(files.meta, error);
  if (error)
    throw std::runtime_error(fmt::format("cannot remove '{}': {}",
                                         files.meta.string(), error.message()));
}

/// The ids of `split` as a bare little-endian uint16 file.
void writeIds(const fs::path &path, const CorpusSplit &split) {
  std::string bytes(size_t(split.size()) * 2, '\0');
  for (int64_t i = 0; i < split.size(); ++i) {
    const auto id = uint32_t(split.corpus->at(split.begin + i));
    bytes[size_t(i) * 2] = char(id & 0xff);
    bytes[size_t(i) * 2 + 1] = char(id >> 8);
  }
  writeFileAtomically(path, bytes);
}

/// Tokenises `paths`, a line of progress per file.
std::shared_ptr<const TokenCorpus> tokenise(const std::vector<fs::path> &paths,
                                            CorpusOptions corpus) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  corpus.onTextFile = [&](const fs::path &path, int64_t documents,
                          int64_t ids) {
    std::error_code error;
    const auto bytes = fs::file_size(path, error);
    const double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    fmt::print(stderr, "'{}': {} documents, {} bytes, {} tokens in {:.2f} s\n",
               path.string(), documents, error ? 0 : bytes, ids, seconds);
    start = Clock::now();
  };
  return TokenCorpus::openText(paths, corpus);
}

int run(const std::vector<std::string> &args) {
  bool help = false;
  Options options = parse(args, help);
  if (help) {
    fmt::print("{}", kUsage);
    return 0;
  }
  CorpusOptions corpus;
  corpus.format = CorpusOptions::Format::Text;
  corpus.documentSeparator = options.documentSeparator;
  if (!options.tokenizer.empty()) {
    try {
      corpus.tokenizer = BpeTokenizer::open(options.tokenizer);
    } catch (const DataError &error) {
      usage(fmt::format("--tokenizer: {}", error.what()));
    }
  }
  const OutputFiles files(options.out);
  checkOutput(options, files);

  std::shared_ptr<const TokenCorpus> text = tokenise(options.texts, corpus);
  CorpusSplit train, validation;
  if (options.validationTexts.empty()) {
    std::tie(train, validation) =
        CorpusSplit::holdOut(text, options.validationFraction);
  } else {
    train = CorpusSplit::whole(text);
    validation = CorpusSplit::whole(tokenise(options.validationTexts, corpus));
  }
  if (train.size() == 0)
    throw DataError(fmt::format("{}: nothing is left for training after "
                                "holding out {} tokens for validation",
                                text->name(), validation.size()));

  prepareOutput(options, files);
  writeIds(files.train, train);
  writeIds(files.validation, validation);
  TokenDirectoryMeta meta;
  meta.vocabSize = text->vocabSize();
  meta.tokenBytes = 2;
  meta.tokenizer = corpus.tokenizer ? TokenDirectoryMeta::Tokenizer::Gpt2Bpe
                                    : TokenDirectoryMeta::Tokenizer::ByteLevel;
  if (corpus.tokenizer)
    meta.tokenizerDirectory = fs::absolute(options.tokenizer).string();
  meta.trainTokens = train.size();
  meta.validationTokens = validation.size();
  meta.documents = text->documents();
  if (validation.corpus != text)
    meta.documents += validation.corpus->documents();
  for (const std::vector<fs::path> *list :
       {&options.texts, &options.validationTexts})
    for (const fs::path &path : *list)
      meta.sources.push_back(path.string());
  meta.documentSeparator = options.documentSeparator;
  writeFileAtomically(files.meta, meta.toJson());

  fmt::print(stderr,
             "wrote '{}': train.bin {} tokens, val.bin {} tokens, "
             "vocabulary {} ({}, {} documents)\n",
             options.out.string(), train.size(), validation.size(),
             meta.vocabSize, TokenDirectoryMeta::name(meta.tokenizer),
             meta.documents);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return runTool("fp-tokenize", [&] { return run(args); });
}
