#pragma once
// Which received RTP packets a light client authenticates when it verifies only a sample
// (group.srtp_verify_every > 1): the first packet of every SSRC, then every N-th datagram.
//
// Why the first of each SSRC: libsrtp makes an inbound stream from the first packet of an SSRC
// that authenticates, taking its rollover counter as 0 (RFC 3711 §3.3.1). A stream whose first
// *verified* packet comes after its sequence number wrapped (a sender that started near 65535,
// sampled only every 16th packet) is authenticated with the wrong index and fails for the rest
// of the run; seen as ~200 "SRTP failures" in one of 1000 clients (bench/perf/README.md).
//
// Threading: one per client, one thread. No allocation.
#include <array>
#include <cstddef>
#include <cstdint>

namespace predrop::load {

/// Decides per received RTP datagram whether to verify it.
class VerifySampler {
 public:
  /// Verify every `every`-th datagram (1 or 0: all) and the first of each SSRC.
  explicit VerifySampler(std::uint32_t every) : every_(every == 0 ? 1 : every) {}
  /// True if the datagram from `ssrc` is to be verified; call once per RTP datagram.
  bool take(std::uint32_t ssrc) {
    const bool nth = count_++ % every_ == 0;
    for (std::size_t i = 0; i < seen_count_; ++i) {
      if (seen_[i] == ssrc) return nth;
    }
    // A client has a few tracks; past kMaxSsrcs new SSRCs fall back to the sampling alone.
    if (seen_count_ < seen_.size()) seen_[seen_count_++] = ssrc;
    return true;
  }

 private:
  static constexpr std::size_t kMaxSsrcs = 8;
  std::uint32_t every_;
  std::uint64_t count_ = 0;
  std::array<std::uint32_t, kMaxSsrcs> seen_{};
  std::size_t seen_count_ = 0;
};

}  // namespace predrop::load
