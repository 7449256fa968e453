//===- CatBabiTest.cpp - The catbabi task on bAbI files written here -----===//
//
// bAbI itself cannot be downloaded here, so the tests write small files in
// its exact format (line ids counting up within a story and 1 starting the
// next, statements, questions with a tab, the answer and the supporting
// fact ids). Checks: the words and targets of a story; the vocabulary's
// order; training batches are whole stories laid out in streams and a pure
// function of (batch size, seed, step); the validation and test layouts
// cover their split exactly once; scores per bAbI task; and every malformed
// line or missing file is refused naming the file and line.
//
//===----------------------------------------------------------------------===//

#include "TaskTestUtil.h"

#include "fp/Runtime/Tasks/Task.h"
#include "fp/Runtime/Tasks/TokenCorpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

using namespace fp::rt;
using fp::rt::test::rowsOf;
using fp::rt::test::testSeed;
using testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

/// One story of task `task` (1-based) in bAbI's format: `n` pairs of a move
/// and a question about it, the answers carrying the task so that the
/// splits' vocabularies differ.
std::string story(int task, int index, int n) {
  static const char *const people[] = {"Mary", "John", "Daniel", "Sandra"};
  std::string text;
  int line = 1;
  for (int i = 0; i < n; ++i) {
    const char *who = people[(index + i) % 4];
    std::string where = fmt::format("room{}", (task * 7 + index * 3 + i) % 9);
    text += fmt::format("{} {} went to the {}.\n", line++, who, where);
    text +=
        fmt::format("{} Where is {}? \t{}\t{}\n", line, who, where, line - 1);
    ++line;
  }
  return text;
}

/// A directory of the 60 files, removed at the end; `stories` per file.
struct BabiDir {
  explicit BabiDir(const std::string &tag, int stories = 3)
      : path(fs::temp_directory_path() /
             ("fp-catbabi-test-" + std::to_string(::getpid()) + "-" + tag)) {
    fs::remove_all(path);
    fs::create_directories(path);
    for (int task = 1; task <= 20; ++task)
      for (const char *split : {"train", "valid", "test"}) {
        std::string text;
        for (int s = 0; s < stories; ++s)
          text += story(task, s + (split[0] == 't' ? 0 : 5), 2 + s % 3);
        write(fmt::format("qa{}_{}.txt", task, split), text);
      }
  }
  ~BabiDir() { fs::remove_all(path); }
  void write(const std::string &name, const std::string &text) const {
    std::ofstream(path / name, std::ios::binary) << text;
  }
  std::unique_ptr<Task> task(int64_t chunk = 0) const {
    TaskOptions options;
    options.dataPaths = {path.string()};
    options.contextLength = chunk;
    return makeTask("catbabi", options);
  }
  fs::path path;
};

/// The message makeTask() throws for the data in `dir`.
std::string dataError(const BabiDir &dir) {
  try {
    dir.task();
  } catch (const DataError &error) {
    return error.what();
  }
  ADD_FAILURE() << "the data was accepted";
  return "";
}

std::string optionError(const TaskOptions &options) {
  try {
    makeTask("catbabi", options);
  } catch (const std::invalid_argument &error) {
    return error.what();
  }
  ADD_FAILURE() << "the options were accepted";
  return "";
}

/// Cuts `rows` (one stream's consecutive chunks) back into its stories:
/// each starts with <eos> (id 1); padding (id 0) ends the stream.
std::vector<std::vector<int64_t>>
storiesOf(const std::vector<std::vector<int64_t>> &rows) {
  std::vector<std::vector<int64_t>> stories;
  for (const auto &row : rows)
    for (int64_t id : row) {
      if (id == 0)
        return stories;
      if (id == 1)
        stories.emplace_back();
      EXPECT_FALSE(stories.empty()) << "a stream starts inside a story";
      if (!stories.empty())
        stories.back().push_back(id);
    }
  return stories;
}

