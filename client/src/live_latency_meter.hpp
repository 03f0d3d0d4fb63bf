#pragma once
// Private to client/src: the measuring client's side of the glass-to-glass latency of a live
// stream (docs/design.md §4.3b, docs/live.md "Glass-to-glass latency per block"). It reads the
// server's SRs off the video track's RTCP port (SRTCP when the session is keyed) for their PDCT
// clock, remembers the RTP timestamps of the last access units handed to the decoder (which
// gives back only their pts), and dates each decoded picture into the block whose start is the
// latest at or before it. The arithmetic is LiveLatency's (live_latency.hpp); this unit is the
// glue between it and the client's sockets, decoder and blocks.
// Time: the wall clock (`WallClock`, Unix µs; the system clock unless a test passes its own) is
// read once per dated picture: a latency is the publisher's capture to the decode on this host.
// Threading: the client's loop thread.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>

#include "live_latency.hpp"
#include "predrop/net/srtp_session.hpp"

namespace predrop::client {

/// Each stage's earliest video time (its key picture), in 90 kHz ticks from the video's base.
using StageStarts = std::map<std::uint32_t, std::int64_t>;

/// Dates a live stream's decoded pictures by the server's capture clock, per block.
class LiveLatencyMeter {
 public:
  /// Reads the wall clock as Unix µs.
  using WallClock = std::int64_t (*)();
  /// The system clock as Unix µs.
  static std::int64_t system_unix_us();

  /// `srtcp` unprotects the server's SRs (none: they come as plain RTCP).
  explicit LiveLatencyMeter(std::optional<net::SrtpSession> srtcp,
                            WallClock wall_clock = &system_unix_us);

  /// A datagram on the video track's RTCP port: its PDCT, if any, is the clock from now on.
  void on_server_rtcp(std::span<const std::uint8_t> datagram);
  /// An access unit with RTP timestamp `rtp` goes to the decoder as pts `pts`.
  void on_access_unit(std::int64_t pts, std::uint32_t rtp);
  /// A picture with pts `pts` was decoded now; `starts` say which block it belongs to.
  void on_picture(std::int64_t pts, const StageStarts& starts);
  /// The stream is over: the pictures drained from now on were held back, not late, and are
  /// not dated.
  void drain() { draining_ = true; }
  /// The block's figures (and forgets them); nullopt when none of its pictures was dated.
  std::optional<BlockLatency> take(std::uint32_t stage) { return latency_.take(stage); }

 private:
  LiveLatency latency_;
  std::optional<net::SrtpSession> srtcp_;
  WallClock wall_clock_;
  // The decoder's pts back to the RTP timestamp (the video's base moves once PLAY's answer
  // came), for the last access units decoded.
  std::array<std::pair<std::int64_t, std::uint32_t>, 32> decoded_rtp_{};
  std::size_t decoded_next_ = 0;
  bool draining_ = false;
};

}  // namespace predrop::client
