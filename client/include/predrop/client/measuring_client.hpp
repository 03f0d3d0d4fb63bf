#pragma once
// The measuring test client: plays an RTSP stream from a predrop server, decodes it, measures
// each block's reception period L (from the stage extension) and its quality P (PSNR of the
// decoded block against the same frames of the reference file), and reports both per block in
// an SRTCP RR+PDFB compound. Lost or discarded pictures count as the last shown picture repeated.
// A stream without video is scored on its audio: P is the PSNR of the decoded PCM against the
// reference's, full scale 1, lost audio heard as silence (media::AudioScorer, docs/media.md).
//
// Time: when a block's report goes out (its late pictures' wait) and when the stream is over
// read the injected net::Clock; packet arrivals are the kernel's receive stamps (CLOCK_MONOTONIC,
// what net::MonotonicClock reads), or the clock's time when the datagram is handled with
// kernel_timestamps off (a test on a FakeClock). The loop's timer only says when to look again;
// poll() looks now.
// Threading: loop thread.
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"

namespace predrop::client {

/// A receive-side impairment for tests: in stage `stage`, drop `drop_fraction` of the packets
/// (every k-th, deterministically) and delay the arrival of its second half by `stretch_ms`.
struct Impairment {
  std::uint32_t stage = 0;
  double drop_fraction = 0.0;
  std::uint32_t stretch_ms = 0;
};

/// Parses "STAGE:drop=0.3" / "STAGE:stretch=200" / "STAGE:drop=0.3,stretch=200".
core::Result<Impairment> parse_impairment(std::string_view text);

/// A pause of the session: PAUSE this long after PLAY, PLAY again `length_ms` later.
struct PausePlan {
  std::uint32_t at_ms = 0;
  std::uint32_t length_ms = 0;
};

/// Parses "AT,SECONDS" (seconds, decimals allowed, both > 0 and at most a day).
core::Result<PausePlan> parse_pause(std::string_view text);

/// Settings of the client.
struct ClientOptions {
  std::string url;               ///< rtsp://host:port/name (host: an IP literal or localhost)
  std::string reference;         ///< The reference media file (what the server streams)
  std::uint32_t max_blocks = 0;  ///< Stop after this many reported blocks (0 = stream end)
  double psnr_cap_db = 60.0;
  bool feedback = true;  ///< Send PDFB reports (announced in SETUP)
  std::string
      save_video;  ///< Write the received video here (Annex B; IVF for VP8/VP9/AV1); empty = off
  std::vector<Impairment> impairments;
  std::uint32_t end_after_idle_ms = 3000;  ///< The stream is over after this long without media
  /// Pause the session (RTSP PAUSE) this long after PLAY was answered, for pause_ms, then
  /// resume it (PLAY without Range) with the server's state kept (RFC 8867 §5.8). 0: never.
  std::uint32_t pause_at_ms = 0;
  std::uint32_t pause_ms = 0;
  std::uint32_t settle_ms = 400;  ///< Wait this long after a block for its late pictures
  /// Packet arrival times from the kernel's receive stamps; off: the clock's time when the loop
  /// handles the datagram (for a FakeClock, whose time the kernel does not know).
  bool kernel_timestamps = true;
  /// A live stream (docs/live.md "The measuring client on a live stream"): its blocks are the
  /// server's, not the reference file's; the first decoded picture is found in the reference
  /// by its content (the anchor), every later one by its RTP timestamp from there.
  bool live = false;
  /// Send an interim alert (PDAL, docs/design.md §2.9) as soon as a packet of the block in
  /// flight has queued this long at the bottleneck, so that the server re-plans the rest of
  /// that block; 0: off (the default everywhere: docs/design.md §2.9). Needs feedback.
  std::uint32_t alert_ms = 0;
};

/// One block as the client measured and reported it.
struct BlockResult {
  std::uint32_t stage = 0;
  double reception_period_ms = 0.0;
  double psnr_db = 0.0;
  std::uint32_t planned = 0;  ///< Packets of the block in the reference packetization
  std::uint32_t sent = 0;     ///< Announced by the server (after its pre-discard)
  std::uint32_t received = 0;
  double rate = 0.0;             ///< 1 - sent / planned: the server's R for the block
  double network_loss = 0.0;     ///< 1 - received / sent
  double queue_delay_ms = 0.0;   ///< At the block's end (its last packets)
  double queue_max_ms = 0.0;     ///< Largest of any packet of the block (PDFB v1.1)
  double dispersion_kbps = 0.0;  ///< Bottleneck rate by packet dispersion, link kbit/s; 0 = none
  std::uint32_t frames = 0;      ///< Pictures the block should show
  /// Live: the block's first picture's index in the reference (display order); -1 otherwise.
  std::int64_t first_reference_picture = -1;
  /// The audio's score (docs/media.md "Audio score") when the stream has video and audio and
  /// both are scored; NaN otherwise (psnr_db is then the only score: the video's, or an
  /// audio-only stream's).
  double audio_psnr_db = std::numeric_limits<double>::quiet_NaN();
  /// Live: glass-to-glass latency of the block's pictures, the publisher's capture (its clock,
  /// dated by the server's PDCT) to their decode here (this host's wall clock): mean and
  /// largest, ms; NaN when the server sent no capture clock (docs/live.md).
  double latency_ms = std::numeric_limits<double>::quiet_NaN();
  double latency_max_ms = std::numeric_limits<double>::quiet_NaN();
};

/// Totals at the end.
struct ClientSummary {
  std::uint32_t blocks = 0;
  std::uint64_t packets = 0;
  std::uint64_t frames_decoded = 0;
  std::uint64_t srtp_failures = 0;
  std::uint64_t alerts = 0;  ///< Interim alerts sent (alert_ms).
  double mean_psnr_db = 0.0;
  /// Blocks with an audio score beside the video's, and its mean (0 when none).
  std::uint32_t audio_blocks = 0;
  double mean_audio_psnr_db = 0.0;
};

/// The client. Construct, start(), run the loop; on_done fires once at the end.
class MeasuringClient {
 public:
  using OnBlock = std::function<void(const BlockResult&)>;
  using OnDone = std::function<void(const core::Status& result, const ClientSummary& summary)>;

  /// `clock` must outlive the client.
  MeasuringClient(net::EventLoop& loop, const net::Clock& clock, ClientOptions options,
                  OnBlock on_block, OnDone on_done);
  ~MeasuringClient();
  MeasuringClient(const MeasuringClient&) = delete;
  MeasuringClient& operator=(const MeasuringClient&) = delete;

  /// Connects and starts the RTSP exchange.
  void start();
  /// Ends the session now (TEARDOWN) and reports done.
  void stop();
  /// Judges the time at the clock's now, as the 20 ms timer does: reports the blocks whose
  /// wait is over, and ends the run once the stream has been quiet for end_after_idle_ms.
  void poll();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace predrop::client
