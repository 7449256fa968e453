//===- CatBabi.cpp - catbAbI: bAbI stories as one token stream --*- C++ -*-===//
//
// The catbabi task (docs/tasks.md, "catbabi"; docs/spec.md §7.4): the twenty
// bAbI v1.2 tasks of the en-valid-10k files the user supplies, each story a
// sample with its questions and one-token answers inline, laid out in
// parallel streams that are cut into chunks of 200 tokens with no state
// carried between chunks. Only the answers are supervised (the "RA" mode):
// the target at every "?" is the answer that follows it.
//
//===----------------------------------------------------------------------===//

#include "Random.h"
#include "TaskImpl.h"

#include "fp/Runtime/Tasks/TokenCorpus.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>

using namespace fp::rt;
using namespace fp::rt::detail;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kDefaultChunk = 200;
/// Streams are refilled to at least this many chunks before each is cut.
constexpr int64_t kRefillChunks = 4;
/// Streams of the validation layout (the reference validates at batch 128).
constexpr int64_t kValidationStreams = 128;
constexpr int kBabiTasks = 20;
constexpr int32_t kPad = 0;
constexpr int32_t kEos = 1;
/// The one shuffle of every split's stories, the same for every run.
constexpr uint64_t kShuffleSeed = 0xcab1cab1;
/// Keys the training order's streams apart from the other tasks'.
constexpr uint64_t kOrderStream = 0xcab1;

const char *const kSplits[] = {"train", "valid", "test"};

[[noreturn]] void fail(const std::string &message) {
  throw std::invalid_argument("task 'catbabi': " + message);
}

//===----------------------------------------------------------------------===//
// Reading bAbI
//===----------------------------------------------------------------------===//

/// One story: its tokens with <eos> in front, the target of every position
/// (the answer at a "?", kIgnoreIndex elsewhere) and its bAbI task (0-based).
struct Story {
  std::vector<int32_t> inputs;
  std::vector<int32_t> targets;
  int32_t task = 0;
};

/// Words in first-appearance order after <pad> and <eos>.
class Vocabulary {
public:
  Vocabulary() {
    id("<pad>");
    id("<eos>");
  }
  int32_t id(const std::string &word) {
    auto [it, added] = ids.try_emplace(word, int32_t(words.size()));
    if (added)
      words.push_back(word);
    return it->second;
  }
  int64_t size() const { return int64_t(words.size()); }

private:
  std::unordered_map<std::string, int32_t> ids;
  std::vector<std::string> words;
};

struct BabiData {
  std::vector<Story> splits[3];
  Vocabulary vocabulary;
  int32_t questionMark = 0;
};

