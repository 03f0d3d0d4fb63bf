#pragma once
// A stream session's own RTCP out: per sending SSRC (each track, and a WebRTC session's RTX
// stream once it sent a retransmission) an SR (RFC 3550 §6.4.1) with SDES CNAME, and BYE
// (§6.6) appended when the session ends, protected with the session's SRTCP sender and sent
// through its transport (predrop/server/session_transport.hpp). The transmitter's SRTP session
// protects RTP only: SRTCP has an index space of its own, so this second outbound session with
// the same key never reuses an index, and it lets the session add BYE.
//
// Time: the SR's NTP time is a wall-clock anchor taken at construction plus the session clock's
// elapsed time, so it moves with the session clock (and the RTP timestamps beside it) even if
// the system clock is stepped; an SR's time is what a later RR's LSR names.
// Threading: the server's loop thread. Nothing is allocated per SR.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "predrop/net/srtp_session.hpp"
#include "predrop/server/session_transport.hpp"
#include "predrop/wire/pdct.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::server::detail {

/// The SRs and BYE of one session.
class SenderReports {
 public:
  /// What an SR says about one track.
  struct Track {
    std::uint32_t ssrc = 0;
    std::uint32_t timestamp_offset = 0;  ///< The track's random RTP timestamp offset.
    std::uint32_t clock_rate = 90000;
    std::uint64_t packets = 0;  ///< Sent so far.
    std::uint64_t octets = 0;   ///< Payload octets sent so far.
    /// The transport track whose RTCP way carries this SSRC's SR; none: its own index. An RTX
    /// stream (RFC 4588) has no track of its own: its SR goes the way of the track it repairs.
    std::optional<std::size_t> transport_track;
  };

  /// `suite` empty: plain RTCP. `now_us` is the session clock now. Throws std::runtime_error
  /// when SRTCP cannot be set up.
  SenderReports(std::optional<wire::SrtpSuite> suite, const wire::SrtpKeyMaterial& key,
                std::string cname, std::uint64_t now_us);

  /// The NTP time (64-bit, RFC 3550 §4) at session clock time `now_us`.
  std::uint64_t ntp_at(std::uint64_t now_us) const;
  /// One compound per entry of `tracks` whose transport track has RTCP: SR at `now_us` with the RTP
  /// timestamp of media time `media_now_us` (µs on the media's clock), SDES CNAME, and BYE if
  /// `bye`. Returns the compounds sent. `capture`: an RTP timestamp of track `capture_track` (the
  /// video's) and when the publisher captured it (a live source, media::BlockSource::capture_ntp);
  /// it goes as a PDCT APP (predrop/wire/pdct.hpp) into that track's compound.
  std::size_t send(std::uint64_t now_us, std::int64_t media_now_us, std::span<const Track> tracks,
                   bool bye, SessionTransport& transport,
                   std::optional<wire::PdctClock> capture = std::nullopt,
                   std::size_t capture_track = 0);
  /// Compounds that SRTCP failed to protect (not sent).
  std::uint64_t protect_errors() const { return protect_errors_; }

 private:
  std::optional<net::SrtpSession> srtcp_;
  std::string cname_;
  std::uint64_t wall_anchor_us_;   // µs since the Unix epoch at clock time clock_anchor_us_
  std::uint64_t clock_anchor_us_;  // the session clock then
  std::uint64_t protect_errors_ = 0;
};

}  // namespace predrop::server::detail
