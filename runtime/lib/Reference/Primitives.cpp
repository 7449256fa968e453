//===- Primitives.cpp - Eager building blocks of the reference --*- C++ -*-===//
//
// Straightforward LibTorch transcriptions of the spec's primitives. The
// scans run a loop over time: this is the numeric oracle, not the fast path.
// On CUDA the selective scan runs as kernels instead (ScanKernels.cpp), as
// the reference code's does.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Reference/Primitives.h"

#include <cmath>
#include <limits>

using namespace fp::rt::ref;

torch::Tensor fp::rt::ref::shiftTime(const torch::Tensor &x, int64_t offset) {
  int64_t length = x.size(1);
  if (offset == 0)
    return x;
  if (std::abs(offset) >= length)
    return torch::zeros_like(x);
  auto padShape = x.sizes().vec();
  padShape[1] = std::abs(offset);
  torch::Tensor zeros = torch::zeros(padShape, x.options());
  if (offset > 0)
    return torch::cat({zeros, x.narrow(1, 0, length - offset)}, 1);
  return torch::cat({x.narrow(1, -offset, length + offset), zeros}, 1);
}

torch::Tensor fp::rt::ref::l2Normalize(const torch::Tensor &x, double eps) {
  return x / x.norm(2, {-1}, /*keepdim=*/true).clamp_min(eps);
}

torch::Tensor fp::rt::ref::mambaSoftplus(const torch::Tensor &x) {
  return torch::softplus(x, /*beta=*/1, /*threshold=*/20);
}

torch::Tensor fp::rt::ref::causalConv(const torch::Tensor &x,
                                      const torch::Tensor &weight,
                                      const torch::Tensor &bias) {
  int64_t kernel = weight.size(1);
  torch::Tensor result =
      bias.defined() ? bias.expand_as(x).clone() : torch::zeros_like(x);
  for (int64_t k = 0; k < kernel; ++k)
    result = result + weight.select(1, k) * shiftTime(x, kernel - 1 - k);
  return result;
}

torch::Tensor
fp::rt::ref::selectiveScan(const torch::Tensor &u, const torch::Tensor &delta,
                           const torch::Tensor &a, const torch::Tensor &bm,
                           const torch::Tensor &cm, const torch::Tensor &skip) {
  if (u.is_cuda() && haveCudaScanKernels())
    return selectiveScanKernels(u, delta, a, bm, cm, skip);
  return selectiveScanLoop(u, delta, a, bm, cm, skip);
}

torch::Tensor fp::rt::ref::selectiveScanLoop(
    const torch::Tensor &u, const torch::Tensor &delta, const torch::Tensor &a,
    const torch::Tensor &bm, const torch::Tensor &cm, const torch::Tensor &skip,
    const torch::Tensor &initial, torch::Tensor *final) {
  int64_t length = u.size(1);
  // [B, T, d, N] decay and input terms.
  torch::Tensor decay = torch::exp(delta.unsqueeze(-1) * a);
  torch::Tensor input = (delta * u).unsqueeze(-1) * bm.unsqueeze(2);
  torch::Tensor state = initial.defined()
                            ? initial.to(decay.scalar_type())
                            : torch::zeros_like(decay.select(1, 0));
  std::vector<torch::Tensor> outputs;
  outputs.reserve(length);
  for (int64_t t = 0; t < length; ++t) {
    state = decay.select(1, t) * state + input.select(1, t);
    outputs.push_back((state * cm.select(1, t).unsqueeze(1)).sum(-1));
  }
  if (final)
    *final = state;
  torch::Tensor y = torch::stack(outputs, 1);
  if (skip.defined())
    y = y + skip * u;
  return y;
}