std::string lowered(std::string text) {
  for (char &c : text)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

/// Lower-cased words, with "." and "?" tokens of their own.
std::vector<std::string> words(const std::string &text) {
  std::string spaced;
  for (char c : lowered(text)) {
    if (c == '.' || c == '?') {
      spaced += ' ';
      spaced += c;
      spaced += ' ';
    } else {
      spaced += c;
    }
  }
  std::istringstream in(spaced);
  std::vector<std::string> out;
  for (std::string word; in >> word;)
    out.push_back(word);
  return out;
}

/// Appends the stories of one bAbI file. Throws DataError "FILE:LINE: ..."
/// for a line out of the format.
void readStories(const fs::path &path, int32_t task, BabiData &data,
                 std::vector<Story> &stories) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError(fmt::format("{}: cannot be read", path.string()));
  auto problem = [&](int64_t line, const std::string &what) {
    return DataError(fmt::format("{}:{}: {}", path.string(), line, what));
  };
  Vocabulary &vocabulary = data.vocabulary;
  int64_t previousId = 0, lineNumber = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++lineNumber;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos)
      continue;

    // "<id> <text>", the id counting up from 1 within a story.
    size_t space = line.find(' ');
    std::string idText = line.substr(0, space);
    int64_t id = 0;
    bool numeric = !idText.empty() && idText.size() < 10 &&
                   std::all_of(idText.begin(), idText.end(), [](char c) {
                     return std::isdigit(static_cast<unsigned char>(c));
                   });
    if (numeric)
      id = std::stoll(idText);
    if (!numeric || id < 1 || space == std::string::npos)
      throw problem(lineNumber,
                    fmt::format("expected '<line id> <text>' with a line id "
                                "counting from 1, got '{}'",
                                line));
    if (id == 1) {
      stories.push_back(Story{{kEos}, {}, task});
    } else if (id != previousId + 1) {
      throw problem(lineNumber,
                    previousId == 0
                        ? fmt::format("the first story starts at line id {}, "
                                      "not 1",
                                      id)
                        : fmt::format("line id {} follows {}; ids count up "
                                      "by one within a story and 1 starts "
                                      "the next",
                                      id, previousId));
    }
    previousId = id;
    Story &story = stories.back();
    const std::string text = line.substr(space + 1);

    size_t tab = text.find('\t');
    if (tab == std::string::npos) {
      // A statement.
      for (const std::string &word : words(text))
        story.inputs.push_back(vocabulary.id(word));
      continue;
    }
    // A question: "<question>?\t<answer>\t<supporting ids>".
    std::string question = text.substr(0, tab);
    size_t end = question.find_last_not_of(" \t");
    if (end == std::string::npos || question[end] != '?')
      throw problem(lineNumber, fmt::format("a question line must end its "
                                            "question with '?', got '{}'",
                                            question));
    size_t answerEnd = text.find('\t', tab + 1);
    std::string answer = lowered(text.substr(
        tab + 1, answerEnd == std::string::npos ? std::string::npos
                                                : answerEnd - tab - 1));
    if (answer.empty() || answer.find_first_of(" .?") != std::string::npos)
      throw problem(lineNumber,
                    fmt::format("the answer after the question's tab must be "
                                "one word (several are joined by ',', as "
                                "'n,w'), got '{}'",
                                answer));
    for (const std::string &word : words(question))
      story.inputs.push_back(vocabulary.id(word));
    story.inputs.push_back(vocabulary.id(answer));
  }
  if (in.bad())
    throw DataError(fmt::format("{}: read error", path.string()));
}

/// Shuffles `stories` with a fixed seed (the reference shuffles once when it
/// preprocesses).
void shuffleOnce(std::vector<Story> &stories, int split) {
  SequenceRng rng(kShuffleSeed, StreamDomain::Eval, uint64_t(split), 0);
  for (int64_t i = int64_t(stories.size()) - 1; i > 0; --i)
    std::swap(stories[size_t(i)], stories[size_t(rng.uniform(0, i))]);
}

BabiData readBabi(const fs::path &directory) {
  std::error_code error;
  if (!fs::is_directory(directory, error))
    throw DataError(fmt::format(
        "'{}': not a directory; --data names the directory of bAbI v1.2's "
        "en-valid-10k files (qa1_train.txt ... qa20_test.txt)",
        directory.string()));
  std::vector<std::string> missing;
  for (int task = 1; task <= kBabiTasks; ++task)
    for (const char *split : kSplits) {
      std::string name = fmt::format("qa{}_{}.txt", task, split);
      if (!fs::is_regular_file(directory / name, error))
        missing.push_back(name);
    }
  if (!missing.empty())
    throw DataError(fmt::format(
        "'{}': {} of the 60 bAbI files are missing ({}{}); catbabi reads "
        "the en-valid-10k directory of bAbI v1.2, tasks 1 to 20",
        directory.string(), missing.size(),
        fmt::join(missing.begin(),
                  missing.begin() + std::min<size_t>(missing.size(), 4), ", "),
        missing.size() > 4 ? ", ..." : ""));

  // Words enter the vocabulary split by split, task by task.
  BabiData data;
  for (int split = 0; split < 3; ++split)
    for (int task = 1; task <= kBabiTasks; ++task)
      readStories(directory / fmt::format("qa{}_{}.txt", task, kSplits[split]),
                  task - 1, data, data.splits[split]);
  data.questionMark = data.vocabulary.id("?");

  for (int split = 0; split < 3; ++split) {
    std::vector<Story> &stories = data.splits[split];
    if (stories.empty())
      throw DataError(fmt::format("'{}': the {} files hold no story",
                                  directory.string(), kSplits[split]));
    // Next-token targets, kept only at the questions (RA mode): the answer.
    for (Story &story : stories) {
      story.targets.assign(story.inputs.size(), int32_t(kIgnoreIndex));
      for (size_t i = 0; i + 1 < story.inputs.size(); ++i)
        if (story.inputs[i] == data.questionMark)
          story.targets[i] = story.inputs[i + 1];
    }
    shuffleOnce(stories, split);
  }
  return data;
}

