//===- ParamInit.cpp - Initialise a layer's parameters ----------*- C++ -*-===//
//
// One function per initialiser kind, each reading its arguments through a
// checker that refuses missing and unknown ones, and a driver that fills the
// parameters in manifest order, resolving `of` references first.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/ParamInit.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>

using namespace fp::rt;

namespace {

/// The initialiser of one parameter being applied: reads its arguments
/// (recording which were used) and reports errors naming the parameter.
class InitCall {
public:
  InitCall(const LayerInfo &layer, const ParamInfo &param)
      : layer(layer), param(param) {}

  [[noreturn]] void fail(const std::string &what) const {
    throw ParamInitError("layer '" + layer.name + "', parameter '" +
                         param.name + "': initialiser '" + param.init.kind +
                         "' " + what);
  }

  double required(const std::string &name) {
    auto it = param.init.args.find(name);
    if (it == param.init.args.end())
      fail("needs the argument '" + name + "'");
    used.insert(name);
    return it->second;
  }

  double optional(const std::string &name, double fallback) {
    auto it = param.init.args.find(name);
    if (it == param.init.args.end())
      return fallback;
    used.insert(name);
    return it->second;
  }

  /// Fails for arguments the kind does not take, and for an `of` unless the
  /// kind reads one.
  void finish(bool takesOf = false) const {
    for (const auto &[name, value] : param.init.args)
      if (!used.count(name))
        fail("takes no argument '" + name + "'");
    if (!takesOf && !param.init.of.empty())
      fail("reads no other parameter, but names '" + param.init.of + "'");
  }

  /// The last extent, for kinds that work along it.
  int64_t lastExtent() const {
    if (param.shape.empty())
      fail("needs a parameter with at least one dimension");
    return param.shape.back();
  }

  const LayerInfo &layer;
  const ParamInfo &param;
  std::set<std::string> used;
};

torch::TensorOptions f64() {
  return torch::TensorOptions().dtype(torch::kFloat64);
}

/// Draws the value of `param` in f64 on the CPU. `resolve` returns the
/// (already initialised) value of another parameter by name.
torch::Tensor
drawParam(const LayerInfo &layer, const ParamInfo &param, at::Generator &gen,
          const std::function<torch::Tensor(const std::string &)> &resolve) {
  InitCall call(layer, param);
  const std::string &kind = param.init.kind;
  std::vector<int64_t> shape = param.shape;
  if (kind == "zeros" || kind == "ones") {
    call.finish();
    return kind == "zeros" ? torch::zeros(shape, f64())
                           : torch::ones(shape, f64());
  }
  if (kind == "constant") {
    double value = call.required("value");
    call.finish();
    return torch::full(shape, value, f64());
  }
  if (kind == "uniform") {
    double low = call.required("low"), high = call.required("high");
    call.finish();
    if (!(low <= high))
      call.fail("needs low <= high, got low " + std::to_string(low) +
                " and high " + std::to_string(high));
    return torch::empty(shape, f64()).uniform_(low, high, gen);
  }
  if (kind == "log_uniform") {
    double low = call.required("low"), high = call.required("high");
    call.finish();
    if (!(low > 0 && low <= high))
      call.fail("needs 0 < low <= high, got low " + std::to_string(low) +
                " and high " + std::to_string(high));
    return torch::log(torch::empty(shape, f64()).uniform_(low, high, gen));
  }
  if (kind == "normal") {
    double stddev = call.required("std");
    double mean = call.optional("mean", 0.0);
    call.finish();
    if (!(stddev >= 0))
      call.fail("needs std >= 0, got " + std::to_string(stddev));
    return torch::empty(shape, f64()).normal_(mean, stddev, gen);
  }
  if (kind == "fan_in_uniform") {
    double scale = call.optional("scale", 1.0);
    call.finish();
    int64_t fanIn = call.lastExtent();
    double bound = scale / std::sqrt(static_cast<double>(fanIn));
    return torch::empty(shape, f64()).uniform_(-bound, bound, gen);
  }
  if (kind == "s4d_real") {
    call.finish();
    int64_t states = call.lastExtent();
    return torch::log(torch::arange(1, states + 1, f64()))
        .expand(shape)
        .contiguous();
  }
  if (kind == "dt_bias") {
    double dtMin = call.required("dt_min"), dtMax = call.required("dt_max");
    double floor = call.required("floor");
    call.finish();
    if (!(dtMin > 0 && dtMin <= dtMax && floor >= 0))
      call.fail("needs 0 < dt_min <= dt_max and floor >= 0");
    torch::Tensor dt = torch::exp(torch::rand(shape, gen, f64()) *
                                      (std::log(dtMax) - std::log(dtMin)) +
                                  std::log(dtMin))
                           .clamp_min(floor);
    // softplus⁻¹(a) = a + log(1 − e^{−a}).
    return dt + torch::log(-torch::expm1(-dt));
  }
  if (kind == "eye" || kind == "orthogonal") {
    const double value = kind == "eye" ? call.required("value") : 0.0;
    call.finish();
    if (shape.size() != 2 || shape[0] != shape[1])
      call.fail("needs a square matrix");
    if (kind == "eye")
      return torch::eye(shape[0], f64()) * value;
    // PyTorch's orthogonal parametrisation of a default Linear: the Q of
    // a fan-in uniform draw, with R's diagonal made positive.
    const double bound = 1.0 / std::sqrt(static_cast<double>(shape[1]));
    auto [q, r] = torch::linalg_qr(
        torch::empty(shape, f64()).uniform_(-bound, bound, gen));
    torch::Tensor signs = torch::sign(r.diagonal());
    signs.masked_fill_(signs.eq(0), 1);
    return (q * signs.unsqueeze(0)).contiguous();
  }
  if (kind == "row_norm") {
    call.finish(/*takesOf=*/true);
    if (param.init.of.empty())
      call.fail("needs 'of', the parameter whose rows it measures");
    torch::Tensor source = resolve(param.init.of);
    if (source.dim() == 0)
      call.fail("needs '" + param.init.of + "' to have a dimension");
    torch::Tensor norms = source.norm(2, {-1});
    if (norms.sizes() != torch::IntArrayRef(shape)) {
      std::ostringstream message;
      message << "of '" << param.init.of << "' " << source.sizes()
              << " gives shape " << norms.sizes() << ", but the parameter is "
              << torch::IntArrayRef(shape);
      call.fail(message.str());
    }
    return norms;
  }
  std::string known;
  for (const std::string &name : initKinds())
    known += (known.empty() ? "" : ", ") + name;
  throw ParamInitError("layer '" + layer.name + "', parameter '" + param.name +
                       "': unknown initialiser '" + kind +
                       "'; this runtime knows " + known);
}

} // namespace

