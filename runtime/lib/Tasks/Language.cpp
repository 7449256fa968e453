//===- Language.cpp - Language modelling on token data ----------*- C++ -*-===//
//
// The lm task (docs/tasks.md, "lm"; docs/spec.md §7.5): next-token prediction
// on blocks of context + 1 ids cut from a corpus (TokenCorpus.h). Training
// visits the blocks of the training split in a shuffled order per epoch;
// validation and evaluation read blocks spread evenly over the validation
// split, which is a file of its own (val.bin beside train.bin, or
// --val-data) or the held-out end of the training data.
//
//===----------------------------------------------------------------------===//

#include "DataFiles.h"
#include "TaskImpl.h"

#include "fp/Runtime/Tasks/TokenCorpus.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <tuple>

using namespace fp::rt;
using namespace fp::rt::detail;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kDefaultContext = 256;

[[noreturn]] void fail(const std::string &message) {
  throw std::invalid_argument("task 'lm': " + message);
}

/// The training and validation splits the options name, and what their ids
/// are.
struct LanguageData {
  CorpusSplit train, validation;
  TokenDirectoryMeta::Tokenizer tokenizer =
      TokenDirectoryMeta::Tokenizer::Unknown;
};

CorpusOptions corpusOptions(const TaskOptions &options) {
  CorpusOptions corpus;
  corpus.vocabSize = options.vocabSize;
  corpus.tokenBytes = options.tokenBytes != 0 ? int(options.tokenBytes) : 2;
  corpus.documentSeparator = options.documentSeparator;
  if (!options.tokenizer.empty()) {
    corpus.tokenizer = BpeTokenizer::open(options.tokenizer);
    if (corpus.vocabSize == 0)
      corpus.vocabSize = corpus.tokenizer->vocabSize();
    else if (corpus.vocabSize < corpus.tokenizer->vocabSize())
      fail(fmt::format("--vocab-size {} is smaller than the vocabulary of "
                       "the tokenizer {} ({} ids)",
                       corpus.vocabSize, options.tokenizer,
                       corpus.tokenizer->vocabSize()));
  }
  return corpus;
}

/// One token file, or text files read one after another.
std::shared_ptr<const TokenCorpus>
openCorpus(const std::vector<fs::path> &paths, const CorpusOptions &options) {
  bool anyTokens = false;
  for (const fs::path &path : paths)
    anyTokens |= path.extension() == ".bin";
  if (!anyTokens)
    return TokenCorpus::openText(paths, options);
  if (paths.size() != 1)
    throw DataError(fmt::format(
        "'{}': a token file is read alone; give one token file, a directory "
        "holding train.bin and val.bin, or text files",
        paths.front().string()));
  return TokenCorpus::open(paths.front(), options);
}

/// `corpus` with what a token directory's meta.json says of its ids: the
/// vocabulary and the id width where the command gives none, byte-level ids.
/// Throws DataError where the command contradicts it.
CorpusOptions withDirectoryMeta(const TaskOptions &options,
                                CorpusOptions corpus,
                                const TokenDirectoryMeta &meta,
                                const fs::path &metaFile) {
  using Tokenizer = TokenDirectoryMeta::Tokenizer;
  const std::string file = quoted(metaFile);
  if (meta.tokenizer == Tokenizer::ByteLevel && options.vocabSize != 0 &&
      options.vocabSize != kByteVocabSize)
    throw DataError(fmt::format("{}: the ids are byte-level, of vocabulary {}; "
                                "--vocab-size {} does not apply",
                                file, kByteVocabSize, options.vocabSize));
  if (options.vocabSize == 0)
    corpus.vocabSize = meta.vocabSize;
  else if (options.vocabSize < meta.vocabSize)
    throw DataError(fmt::format(
        "{}: the ids' vocabulary has {} ids, more than --vocab-size {}", file,
        meta.vocabSize, options.vocabSize));
  if (options.tokenBytes == 0)
    corpus.tokenBytes = meta.tokenBytes;
  else if (options.tokenBytes != meta.tokenBytes)
    throw DataError(fmt::format("{}: the ids are {} bytes each, not "
                                "--token-bytes {}",
                                file, meta.tokenBytes, options.tokenBytes));
  if (const BpeTokenizer *bpe = corpus.tokenizer.get()) {
    if (meta.tokenizer == Tokenizer::ByteLevel)
      throw DataError(fmt::format("{}: the ids are byte-level; --tokenizer "
                                  "does not apply",
                                  file));
    if (bpe->vocabSize() > corpus.vocabSize)
      throw DataError(fmt::format(
          "{}: the ids' vocabulary has {} ids, fewer than the tokenizer {} "
          "({} ids): they were made by another tokenizer",
          file, corpus.vocabSize, options.tokenizer, bpe->vocabSize()));
  }
  corpus.byteIds = meta.tokenizer == Tokenizer::ByteLevel;
  return corpus;
}