//===----------------------------------------------------------------------===//
// Streams
//===----------------------------------------------------------------------===//

/// Parallel streams of concatenated stories (docs/spec.md §7.4). Before
/// every cut the shortest stream takes the next story until every stream
/// holds at least kRefillChunks chunks or the stories run out; a cut takes
/// the next `chunk` tokens of every stream.
class Streams {
public:
  Streams(int64_t count, int64_t chunk)
      : streams(size_t(count)), chunk(chunk) {}

  /// Refills from `next()`, which returns the next story's index or -1.
  template <typename Next>
  void refill(const std::vector<Story> &stories, Next &&next) {
    for (;;) {
      auto shortest = std::min_element(
          streams.begin(), streams.end(),
          [](const Stream &a, const Stream &b) { return a.size < b.size; });
      if (shortest->size >= kRefillChunks * chunk)
        return;
      int64_t story = next();
      if (story < 0)
        return;
      auto length = int64_t(stories[size_t(story)].inputs.size());
      shortest->segments.push_back({story, 0, length});
      shortest->size += length;
    }
  }

  /// Whether every stream is empty.
  bool empty() const {
    return std::all_of(streams.begin(), streams.end(),
                       [](const Stream &s) { return s.size == 0; });
  }

  /// Cuts the next chunk of every stream: `emit(stream, position, story,
  /// token)` for every token taken. Returns how many streams gave any.
  template <typename Emit> int64_t cut(Emit &&emit) {
    int64_t nonEmpty = 0;
    for (size_t s = 0; s < streams.size(); ++s) {
      Stream &stream = streams[s];
      nonEmpty += stream.size > 0;
      for (int64_t position = 0; position < chunk && stream.size > 0;) {
        Segment &front = stream.segments.front();
        int64_t take = std::min(chunk - position, front.end - front.begin);
        for (int64_t i = 0; i < take; ++i)
          emit(int64_t(s), position + i, front.story, front.begin + i);
        position += take;
        front.begin += take;
        stream.size -= take;
        if (front.begin == front.end)
          stream.segments.pop_front();
      }
    }
    return nonEmpty;
  }

private:
  struct Segment {
    int64_t story, begin, end;
  };
  struct Stream {
    std::deque<Segment> segments;
    int64_t size = 0;
  };
  std::vector<Stream> streams;
  int64_t chunk;
};

/// Rows of `chunk` positions, padded: <pad> inputs, unsupervised targets.
struct Rows {
  Rows(int64_t rows, int64_t chunk)
      : batch{filledIds(rows, chunk, kPad),
              filledIds(rows, chunk, kIgnoreIndex), filledIds(rows, chunk, 0)},
        inputs(batch.inputs.accessor<int64_t, 2>()),
        targets(batch.targets.accessor<int64_t, 2>()),
        groups(batch.groups.accessor<int64_t, 2>()) {}

  void set(int64_t row, int64_t position, const Story &story, int64_t token) {
    inputs[row][position] = story.inputs[size_t(token)];
    targets[row][position] = story.targets[size_t(token)];
    groups[row][position] = story.task;
  }

  Batch batch;
  at::TensorAccessor<int64_t, 2> inputs, targets, groups;
};

/// Every chunk of `stories` laid out in `streamCount` streams in their
/// order, chunk by chunk (the rows of one cut together), at most `limit`.
Batch evaluationRows(const std::vector<Story> &stories, int64_t streamCount,
                     int64_t chunk, int64_t limit) {
  struct Cell {
    int64_t row, position, story, token;
  };
  Streams streams(streamCount, chunk);
  int64_t nextStory = 0;
  auto next = [&]() -> int64_t {
    return nextStory < int64_t(stories.size()) ? nextStory++ : -1;
  };
  std::vector<Cell> cells;
  int64_t rows = 0;
  while (rows < limit) {
    streams.refill(stories, next);
    if (streams.empty())
      break;
    // Streams that ran dry give no row.
    std::vector<int64_t> rowOf(size_t(streamCount), -1);
    streams.cut(
        [&](int64_t stream, int64_t position, int64_t story, int64_t token) {
          int64_t &row = rowOf[size_t(stream)];
          if (row < 0)
            row = rows++;
          if (row < limit)
            cells.push_back({row, position, story, token});
        });
  }
  Rows out(std::min(rows, limit), chunk);
  for (const Cell &cell : cells)
    out.set(cell.row, cell.position, stories[size_t(cell.story)], cell.token);
  return out.batch;
}

