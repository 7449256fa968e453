//===- Manifest.h - The JSON manifest of a model library --------*- C++ -*-===//
//
// Every model.so carries a JSON manifest (returned by fp_model_manifest())
// describing what it contains: its layers with their parameters, solver
// defaults and entry-point symbol names, the targets and dtypes compiled in,
// and optionally how the layers stack into a language model. This header
// declares the plain C++ structs the manifest parses into and the parser,
// which validates the document completely so that later code can trust it.
// The schema is documented in docs/abi.md.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_MANIFEST_H
#define FP_RUNTIME_MANIFEST_H

#include "fp/Runtime/ModelABI.h"

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fp::rt {

/// Thrown by parseManifest() when the text is not valid JSON or does not
/// follow the schema. The message says what is wrong and where, e.g.
/// "layers[0].params[1].shape[0] must be a positive integer, got -3".
class ManifestError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// How to initialise a parameter. `kind` names the initialiser (interpreted
/// by the runtime, fp/Runtime/ParamInit.h: "fan_in_uniform", "normal",
/// "ones", ...); every other numeric member of the JSON object is an argument
/// (e.g. "std": 0.02). `of` names another parameter of the same layer that
/// the initialiser reads (the weight-norm gain "row_norm" of "weight_v").
struct InitSpec {
  std::string kind;
  std::map<std::string, double> args;
  /// Empty when the manifest gives none; otherwise the name of another
  /// parameter of the same layer (checked by the parser).
  std::string of;
};

/// One trainable parameter of a layer. Parameters are passed to the entry
/// points in the order of LayerInfo::params.
struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape; ///< Every extent is positive.
  InitSpec init;
  bool weightDecay = true;
  /// Not trained (the manifest's `frozen`): held as a buffer, saved, loaded
  /// and broadcast with the parameters but given to no optimiser; the
  /// backward writes zeros for it.
  bool frozen = false;

  /// The number of elements, the product of the extents.
  int64_t numElements() const;
};

/// How a layer's backward treats the fixed point (docs/backward.md).
enum class BackwardMode {
  OneStep,   ///< Gradient of one extra application at the fixed point.
  Truncated, ///< Backpropagate through `steps` chained applications.
  Neumann,   ///< Neumann series of `steps` terms.
  Implicit,  ///< Solve the adjoint fixed point to `tolerance`.
};

/// The backward mode of a layer and its argument.
struct BackwardSpec {
  BackwardMode mode = BackwardMode::OneStep;
  int32_t steps = 0;    ///< Truncated and Neumann only.
  double tolerance = 0; ///< Implicit only.
};

/// The solver settings compiled into a layer (docs/spec.md §3); a call may
/// override some of them through fp_solver_overrides.
struct SolverDefaults {
  double tolerance = 0;      ///< Relative residual to reach, in (0, inf).
  double trainQuantile = 0;  ///< Fraction of the batch that must converge.
  int32_t maxIterTrain = 0;  ///< Iteration cap in training, >= 1.
  int32_t maxIterEval = 0;   ///< Iteration cap in evaluation, >= 1.
  double relaxStart = 0;     ///< Initial relaxation step size, in (0, 1].
  double relaxDecay = 0;     ///< Step-size decay factor, in (0, 1].
  int32_t relaxPatience = 0; ///< Non-improving steps before a decay, >= 1.
  BackwardSpec backward;
};

/// `perToken · B · T + perSample · B + fixed`: a count of a call of batch B
/// and length T.
struct CostTerms {
  double perToken = 0;
  double perSample = 0;
  double fixed = 0;

  double at(int64_t batch, int64_t seqLen) const {
    return perToken * double(batch) * double(seqLen) +
           perSample * double(batch) + fixed;
  }
};

/// One launch of a step of a layer's solver loop: the FLOPs it performs and
/// the elements it reads and writes (times the dtype's size for bytes).
struct LaunchCost {
  std::string op; ///< The IR op that launches, e.g. "fp.kernel".
  CostTerms flops;
  CostTerms elements;
};

/// The launches of a call of a layer other than the steps of its solver loop
/// (the optional `call_cost`).
struct CallCost {
  /// Whether the manifest gives it.
  bool present = false;
  /// The forward's launches outside its loop, in order.
  std::vector<LaunchCost> forward;
  /// Whether it gives the derived backward's, below.
  bool hasBackward = false;
  /// The backward's launches outside its own solve (all of them for the
  /// one-step gradient), and one step of that solve (empty without one).
  std::vector<LaunchCost> backward;
  std::vector<LaunchCost> backwardStep;
};

