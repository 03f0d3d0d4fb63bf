#pragma once
// Private to client/src: glass-to-glass latency of a live stream per block (docs/live.md
// "Glass-to-glass latency per block"). The server puts a PDCT APP packet
// (predrop/wire/pdct.hpp) into its video SR's compound: one RTP timestamp of the video track
// dated in the publisher's NTP clock. Every decoded picture is dated by it from its own RTP
// timestamp, and its latency is the wall clock at its decode minus that capture time, so the
// figure is only as good as the agreement of the two hosts' clocks (the same host in tests;
// NTP-synced hosts otherwise: their offset adds to every figure).
// Threading: the client's loop thread.
#include <cstdint>
#include <map>
#include <optional>
#include <span>

#include "predrop/wire/pdct.hpp"

namespace predrop::client {

/// One block's latencies.
struct BlockLatency {
  double mean_ms = 0.0;
  double max_ms = 0.0;
  std::uint32_t pictures = 0;
};

/// The latest capture clock and the latencies per block.
class LiveLatency {
 public:
  /// A plain (already unprotected) RTCP compound from the server: its PDCT, if any, is the
  /// clock from now on. False if it carried none (or was no RTCP).
  bool on_rtcp(std::span<const std::uint8_t> compound);
  /// A picture of stage `stage` with RTP timestamp `rtp` (the track's, absolute) decoded at
  /// `decoded_unix_us`; ignored until the first clock came.
  void on_picture(std::uint32_t stage, std::uint32_t rtp, std::int64_t decoded_unix_us);
  /// Stage `stage`'s figures (and forgets them); nullopt when none of its pictures was dated.
  std::optional<BlockLatency> take(std::uint32_t stage);
  /// The clock, once one came.
  const std::optional<wire::PdctClock>& clock() const { return clock_; }

 private:
  struct Sum {
    double sum_ms = 0.0;
    double max_ms = 0.0;
    std::uint32_t n = 0;
  };
  std::optional<wire::PdctClock> clock_;
  std::map<std::uint32_t, Sum> blocks_;
};

}  // namespace predrop::client
