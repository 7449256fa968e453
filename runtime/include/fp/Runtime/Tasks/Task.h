//===- Task.h - Sequence tasks of the paper ---------------------*- C++ -*-===//
//
// A task generates batches of token sequences on the fly, deterministically
// from a seed, scores a model's logits on them, and carries the reference's
// training defaults for itself (docs/spec.md §7). The encodings, what is
// supervised and how every length is measured are described per task in
// docs/tasks.md.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_TASKS_TASK_H
#define FP_RUNTIME_TASKS_TASK_H

#include <torch/torch.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace fp::rt {

/// Target value of positions that carry no loss and no accuracy.
inline constexpr int64_t kIgnoreIndex = -100;

/// One batch: inputs and targets, both [B, T] int64. A target equal to
/// kIgnoreIndex is not supervised.
struct Batch {
  torch::Tensor inputs;
  torch::Tensor targets;
  /// Tasks with groups (Task::groupNames()): [B, T] int64, the group of
  /// every position (catbabi: the bAbI task of its story). Undefined
  /// otherwise.
  torch::Tensor groups = {};

  /// Rows [first, first + count), every tensor narrowed alike.
  Batch rows(int64_t first, int64_t count) const {
    return {inputs.narrow(0, first, count), targets.narrow(0, first, count),
            groups.defined() ? groups.narrow(0, first, count)
                             : torch::Tensor()};
  }
};

/// How a batch was scored.
struct Scores {
  /// Mean cross-entropy over supervised positions.
  double loss = 0;
  /// Fraction of supervised positions predicted right.
  double tokenAccuracy = 0;
  /// Fraction of sequences whose supervised positions are all right (the
  /// paper's accuracy for word problems and copy).
  double sequenceAccuracy = 0;
  /// Task-specific extra metric, e.g. scaled accuracy (acc − 1/M)/(1 − 1/M)
  /// for modular arithmetic; NaN when the task has none.
  double extra = std::numeric_limits<double>::quiet_NaN();
  /// Sequences scored: rows with at least one supervised position (rows
  /// without one count in neither sequenceAccuracy nor here).
  int64_t sequences = 0;
  /// Supervised positions scored (the weight of loss and tokenAccuracy when
  /// averaging several batches).
  int64_t tokens = 0;
  /// Tasks with groups: supervised positions and right predictions per
  /// group, indexed as Task::groupNames(); empty otherwise.
  std::vector<int64_t> groupTokens = {};
  std::vector<int64_t> groupHits = {};
  /// Language modelling: the bytes of text the supervised targets stand for
  /// (EOS one byte), for bits per byte = loss / ln 2 / (bytes / tokens); 0
  /// where unknown (token files without their tokenizer) and for the other
  /// tasks.
  double bytes = 0;
};

/// Which parameters the optimiser decays (docs/spec.md §7).
enum class DecayRule {
  /// Names containing neither "bias" nor "norm", and not A_log / D
  /// (word problems, language modelling).
  NoBiasNoNormNoSsm,
  /// Everything except A_log and D (modular arithmetic).
  AllButSsm,
  /// Every parameter (copy).
  All,
};

/// Learning-rate schedule shapes.
enum class Schedule { Constant, Cosine, WarmupCosine, Linear };

/// The reference's training recipe for a task, scaled to defaults that run on
/// a CPU; every field can be overridden on the fp-train command line.
struct TaskDefaults {
  double lr = 1e-4;
  double weightDecay = 0.01;
  double beta1 = 0.9, beta2 = 0.999, adamEps = 1e-8;
  /// <= 0: no clipping.
  double clipNorm = 1.0;
  Schedule schedule = Schedule::Cosine;
  int64_t warmupSteps = 0;
  /// Final learning rate as a fraction of lr (cosine and linear schedules).
  double minLrRatio = 0.0;
  int64_t batchSize = 64;
  int64_t steps = 1000;
  DecayRule decay = DecayRule::NoBiasNoNormNoSsm;
  /// Padding multiple of the vocabulary (docs/spec.md §6).
  int64_t padVocabMultiple = 8;
  double normEps = 1e-5;
  /// Keep the parameters of the lowest validation loss (best.pt) and run
  /// the final evaluation on them (catbabi, docs/spec.md §7.4).
  bool keepBest = false;
};

