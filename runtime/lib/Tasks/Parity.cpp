//===- Parity.cpp - The parity task -----------------------------*- C++ -*-===//
//
// Parity of a bit string (docs/spec.md §7.3, last paragraph; configs of the
// reference's arithmetic experiments): a sample of n tokens holds n − 1 bits
// drawn uniformly from {1, 2} and, at position n − 1, the answer
// (#2s mod 2) + 1. Token 0 is padding. As in the reference's masked
// formal-language datasets, inputs = sample[:-1] (the answer is never an
// input) and the only supervised position is the last bit, whose target is
// the answer.
//
//===----------------------------------------------------------------------===//

#include "Random.h"
#include "TaskImpl.h"

using namespace fp::rt;
using namespace fp::rt::detail;

namespace {

constexpr int64_t kPad = 0;
constexpr int64_t kVocab = 3;
/// Shortest sample: one bit and the answer.
constexpr int64_t kShortestSample = 2;

class ParityTask final : public TaskBase {
public:
  explicit ParityTask(TaskOptions resolved) : TaskBase("parity", resolved) {}

  int64_t vocabSize() const override { return kVocab; }

  TaskDefaults defaults() const override {
    TaskDefaults d;
    d.lr = 1e-3;
    d.weightDecay = 0.0;
    d.clipNorm = 0.0;
    d.schedule = Schedule::WarmupCosine;
    d.warmupSteps = 200; // reference 2,000 of 20,000
    d.minLrRatio = 1e-3;
    d.batchSize = 64; // reference 256
    d.steps = 2000;   // reference 20,000
    d.decay = DecayRule::AllButSsm;
    d.padVocabMultiple = 4;
    d.normEps = 1e-6;
    return d;
  }

  Batch trainBatch(int64_t batchSize, uint64_t seed,
                   int64_t step) const override {
    checkCount(taskName, "batch size", batchSize);
    std::vector<std::vector<int64_t>> bits(batchSize);
    forEachRow(batchSize, [&](int64_t row) {
      SequenceRng rng(seed, StreamDomain::Train, static_cast<uint64_t>(step),
                      static_cast<uint64_t>(row));
      int64_t n = rng.uniform(resolved.trainMinLength, resolved.trainLength);
      bits[row] = drawBits(rng, n - 1);
    });
    return encode(bits);
  }

  Batch evalBatch(int64_t length, int64_t count, uint64_t seed) const override {
    checkEvalLength(taskName, length, kShortestSample);
    checkCount(taskName, "evaluation count", count);
    std::vector<std::vector<int64_t>> bits(count);
    forEachRow(count, [&](int64_t row) {
      SequenceRng rng(seed, StreamDomain::Eval, static_cast<uint64_t>(length),
                      static_cast<uint64_t>(row));
      bits[row] = drawBits(rng, length - 1);
    });
    return encode(bits);
  }

private:
  static std::vector<int64_t> drawBits(SequenceRng &rng, int64_t count) {
    std::vector<int64_t> bits(count);
    for (int64_t &bit : bits)
      bit = rng.uniform(1, 2);
    return bits;
  }

  /// inputs: the bits, right-padded with 0 to the longest row; targets:
  /// ignored except at the last bit, whose target is the answer.
  static Batch encode(const std::vector<std::vector<int64_t>> &bits) {
    auto rows = static_cast<int64_t>(bits.size());
    size_t longest = 0;
    for (const auto &row : bits)
      longest = std::max(longest, row.size());
    auto cols = static_cast<int64_t>(longest);
    Batch batch{filledIds(rows, cols, kPad),
                filledIds(rows, cols, kIgnoreIndex)};
    int64_t *inputs = batch.inputs.data_ptr<int64_t>();
    int64_t *targets = batch.targets.data_ptr<int64_t>();
    forEachRow(rows, [&](int64_t row) {
      const std::vector<int64_t> &b = bits[row];
      int64_t twos = 0;
      for (size_t p = 0; p < b.size(); ++p) {
        inputs[row * cols + p] = b[p];
        twos += b[p] == 2 ? 1 : 0;
      }
      targets[row * cols + b.size() - 1] = twos % 2 + 1;
    });
    return batch;
  }
};

} // namespace

std::unique_ptr<Task>
fp::rt::detail::makeParityTask(const TaskOptions &options) {
  const std::string name = "parity";
  rejectOption(name, "contextLength", options.contextLength);
  rejectOption(name, "alphabetSize", options.alphabetSize);
  LengthDefaults lengths;
  lengths.trainMax = 40;
  lengths.trainMin = 3;
  lengths.evalMin = 40;
  lengths.evalMax = 160;
  lengths.evalStep = 40;
  lengths.smallestTrain = kShortestSample;
  lengths.smallestEval = kShortestSample;
  return std::make_unique<ParityTask>(resolveLengths(name, options, lengths));
}
