//===- Common.h - Types and scalar functions of all kernels -----*- C++ -*-===//
//
// What the host kernels (Host.h) and the CUDA kernels (Device.cuh) share,
// and generated code names through either: read-only buffer types, the
// scalar functions and elementwise function objects (host and device), shapes,
// reductions, the solver settings and the workspace layout.
//
// Depends only on the C++17 standard library, BFloat16.h and the model ABI
// header.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_COMMON_H
#define FP_RUNTIME_KERNELS_COMMON_H

#include "fp/Runtime/Kernels/BFloat16.h"
#include "fp/Runtime/ModelABI.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace fp::host {

/// A read-only buffer of `Real`. Kernels deduce `Real` from their output
/// pointer only, so inputs may be const or not and optional ones nullptr.
template <typename Real> struct Identity { using Type = Real; };
template <typename Real> using In = const typename Identity<Real>::Type *;

//===----------------------------------------------------------------------===//
// Scalar functions (as PyTorch computes them)
//===----------------------------------------------------------------------===//

/// e^x in single precision as the host computes it: Cody–Waite range
/// reduction, x = n·ln 2 + r with |r| ≤ ln 2 / 2, and Cephes' degree-6
/// polynomial for e^r, scaled by 2^n in two halves so that subnormal results
/// stay exact to rounding. It is within 1 ulp of the correctly rounded value
/// (HostKernelsTest checks a dense sample of all floats) and branch free, so
/// that loops over it vectorise (compile with -fno-trapping-math).
FP_HOST_DEVICE inline float polynomialExp(float x) {
  constexpr float maxArg = 88.72283935546875f; // largest x with finite e^x
  constexpr float minArg = -103.972084045410f; // smallest x with e^x > 0
  float clamped = x < minArg ? minArg : (x > maxArg ? maxArg : x);
  // n = round(x / ln 2) by the 1.5·2^23 shift (round to nearest even).
  constexpr float shift = 12582912.0f;
  float n = (clamped * 1.44269504088896341f + shift) - shift;
  float r = (clamped - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  int32_t k = static_cast<int32_t>(n), half = k >> 1;
  int32_t bits1 = (half + 127) << 23, bits2 = (k - half + 127) << 23;
  float scale1, scale2;
  std::memcpy(&scale1, &bits1, sizeof scale1);
  std::memcpy(&scale2, &bits2, sizeof scale2);
  float result = (p * scale1) * scale2;
  if (x > maxArg)
    result = std::numeric_limits<float>::infinity();
  if (x < minArg)
    result = 0.0f;
  return x != x ? x : result;
}

/// e^x. Double precision is std::exp. Single precision is polynomialExp on
/// the host, and CUDA's expf on a CUDA device (within 2 ulp,
/// DeviceMathTest checks it as HostKernelsTest checks the host's): the e^x
/// of PyTorch's CUDA kernels, in 12 PTX instructions (one ex2.approx) where
/// the polynomial takes 40; the selective scan computes N of them per
/// channel and token (docs/performance.md). A unit compiled with
/// FP_DEVICE_HOST_EXP defined (`fpc --no-cuda-expf`) takes the polynomial
/// on the device too, bit for bit the host's.
FP_HOST_DEVICE inline double exp(double x) { return std::exp(x); }
FP_HOST_DEVICE inline float exp(float x) {
#if defined(__CUDA_ARCH__) && !defined(FP_DEVICE_HOST_EXP)
  return ::expf(x);
#else
  return polynomialExp(x);
#endif
}

template <typename Real> FP_HOST_DEVICE inline Real sigmoid(Real x) {
  return Real(1) / (Real(1) + exp(-x));
}
template <typename Real> FP_HOST_DEVICE inline Real silu(Real x) {
  return x * sigmoid(x);
}
/// log(1 + e^x), and x itself above 20 (PyTorch's and Mamba's threshold).
template <typename Real> FP_HOST_DEVICE inline Real softplus(Real x) {
  return x > Real(20) ? x : std::log1p(exp(x));
}

/// Elementwise operations as function objects: every use of one in a
/// library shares one instantiation of unary() or binary().
struct Neg {
  template <typename Real> FP_HOST_DEVICE Real operator()(Real x) const {
    return -x;
  }
};
struct Exp {
  template <typename Real> FP_HOST_DEVICE Real operator()(Real x) const {
    return exp(x);
  }
};
struct Log {
  template <typename Real> FP_HOST_DEVICE Real operator()(Real x) const {
    return std::log(x);
  }
};
struct Sqrt {
  template <typename Real> FP_HOST_DEVICE Real operator()(Real x) const {
    return std::sqrt(x);
  }
};
struct Tanh {
  template <typename Real> FP_HOST_DEVICE Real operator()(Real x) const {
    return std::tanh(x);
  }
};
struct Abs {
  template <typename Real> FP_HOST_DEVICE Real operator()(Real x) const {
    return std::abs(x);
  }
};
struct Silu {
  template <typename Real> FP_HOST_DEVICE Real operator()(Real x) const {
    return silu(x);
  }
};
struct Sigmoid {
  template <typename Real> FP_HOST_DEVICE Real operator()(Real x) const {
    return sigmoid(x);
  }
};
struct Softplus {
  template <typename Real> FP_HOST_DEVICE Real operator()(Real x) const {
    return softplus(x);
  }
};
struct Add {
  template <typename Real>
  FP_HOST_DEVICE Real operator()(Real x, Real y) const {
    return x + y;
  }
};
struct Sub {
  template <typename Real>
  FP_HOST_DEVICE Real operator()(Real x, Real y) const {
    return x - y;
  }
};
struct Mul {
  template <typename Real>
  FP_HOST_DEVICE Real operator()(Real x, Real y) const {
    return x * y;
  }
};
struct Div {
  template <typename Real>
  FP_HOST_DEVICE Real operator()(Real x, Real y) const {
    return x / y;
  }
};
struct Max {
  template <typename Real>
  FP_HOST_DEVICE Real operator()(Real x, Real y) const {
    return std::max(x, y);
  }
};
struct Min {
  template <typename Real>
  FP_HOST_DEVICE Real operator()(Real x, Real y) const {
    return std::min(x, y);
  }
};

//===----------------------------------------------------------------------===//
// The matrix exponential
//===----------------------------------------------------------------------===//

/// matrixExp (fp.matrix_exp): the matrix is halved s times until its 1-norm
/// is at most 1, with s at most kMatrixExpMaxHalvings (beyond 2^32 the
/// exponential overflows unless the matrix is nearly skew, where the
/// remaining norm costs accuracy), then e^X is the Taylor polynomial of
/// matrixExpDegree<C>() terms, whose remainder for ‖X‖₁ ≤ 1 is below C's
/// unit roundoff (1/19! < 2⁻⁵³, 1/11! < 2⁻²⁴), and is squared s times.
inline constexpr int kMatrixExpMaxHalvings = 32;
template <typename C> constexpr int matrixExpDegree() {
  return sizeof(C) >= 8 ? 18 : 10;
}

/// The halvings of matrixExp for a 1-norm `norm`.
template <typename C> FP_HOST_DEVICE inline int matrixExpHalvings(C norm) {
  int halvings = 0;
  while (norm > C(1) && halvings < kMatrixExpMaxHalvings) {
    norm /= C(2);
    ++halvings;
  }
  return halvings;
}

//===----------------------------------------------------------------------===//
// Shapes and reductions
//===----------------------------------------------------------------------===//

/// A shape of at most kMaxRank extents.
inline constexpr int kMaxRank = 8;
struct Shape {
  int rank = 0;
  int64_t extent[kMaxRank] = {};
  int64_t numElements() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= extent[i];
    return n;
  }
};