/// The vocabulary size padded up to a multiple of `multiple` (docs/spec.md §6);
/// `multiple` <= 1 leaves it as is.
inline int64_t paddedVocabSize(int64_t vocabSize, int64_t multiple) {
  if (multiple <= 1)
    return vocabSize;
  return (vocabSize + multiple - 1) / multiple * multiple;
}

/// Options that shape a task instance. A field left at 0 takes the task's
/// default; Task::options() reports the values in effect.
///
/// What a length counts depends on the task (docs/tasks.md):
///   a5, s5: group elements k (the sequence has k + 1 tokens with BOS);
///   copy:   letters n of the copied string (an example has 2n + 3 tokens);
///   arith:  sample tokens n (expression + '=' + result + PAD);
///   parity: sample tokens n (n − 1 bits + the answer).
struct TaskOptions {
  /// Longest training length; 0: default.
  int64_t trainLength = 0;
  /// Evaluation lengths: [evalMinLength, evalMaxLength] (both inclusive) in
  /// steps of evalStep (0: task defaults).
  int64_t evalMinLength = 0;
  int64_t evalMaxLength = 0;
  int64_t evalStep = 0;
  /// Shortest training length; every training sequence draws its length
  /// uniformly from [trainMinLength, trainLength]. 0: the task's default
  /// (a5/s5: trainLength, i.e. fixed-length sequences).
  int64_t trainMinLength = 0;
  /// copy only: tokens per training row C, before the input/target shift
  /// (0: default 64). Must hold one example of the longest length.
  int64_t contextLength = 0;
  /// copy only: number of letters V (0: default 26).
  int64_t alphabetSize = 0;

  // lm and catbabi (docs/tasks.md): the context is contextLength (lm: 256;
  // catbabi: the chunk, 200), the data dataPaths; the other fields are lm's.

  /// The training data. lm: one directory holding train.bin and val.bin,
  /// one token file, or text files read one after another; catbabi: the
  /// directory of bAbI's en-valid-10k files.
  std::vector<std::string> dataPaths;
  /// The validation data; empty: val.bin of a data directory, else the last
  /// validationFraction of the training data, held out.
  std::string validationPath;
  /// Fraction of the data held out for validation when there is no
  /// validation file (0: default 0.05).
  double validationFraction = 0;
  /// Token files: every id is below it (text: its tokenizer's vocabulary).
  int64_t vocabSize = 0;
  /// Bare token files: bytes per id, 2 or 4 (0: 2).
  int64_t tokenBytes = 0;
  /// Text: a line holding exactly this ends a document (e.g. "%").
  std::string documentSeparator;
  /// The directory of a GPT-2 BPE tokenizer's files (BpeTokenizer.h) that
  /// text is tokenised with; empty: the byte-level tokenizer. With token
  /// files it gives the vocabulary size and bits per byte.
  std::string tokenizer;
  /// Tokens of the training and the validation split, filled in by the task;
  /// when given (a resumed run's), the data must still have them.
  int64_t trainTokens = 0;
  int64_t validationTokens = 0;
};

/// A sequence task. Implementations are immutable after construction; all
/// members are const and safe to call from several threads.
class Task {
public:
  virtual ~Task() = default;

  virtual std::string name() const = 0;
  /// Vocabulary size before padding.
  virtual int64_t vocabSize() const = 0;
  virtual TaskDefaults defaults() const = 0;