//===----------------------------------------------------------------------===//
// The task
//===----------------------------------------------------------------------===//

/// The training streams of one (batch size, seed) at a step: cutting step s
/// needs the cuts of the steps before it, so the task keeps the last one
/// and goes on from it.
struct TrainCursor {
  TrainCursor(int64_t batchSize, uint64_t seed, int64_t chunk)
      : batchSize(batchSize), seed(seed), streams(batchSize, chunk) {}
  int64_t batchSize;
  uint64_t seed;
  int64_t step = 0;
  Streams streams;
  /// Stories drawn so far; story k is order[k mod n] of epoch k / n.
  int64_t drawn = 0;
  int64_t orderEpoch = -1;
  std::vector<int64_t> order;
};

int64_t tokenCount(const std::vector<Story> &stories) {
  int64_t tokens = 0;
  for (const Story &story : stories)
    tokens += int64_t(story.inputs.size());
  return tokens;
}

int64_t questionCount(const std::vector<Story> &stories) {
  int64_t questions = 0;
  for (const Story &story : stories)
    questions += std::count_if(story.targets.begin(), story.targets.end(),
                               [](int32_t t) { return t != kIgnoreIndex; });
  return questions;
}

class CatBabiTask final : public TaskBase {
public:
  CatBabiTask(TaskOptions resolved, BabiData data)
      : TaskBase("catbabi", std::move(resolved)), data(std::move(data)) {
    const std::vector<Story> *splits = this->data.splits;
    described = fmt::format(
        "bAbI en-valid-10k in {}: {} stories, {} tokens, {} questions for "
        "training; {} stories, {} questions for validation; {} stories, {} "
        "questions for the test; {} words; chunks of {} tokens",
        this->resolved.dataPaths.front(), splits[0].size(),
        tokenCount(splits[0]), questionCount(splits[0]), splits[1].size(),
        questionCount(splits[1]), splits[2].size(), questionCount(splits[2]),
        this->data.vocabulary.size(), this->resolved.contextLength);
  }

  int64_t vocabSize() const override { return data.vocabulary.size(); }
  std::string dataDescription() const override { return described; }

  TaskDefaults defaults() const override {
    // docs/spec.md §7.4: Adam without weight decay, no clipping, no
    // schedule, fp32, the lowest validation loss kept; batch and steps
    // scaled to a CPU (reference: 256 streams, 15,000 steps).
    TaskDefaults d;
    d.lr = 5e-4;
    d.weightDecay = 0;
    d.beta1 = 0.9;
    d.beta2 = 0.999;
    d.adamEps = 1e-8;
    d.clipNorm = 0;
    d.schedule = Schedule::Constant;
    d.batchSize = 32;
    d.steps = 1000;
    d.decay = DecayRule::All;
    d.keepBest = true;
    return d;
  }

  std::vector<std::string> groupNames() const override {
    std::vector<std::string> names;
    for (int task = 1; task <= kBabiTasks; ++task)
      names.push_back(fmt::format("qa{}", task));
    return names;
  }

  Batch trainBatch(int64_t batchSize, uint64_t seed,
                   int64_t step) const override {
    checkCount(taskName, "batch size", batchSize);
    if (step < 0)
      fail(fmt::format("step must be non-negative, got {}", step));
    const std::vector<Story> &stories = data.splits[0];
    std::lock_guard<std::mutex> lock(mutex);
    if (!cursor || cursor->batchSize != batchSize || cursor->seed != seed ||
        cursor->step > step)
      cursor.emplace(batchSize, seed, resolved.contextLength);
    TrainCursor &c = *cursor;
    auto next = [&]() -> int64_t {
      const auto n = int64_t(stories.size());
      int64_t epoch = c.drawn / n;
      if (epoch != c.orderEpoch) {
        // Every epoch visits the stories in an order of its own.
        c.order.resize(size_t(n));
        for (int64_t i = 0; i < n; ++i)
          c.order[size_t(i)] = i;
        SequenceRng rng(seed, StreamDomain::Train, kOrderStream,
                        uint64_t(epoch));
        for (int64_t i = n - 1; i > 0; --i)
          std::swap(c.order[size_t(i)], c.order[size_t(rng.uniform(0, i))]);
        c.orderEpoch = epoch;
      }
      return c.order[size_t(c.drawn++ % n)];
    };
    for (; c.step < step; ++c.step) {
      c.streams.refill(stories, next);
      c.streams.cut([](int64_t, int64_t, int64_t, int64_t) {});
    }
    Rows rows(batchSize, resolved.contextLength);
    c.streams.refill(stories, next);
    c.streams.cut(
        [&](int64_t stream, int64_t position, int64_t story, int64_t token) {
          rows.set(stream, position, stories[size_t(story)], token);
        });
    ++c.step;
    return rows.batch;
  }