/// The symbol names of a layer's entry points.
struct EntryPointNames {
  std::string bufferSizes;
  std::string forward;
  std::string backward;
  /// Optional (`fp_schedule_fn`); empty where the manifest names none.
  std::string schedule;
  /// Optional (`fp_forward_chunk_fn`); empty where the library has no
  /// chunked forward for the layer.
  std::string forwardChunk;
};

/// One state a layer's chunked forward carries from a chunk to the next
/// (`chunk.states`, docs/streaming.md).
struct ChunkStateInfo {
  std::string name;
  /// The shape per sample: the state is batch x shape.
  std::vector<int64_t> shape;
};

/// One layer definition of the library.
struct LayerInfo {
  std::string name;
  int64_t dModel = 0; ///< Width D of the layer's input and output.
  EntryPointNames entryPoints;
  std::vector<ParamInfo> params;
  /// The targets whose backward the library compiled (`fpc --backward`);
  /// empty for a forward-only library.
  std::vector<fp_target> backwardTargets;
  /// Absent for layers without a fixed-point solve.
  std::optional<SolverDefaults> solver;
  /// The launches of one solver step as compiled (the optional
  /// `iteration_cost`); empty when the manifest gives none.
  std::vector<LaunchCost> iterationCost;
  /// The launches of a call outside the solver loop (`call_cost`).
  CallCost callCost;
  /// What the layer's kernels run as compiled (`schedule`: "fused", "split"
  /// or "unfused"); empty when the manifest does not say.
  std::string schedule;
  /// Whether the library also holds the layer's CUDA split schedule
  /// (`cuda_split`), and the launches of one solver step of it.
  bool hasCudaSplit = false;
  std::vector<LaunchCost> splitIterationCost;
  CallCost splitCallCost;
  /// The states of the chunked forward (`chunk.states`), where there is one.
  std::vector<ChunkStateInfo> chunkStates;

  bool hasBackward(fp_target target) const;
  bool hasChunkedForward() const { return !entryPoints.forwardChunk.empty(); }
};

/// The final normalisation of a language model.
enum class FinalNorm { None, RmsNorm, LayerNorm };

/// How the runtime assembles a language model from the layers
/// (docs/spec.md §6).
struct ModelInfo {
  /// The model's name in its source (`model NAME { ... }`); empty when the
  /// manifest gives none.
  std::string name;
  /// The vocabulary size before padding; 0 when the manifest gives none (the
  /// task then decides it).
  int64_t vocab = 0;
  int64_t dModel = 0;
  /// Layer names, bottom to top; each names an entry of Manifest::layers and
  /// may repeat (every occurrence gets its own parameters).
  std::vector<std::string> stack;
  FinalNorm finalNorm = FinalNorm::RmsNorm;
  bool tiedHead = true;
  /// Epsilon of the residual blocks' norms and of the final norm, > 0.
  double normEps = 1e-5;
  /// The embedding and head are padded to a multiple of this, >= 1.
  int64_t padVocabMultiple = 8;
};

/// A parsed and validated manifest.
struct Manifest {
  uint32_t abiVersion = 0;
  std::string generator;
  std::string source; ///< Empty when the manifest names no source file.
  std::vector<fp_target> targets;
  std::vector<fp_dtype> dtypes;
  std::vector<LayerInfo> layers;
  std::optional<ModelInfo> model;

  bool hasTarget(fp_target target) const;
  bool hasDType(fp_dtype dtype) const;
  /// The layer called `name`, or null.
  const LayerInfo *findLayer(std::string_view name) const;
};

/// Parses and validates a manifest. Throws ManifestError on malformed JSON,
/// a missing or mistyped required field, an unknown target/dtype/mode string,
/// a non-positive extent, a duplicate name, a dangling stack entry or an
/// `init.of` that names no other parameter of its layer. Unknown
/// extra keys are ignored so that newer generators stay readable.
Manifest parseManifest(std::string_view text);

/// The manifest spelling of targets, dtypes and enums ("cpu", "f32", ...).
const char *toString(fp_target target);
const char *toString(fp_dtype dtype);
const char *toString(BackwardMode mode);
const char *toString(FinalNorm norm);

} // namespace fp::rt

#endif // FP_RUNTIME_MANIFEST_H