/// Throws DataError when `split` does not hold the ids `meta.json` recorded
/// for it (`recorded` < 0: none recorded).
void requireRecordedCount(const CorpusSplit &split, int64_t recorded,
                          const fs::path &metaFile) {
  if (recorded >= 0 && recorded != split.size())
    throw DataError(fmt::format(
        "{}: holds {} tokens, but {} records {}; the directory changed "
        "since it was written",
        split.corpus->name(), split.size(), quoted(metaFile), recorded));
}

LanguageData openData(const TaskOptions &options, const CorpusOptions &given) {
  std::vector<fs::path> paths(options.dataPaths.begin(),
                              options.dataPaths.end());
  std::string validationPath = options.validationPath;
  CorpusOptions corpus = given;

  // nanoGPT's layout: DIR/train.bin and DIR/val.bin, and perhaps meta.json.
  std::error_code error;
  std::optional<TokenDirectoryMeta> meta;
  fs::path metaFile;
  if (paths.size() == 1 && fs::is_directory(paths.front(), error)) {
    fs::path directory = paths.front();
    if (!fs::exists(directory / "train.bin", error))
      throw DataError(fmt::format("'{}': a data directory must hold train.bin "
                                  "(and val.bin); it has no train.bin",
                                  directory.string()));
    paths = {directory / "train.bin"};
    if (validationPath.empty()) {
      if (!fs::exists(directory / "val.bin", error))
        throw DataError(fmt::format(
            "'{}': has train.bin but no val.bin; add it or give --val-data",
            directory.string()));
      validationPath = (directory / "val.bin").string();
    }
    metaFile = directory / TokenDirectoryMeta::kFileName;
    meta = TokenDirectoryMeta::read(directory);
    if (meta)
      corpus = withDirectoryMeta(options, corpus, *meta, metaFile);
    else if (corpus.vocabSize == 0)
      throw DataError(fmt::format(
          "'{}': the vocabulary of its ids is unknown: give --vocab-size "
          "(or --tokenizer), or write {} holding {{\"vocab_size\": N}}{}",
          directory.string(), TokenDirectoryMeta::kFileName,
          fs::exists(directory / "meta.pkl", error)
              ? " (its meta.pkl, nanoGPT's, is a Python pickle, which "
                "fp-train does not read)"
              : ""));
  }

  LanguageData data;
  std::shared_ptr<const TokenCorpus> trainCorpus = openCorpus(paths, corpus);
  data.train = CorpusSplit::whole(trainCorpus);
  using Tokenizer = TokenDirectoryMeta::Tokenizer;
  if (trainCorpus->byteLevel())
    data.tokenizer = Tokenizer::ByteLevel;
  else if (corpus.tokenizer)
    data.tokenizer = Tokenizer::Gpt2Bpe;
  else if (meta)
    data.tokenizer = meta->tokenizer;
  if (!validationPath.empty()) {
    std::shared_ptr<const TokenCorpus> validation =
        openCorpus({validationPath}, corpus);
    if (validation->vocabSize() != trainCorpus->vocabSize() ||
        validation->byteLevel() != trainCorpus->byteLevel())
      throw DataError(fmt::format("{}: is {} but the training data is {}",
                                  validation->name(), validation->description(),
                                  trainCorpus->description()));
    data.validation = CorpusSplit::whole(validation);
    data.validation.name = "the validation data " + validation->name();
    data.train.name = "the training data " + trainCorpus->name();
    if (meta) {
      requireRecordedCount(CorpusSplit::whole(trainCorpus), meta->trainTokens,
                           metaFile);
      if (options.validationPath.empty())
        requireRecordedCount(CorpusSplit::whole(validation),
                             meta->validationTokens, metaFile);
    }
    return data;
  }

  // Hold out the end of the training data.
  std::tie(data.train, data.validation) =
      CorpusSplit::holdOut(trainCorpus, options.validationFraction != 0
                                            ? options.validationFraction
                                            : kDefaultValidationFraction);
  return data;
}

