//===- Random.h - Counter-based random streams for tasks --------*- C++ -*-===//
//
// The tasks' own random numbers. Every generated sequence owns a stream keyed
// by (seed, domain, a, b) — e.g. (seed, train, step, row) — so a batch is a
// pure function of its key, independent of thread count, of the order in
// which rows are generated and of torch's global generator. The stream is
// splitmix64 (Steele, Lea & Flood 2014) started from a hash of the key;
// bounded integers use rejection sampling, never std::*_distribution (whose
// results differ between standard libraries).
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_LIB_TASKS_RANDOM_H // NOLINT(llvm-header-guard)
#define FP_RUNTIME_LIB_TASKS_RANDOM_H

#include <cstdint>
#include <stdexcept>

namespace fp::rt::detail {

/// The splitmix64 output function: a bijective 64-bit mixer.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Which kind of data a stream generates; keeps training and evaluation data
/// of one seed independent.
enum class StreamDomain : uint64_t { Train = 1, Eval = 2 };

/// A splitmix64 stream for one generated sequence.
class SequenceRng {
public:
  SequenceRng(uint64_t seed, StreamDomain domain, uint64_t a, uint64_t b) {
    uint64_t h = mix64(seed ^ 0x6a09e667f3bcc909ULL);
    h = mix64(h ^ (static_cast<uint64_t>(domain) + kGolden));
    h = mix64(h ^ (a + 2 * kGolden));
    h = mix64(h ^ (b + 3 * kGolden));
    state = h;
  }

  /// The next 64 random bits.
  uint64_t next() {
    state += kGolden;
    return mix64(state);
  }

  /// Uniform integer in [lo, hi] (both inclusive), unbiased.
  int64_t uniform(int64_t lo, int64_t hi) {
    if (hi < lo)
      throw std::logic_error("SequenceRng::uniform: empty range");
    uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
    if (span == 0) // the full 64-bit range
      return static_cast<int64_t>(next());
    // Reject the top (2^64 mod span) values so every residue is equally
    // likely.
    uint64_t limit = -span % span;
    uint64_t bits;
    do {
      bits = next();
    } while (bits < limit);
    return lo + static_cast<int64_t>(bits % span);
  }

private:
  static constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
  uint64_t state;
};

} // namespace fp::rt::detail

#endif // FP_RUNTIME_LIB_TASKS_RANDOM_H
