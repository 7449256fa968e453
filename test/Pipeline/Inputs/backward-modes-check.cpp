//===- backward-modes-check.cpp - Backward modes vs differences -*- C++ -*-===//
//
// Checks the compiled backward of Inputs/probe.fp's `probe` layer, in one
// backward mode, against five-point finite differences of the quantity the
// mode claims to compute, in f64 on random inputs (TestSeed.h's seed):
//
//   check <probe.so> <unrolled.so> <steps>   one_step, truncated, neumann:
//       the gradient of ⟨w, E(fᵏ(c))⟩ with c = y* held constant, where
//       k = <steps>, by differences of `probe_unrolled` (k applications of
//       the same map from its input c) at the converged fixed point c;
//   check <probe.so> implicit                the true gradient of the
//       converged layer, by differences of `probe` solved to 1e-14.
//
// For L = ⟨w, layer(x, θ)⟩ the backward with grad_output = w must give ∂L/∂x
// and ∂L/∂θ within 1e-6 relative (1e-8 absolute) at every entry. The forward
// before the backward is solved to 1e-14, so its saved y* is c. Prints the
// adjoint solver's steps for `implicit`, "ok", and exits 0, or lists the
// mismatches and exits 1.
//
//===----------------------------------------------------------------------===//

#include "TestSeed.h"
#include "fp/Runtime/ModelABI.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int64_t kBatch = 2, kLength = 5, kWidth = 4;
constexpr int64_t kTokens = kBatch * kLength;
/// The parameters of probe.fp in manifest order: in_proj.weight,
/// gate_proj.bias, gate_proj.weight, out_proj.weight, mix.weight_g,
/// mix.weight_v.
constexpr int64_t kParamSizes[] = {16, 4, 16, 16, 4, 32};
constexpr int kNumParams = sizeof(kParamSizes) / sizeof(kParamSizes[0]);

[[noreturn]] void fail(const std::string &message) {
  std::printf("error: %s\n", message.c_str());
  std::exit(1);
}

/// One layer of a model library opened with dlopen.
struct Library {
  std::string name;
  int64_t width = 0;
  fp_buffer_sizes_fn sizes = nullptr;
  fp_forward_fn forward = nullptr;
  fp_backward_fn backward = nullptr;
  fp_last_error_fn lastError = nullptr;
  std::string params; ///< The manifest's parameter list, as text.

  Library(const char *path, const char *layer, int64_t width)
      : name(layer), width(width) {
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      fail(dlerror());
    auto symbol = [&](const std::string &symbolName) {
      void *address = dlsym(handle, symbolName.c_str());
      if (!address)
        fail(std::string(path) + " lacks " + symbolName);
      return address;
    };
    std::string prefix = "fp_" + name + "_";
    sizes =
        reinterpret_cast<fp_buffer_sizes_fn>(symbol(prefix + "buffer_sizes"));
    forward = reinterpret_cast<fp_forward_fn>(symbol(prefix + "forward"));
    backward = reinterpret_cast<fp_backward_fn>(symbol(prefix + "backward"));
    lastError =
        reinterpret_cast<fp_last_error_fn>(symbol(FP_SYMBOL_LAST_ERROR));
    std::string manifest =
        reinterpret_cast<fp_manifest_fn>(symbol(FP_SYMBOL_MANIFEST))();
    // The list ends where its last object does: no "}]," comes before.
    size_t begin = manifest.find("\"params\":[");
    size_t end = manifest.find("}],\"", begin);
    if (begin == std::string::npos || end == std::string::npos)
      fail(std::string(path) + ": no parameter list in the manifest");
    params = manifest.substr(begin, end + 2 - begin);
  }

  fp_buffer_sizes bufferSizes() const {
    fp_buffer_sizes result = {};
    if (sizes(FP_TARGET_CPU, FP_DTYPE_F64, kBatch, kLength, &result) != FP_OK)
      fail(name + " buffer_sizes: " + lastError());
    return result;
  }
};

using Params = std::vector<std::vector<double>>;

std::vector<const void *> pointers(const Params &params) {
  std::vector<const void *> out;
  for (const std::vector<double> &p : params)
    out.push_back(p.data());
  return out;
}

/// The layer's forward on `input`, filling `saved` when given: `probe`
/// solved to 1e-14, `probe_unrolled` with its compiled single step.
std::vector<double> forward(const Library &library,
                            const std::vector<double> &input,
                            const Params &params,
                            std::vector<char> *saved = nullptr) {
  const bool solve = library.name == "probe";
  fp_buffer_sizes sizes = library.bufferSizes();
  std::vector<char> workspace(sizes.forward_workspace_bytes + 1);
  if (saved)
    saved->assign(sizes.saved_bytes + 1, 0);
  std::vector<double> out(input.size());
  std::vector<const void *> paramPointers = pointers(params);
  fp_solver_overrides solver = {};
  solver.max_iter = solve ? 5000 : -1;
  solver.fixed_iters = 0;
  solver.tolerance = solve ? 1e-14 : std::nan("");
  solver.quantile = std::nan("");
  fp_forward_args args = {};
  args.struct_size = sizeof args;
  args.target = FP_TARGET_CPU;
  args.dtype = FP_DTYPE_F64;
  args.batch = kBatch;
  args.seq_len = kLength;
  args.num_params = kNumParams;
  args.params = paramPointers.data();
  args.input = input.data();
  args.output = out.data();
  args.saved = saved ? saved->data() : nullptr;
  args.workspace = workspace.data();
  args.workspace_bytes = workspace.size();
  args.solver = &solver;
  if (library.forward(&args) != FP_OK)
    fail(library.name + " forward: " + library.lastError());
  return out;
}

