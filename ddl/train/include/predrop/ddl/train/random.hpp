#pragma once
// Seeded, reproducible random numbers for weight initialisation and mini-batch sampling.
// std::uniform_*_distribution and std::shuffle are implementation-defined, so the same seed would
// give different models under libstdc++ and libc++; these generators are fully specified:
// SplitMix64 (Steele, Lea, Flood, OOPSLA 2014) for seeding and xoshiro256** (Blackman, Vigna,
// "Scrambled linear pseudorandom number generators", 2018) for the stream.
#include <cstdint>
#include <span>
#include <utility>

namespace predrop::ddl::train {

/// One step of SplitMix64: advances `state` and returns a well-mixed 64-bit value.
constexpr std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Derives an independent seed for sub-stream `stream` (e.g. a worker index) of `base`.
constexpr std::uint64_t derive_seed(std::uint64_t base, std::uint64_t stream) {
  std::uint64_t s = base ^ (stream * 0xd1342543de82ef95ULL);
  splitmix64(s);
  return splitmix64(s);
}

/// xoshiro256**: small, fast, and the same sequence on every platform for a given seed.
class Rng {
 public:
  /// Seeds the four state words from `seed` through SplitMix64 (never all zero).
  explicit constexpr Rng(std::uint64_t seed) {
    for (auto& w : s_)
      w = splitmix64(seed);
  }

  /// Next 64 random bits.
  constexpr std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform float in [0, 1) with 24 random mantissa bits.
  constexpr float uniform01() { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }

  /// Uniform float in [lo, hi).
  constexpr float uniform(float lo, float hi) { return lo + (hi - lo) * uniform01(); }

  /// Uniform integer in [0, n), unbiased (rejection of the short top range); n must be > 0.
  constexpr std::uint64_t below(std::uint64_t n) {
    const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    for (;;) {
      const std::uint64_t r = next();
      if (r >= threshold) return r % n;
    }
  }

  /// Fisher-Yates shuffle with this generator (reproducible, unlike std::shuffle).
  template <typename T>
  constexpr void shuffle(std::span<T> items) {
    for (std::size_t i = items.size(); i > 1; --i) {
      const std::size_t j = static_cast<std::size_t>(below(i));
      std::swap(items[i - 1], items[j]);
    }
  }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4] = {};
};

}  // namespace predrop::ddl::train