namespace {

/// Bm or Cm [B, T, G, N] for each of `heads` heads: [B, T, H, N].
torch::Tensor perHead(const torch::Tensor &grouped, int64_t heads) {
  int64_t groups = grouped.size(2);
  if (heads % groups != 0)
    throw std::invalid_argument("SSD scan: " + std::to_string(heads) +
                                " heads do not split into " +
                                std::to_string(groups) + " groups");
  return grouped.repeat_interleave(heads / groups, /*dim=*/2);
}

} // namespace

torch::Tensor fp::rt::ref::ssdScan(
    const torch::Tensor &x, const torch::Tensor &dt, const torch::Tensor &a,
    const torch::Tensor &bm, const torch::Tensor &cm, const torch::Tensor &skip,
    const torch::Tensor &initial, torch::Tensor *final, int64_t chunk) {
  const int64_t batch = x.size(0), length = x.size(1), heads = x.size(2);
  torch::Tensor b = perHead(bm, heads), c = perHead(cm, heads);
  torch::Tensor state =
      initial.defined()
          ? initial.to(x.scalar_type())
          : torch::zeros({batch, heads, x.size(3), b.size(3)}, x.options());
  std::vector<torch::Tensor> outputs;
  for (int64_t start = 0; start < length; start += chunk) {
    const int64_t n = std::min(chunk, length - start);
    torch::Tensor xs = x.narrow(1, start, n), dts = dt.narrow(1, start, n);
    torch::Tensor bs = b.narrow(1, start, n), cs = c.narrow(1, start, n);
    // cum[t] = Σ_{k ≤ t} Δ_k a: the decay from the chunk's start through t.
    torch::Tensor cum = torch::cumsum(dts * a, /*dim=*/1); // [B, n, H]
    torch::Tensor cumHeads = cum.permute({0, 2, 1});       // [B, H, n]
    // decay[t, s] = exp(cum[t] − cum[s]) for s ≤ t, 0 above the diagonal
    // (masked before the exponential, which would overflow there).
    torch::Tensor causal =
        torch::ones({n, n}, x.options().dtype(torch::kBool)).tril();
    torch::Tensor decay =
        torch::exp((cumHeads.unsqueeze(-1) - cumHeads.unsqueeze(-2))
                       .masked_fill(causal.logical_not(),
                                    -std::numeric_limits<double>::infinity()));
    // Within the chunk: y_t = Σ_{s ≤ t} decay[t, s] (C_t · B_s) Δ_s x_s.
    torch::Tensor scores = torch::einsum("bthn,bshn->bhts", {cs, bs}) * decay *
                           dts.permute({0, 2, 1}).unsqueeze(-2);
    torch::Tensor y = torch::einsum("bhts,bshp->bthp", {scores, xs});
    // From the state before the chunk: exp(cum[t]) C_t S.
    y = y + torch::einsum("bthn,bhpn->bthp", {cs, state}) *
                torch::exp(cum).unsqueeze(-1);
    // The state after the chunk.
    torch::Tensor toEnd =
        torch::exp(cum.narrow(1, n - 1, 1) - cum) * dts; // [B, n, H]
    state =
        state * torch::exp(cum.select(1, n - 1)).unsqueeze(-1).unsqueeze(-1) +
        torch::einsum("bsh,bshp,bshn->bhpn", {toEnd, xs, bs});
    outputs.push_back(y);
  }
  if (final)
    *final = state;
  torch::Tensor y = torch::cat(outputs, 1);
  if (skip.defined())
    y = y + skip.unsqueeze(-1) * x;
  return y;
}

