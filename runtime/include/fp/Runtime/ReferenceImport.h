//===- ReferenceImport.h - Compiled layers and their references -*- C++ -*-===//
//
// Ties the compiled models of models/*.fp to the eager reference (fp/Runtime/
// Reference/): a table from each model's name to the reference ModelConfig
// that computes the same function, and the import of a reference layer's
// weights into a CompiledLayer by a name mapping. Together they let a test or
// a benchmark run the compiled and the eager layer on the same weights and
// inputs.
//
// The name mapping (compiled ← reference), identity except for:
//   D_skip                       ← D (FP-Mamba, Mamba)
//   conv_mix / conv_b / conv_lambda / conv_x .{weight,bias}
//                                ← conv1d.{weight,bias}[0 / 1 / 2 / 3] (FP-RNN)
// Weight-normalised linears keep their weight_v / weight_g names on both
// sides; the mixers of both sides use the same submodule names (mixer.u_proj,
// mixer.theta_proj, mixer.m0, ...).
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_REFERENCEIMPORT_H
#define FP_RUNTIME_REFERENCEIMPORT_H

#include "fp/Runtime/CompiledLayer.h"
#include "fp/Runtime/Reference/Layers.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace fp::rt {

/// Thrown when reference weights cannot be imported: a compiled parameter
/// without a reference counterpart, a reference weight the compiled layer
/// lacks, or a shape mismatch. The message lists every problem.
class WeightImportError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One compiled model of models/*.fp and its reference.
struct ReferenceModel {
  /// The model's name in its source, and the manifest's `model.name`.
  std::string name;
  /// The reference configuration of its layer. dModel and nLayers are those
  /// of the source; referenceConfigFor() replaces them by the manifest's.
  ModelConfig config;
};

/// Every model of models/*.fp, in file-name order.
const std::vector<ReferenceModel> &referenceModels();

/// The reference configuration computing the same function as the model
/// `modelName` of `manifest` (the manifest's `model.name` when empty): the
/// table's entry, with d_model taken from the manifest's layer, nLayers from
/// its stack, the solver and backward from the layer's manifest solver block
/// when it has one (nBackwards from referenceBackwardSteps, 1 where the
/// reference has no such backward: solverDifferences says so), and `dtype`.
/// Throws std::invalid_argument when there is no name, the table lacks it,
/// or the manifest's layer is not of the entry's kind.
///
/// The reference's n_backwards = k applies the map k times after the solve
/// in its forward too; a compiled `truncated(k)` layer computes the same
/// gradient but applies the map once in its forward, so for k > 1 their
/// outputs agree only at a fixed point.
ModelConfig referenceConfigFor(const Manifest &manifest,
                               const std::string &modelName = "",
                               torch::Dtype dtype = torch::kFloat32);

/// A table entry's configuration at another d_model, with what the model
/// sources derive from it: the head dimension of models/lib/fp_mamba2.fp
/// and mamba2.fp, the largest divisor of d = expand · d_model that is at
/// most 64.
ModelConfig referenceAtWidth(const ModelConfig &config, int64_t dModel);

/// The layer of `manifest` that the model's stack instantiates (its first
/// entry); the manifest's only layer when it has no model. Throws
/// std::invalid_argument when neither identifies one.
const LayerInfo &referenceLayerOf(const Manifest &manifest);

/// The reference's n_backwards that computes the gradient of `backward`:
/// 1 for one_step, k for truncated(k); 0 for neumann and implicit, which the
/// reference does not compute.
int64_t referenceBackwardSteps(const BackwardSpec &backward);

/// The settings in which a compiled solver and a reference's solver and
/// backward differ, one phrase each ("max_iter_train: compiled 10, reference
/// 100", "backward: compiled truncated(3), reference n_backwards 1
/// (one_step)"); empty when they agree.
std::vector<std::string> solverDifferences(const SolverDefaults &compiled,
                                           const ModelConfig &reference);

/// The reference value of every parameter of `layer`, in its order, by the
/// mapping above (views into the reference's parameters). Throws
/// WeightImportError listing every unmapped name and shape mismatch.
std::vector<torch::Tensor> referenceWeightsFor(const ref::BlockMixer &reference,
                                               const LayerInfo &layer);

/// The gradient the reference's parameters hold (their grad(), zeros where
/// undefined) for every parameter of `layer`, in its order, by the mapping
/// above: what the layer's parameter gradients are compared with after a
/// backward through both. Throws WeightImportError as above.
std::vector<torch::Tensor>
referenceGradientsFor(const ref::BlockMixer &reference, const LayerInfo &layer);

/// Copies every weight of `reference` into `layer` (converting to the
/// layer's dtype and device). Throws WeightImportError as above; nothing is
/// copied then.
void importReferenceWeights(const ref::BlockMixer &reference,
                            CompiledLayer &layer);

} // namespace fp::rt

#endif // FP_RUNTIME_REFERENCEIMPORT_H