/// The bytes each id stands for, EOS one byte (Scores::bytes): ones for
/// byte-level ids, the tokenizer's tokens' lengths, or undefined where the
/// ids' text is unknown.
torch::Tensor bytesOfIds(const TokenCorpus &corpus,
                         const BpeTokenizer *tokenizer) {
  if (corpus.byteLevel())
    return torch::ones({corpus.vocabSize()}, torch::kFloat64);
  if (!tokenizer)
    return {};
  torch::Tensor bytes = torch::zeros({corpus.vocabSize()}, torch::kFloat64);
  auto *data = bytes.data_ptr<double>();
  for (int64_t id = 0; id < tokenizer->vocabSize(); ++id)
    data[id] =
        id == tokenizer->eos() ? 1.0 : double(tokenizer->bytes(id).size());
  return bytes;
}

/// Throws DataError when a resumed run's data no longer has the token
/// count it was started with.
void requireTokenCount(const CorpusSplit &split, int64_t recorded) {
  if (recorded != 0 && recorded != split.size())
    throw DataError(fmt::format(
        "{}: holds {} tokens, but the run was started on {}; the data "
        "changed, so the run cannot continue exactly",
        split.name, split.size(), recorded));
}

class LanguageTask final : public TaskBase {
public:
  LanguageTask(TaskOptions resolved, const LanguageData &data,
               const BpeTokenizer *tokenizer)
      : TaskBase("lm", resolved), train(data.train, resolved.contextLength),
        validation(data.validation, resolved.contextLength),
        bytesOfId(bytesOfIds(*data.train.corpus, tokenizer)),
        vocab(data.train.corpus->vocabSize()),
        idsMadeBy(TokenDirectoryMeta::name(data.tokenizer)) {
    std::string trainWhat = data.train.corpus->description();
    described = fmt::format("{}: {} tokens ({} blocks of {} + 1) for "
                            "training, {} for validation",
                            trainWhat, data.train.size(), train.blocks(),
                            resolved.contextLength, data.validation.size());
  }

  int64_t vocabSize() const override { return vocab; }
  TaskDefaults defaults() const override { return languageModelRecipe(); }
  bool isLanguageModel() const override { return true; }
  /// The common scores, and the bytes of text the targets stand for where
  /// they are known.
  Scores score(const torch::Tensor &logits, const Batch &batch) const override {
    Scores scores = Task::score(logits, batch);
    if (bytesOfId.defined()) {
      torch::Tensor targets = batch.targets.cpu();
      scores.bytes =
          bytesOfId
              .index_select(0, targets.masked_select(targets.ne(kIgnoreIndex)))
              .sum()
              .item<double>();
    }
    return scores;
  }
  std::string dataDescription() const override { return described; }
  std::string idsTokenizer() const override { return idsMadeBy; }

  Batch trainBatch(int64_t batchSize, uint64_t seed,
                   int64_t step) const override {
    checkCount(taskName, "batch size", batchSize);
    const int64_t context = resolved.contextLength;
    Batch batch{torch::empty({batchSize, context}, torch::kLong),
                torch::empty({batchSize, context}, torch::kLong)};
    forEachRow(batchSize, [&](int64_t row) {
      auto [inputs, targets] =
          train.block(train.trainBlock(seed, step, batchSize, row));
      batch.inputs[row].copy_(inputs);
      batch.targets[row].copy_(targets);
    });
    return batch;
  }