torch::Tensor
fp::rt::ref::ssdScanLoop(const torch::Tensor &x, const torch::Tensor &dt,
                         const torch::Tensor &a, const torch::Tensor &bm,
                         const torch::Tensor &cm, const torch::Tensor &skip,
                         const torch::Tensor &initial, torch::Tensor *final) {
  const int64_t heads = x.size(2);
  torch::Tensor b = perHead(bm, heads), c = perHead(cm, heads);
  torch::Tensor state =
      initial.defined()
          ? initial.to(x.scalar_type())
          : torch::zeros({x.size(0), heads, x.size(3), b.size(3)}, x.options());
  std::vector<torch::Tensor> outputs;
  for (int64_t t = 0; t < x.size(1); ++t) {
    torch::Tensor dtt = dt.select(1, t); // [B, H]
    torch::Tensor decay = torch::exp(dtt * a).unsqueeze(-1).unsqueeze(-1);
    state = decay * state + (dtt.unsqueeze(-1) * x.select(1, t)).unsqueeze(-1) *
                                b.select(1, t).unsqueeze(2);
    outputs.push_back(torch::einsum("bhpn,bhn->bhp", {state, c.select(1, t)}));
  }
  if (final)
    *final = state;
  torch::Tensor y = torch::stack(outputs, 1);
  if (skip.defined())
    y = y + skip.unsqueeze(-1) * x;
  return y;
}

torch::Tensor fp::rt::ref::linearRecurrence(const torch::Tensor &a,
                                            const torch::Tensor &b,
                                            const torch::Tensor &initial) {
  int64_t length = a.size(1);
  torch::Tensor h =
      initial.defined() ? initial : torch::zeros_like(b.select(1, 0));
  std::vector<torch::Tensor> outputs;
  outputs.reserve(length);
  for (int64_t t = 0; t < length; ++t) {
    h = a.select(1, t) * h + b.select(1, t);
    outputs.push_back(h);
  }
  return torch::stack(outputs, 1);
}

torch::Tensor fp::rt::ref::shiftTimeAfter(const torch::Tensor &x,
                                          const torch::Tensor &previous) {
  if (!previous.defined())
    return shiftTime(x, 1);
  return torch::cat({previous.unsqueeze(1).to(x.scalar_type()),
                     x.narrow(1, 0, x.size(1) - 1)},
                    1);
}

torch::Tensor fp::rt::ref::causalConvAfter(const torch::Tensor &x,
                                           const torch::Tensor &weight,
                                           const torch::Tensor &bias,
                                           const torch::Tensor &tail) {
  if (!tail.defined())
    return causalConv(x, weight, bias);
  // The convolution of the tail followed by the chunk, whose rows at the
  // chunk's positions see only real inputs.
  torch::Tensor extended = torch::cat({tail.to(x.scalar_type()), x}, 1);
  return causalConv(extended, weight, bias).narrow(1, tail.size(1), x.size(1));
}

torch::Tensor fp::rt::ref::lastRows(const torch::Tensor &tail,
                                    const torch::Tensor &x, int64_t rows) {
  auto shape = x.sizes().vec();
  shape[1] = rows;
  torch::Tensor before =
      tail.defined() ? tail : torch::zeros(shape, x.options());
  torch::Tensor extended = torch::cat({before, x}, 1);
  return extended.narrow(1, extended.size(1) - rows, rows).clone();
}

void fp::rt::ref::initFanInUniform(torch::Tensor &tensor, int64_t fanIn) {
  double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
  torch::NoGradGuard noGrad;
  tensor.uniform_(-bound, bound);
}

//===----------------------------------------------------------------------===//
// Modules
//===----------------------------------------------------------------------===//

WNLinear::WNLinear(int64_t inFeatures, int64_t outFeatures, bool withBias,
                   torch::Dtype dtype) {
  auto options = torch::TensorOptions().dtype(dtype);
  torch::Tensor v = torch::empty({outFeatures, inFeatures}, options);
  initFanInUniform(v, inFeatures);
  weightV = register_parameter("weight_v", v);
  weightG = register_parameter("weight_g", v.norm(2, {1}).detach().clone());
  if (withBias) {
    torch::Tensor b = torch::empty({outFeatures}, options);
    initFanInUniform(b, inFeatures);
    bias = register_parameter("bias", b);
  }
}

torch::Tensor WNLinear::weight() const {
  return weightG.unsqueeze(1) * weightV / weightV.norm(2, {1}, true);
}