  /// The training batch for `step`, a pure function of (seed, step): int64
  /// CPU tensors, generated with the task's own random streams (never
  /// torch's generator), identical for any thread count. For the generated
  /// tasks row r depends only on (seed, step, r): a batch of B rows is the
  /// first B rows of any larger one, up to the padding width of
  /// variable-length tasks. lm's rows also depend on batchSize: step s reads
  /// the blocks s·B .. s·B + B − 1 of the run's block order.
  virtual Batch trainBatch(int64_t batchSize, uint64_t seed,
                           int64_t step) const = 0;
  /// The lengths evaluated by length generalisation, increasing, in the unit
  /// of TaskOptions' lengths.
  virtual std::vector<int64_t> evalLengths() const = 0;
  /// An evaluation batch of `count` sequences all of `length` (the unit of
  /// TaskOptions' lengths; any valid length, not only evalLengths()), a pure
  /// function of (seed, length) and independent of the training data of the
  /// same seed.
  virtual Batch evalBatch(int64_t length, int64_t count,
                          uint64_t seed) const = 0;
  /// Scores logits [B, T, V_pad] against `batch` (no gradient): mean
  /// cross-entropy over the supervised positions, taken over all V_pad
  /// classes, and argmax accuracies over all V_pad classes. The logits may
  /// live on any device and have any floating dtype; `batch` may stay on the
  /// CPU. Throws std::invalid_argument on mismatched shapes or targets
  /// outside [0, V_pad).
  virtual Scores score(const torch::Tensor &logits, const Batch &batch) const;
  /// The training loss, differentiable: the same mean cross-entropy as
  /// score() (sum over supervised positions divided by their count, 0 when
  /// there is none), computed without a host synchronisation. The targets
  /// are moved to the logits' device.
  virtual torch::Tensor loss(const torch::Tensor &logits,
                             const Batch &batch) const;
  /// The validation set: `count` sequences of the training distribution at
  /// the training length, held out from training. Default: trainBatch()
  /// rows of step 0 under `seed` (a seed the training steps never use);
  /// lm: blocks of the validation split, at most `count`.
  virtual Batch validationBatch(int64_t count, uint64_t seed) const {
    return trainBatch(count, seed, /*step=*/0);
  }
  /// The options in effect, defaults filled in.
  virtual TaskOptions options() const { return {}; }

  /// Language modelling: validation and evaluation also report perplexity
  /// exp(loss) and the tokens trained on.
  virtual bool isLanguageModel() const { return false; }
  /// Groups whose accuracy is reported apart (Batch::groups indexes
  /// them): catbabi's twenty bAbI tasks. Empty for the other tasks.
  virtual std::vector<std::string> groupNames() const { return {}; }
  /// What the task reads, for logs ("" for generated tasks).
  virtual std::string dataDescription() const { return {}; }
  /// Language modelling: what the ids are, as a token directory's meta.json
  /// names it: "byte-level" (bytes and EOS, so text in and out),
  /// "gpt2-bpe", or "unknown" (ids whose tokenizer the task does not know).
  /// Empty for the other tasks.
  virtual std::string idsTokenizer() const { return {}; }
};

/// The language-model recipe of docs/spec.md §7.5 (AdamW betas 0.9/0.95,
/// weight decay 0.1 except biases, norms and SSM parameters, clipping at 1,
/// linear warmup over 10 % of the steps then cosine to 1e-5), at a batch and
/// a length of run that fit a CPU. The lm task's defaults; `fp-train
/// --recipe lm` applies it to any task.
TaskDefaults languageModelRecipe();

/// a5 | s5 | copy | arith | parity | lm | catbabi. Throws
/// std::invalid_argument with a clear message for an unknown name or
/// impossible options, and DataError (TokenCorpus.h) for lm or catbabi data
/// that cannot be used.
std::unique_ptr<Task> makeTask(const std::string &name,
                               const TaskOptions &options = {});

/// The generated tasks, which need no data: every name makeTask() accepts
/// but "lm" and "catbabi".
std::vector<std::string> taskNames();

} // namespace fp::rt

#endif // FP_RUNTIME_TASKS_TASK_H