/// [x ; c] per token, the input of probe_unrolled.
std::vector<double> joined(const std::vector<double> &x,
                           const std::vector<double> &c) {
  std::vector<double> out(kTokens * 2 * kWidth);
  for (int64_t t = 0; t < kTokens; ++t)
    for (int64_t i = 0; i < kWidth; ++i) {
      out[t * 2 * kWidth + i] = x[t * kWidth + i];
      out[t * 2 * kWidth + kWidth + i] = c[t * kWidth + i];
    }
  return out;
}

/// The first (half == 0) or second half of each token of a [.., 2·width]
/// output.
std::vector<double> half(const std::vector<double> &y, int half) {
  std::vector<double> out(kTokens * kWidth);
  for (int64_t t = 0; t < kTokens; ++t)
    for (int64_t i = 0; i < kWidth; ++i)
      out[t * kWidth + i] = y[t * 2 * kWidth + half * kWidth + i];
  return out;
}

double dot(const std::vector<double> &a, const std::vector<double> &b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += a[i] * b[i];
  return sum;
}

} // namespace

int main(int argc, char **argv) {
  const bool implicit = argc == 3 && std::strcmp(argv[2], "implicit") == 0;
  if (!implicit && argc != 4)
    fail("usage: check <probe.so> (<unrolled.so> <steps> | implicit)");
  const Library probe(argv[1], "probe", kWidth);

  std::mt19937_64 rng(fp::test::testSeed());
  std::normal_distribution<double> normal;
  auto random = [&](size_t n, double scale) {
    std::vector<double> v(n);
    for (double &e : v)
      e = scale * normal(rng);
    return v;
  };
  std::vector<double> x = random(kTokens * kWidth, 1.0);
  Params params;
  for (int64_t size : kParamSizes)
    params.push_back(random(size, 0.5));
  const std::vector<double> w = random(x.size(), 1.0);

  // The backward after a forward solved to 1e-14.
  std::vector<char> saved;
  forward(probe, x, params, &saved);
  fp_buffer_sizes sizes = probe.bufferSizes();
  std::vector<char> workspace(sizes.backward_workspace_bytes + 1);
  std::vector<double> dx(x.size());
  Params grads;
  std::vector<void *> gradPointers;
  for (int64_t size : kParamSizes)
    grads.emplace_back(size, 0.0);
  for (std::vector<double> &g : grads)
    gradPointers.push_back(g.data());
  std::vector<const void *> paramPointers = pointers(params);
  fp_solver_stats stats = {};
  fp_backward_args args = {};
  args.struct_size = sizeof args;
  args.target = FP_TARGET_CPU;
  args.dtype = FP_DTYPE_F64;
  args.batch = kBatch;
  args.seq_len = kLength;
  args.num_params = kNumParams;
  args.params = paramPointers.data();
  args.input = x.data();
  args.saved = saved.data();
  args.grad_output = w.data();
  args.grad_input = dx.data();
  args.grad_params = gradPointers.data();
  args.workspace = workspace.data();
  args.workspace_bytes = workspace.size();
  args.stats = &stats;
  if (probe.backward(&args) != FP_OK)
    fail(std::string("probe backward: ") + probe.lastError());
  if (implicit)
    std::printf("adjoint steps %d\n", stats.backward_steps);

  // The quantity the mode claims to compute, as a function of (x, θ).
  std::function<double(const std::vector<double> &, const Params &)> loss;
  if (implicit) {
    loss = [&](const std::vector<double> &input, const Params &p) {
      return dot(w, forward(probe, input, p));
    };
  } else {
    static const Library unrolled(argv[2], "probe_unrolled", 2 * kWidth);
    if (unrolled.params != probe.params)
      fail("probe and probe_unrolled have different parameters");
    // c: the fixed point of f, by iterating c ← f(c) until a step moves it
    // by no more than rounding (relative to its largest entry).
    std::vector<double> c(x.size(), 0.0);
    int iterations = 0;
    for (bool moving = true; moving; ++iterations) {
      if (iterations == 10000)
        fail("c <- f(c) did not converge in 10000 iterations");
      std::vector<double> next =
          half(forward(unrolled, joined(x, c), params), 1);
      double change = 0, scale = 0;
      for (size_t i = 0; i < c.size(); ++i) {
        change = std::max(change, std::fabs(next[i] - c[i]));
        scale = std::max(scale, std::fabs(next[i]));
      }
      moving = change > 4e-16 * scale;
      c = next;
    }
    std::printf("fixed point in %d iterations\n", iterations);
    loss = [&, c](const std::vector<double> &input, const Params &p) {
      return dot(w, half(forward(unrolled, joined(input, c), p), 0));
    };
  }

  int mismatches = 0;
  auto check = [&](const std::string &what, std::vector<double> &values,
                   const std::vector<double> &analytic) {
    for (size_t i = 0; i < values.size(); ++i) {
      // The five-point stencil: truncation error O(h⁴).
      const double center = values[i];
      const double h = 1e-4 * std::max(1.0, std::fabs(center));
      auto at = [&](double offset) {
        values[i] = center + offset;
        return loss(x, params);
      };
      const double numeric =
          (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12 * h);
      values[i] = center;
      if (std::fabs(analytic[i] - numeric) >
          1e-8 + 1e-6 * std::max(1.0, std::fabs(numeric))) {
        std::printf("%s[%zu]: backward %.12g, differences %.12g\n",
                    what.c_str(), i, analytic[i], numeric);
        ++mismatches;
      }
    }
  };
  check("dinput", x, dx);
  for (int p = 0; p < kNumParams; ++p)
    check("dparam" + std::to_string(p), params[p], grads[p]);
  if (mismatches)
    return 1;
  std::printf("ok\n");
  return 0;
}