torch::Tensor WNLinear::forward(const torch::Tensor &x) const {
  return torch::nn::functional::linear(x, weight(), bias);
}

Linear::Linear(int64_t inFeatures, int64_t outFeatures, torch::Dtype dtype,
               bool withBias) {
  auto options = torch::TensorOptions().dtype(dtype);
  torch::Tensor w = torch::empty({outFeatures, inFeatures}, options);
  initFanInUniform(w, inFeatures);
  weight = register_parameter("weight", w);
  if (withBias) {
    torch::Tensor b = torch::empty({outFeatures}, options);
    initFanInUniform(b, inFeatures);
    bias = register_parameter("bias", b);
  }
}

torch::Tensor Linear::forward(const torch::Tensor &x) const {
  return torch::nn::functional::linear(x, weight, bias);
}

RMSNorm::RMSNorm(int64_t features, double eps, torch::Dtype dtype) : eps(eps) {
  weight = register_parameter(
      "weight", torch::ones({features}, torch::TensorOptions().dtype(dtype)));
}

torch::Tensor RMSNorm::forward(const torch::Tensor &x) const {
  return x * torch::rsqrt(x.pow(2).mean(-1, true) + eps) * weight;
}

LayerNorm::LayerNorm(int64_t features, double eps, torch::Dtype dtype)
    : eps(eps) {
  auto options = torch::TensorOptions().dtype(dtype);
  weight = register_parameter("weight", torch::ones({features}, options));
  bias = register_parameter("bias", torch::zeros({features}, options));
}

torch::Tensor LayerNorm::forward(const torch::Tensor &x) const {
  return torch::layer_norm(x, {x.size(-1)}, weight, bias, eps);
}

std::pair<torch::Tensor, torch::Tensor>
fp::rt::ref::registerCausalConv(torch::nn::Module &owner,
                                const std::string &name, int64_t channels,
                                int64_t kernel, torch::Dtype dtype) {
  auto options = torch::TensorOptions().dtype(dtype);
  auto holder =
      owner.register_module(name, std::make_shared<torch::nn::Module>());
  torch::Tensor weight = torch::empty({channels, kernel}, options);
  torch::Tensor bias = torch::empty({channels}, options);
  initFanInUniform(weight, kernel);
  initFanInUniform(bias, kernel);
  return {holder->register_parameter("weight", weight),
          holder->register_parameter("bias", bias)};
}

torch::Tensor fp::rt::ref::initDtBias(int64_t channels, double dtMin,
                                      double dtMax, double floor,
                                      torch::Dtype dtype) {
  auto options = torch::TensorOptions().dtype(dtype);
  torch::Tensor dt = torch::exp(torch::rand({channels}, options) *
                                    (std::log(dtMax) - std::log(dtMin)) +
                                std::log(dtMin))
                         .clamp_min(floor);
  // softplus⁻¹(a) = a + log(1 − e^{−a}).
  return dt + torch::log(-torch::expm1(-dt));
}

std::shared_ptr<Linear>
fp::rt::ref::registerDtProjection(torch::nn::Module &owner, int64_t rank,
                                  int64_t channels, torch::Dtype dtype) {
  auto projection = owner.register_module(
      "dt_proj", std::make_shared<Linear>(rank, channels, dtype));
  {
    torch::NoGradGuard noGrad;
    double bound = 1.0 / std::sqrt(static_cast<double>(rank));
    projection->weight.uniform_(-bound, bound);
  }
  projection->bias = projection->register_parameter(
      "bias", initDtBias(channels, 1e-3, 1e-1, 1e-4, dtype));
  projection->keepBiasInit = true;
  return projection;
}

torch::Tensor fp::rt::ref::initALog(int64_t channels, int64_t states,
                                    torch::Dtype dtype) {
  auto options = torch::TensorOptions().dtype(dtype);
  return torch::log(torch::arange(1, states + 1, options))
      .unsqueeze(0)
      .repeat({channels, 1});
}
