//===- WordProblem.cpp - A5 / S5 word problems ------------------*- C++ -*-===//
//
// State tracking on a permutation group (docs/spec.md §7.1): a word of k
// elements drawn uniformly from A5 or S5, labelled with its prefix products.
// Token ids are the element indices of PermutationGroup (lexicographic order,
// identity 0), then [PAD], [BOS], [UNK], [EOS], [SEP], [CLS], [MASK]. Every
// position is supervised, BOS and PAD included, as in the reference (no
// ignore index).
//
//===----------------------------------------------------------------------===//

#include "Random.h"
#include "TaskImpl.h"

#include "fp/Runtime/Tasks/Groups.h"

using namespace fp::rt;
using namespace fp::rt::detail;

namespace {

/// Special tokens after the group elements, in id order.
constexpr int64_t kSpecialTokens = 7;

class WordProblemTask final : public TaskBase {
public:
  WordProblemTask(std::string name, PermutationGroup group,
                  TaskOptions resolved)
      : TaskBase(std::move(name), resolved), group(std::move(group)),
        padId(this->group.size()), bosId(this->group.size() + 1) {}

  int64_t vocabSize() const override { return group.size() + kSpecialTokens; }

  TaskDefaults defaults() const override {
    TaskDefaults d;
    d.lr = 1e-3; // reference 1e-4 at batch 512 for ~125k steps
    d.weightDecay = 0.01;
    d.clipNorm = 1.0;
    d.schedule = Schedule::Cosine;
    d.warmupSteps = 0;
    d.minLrRatio = 0.0;
    d.batchSize = 64; // reference 512
    d.steps = 2000;
    d.decay = DecayRule::NoBiasNoNormNoSsm;
    d.padVocabMultiple = 8;
    d.normEps = 1e-6;
    return d;
  }

  Batch trainBatch(int64_t batchSize, uint64_t seed,
                   int64_t step) const override {
    checkCount(taskName, "batch size", batchSize);
    std::vector<std::vector<int64_t>> words(batchSize);
    forEachRow(batchSize, [&](int64_t row) {
      SequenceRng rng(seed, StreamDomain::Train, static_cast<uint64_t>(step),
                      static_cast<uint64_t>(row));
      int64_t k =
          resolved.trainMinLength == resolved.trainLength
              ? resolved.trainLength
              : rng.uniform(resolved.trainMinLength, resolved.trainLength);
      words[row] = drawWord(rng, k);
    });
    return encode(words);
  }

  Batch evalBatch(int64_t length, int64_t count, uint64_t seed) const override {
    checkEvalLength(taskName, length, 1);
    checkCount(taskName, "evaluation count", count);
    // The stream does not depend on the length: like the reference's prefixes
    // of one test file, evalBatch(k) is a prefix of evalBatch(k' > k).
    std::vector<std::vector<int64_t>> words(count);
    forEachRow(count, [&](int64_t row) {
      SequenceRng rng(seed, StreamDomain::Eval, 0, static_cast<uint64_t>(row));
      words[row] = drawWord(rng, length);
    });
    return encode(words);
  }

private:
  std::vector<int64_t> drawWord(SequenceRng &rng, int64_t k) const {
    std::vector<int64_t> word(k);
    for (int64_t &element : word)
      element = rng.uniform(0, group.size() - 1);
    return word;
  }

  /// inputs [BOS, x_1..x_k, PAD...], targets [BOS, y_1..y_k, PAD...] with
  /// y_i = x_1 · … · x_i, right-padded to the longest word.
  Batch encode(const std::vector<std::vector<int64_t>> &words) const {
    auto rows = static_cast<int64_t>(words.size());
    size_t longest = 0;
    for (const auto &word : words)
      longest = std::max(longest, word.size());
    int64_t cols = static_cast<int64_t>(longest) + 1;

    Batch batch{filledIds(rows, cols, padId), filledIds(rows, cols, padId)};
    int64_t *inputs = batch.inputs.data_ptr<int64_t>();
    int64_t *targets = batch.targets.data_ptr<int64_t>();
    forEachRow(rows, [&](int64_t row) {
      int64_t *in = inputs + row * cols;
      int64_t *out = targets + row * cols;
      in[0] = out[0] = bosId;
      int64_t prefix = group.identity();
      const std::vector<int64_t> &word = words[row];
      for (size_t i = 0; i < word.size(); ++i) {
        prefix = group.multiply(prefix, word[i]);
        in[i + 1] = word[i];
        out[i + 1] = prefix;
      }
    });
    return batch;
  }

  PermutationGroup group;
  int64_t padId, bosId;
};

} // namespace

std::unique_ptr<Task>
fp::rt::detail::makeWordProblemTask(bool alternating,
                                    const TaskOptions &options) {
  std::string name = alternating ? "a5" : "s5";
  rejectOption(name, "contextLength", options.contextLength);
  rejectOption(name, "alphabetSize", options.alphabetSize);
  LengthDefaults lengths;
  lengths.trainMax = 16;
  lengths.trainMin = 0; // fixed length
  lengths.evalMin = 5;
  lengths.evalMax = 50;
  lengths.evalStep = 5;
  lengths.smallestTrain = 1;
  lengths.smallestEval = 1;
  TaskOptions resolved = resolveLengths(name, options, lengths);
  PermutationGroup group = alternating ? PermutationGroup::alternating(5)
                                       : PermutationGroup::symmetric(5);
  return std::make_unique<WordProblemTask>(std::move(name), std::move(group),
                                           resolved);
}
