//===- LanguageTaskTest.cpp - The lm task on real text and token files ---===//
//
// The lm task reads English text that a Debian package ships (the fortune
// files of `fortunes`, installed by scripts/install-deps.sh) and token files
// written here. Checks: blocks are shifted cuts of the stream; the held-out
// validation split is the end of the data and never trained on; batches are
// a pure function of (seed, step); a data directory's val.bin is its
// validation set, and its meta.json says what the ids are (a directory of
// the text's ids gives the text's batches); and every bad input of the data
// is refused with a message naming the file and the problem.
//
//===----------------------------------------------------------------------===//

#include "RealText.h"
#include "TaskTestUtil.h"

#include "fp/Runtime/Tasks/Task.h"
#include "fp/Runtime/Tasks/TokenCorpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <unistd.h>

using namespace fp::rt;
using fp::rt::test::testSeed;
using testing::HasSubstr;
using testing::Not;
namespace fs = std::filesystem;

namespace {

fs::path fortunes() { return fp::test::fortuneFile(); }

/// A directory under the temporary directory, removed at the end.
struct TempDir {
  explicit TempDir(const std::string &tag)
      : path(fs::temp_directory_path() /
             ("fp-lm-test-" + std::to_string(::getpid()) + "-" + tag)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path file(const std::string &name, const std::string &bytes) const {
    std::ofstream(path / name, std::ios::binary) << bytes;
    return path / name;
  }
  fs::path path;
};

/// Bare little-endian uint16 ids.
std::string uint16Ids(const std::vector<int> &ids) {
  std::string out;
  for (int id : ids) {
    out.push_back(char(id & 0xff));
    out.push_back(char((id >> 8) & 0xff));
  }
  return out;
}

std::vector<int> range(int count, int modulo) {
  std::vector<int> ids;
  ids.reserve(size_t(count));
  for (int i = 0; i < count; ++i)
    ids.push_back(i % modulo);
  return ids;
}

TaskOptions textOptions(int64_t context) {
  TaskOptions options;
  options.dataPaths = {fortunes().string()};
  options.documentSeparator = fp::test::kFortuneSeparator;
  options.contextLength = context;
  return options;
}

/// What makeTask("lm", options) throws, or "(made)".
std::string lmError(const TaskOptions &options) {
  try {
    makeTask("lm", options);
  } catch (const std::exception &error) {
    return error.what();
  }
  return "(made)";
}

/// The scores of `task`'s validation batch on uniform logits: bytes and
/// tokens are what bits per byte is made of.
Scores validationScores(const Task &task) {
  Batch batch = task.validationBatch(8, testSeed());
  torch::Tensor logits = torch::zeros(
      {batch.targets.size(0), batch.targets.size(1), task.vocabSize()});
  return task.score(logits, batch);
}

} // namespace

TEST(LanguageTask, TextBlocksAreShiftedCutsAndTheEndIsHeldOut) {
  const int64_t context = 64;
  auto task = makeTask("lm", textOptions(context));
  auto corpus = TokenCorpus::openText({fortunes()}, [] {
    CorpusOptions options;
    options.documentSeparator = fp::test::kFortuneSeparator;
    return options;
  }());
  EXPECT_EQ(task->vocabSize(), kByteVocabSize);
  EXPECT_TRUE(task->isLanguageModel());
  // Byte-level text: a byte per target, EOS included.
  Scores scores = validationScores(*task);
  EXPECT_GT(scores.tokens, 0);
  EXPECT_EQ(scores.bytes, double(scores.tokens));
  EXPECT_EQ(task->evalLengths(), std::vector<int64_t>{context});

  // 5 % held out at the end, rounded up.
  const TaskOptions options = task->options();
  const int64_t total = corpus->size();
  EXPECT_EQ(options.validationTokens, int64_t(std::ceil(0.05 * double(total))));
  EXPECT_EQ(options.trainTokens + options.validationTokens, total);
  EXPECT_EQ(options.trainLength, context);

  // Training rows are blocks of the training split: inputs shifted by one
  // are the targets, and each row is the corpus at a block boundary before
  // the split.
  const int64_t rows = 12;
  Batch batch = task->trainBatch(rows, testSeed(), 3);
  ASSERT_EQ(batch.inputs.sizes(), torch::IntArrayRef({rows, context}));
  EXPECT_TRUE(batch.inputs.narrow(1, 1, context - 1)
                  .equal(batch.targets.narrow(1, 0, context - 1)));
  const int64_t blocks = options.trainTokens / (context + 1);
  for (int64_t row = 0; row < rows; ++row) {
    bool found = false;
    for (int64_t block = 0; block < blocks && !found; ++block)
      found = corpus->slice(block * (context + 1), context)
                  .equal(batch.inputs[row]);
    EXPECT_TRUE(found) << "row " << row << " is no training block";
  }

  // Validation rows are blocks of the held-out end, spread over it.
  Batch validation = task->validationBatch(4, testSeed());
  ASSERT_EQ(validation.inputs.size(0), 4);
  const int64_t validationBlocks = options.validationTokens / (context + 1);
  for (int64_t row = 0; row < 4; ++row) {
    int64_t begin =
        options.trainTokens + (row * validationBlocks / 4) * (context + 1);
    EXPECT_TRUE(corpus->slice(begin, context).equal(validation.inputs[row]));
    EXPECT_TRUE(
        corpus->slice(begin + 1, context).equal(validation.targets[row]));
  }
  // Asking for more than the split holds gives all of it.
  EXPECT_EQ(task->validationBatch(100000, testSeed()).inputs.size(0),
            validationBlocks);
}

TEST(LanguageTask, BatchesAreAFunctionOfSeedAndStep) {
  auto task = makeTask("lm", textOptions(32));
  auto other = makeTask("lm", textOptions(32));
  const uint64_t seed = testSeed();
  Batch first = task->trainBatch(8, seed, 5);
  task->trainBatch(8, seed, 6);
  EXPECT_TRUE(first.inputs.equal(task->trainBatch(8, seed, 5).inputs));
  EXPECT_TRUE(first.inputs.equal(other->trainBatch(8, seed, 5).inputs));
  EXPECT_FALSE(first.inputs.equal(task->trainBatch(8, seed, 4).inputs));
  EXPECT_FALSE(first.inputs.equal(task->trainBatch(8, seed + 1, 5).inputs));
  // A resumed run rebuilds the task from the options in effect.
  auto resumed = makeTask("lm", task->options());
  EXPECT_TRUE(first.inputs.equal(resumed->trainBatch(8, seed, 5).inputs));
  // Evaluation reads the validation split whatever the seed.
  EXPECT_TRUE(task->evalBatch(32, 6, seed)
                  .inputs.equal(task->evalBatch(32, 6, seed + 1).inputs));
}

TEST(LanguageTask, LongerEvaluationLengthsReadLongerBlocks) {
  TaskOptions options = textOptions(32);
  options.evalMaxLength = 96;
  auto task = makeTask("lm", options);
  EXPECT_EQ(task->evalLengths(), (std::vector<int64_t>{32, 64, 96}));
  Batch batch = task->evalBatch(96, 3, testSeed());
  EXPECT_EQ(batch.inputs.sizes(), torch::IntArrayRef({3, 96}));
  EXPECT_TRUE(
      batch.inputs.narrow(1, 1, 95).equal(batch.targets.narrow(1, 0, 95)));
}

TEST(LanguageTask, DataDirectoryUsesValBin) {
  TempDir dir("nanogpt");
  dir.file("train.bin", uint16Ids(range(1000, 300)));
  dir.file("val.bin", uint16Ids(range(100, 7)));
  TaskOptions options;
  options.dataPaths = {dir.path.string()};
  options.vocabSize = 300;
  options.contextLength = 9;
  auto task = makeTask("lm", options);
  EXPECT_EQ(task->vocabSize(), 300);
  EXPECT_EQ(validationScores(*task).bytes, 0.0); // unknown for token files
  EXPECT_EQ(task->options().trainTokens, 1000);
  EXPECT_EQ(task->options().validationTokens, 100);
  Batch validation = task->validationBatch(1000, testSeed());
  ASSERT_EQ(validation.inputs.size(0), 10); // 100 ids: ten blocks of 10
  EXPECT_EQ(validation.inputs.max().item<int64_t>(), 6);
  EXPECT_EQ(task->trainBatch(4, 0, 0).inputs.size(1), 9);
}

TEST(LanguageTask, MetaJsonGivesTheVocabularyAndByteLevelIds) {
  // A directory as fp-tokenize writes one from byte-level text: the split
  // and the bits per byte equal those of the text itself.
  TaskOptions text = textOptions(16);
  auto fromText = makeTask("lm", text);
  CorpusOptions read;
  read.documentSeparator = fp::test::kFortuneSeparator;
  std::shared_ptr<const TokenCorpus> corpus =
      TokenCorpus::openText({fortunes()}, read);
  auto [train, validation] =
      CorpusSplit::holdOut(corpus, kDefaultValidationFraction);
  auto ids = [&](const CorpusSplit &split) {
    std::vector<int> out;
    for (int64_t i = split.begin; i < split.end; ++i)
      out.push_back(int(corpus->at(i)));
    return uint16Ids(out);
  };
  TempDir dir("meta");
  dir.file("train.bin", ids(train));
  dir.file("val.bin", ids(validation));
  TokenDirectoryMeta meta;
  meta.vocabSize = kByteVocabSize;
  meta.tokenizer = TokenDirectoryMeta::Tokenizer::ByteLevel;
  meta.trainTokens = train.size();
  meta.validationTokens = validation.size();
  dir.file("meta.json", meta.toJson());

  TaskOptions options;
  options.dataPaths = {dir.path.string()};
  options.contextLength = 16;
  auto fromDirectory = makeTask("lm", options);
  EXPECT_EQ(fromDirectory->vocabSize(), kByteVocabSize);
  Scores scores = validationScores(*fromDirectory);
  EXPECT_EQ(scores.bytes, double(scores.tokens));
  EXPECT_EQ(fromDirectory->options().trainTokens,
            fromText->options().trainTokens);
  EXPECT_EQ(fromDirectory->options().validationTokens,
            fromText->options().validationTokens);
  EXPECT_THAT(fromDirectory->dataDescription(), HasSubstr("byte-level ids"));
  const uint64_t seed = testSeed();
  for (int64_t step : {0, 7, 1000}) {
    Batch a = fromText->trainBatch(5, seed, step);
    Batch b = fromDirectory->trainBatch(5, seed, step);
    EXPECT_TRUE(torch::equal(a.inputs, b.inputs)) << "step " << step;
    EXPECT_TRUE(torch::equal(a.targets, b.targets)) << "step " << step;
  }
  Batch a = fromText->validationBatch(64, seed);
  Batch b = fromDirectory->validationBatch(64, seed);
  EXPECT_TRUE(torch::equal(a.inputs, b.inputs));

  // A hand-written meta.json with the vocabulary alone: ids of unknown
  // origin, no bits per byte.
  dir.file("meta.json", R"({"vocab_size": 300})");
  auto plain = makeTask("lm", options);
  EXPECT_EQ(plain->vocabSize(), 300);
  EXPECT_EQ(validationScores(*plain).bytes, 0.0);
  // --vocab-size above the recorded vocabulary pads it.
  options.vocabSize = 400;
  EXPECT_EQ(makeTask("lm", options)->vocabSize(), 400);
}

TEST(LanguageTask, BadMetaJsonIsRefusedNamingTheFileAndTheProblem) {
  TempDir dir("badmeta");
  dir.file("train.bin", uint16Ids(range(1000, 257)));
  dir.file("val.bin", uint16Ids(range(100, 257)));
  const std::string metaFile = (dir.path / "meta.json").string();
  TaskOptions options;
  options.dataPaths = {dir.path.string()};
  options.contextLength = 9;
  auto expectError = [&](const std::string &meta, const TaskOptions &given,
                         const std::vector<std::string> &parts) {
    dir.file("meta.json", meta);
    std::string message = lmError(given);
    EXPECT_THAT(message, HasSubstr(metaFile)) << meta;
    for (const std::string &part : parts)
      EXPECT_THAT(message, HasSubstr(part)) << meta;
  };
  expectError("[1, 2]", options, {"not a JSON object"});
  expectError(R"({"vocab_size": 3)", options, {"not a JSON object"});
  expectError("{}", options, {R"(has no "vocab_size")"});
  expectError(R"({"vocab_size": -5})", options,
              {R"("vocab_size" must be a positive integer)"});
  expectError(R"({"vocab_size": "257"})", options,
              {R"("vocab_size" must be a positive integer)"});
  expectError(R"({"vocab_size": 257, "token_bytes": 3})", options,
              {R"("token_bytes" must be 2 or 4)"});
  expectError(R"({"vocab_size": 257, "tokenizer": "sentencepiece"})", options,
              {R"("tokenizer" must be "byte-level", "gpt2-bpe")"});
  expectError(R"({"vocab_size": 300, "tokenizer": "byte-level"})", options,
              {"byte-level ids have a vocabulary of 257"});
  expectError(R"({"vocab_size": 257, "sources": "a.txt"})", options,
              {R"("sources" must be a list of file names)"});
  // No meta.json and no --vocab-size.
  fs::remove(dir.path / "meta.json");
  std::string unknown = lmError(options);
  EXPECT_THAT(unknown, HasSubstr(dir.path.string()));
  EXPECT_THAT(unknown, HasSubstr("the vocabulary of its ids is unknown: give "
                                 "--vocab-size"));
  EXPECT_THAT(unknown, Not(HasSubstr("meta.pkl")));
  dir.file("meta.pkl", "\x80\x04");
  EXPECT_THAT(lmError(options),
              HasSubstr("its meta.pkl, nanoGPT's, is a Python pickle"));
  // The directory changed since meta.json was written.
  expectError(R"({"vocab_size": 257, "train_tokens": 999})", options,
              {"train.bin'", "holds 1000 tokens, but", "records 999",
               "the directory changed"});
  expectError(R"({"vocab_size": 257, "val_tokens": 12})", options,
              {"val.bin'", "holds 100 tokens, but", "records 12"});
  // The command contradicts it.
  TaskOptions smaller = options;
  smaller.vocabSize = 100;
  expectError(R"({"vocab_size": 257})", smaller,
              {"vocabulary has 257 ids, more than --vocab-size 100"});
  TaskOptions padded = options;
  padded.vocabSize = 300;
  expectError(R"({"vocab_size": 257, "tokenizer": "byte-level"})", padded,
              {"the ids are byte-level, of vocabulary 257; --vocab-size 300 "
               "does not apply"});
  TaskOptions wider = options;
  wider.tokenBytes = 4;
  expectError(R"({"vocab_size": 257})", wider,
              {"the ids are 2 bytes each, not --token-bytes 4"});
}

TEST(LanguageTask, BadDataIsRefusedNamingTheFileAndTheProblem) {
  TempDir dir("bad");
  auto expectError = [](const TaskOptions &options,
                        const std::vector<std::string> &parts) {
    std::string message = lmError(options);
    for (const std::string &part : parts)
      EXPECT_THAT(message, HasSubstr(part));
  };
  TaskOptions base;
  base.vocabSize = 50;
  base.contextLength = 4;

  // No data at all.
  expectError(TaskOptions(), {"--data is required"});
  // A missing file.
  TaskOptions missing = base;
  missing.dataPaths = {(dir.path / "absent.bin").string()};
  expectError(missing, {"absent.bin'", "no such file"});
  // A size that is not a whole number of tokens.
  TaskOptions odd = base;
  odd.dataPaths = {dir.file("odd.bin", std::string(41, '\1')).string()};
  expectError(odd, {"odd.bin'", "41 bytes is not a whole number of 2-byte"});
  // A token id at or above the vocabulary.
  TaskOptions high = base;
  high.dataPaths = {dir.file("high.bin", uint16Ids({1, 2, 77, 3})).string()};
  expectError(high, {"high.bin'", "token 77 (at index 2) is not below the "
                                  "vocabulary size 50"});
  // A token file without its vocabulary size.
  TaskOptions noVocab = base;
  noVocab.vocabSize = 0;
  noVocab.dataPaths = {dir.file("ok.bin", uint16Ids(range(200, 50))).string()};
  expectError(noVocab, {"ok.bin'", "needs its vocabulary size"});
  // An empty validation split: 200 ids, 1 % held out is 2 ids.
  TaskOptions tiny = base;
  tiny.dataPaths = noVocab.dataPaths;
  tiny.validationFraction = 0.01;
  expectError(tiny, {"the validation split of '", "ok.bin'",
                     "2 tokens hold no block of context 4 + 1"});
  // An empty validation file.
  TaskOptions emptyValidation = base;
  emptyValidation.dataPaths = noVocab.dataPaths;
  emptyValidation.validationPath = dir.file("empty.bin", "").string();
  expectError(emptyValidation, {"empty.bin'", "holds no tokens"});
  // A context longer than the data.
  TaskOptions longContext = base;
  longContext.dataPaths = noVocab.dataPaths;
  longContext.contextLength = 500;
  expectError(longContext, {"the training split of '", "ok.bin'",
                            "190 tokens hold no block of context 500 + 1"});
  // A data directory without val.bin.
  TempDir lonely("lonely");
  lonely.file("train.bin", uint16Ids(range(100, 50)));
  TaskOptions directory = base;
  directory.dataPaths = {lonely.path.string()};
  expectError(directory, {lonely.path.string(), "no val.bin"});
  // Token files are read alone.
  TaskOptions two = base;
  two.dataPaths = {noVocab.dataPaths[0], noVocab.dataPaths[0]};
  expectError(two, {"a token file is read alone"});
  // A text file of separators only.
  TaskOptions separators;
  separators.dataPaths = {dir.file("seps.txt", "%\n%\n").string()};
  separators.documentSeparator = "%";
  expectError(separators, {"seps.txt'", "holds no text"});
  // Data that changed since the run began.
  TaskOptions changed = base;
  changed.dataPaths = noVocab.dataPaths;
  changed.trainTokens = 123;
  expectError(changed, {"ok.bin'", "holds 190 tokens, but the run was "
                                   "started on 123; the data changed"});
}

TEST(LanguageTask, OptionsOfOtherTasksAreRefused) {
  TaskOptions length = textOptions(16);
  length.trainLength = 20;
  EXPECT_THAT(lmError(length), HasSubstr("give --context-len"));
  TaskOptions data;
  data.dataPaths = {fortunes().string()};
  try {
    makeTask("a5", data);
    ADD_FAILURE() << "a5 accepted --data";
  } catch (const std::invalid_argument &error) {
    EXPECT_THAT(error.what(), HasSubstr("dataPaths does not apply"));
  }
}