enum class Reduction { Sum, Max };

/// `out[i] += in[i]` for i < n: one parameter gradient accumulated into the
/// caller's (a derived backward's last step, for every parameter at once).
template <typename Real> struct GradientSum {
  const Real *in;
  int64_t n;
  Real *out;
};

//===----------------------------------------------------------------------===//
// Solver settings
//===----------------------------------------------------------------------===//

/// The solver constants of one fp.fixed_point (docs/spec.md §3).
struct SolverSettings {
  double tolerance;
  double trainQuantile;
  int32_t maxIterTrain;
  int32_t maxIterEval;
  double relaxStart;
  double relaxDecay;
  int32_t relaxPatience;
};

//===----------------------------------------------------------------------===//
// Workspace layout
//===----------------------------------------------------------------------===//

/// One workspace buffer: `elements` scalars times B (if perBatch) times T
/// (if perStep).
struct BufferSpec {
  int64_t elements;
  bool perBatch;
  bool perStep;
};

inline constexpr size_t kBufferAlignment = 64;

/// Byte offsets of `count` buffers laid out one after the other, each
/// aligned; returns the total size.
inline size_t layoutBuffers(const BufferSpec *specs, int count, int64_t batch,
                            int64_t length, size_t scalarSize,
                            size_t *offsets) {
  size_t total = 0;
  for (int i = 0; i < count; ++i) {
    size_t elements = size_t(specs[i].elements);
    if (specs[i].perBatch)
      elements *= size_t(batch);
    if (specs[i].perStep)
      elements *= size_t(length);
    total =
        (total + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    if (offsets)
      offsets[i] = total;
    total += elements * scalarSize;
  }
  return total;
}

/// Tokens a chunk holds at least when the launchers split a sample's tokens
/// into chunks on their own (Fused.h, "Chunked execution").
inline constexpr int64_t kMinChunkTokens = 64;

/// Chunks each sample's `length` tokens are split into for a kernel whose
/// scans allow it, on a machine that runs `parallel` teams at once: the
/// most that batch · chunks teams still run at once, each chunk of at least
/// kMinChunkTokens tokens; one when `batch` samples take half the teams or
/// more. A chunk more would start a second round of teams for a few of
/// them, and the call would take two chunks' time: at B = 16 on 264 teams,
/// 17 chunks of 121 tokens take 242 tokens' time, 16 of 128 take 128. The
/// environment variable FP_TIME_CHUNKS=K sets K instead (at most one chunk
/// per token; 1 turns chunking off).
inline int64_t timeChunks(int64_t batch, int64_t length, int64_t parallel) {
  if (const char *forced = std::getenv("FP_TIME_CHUNKS"); forced && *forced) {
    char *end = nullptr;
    const long long chunks = std::strtoll(forced, &end, 10);
    if (*end != '\0' || chunks < 1)
      throw std::invalid_argument(std::string("FP_TIME_CHUNKS=") + forced +
                                  ": expected a positive integer");
    return std::min<int64_t>(chunks, std::max<int64_t>(length, 1));
  }
  if (batch <= 0 || length < 2 * kMinChunkTokens)
    return 1;
  const int64_t fit = parallel / batch;
  return std::max<int64_t>(1, std::min(fit, length / kMinChunkTokens));
}

/// A failed CUDA or cuBLAS call; entry points report it as FP_ERROR_DEVICE.
struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace fp::host

#endif // FP_RUNTIME_KERNELS_COMMON_H
