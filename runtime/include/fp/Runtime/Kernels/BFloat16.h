//===- BFloat16.h - bfloat16 storage and the arithmetic types ---*- C++ -*-===//
//
// The element types of the kernels. A call's buffers hold `Real`: float,
// double, or bf16 (FP_DTYPE_BF16, docs/abi.md). bf16 is storage only: it
// holds the upper half of an IEEE binary32 (sign, 8 exponent bits, 7
// fraction bits), widens to float exactly, and kernels compute on it in
// Compute<bf16> = float, rounding once when they store a result. Sums
// accumulate in Accum<Real>: double on the host for float and bf16.
//
// A bf16 converts to float implicitly, so expressions over bf16 operands are
// float expressions; the conversions from float, double and integers are
// explicit and round to nearest, ties to even, so that every narrowing store
// is visible in the code. The same code runs on the host and in CUDA device
// code; sm_80 and newer convert in hardware, with the same result.
//
// Depends only on the C++17 standard library (and cuda_bf16.h under nvcc).
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_KERNELS_BFLOAT16_H
#define FP_RUNTIME_KERNELS_BFLOAT16_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#endif

/// Functions callable from host and CUDA device code.
#ifdef __CUDACC__
#define FP_HOST_DEVICE __host__ __device__
#else
#define FP_HOST_DEVICE
#endif

namespace fp {

namespace detail {

FP_HOST_DEVICE inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

FP_HOST_DEVICE inline float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// The upper 16 bits of `value` rounded to nearest, ties to even; a NaN
/// stays a (quiet) NaN of the same sign.
FP_HOST_DEVICE inline uint16_t roundToBf16(float value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __bfloat16_as_ushort(__float2bfloat16_rn(value));
#else
  const uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  // Adding 0x7fff, plus one when the kept part is odd, carries into the kept
  // part exactly when the dropped part is above half, or half and odd.
  const uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
#endif
}

/// `value` rounded to float by truncation, with the last bit set where that
/// was inexact ("round to odd"). Rounding this to nearest bf16 rounds
/// `value` itself correctly: float has more than two bits beyond bf16's.
FP_HOST_DEVICE inline float roundToOddFloat(double value) {
  float rounded = static_cast<float>(value);
  if (static_cast<double>(rounded) == value || std::isinf(rounded) ||
      value != value)
    return rounded;
  uint32_t bits = floatBits(rounded);
  if (std::fabs(static_cast<double>(rounded)) > std::fabs(value))
    --bits; // rounded away from zero: the truncation is one below
  return floatFromBits(bits | 1u);
}

} // namespace detail

/// A bfloat16 in memory. Trivially copyable, 2 bytes, bit-compatible with
/// CUDA's __nv_bfloat16 (cuBLAS's CUDA_R_16BF).
struct bf16 {
  uint16_t bits;

  bf16() = default;
  FP_HOST_DEVICE explicit bf16(float value)
      : bits(detail::roundToBf16(value)) {}
  FP_HOST_DEVICE explicit bf16(double value)
      : bits(detail::roundToBf16(detail::roundToOddFloat(value))) {}
  template <typename Integer,
            std::enable_if_t<std::is_integral_v<Integer>, int> = 0>
  FP_HOST_DEVICE explicit bf16(Integer value)
      : bf16(static_cast<double>(value)) {}

  /// The exact value, as a float.
  FP_HOST_DEVICE operator float() const {
    return detail::floatFromBits(static_cast<uint32_t>(bits) << 16);
  }

  FP_HOST_DEVICE static bf16 fromBits(uint16_t bits) {
    bf16 value;
    value.bits = bits;
    return value;
  }
};

static_assert(sizeof(bf16) == 2 && std::is_trivially_copyable_v<bf16>,
              "bf16 must be two bytes of plain storage");

/// The type kernels compute in for buffers of `Real`: float for bf16, the
/// element type itself otherwise.
template <typename Real> struct ArithmeticOf { using Type = Real; };
template <> struct ArithmeticOf<bf16> { using Type = float; };
template <typename Real>
using Compute = typename ArithmeticOf<std::remove_cv_t<Real>>::Type;

/// The type a sum accumulates in: double for float arithmetic, so that the
/// rounding of a long f32 sum does not grow with its length (PyTorch's CPU
/// sums are pairwise for the same reason); a gradient such as a weight-norm
/// gain's, a sum of many cancelling terms, needs it to stay within 1e-4.
template <typename Real>
using Accum = std::conditional_t<std::is_same_v<Compute<Real>, float>, double,
                                 Compute<Real>>;

} // namespace fp

#endif // FP_RUNTIME_KERNELS_BFLOAT16_H