TEST(CatBabiTest, StoriesBecomeTokensWithTheAnswerAtTheQuestionMark) {
  BabiDir dir("tokens", 1);
  // Every file holds the same story, with upper case and bAbI's space
  // before the tab.
  for (int task = 1; task <= 20; ++task)
    for (const char *split : {"train", "valid", "test"})
      dir.write(fmt::format("qa{}_{}.txt", task, split),
                "1 Mary moved to the Bathroom.\n"
                "2 Where is Mary? \tbathroom\t1\n");
  auto task = dir.task(/*chunk=*/12);
  // <pad> <eos> mary moved to the bathroom . where is ?
  EXPECT_EQ(task->vocabSize(), 11);
  const std::vector<int64_t> words = {1, 2, 3, 4, 5, 6, 7, 8, 9, 2, 10, 6};
  std::vector<int64_t> targets(12, kIgnoreIndex);
  targets[10] = 6; // at "?", the answer
  // The test split as one stream, cut at the story's length: one story a
  // row, every bAbI task once.
  Batch test = task->evalBatch(12, /*count=*/1000, /*seed=*/0);
  ASSERT_EQ(test.inputs.size(0), 20);
  for (const auto &row : rowsOf(test.inputs))
    EXPECT_EQ(row, words);
  for (const auto &row : rowsOf(test.targets))
    EXPECT_EQ(row, targets);
  torch::Tensor tasks = std::get<0>(test.groups.select(1, 0).sort());
  EXPECT_TRUE(tasks.equal(torch::arange(20, torch::kLong)));
  EXPECT_TRUE(
      test.groups.eq(test.groups.select(1, 0).unsqueeze(1)).all().item<bool>());
}

TEST(CatBabiTest, TrainingStreamsHoldWholeStoriesAndArePure) {
  BabiDir dir("streams");
  auto task = dir.task(/*chunk=*/16);
  const uint64_t seed = testSeed();
  // A stream's consecutive chunks are whole stories one after another.
  std::vector<std::vector<int64_t>> stream0;
  for (int64_t step = 0; step < 30; ++step) {
    Batch batch = task->trainBatch(4, seed, step);
    ASSERT_EQ(batch.inputs.sizes(), (std::vector<int64_t>{4, 16}));
    ASSERT_TRUE(batch.groups.defined());
    stream0.push_back(rowsOf(batch.inputs)[0]);
    // No training row is padded: the streams never run dry.
    EXPECT_FALSE(batch.inputs.eq(0).any().item<bool>());
  }
  auto stories = storiesOf(stream0);
  ASSERT_GT(stories.size(), 3u);
  for (size_t s = 0; s + 1 < stories.size(); ++s)
    EXPECT_GE(stories[s].size(), 8u) << "story " << s << " is cut short";

  // Pure in (batch size, seed, step): a fresh task (no cached streams), a
  // step visited out of order, and the same step after others agree.
  auto fresh = dir.task(16);
  Batch late = fresh->trainBatch(4, seed, 17);
  EXPECT_TRUE(fp::rt::test::sameBatch(late, task->trainBatch(4, seed, 17)));
  EXPECT_TRUE(fp::rt::test::sameBatch(fresh->trainBatch(4, seed, 3),
                                      task->trainBatch(4, seed, 3)));
  EXPECT_TRUE(late.groups.equal(task->trainBatch(4, seed, 17).groups));
  // Another seed orders the stories otherwise.
  EXPECT_FALSE(fp::rt::test::sameBatch(task->trainBatch(4, seed + 1, 17),
                                       task->trainBatch(4, seed, 17)));
}

TEST(CatBabiTest, EvaluationLayoutsCoverTheirSplitOnce) {
  BabiDir dir("layouts");
  auto task = dir.task(/*chunk=*/24);
  // The test split, one stream: its stories in a fixed order, each once.
  Batch test = task->evalBatch(24, /*count=*/100000, /*seed=*/1);
  auto stories = storiesOf(rowsOf(test.inputs));
  EXPECT_EQ(stories.size(), 60u);
  // Only the last row is padded.
  torch::Tensor padded = test.inputs.eq(0).any(1);
  EXPECT_EQ(padded.sum().item<int64_t>(), padded[-1].item<int64_t>());
  // Another seed gives the same test set; a count keeps its first rows.
  EXPECT_TRUE(fp::rt::test::sameBatch(task->evalBatch(24, 100000, 2), test));
  Batch first = task->evalBatch(24, 5, 1);
  EXPECT_TRUE(fp::rt::test::sameBatch(first, test.rows(0, 5)));

  // The validation split in 128 streams: every question once, each group's
  // count that of its file (each story of n moves asks n questions).
  Batch validation = task->validationBatch(100000, 7);
  int64_t perTask = 0;
  for (int s = 0; s < 3; ++s)
    perTask += 2 + s % 3;
  torch::Tensor supervised = validation.targets.ne(kIgnoreIndex);
  EXPECT_EQ(supervised.sum().item<int64_t>(), 20 * perTask);
  for (int64_t g = 0; g < 20; ++g)
    EXPECT_EQ((supervised & validation.groups.eq(g)).sum().item<int64_t>(),
              perTask)
        << "qa" << g + 1;
  EXPECT_EQ(task->groupNames().size(), 20u);
  EXPECT_EQ(task->groupNames().front(), "qa1");
  EXPECT_EQ(task->evalLengths(), (std::vector<int64_t>{24}));
}

