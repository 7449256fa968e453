//===- ParamInit.h - Initialise a layer's parameters ------------*- C++ -*-===//
//
// The runtime's interpretation of the manifest's `init` objects (docs/abi.md,
// dialect FpAttrs.td InitAttr): creates the parameters of one layer of a
// model library as LibTorch tensors, drawing random values from a
// torch::Generator so that a seed fixes them. Values are drawn in f64 on the
// CPU and then converted, so the same seed gives the same parameters (up to
// rounding) in every dtype and on every device.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_PARAMINIT_H
#define FP_RUNTIME_PARAMINIT_H

#include "fp/Runtime/Manifest.h"

#include <torch/torch.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp::rt {

/// Thrown when a parameter's initialiser cannot be applied: an unknown kind,
/// a missing, unknown or out-of-range argument, a shape the kind cannot
/// fill, or a cycle of `of` references. The message names the layer and the
/// parameter.
class ParamInitError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The initialiser kinds the runtime knows, in the manifest's spelling,
/// with their arguments:
///  - `zeros`, `ones`: 0, 1;
///  - `constant` (`value`): the value;
///  - `uniform` (`low`, `high`): U(low, high);
///  - `log_uniform` (`low`, `high`): log U(low, high), 0 < low (Mamba-2's
///    A_log);
///  - `normal` (`std`, optional `mean` = 0): N(mean, std²);
///  - `fan_in_uniform` (optional `scale` = 1): U(±scale/√in), in = the last
///    extent (PyTorch's Linear);
///  - `s4d_real`: log(n + 1) along the last extent (Mamba's A_log);
///  - `dt_bias` (`dt_min`, `dt_max`, `floor`): Mamba's dt bias,
///    softplus⁻¹(clamp(exp(U(log dt_min, log dt_max)), min = floor));
///  - `row_norm` (`of`: a parameter name): ‖row i of `of`‖₂ over its last
///    extent (the weight-norm gain).
///  - `eye` (`value`): value on the diagonal of a square matrix;
///  - `orthogonal`: the Q of the QR decomposition of a square fan_in_uniform
///    draw, R's diagonal made positive (PyTorch's orthogonal
///    parametrisation of a default Linear).
const std::vector<std::string> &initKinds();

/// A CPU generator seeded with `seed`.
at::Generator makeGenerator(uint64_t seed);

/// Creates the parameters of `layer` in the order of `layer.params`, with
/// the manifest's shapes, filled by their initialisers from `generator`
/// (manifest order; a parameter whose initialiser reads another one is
/// filled after it), then converted to `options` (dtype and device). The
/// tensors do not require grad. Throws ParamInitError.
std::vector<torch::Tensor>
initLayerParams(const LayerInfo &layer, at::Generator &generator,
                const torch::TensorOptions &options = torch::kFloat32);

} // namespace fp::rt

#endif // FP_RUNTIME_PARAMINIT_H