  Batch validationBatch(int64_t count, uint64_t seed) const override {
    return evalBatch(resolved.contextLength, count, seed);
  }

  /// Blocks of `length` + 1 spread evenly over the validation split: the
  /// same for every seed (the split is the held-out data).
  Batch evalBatch(int64_t length, int64_t count,
                  uint64_t /*seed*/) const override {
    checkCount(taskName, "sequence count", count);
    checkEvalLength(taskName, length, 1);
    if (length == resolved.contextLength) {
      auto [inputs, targets] = validation.spreadBlocks(count);
      return {inputs, targets};
    }
    BlockSampler sampler(validation.split(), length);
    auto [inputs, targets] = sampler.spreadBlocks(count);
    return {inputs, targets};
  }

private:
  BlockSampler train, validation;
  /// [vocabulary] the bytes each id stands for; undefined where unknown.
  torch::Tensor bytesOfId;
  int64_t vocab;
  std::string described;
  std::string idsMadeBy;
};

} // namespace

TaskDefaults fp::rt::languageModelRecipe() {
  TaskDefaults d;
  d.lr = 4e-3; // the reference's, tuned for Mamba at D = 768
  d.weightDecay = 0.1;
  d.beta1 = 0.9;
  d.beta2 = 0.95;
  d.adamEps = 1e-8;
  d.clipNorm = 1.0;
  d.schedule = Schedule::WarmupCosine;
  d.steps = 2000;             // reference 4,800 at 256 sequences of 2048
  d.warmupSteps = 200;        // 10 % of the steps
  d.minLrRatio = 1e-5 / d.lr; // cosine down to 1e-5
  d.batchSize = 16;           // reference 256 (16 × 4 accumulated × 4 GPUs)
  d.decay = DecayRule::NoBiasNoNormNoSsm;
  d.padVocabMultiple = 8;
  d.normEps = 1e-5;
  return d;
}

std::unique_ptr<Task>
fp::rt::detail::makeLanguageTask(const TaskOptions &options) {
  const int64_t context =
      options.contextLength > 0 ? options.contextLength : kDefaultContext;
  // A resumed run's options hold the resolved lengths, equal to the context.
  if ((options.trainLength != 0 && options.trainLength != context) ||
      (options.trainMinLength != 0 && options.trainMinLength != context))
    fail("the training length is the context: give --context-len, not "
         "--train-len or --train-min-len");
  if (options.alphabetSize != 0)
    fail("option alphabetSize does not apply (it is used by 'copy' only)");
  if (options.contextLength < 0)
    fail(fmt::format("contextLength must be positive (0: default {}), got {}",
                     kDefaultContext, options.contextLength));
  if (!(options.validationFraction >= 0 && options.validationFraction < 1))
    fail(fmt::format("the validation fraction must be in (0, 1), got {}",
                     options.validationFraction));
  if (options.tokenBytes != 0 && options.tokenBytes != 2 &&
      options.tokenBytes != 4)
    fail(fmt::format("token bytes must be 2 or 4, got {}", options.tokenBytes));
  if (options.vocabSize < 0)
    fail(fmt::format("the vocabulary size must be positive, got {}",
                     options.vocabSize));

  if (options.dataPaths.empty())
    fail("--data is required: a directory holding train.bin and val.bin, a "
         "token file, or text files (comma-separated)");

  LengthDefaults lengths{context, context, context, context, context, 1, 1};
  TaskOptions given = options;
  given.trainLength = context;
  TaskOptions resolved = resolveLengths("lm", given, lengths);
  resolved.contextLength = context;

  const CorpusOptions corpus = corpusOptions(resolved);
  LanguageData data = openData(resolved, corpus);
  requireTokenCount(data.train, options.trainTokens);
  requireTokenCount(data.validation, options.validationTokens);
  resolved.trainTokens = data.train.size();
  resolved.validationTokens = data.validation.size();
  // The validation split must hold a block at every evaluated length (the
  // task checks the context).
  if (resolved.evalMaxLength > context)
    BlockSampler(data.validation, resolved.evalMaxLength);
  return std::make_unique<LanguageTask>(resolved, data, corpus.tokenizer.get());
}