TEST(CatBabiTest, ScoresAreReportedPerTask) {
  BabiDir dir("scores");
  auto task = dir.task(/*chunk=*/24);
  Batch batch = task->validationBatch(100000, 7);
  const int64_t classes = paddedVocabSize(task->vocabSize(), 8);
  // Logits right at task 1's questions and wrong at the others'.
  torch::Tensor targets = batch.targets.clamp_min(0);
  torch::Tensor right = batch.groups.eq(0);
  torch::Tensor predicted =
      torch::where(right, targets, (targets + 1) % task->vocabSize());
  torch::Tensor logits =
      torch::one_hot(predicted, classes).to(torch::kDouble) * 10;
  Scores scores = task->score(logits, batch);
  ASSERT_EQ(scores.groupTokens.size(), 20u);
  int64_t total = 0;
  for (int64_t g = 0; g < 20; ++g) {
    EXPECT_GT(scores.groupTokens[g], 0);
    EXPECT_EQ(scores.groupHits[g], g == 0 ? scores.groupTokens[g] : 0);
    total += scores.groupTokens[g];
  }
  EXPECT_EQ(total, scores.tokens);
  EXPECT_DOUBLE_EQ(scores.tokenAccuracy,
                   double(scores.groupTokens[0]) / double(scores.tokens));
}

TEST(CatBabiTest, MalformedLinesAreRefusedWithFileAndLine) {
  struct Case {
    std::string text, expected;
  };
  const std::vector<Case> cases = {
      {"1 Mary went home.\nx John left.\n", ":2: expected '<line id> <text>'"},
      {"1 Mary went home.\n3 John left.\n", ":2: line id 3 follows 1"},
      {"2 Mary went home.\n", ":1: the first story starts at line id 2"},
      {"1 Mary went home.\n2 Where is Mary \thome\t1\n",
       ":2: a question line must end its question with '?'"},
      {"1 Mary went home.\n2 Where is Mary? \t\t1\n",
       ":2: the answer after the question's tab must be one word"},
      {"1 Mary went home.\n2 Where is Mary? \tthe home\t1\n",
       ":2: the answer after the question's tab must be one word"},
      {"1\n", ":1: expected '<line id> <text>'"},
  };
  for (const Case &c : cases) {
    BabiDir dir("malformed", 1);
    dir.write("qa7_valid.txt", c.text);
    std::string message = dataError(dir);
    EXPECT_THAT(message, HasSubstr("qa7_valid.txt" + c.expected)) << c.text;
  }
}

TEST(CatBabiTest, MissingDataAndOptionsAreRefused) {
  {
    BabiDir dir("missing", 1);
    fs::remove(dir.path / "qa3_test.txt");
    fs::remove(dir.path / "qa20_train.txt");
    std::string message = dataError(dir);
    EXPECT_THAT(message, HasSubstr("2 of the 60 bAbI files are missing"));
    EXPECT_THAT(message, HasSubstr("qa3_test.txt"));
    EXPECT_THAT(message, HasSubstr("qa20_train.txt"));
  }
  {
    BabiDir dir("empty", 1);
    for (int task = 1; task <= 20; ++task)
      dir.write(fmt::format("qa{}_test.txt", task), "");
    EXPECT_THAT(dataError(dir), HasSubstr("the test files hold no story"));
  }
  TaskOptions options;
  EXPECT_THAT(optionError(options), HasSubstr("--data must name one"));
  options.dataPaths = {"/nonexistent/babi"};
  try {
    makeTask("catbabi", options);
    ADD_FAILURE() << "a missing directory was accepted";
  } catch (const DataError &error) {
    EXPECT_THAT(error.what(), HasSubstr("'/nonexistent/babi': not a "
                                        "directory"));
  }
  options.vocabSize = 50;
  EXPECT_THAT(optionError(options),
              HasSubstr("option vocabSize does not apply"));
  options.vocabSize = 0;
  options.trainLength = 50;
  EXPECT_THAT(optionError(options),
              HasSubstr("the training length is the chunk"));
}

TEST(CatBabiTest, ARecordedTokenCountMustStillHold) {
  BabiDir dir("counts", 2);
  TaskOptions options = dir.task()->options();
  EXPECT_EQ(options.contextLength, 200);
  EXPECT_GT(options.trainTokens, 0);
  options.trainTokens += 1;
  try {
    makeTask("catbabi", options);
    ADD_FAILURE() << "changed data was accepted";
  } catch (const DataError &error) {
    EXPECT_THAT(error.what(), HasSubstr("the data changed"));
  }
}

} // namespace