const std::vector<std::string> &fp::rt::initKinds() {
  static const std::vector<std::string> kinds = {
      "zeros",    "ones",           "constant", "uniform",
      "normal",   "fan_in_uniform", "s4d_real", "dt_bias",
      "row_norm", "log_uniform",    "eye",      "orthogonal",
  };
  return kinds;
}

at::Generator fp::rt::makeGenerator(uint64_t seed) {
  return at::detail::createCPUGenerator(seed);
}

std::vector<torch::Tensor>
fp::rt::initLayerParams(const LayerInfo &layer, at::Generator &generator,
                        const torch::TensorOptions &options) {
  torch::NoGradGuard noGrad;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < layer.params.size(); ++i)
    index[layer.params[i].name] = i;

  std::vector<torch::Tensor> values(layer.params.size());
  std::vector<bool> inProgress(layer.params.size(), false);
  std::function<torch::Tensor(size_t)> init = [&](size_t i) {
    if (values[i].defined())
      return values[i];
    const ParamInfo &param = layer.params[i];
    if (inProgress[i])
      throw ParamInitError("layer '" + layer.name + "', parameter '" +
                           param.name +
                           "': its initialiser depends on itself through "
                           "'of' references");
    inProgress[i] = true;
    auto resolve = [&](const std::string &name) {
      auto it = index.find(name);
      if (it == index.end())
        throw ParamInitError("layer '" + layer.name + "', parameter '" +
                             param.name + "': 'of' names parameter '" + name +
                             "', which the layer lacks");
      return init(it->second);
    };
    values[i] = drawParam(layer, param, generator, resolve);
    inProgress[i] = false;
    return values[i];
  };
  for (size_t i = 0; i < layer.params.size(); ++i)
    init(i);

  std::vector<torch::Tensor> result;
  result.reserve(values.size());
  for (const torch::Tensor &value : values)
    result.push_back(value.to(options).contiguous());
  return result;
}
