//===- backward-check.cpp - A compiled backward vs differences --*- C++ -*-===//
//
// Links with the host unit of a one-layer library whose layer is `head`
// (d_model 4) with parameters of FP_PARAM_SIZES elements (a -D list, in the
// manifest's order), and checks its backward, in f64 on random inputs
// (runtime/test/TestSeed.h's seed, printed), against five-point finite
// differences of its forward: for L = ⟨w, forward(x, θ)⟩ the backward with
// grad_output = w must give ∂L/∂x and ∂L/∂θ (accumulated into zeroed gradients)
// within 1e-6 relative (1e-8 absolute) at every entry. The parameters listed
// in FP_FROZEN_PARAMS (indices; none by default) are frozen: their gradient
// must be exactly zero. For a layer without a fixed point every backward
// mode is the exact gradient. Prints "ok" and exits 0, or lists the
// mismatches and exits 1.
//
//===----------------------------------------------------------------------===//

#include "TestSeed.h"
#include "fp/Runtime/ModelABI.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

extern "C" fp_status fp_head_forward(const fp_forward_args *args);
extern "C" fp_status fp_head_backward(const fp_backward_args *args);
extern "C" fp_status fp_head_buffer_sizes(fp_target, fp_dtype, int64_t, int64_t,
                                          fp_buffer_sizes *);
extern "C" const char *fp_model_last_error(void);

namespace {

constexpr int64_t kBatch = 2, kLength = 3, kWidth = 4;
constexpr int64_t kParamSizes[] = {FP_PARAM_SIZES};
constexpr int kNumParams = sizeof(kParamSizes) / sizeof(kParamSizes[0]);
#ifdef FP_FROZEN_PARAMS
constexpr int kFrozen[] = {FP_FROZEN_PARAMS};
#else
constexpr int kFrozen[] = {-1};
#endif

bool isFrozen(int p) {
  for (int frozen : kFrozen)
    if (frozen == p)
      return true;
  return false;
}

struct Layer {
  std::vector<double> x;
  std::vector<std::vector<double>> params;

  std::vector<const void *> pointers() const {
    std::vector<const void *> out;
    for (const std::vector<double> &p : params)
      out.push_back(p.data());
    return out;
  }
};

std::vector<double> forward(const Layer &layer, std::vector<char> *saved) {
  fp_buffer_sizes sizes = {};
  fp_head_buffer_sizes(FP_TARGET_CPU, FP_DTYPE_F64, kBatch, kLength, &sizes);
  std::vector<char> workspace(sizes.forward_workspace_bytes + 1);
  if (saved)
    saved->assign(sizes.saved_bytes + 1, 0);
  std::vector<double> out(layer.x.size());
  std::vector<const void *> params = layer.pointers();
  fp_forward_args args = {};
  args.struct_size = sizeof args;
  args.target = FP_TARGET_CPU;
  args.dtype = FP_DTYPE_F64;
  args.batch = kBatch;
  args.seq_len = kLength;
  args.training = 1;
  args.num_params = kNumParams;
  args.params = params.data();
  args.input = layer.x.data();
  args.output = out.data();
  args.saved = saved ? saved->data() : nullptr;
  args.workspace = workspace.data();
  args.workspace_bytes = workspace.size();
  if (fp_head_forward(&args) != FP_OK) {
    std::printf("forward failed: %s\n", fp_model_last_error());
    std::exit(1);
  }
  return out;
}

double loss(const Layer &layer, const std::vector<double> &w) {
  std::vector<double> y = forward(layer, nullptr);
  double sum = 0;
  for (size_t i = 0; i < y.size(); ++i)
    sum += w[i] * y[i];
  return sum;
}

} // namespace

int main() {
  std::mt19937_64 rng(fp::test::testSeed());
  std::normal_distribution<double> normal;
  auto random = [&](size_t n) {
    std::vector<double> v(n);
    for (double &e : v)
      e = normal(rng);
    return v;
  };
  Layer layer{random(kBatch * kLength * kWidth), {}};
  for (int64_t size : kParamSizes)
    layer.params.push_back(random(size));
  const std::vector<double> w = random(layer.x.size());

  std::vector<char> saved;
  forward(layer, &saved);
  fp_buffer_sizes sizes = {};
  fp_head_buffer_sizes(FP_TARGET_CPU, FP_DTYPE_F64, kBatch, kLength, &sizes);
  std::vector<char> workspace(sizes.backward_workspace_bytes + 1);
  std::vector<double> dx(layer.x.size());
  std::vector<std::vector<double>> grads;
  std::vector<void *> gradPointers;
  for (int64_t size : kParamSizes)
    grads.emplace_back(size, 0.0);
  for (std::vector<double> &g : grads)
    gradPointers.push_back(g.data());
  std::vector<const void *> params = layer.pointers();
  fp_backward_args args = {};
  args.struct_size = sizeof args;
  args.target = FP_TARGET_CPU;
  args.dtype = FP_DTYPE_F64;
  args.batch = kBatch;
  args.seq_len = kLength;
  args.num_params = kNumParams;
  args.params = params.data();
  args.input = layer.x.data();
  args.saved = saved.data();
  args.grad_output = w.data();
  args.grad_input = dx.data();
  args.grad_params = gradPointers.data();
  args.workspace = workspace.data();
  args.workspace_bytes = workspace.size();
  if (fp_head_backward(&args) != FP_OK) {
    std::printf("backward failed: %s\n", fp_model_last_error());
    return 1;
  }

  int mismatches = 0;
  auto check = [&](const std::string &what, std::vector<double> &values,
                   const std::vector<double> &analytic) {
    for (size_t i = 0; i < values.size(); ++i) {
      // The five-point stencil: truncation error O(h⁴).
      const double saved = values[i];
      const double h = 1e-4 * std::max(1.0, std::fabs(saved));
      auto at = [&](double offset) {
        values[i] = saved + offset;
        return loss(layer, w);
      };
      const double numeric =
          (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12 * h);
      values[i] = saved;
      if (std::fabs(analytic[i] - numeric) >
          1e-8 + 1e-6 * std::max(1.0, std::fabs(numeric))) {
        std::printf("%s[%zu]: backward %.12g, differences %.12g\n",
                    what.c_str(), i, analytic[i], numeric);
        ++mismatches;
      }
    }
  };
  check("dinput", layer.x, dx);
  for (int p = 0; p < kNumParams; ++p) {
    if (!isFrozen(p)) {
      check("dparam" + std::to_string(p), layer.params[p], grads[p]);
      continue;
    }
    for (size_t i = 0; i < grads[p].size(); ++i)
      if (grads[p][i] != 0) {
        std::printf("dparam%d[%zu]: %.12g for a frozen parameter\n", p, i,
                    grads[p][i]);
        ++mismatches;
      }
  }
  if (mismatches)
    return 1;
  std::printf("ok\n");
  return 0;
}