  /// The validation split in 128 streams (the reference's validation
  /// batch), its first `count` chunks.
  Batch validationBatch(int64_t count, uint64_t /*seed*/) const override {
    checkCount(taskName, "sequence count", count);
    return evaluationRows(data.splits[1], kValidationStreams,
                          resolved.contextLength, count);
  }

  /// The test split as one stream (the reference tests at batch 1), cut
  /// into chunks of `length`, its first `count` chunks.
  Batch evalBatch(int64_t length, int64_t count,
                  uint64_t /*seed*/) const override {
    checkCount(taskName, "sequence count", count);
    checkEvalLength(taskName, length, 1);
    return evaluationRows(data.splits[2], 1, length, count);
  }

private:
  BabiData data;
  std::string described;
  mutable std::mutex mutex;
  mutable std::optional<TrainCursor> cursor;
};

} // namespace

std::unique_ptr<Task>
fp::rt::detail::makeCatBabiTask(const TaskOptions &options) {
  const int64_t chunk =
      options.contextLength > 0 ? options.contextLength : kDefaultChunk;
  if (options.contextLength < 0)
    fail(fmt::format("contextLength must be positive (0: default {}), got {}",
                     kDefaultChunk, options.contextLength));
  if ((options.trainLength != 0 && options.trainLength != chunk) ||
      (options.trainMinLength != 0 && options.trainMinLength != chunk))
    fail("the training length is the chunk: give --context-len, not "
         "--train-len or --train-min-len");
  const char *lmOnly = !options.validationPath.empty()   ? "validationPath"
                       : options.validationFraction != 0 ? "validationFraction"
                       : options.vocabSize != 0          ? "vocabSize"
                       : options.tokenBytes != 0         ? "tokenBytes"
                       : !options.documentSeparator.empty()
                           ? "documentSeparator"
                       : !options.tokenizer.empty() ? "tokenizer"
                                                    : nullptr;
  if (lmOnly)
    fail(fmt::format("option {} does not apply (it is used by 'lm' only; "
                     "catbabi reads the bAbI files of its --data directory)",
                     lmOnly));
  if (options.alphabetSize != 0)
    fail("option alphabetSize does not apply (it is used by 'copy' only)");
  if (options.dataPaths.size() != 1)
    fail("--data must name one directory: bAbI v1.2's en-valid-10k "
         "(qa1_train.txt ... qa20_test.txt)");

  LengthDefaults lengths{chunk, chunk, chunk, chunk, chunk, 1, 1};
  TaskOptions given = options;
  given.trainLength = chunk;
  TaskOptions resolved = resolveLengths("catbabi", given, lengths);
  resolved.contextLength = chunk;

  BabiData data = readBabi(resolved.dataPaths.front());
  // A resumed run's data must be the data it started on.
  const int64_t trainTokens = tokenCount(data.splits[0]);
  const int64_t validationTokens = tokenCount(data.splits[1]);
  if ((options.trainTokens != 0 && options.trainTokens != trainTokens) ||
      (options.validationTokens != 0 &&
       options.validationTokens != validationTokens))
    throw DataError(fmt::format(
        "'{}': holds {} training and {} validation tokens, but the run was "
        "started on {} and {}; the data changed, so the run cannot continue "
        "exactly",
        resolved.dataPaths.front(), trainTokens, validationTokens,
        options.trainTokens, options.validationTokens));
  resolved.trainTokens = trainTokens;
  resolved.validationTokens = validationTokens;
  return std::make_unique<CatBabiTask>(std::move(resolved), std::move(data));
}
