//===- Arithmetic.cpp - Modular arithmetic with brackets --------*- C++ -*-===//
//
// The Chomsky-hierarchy arithmetic task (docs/spec.md §7.3): a random bracketed
// expression over Z_5 of exactly n − 3 tokens, then '=', the result and a
// PAD. Exactly one position is supervised: the model reads '=' and predicts
// the result, which is overwritten by 0 in the input. Scores::extra is the
// scaled accuracy (acc − 1/M) / (1 − 1/M).
//
//===----------------------------------------------------------------------===//

#include "Random.h"
#include "TaskImpl.h"

using namespace fp::rt;
using namespace fp::rt::detail;

namespace {

constexpr int64_t kModulus = 5;
constexpr int64_t kPlus = 5, kMinus = 6, kTimes = 7, kOpen = 8, kClose = 9,
                  kEquals = 10, kPad = 11;
constexpr int64_t kVocab = 12;
/// Shortest sample: the reference draws max(U{min..max}, 5).
constexpr int64_t kShortestSample = 5;

int64_t mod(int64_t value) {
  return ((value % kModulus) + kModulus) % kModulus;
}

/// Appends a random expression of exactly `length` tokens to `out` and
/// returns its value (docs/spec.md §7.3, gen(ℓ)).
int64_t generate(SequenceRng &rng, int64_t length, std::vector<int64_t> &out) {
  if (length <= 4) {
    int64_t a = rng.uniform(0, kModulus - 1);
    switch (length) {
    case 1:
      out.push_back(a);
      return a;
    case 2:
      out.insert(out.end(), {kMinus, a});
      return mod(-a);
    case 3:
      out.insert(out.end(), {kOpen, a, kClose});
      return a;
    default:
      out.insert(out.end(), {kOpen, kMinus, a, kClose});
      return mod(-a);
    }
  }
  int64_t leftLength = rng.uniform(1, length - 4);
  int64_t rightLength = length - 3 - leftLength;
  int64_t op = rng.uniform(kPlus, kTimes);
  out.push_back(kOpen);
  int64_t left = generate(rng, leftLength, out);
  out.push_back(op);
  int64_t right = generate(rng, rightLength, out);
  out.push_back(kClose);
  switch (op) {
  case kPlus:
    return mod(left + right);
  case kMinus:
    return mod(left - right);
  default:
    return mod(left * right);
  }
}

/// A full sample of `n` >= 5 tokens: expression, '=', result, PAD.
std::vector<int64_t> sample(SequenceRng &rng, int64_t n) {
  std::vector<int64_t> seq;
  seq.reserve(n);
  int64_t result = generate(rng, n - 3, seq);
  seq.insert(seq.end(), {kEquals, result, kPad});
  return seq;
}

class ArithmeticTask final : public TaskBase {
public:
  explicit ArithmeticTask(TaskOptions resolved) : TaskBase("arith", resolved) {}

  int64_t vocabSize() const override { return kVocab; }

  TaskDefaults defaults() const override {
    TaskDefaults d;
    d.lr = 1e-3;
    d.weightDecay = 0.1;
    d.clipNorm = 0.0;
    d.schedule = Schedule::WarmupCosine;
    d.warmupSteps = 200; // reference 10,000 of 100,000
    d.minLrRatio = 1e-3;
    d.batchSize = 64; // reference 256
    d.steps = 2000;   // reference 100,000
    d.decay = DecayRule::AllButSsm;
    d.padVocabMultiple = 4;
    d.normEps = 1e-6;
    return d;
  }

  Batch trainBatch(int64_t batchSize, uint64_t seed,
                   int64_t step) const override {
    checkCount(taskName, "batch size", batchSize);
    std::vector<std::vector<int64_t>> samples(batchSize);
    forEachRow(batchSize, [&](int64_t row) {
      SequenceRng rng(seed, StreamDomain::Train, static_cast<uint64_t>(step),
                      static_cast<uint64_t>(row));
      int64_t n =
          std::max(rng.uniform(resolved.trainMinLength, resolved.trainLength),
                   kShortestSample);
      samples[row] = sample(rng, n);
    });
    return encode(samples);
  }

  Batch evalBatch(int64_t length, int64_t count, uint64_t seed) const override {
    checkEvalLength(taskName, length, kShortestSample);
    checkCount(taskName, "evaluation count", count);
    std::vector<std::vector<int64_t>> samples(count);
    forEachRow(count, [&](int64_t row) {
      SequenceRng rng(seed, StreamDomain::Eval, static_cast<uint64_t>(length),
                      static_cast<uint64_t>(row));
      samples[row] = sample(rng, length);
    });
    return encode(samples);
  }

  Scores score(const torch::Tensor &logits, const Batch &batch) const override {
    Scores scores = Task::score(logits, batch);
    if (scores.tokens > 0) {
      double chance = 1.0 / static_cast<double>(kModulus);
      scores.extra = (scores.tokenAccuracy - chance) / (1.0 - chance);
    }
    return scores;
  }

private:
  /// Pads the samples with PAD to the longest one; inputs = seq[:-1] with
  /// the result replaced by 0, targets = seq[1:] ignored except at '='.
  static Batch encode(const std::vector<std::vector<int64_t>> &samples) {
    auto rows = static_cast<int64_t>(samples.size());
    size_t longest = 0;
    for (const auto &seq : samples)
      longest = std::max(longest, seq.size());
    int64_t cols = static_cast<int64_t>(longest) - 1;
    Batch batch{filledIds(rows, cols, kPad),
                filledIds(rows, cols, kIgnoreIndex)};
    int64_t *inputs = batch.inputs.data_ptr<int64_t>();
    int64_t *targets = batch.targets.data_ptr<int64_t>();
    forEachRow(rows, [&](int64_t row) {
      const std::vector<int64_t> &seq = samples[row];
      auto n = static_cast<int64_t>(seq.size());
      int64_t *in = inputs + row * cols;
      for (int64_t p = 0; p < n && p < cols; ++p)
        in[p] = seq[p];
      in[n - 2] = 0;                            // the result is hidden
      targets[row * cols + n - 3] = seq[n - 2]; // read '=', predict result
    });
    return batch;
  }
};

} // namespace

std::unique_ptr<Task>
fp::rt::detail::makeArithmeticTask(const TaskOptions &options) {
  const std::string name = "arith";
  rejectOption(name, "contextLength", options.contextLength);
  rejectOption(name, "alphabetSize", options.alphabetSize);
  LengthDefaults lengths;
  lengths.trainMax = 40;
  lengths.trainMin = 3; // effectively 5 after max(·, 5), as in the reference
  lengths.evalMin = 40;
  lengths.evalMax = 160;
  lengths.evalStep = 40;
  lengths.smallestTrain = 1;
  lengths.smallestEval = kShortestSample;
  return std::make_unique<ArithmeticTask>(
      resolveLengths(name, options, lengths));
}
