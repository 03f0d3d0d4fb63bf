#pragma once
// The player page's P attributed to blocks, and a browser's block reports held for it
// (docs/webrtc.md "Quality in the page"). The page reports, with each second's P, the RTP
// timestamps of the last video frame presented at the second's start and at its end
// (requestVideoFrameCallback's rtpTimestamp): the second played the media of (rtp_from, rtp_to].
// A block is the video RTP span from its stage's first timestamp to the next stage's. A second
// counts for each block in proportion to the share of its span the block holds (a second in
// which no frame came, rtp_from == rtp_to, counts whole for the block the standing picture is
// in), and a block's P is the weighted mean of the seconds that touched it, final once the page
// presented a frame at or past the block's end.
//
// The session hands a browser's transport-cc block report to its controller when the block's P
// is final, or when its wait ends (then with the last P handed: the P comparison sees no
// change), in stage order. Pure: no clock, no socket; times are passed in. No allocation.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "predrop/core/stage_report.hpp"

namespace predrop::server::detail {

/// One second of play as the page attributes it: P over the media it presented.
struct PagePlayed {
  double p = 0;                ///< The second's P, in [0, 1].
  std::uint32_t rtp_from = 0;  ///< RTP timestamp of the last frame presented when it began.
  std::uint32_t rtp_to = 0;    ///< ... and when it ended.
};

/// Blocks' P from the page's seconds, and the block reports that wait for it.
class PageQualityJoin {
 public:
  /// Blocks remembered: reports older than this many stages get no P.
  static constexpr std::size_t kBlocks = 16;
  /// Block reports held at once; one more releases the oldest.
  static constexpr std::size_t kHeld = 8;

  /// Stage `stage` begins; its first video RTP timestamp is `rtp_start`.
  void begin_block(std::uint32_t stage, std::uint32_t rtp_start);
  /// Attributes one second of play. False (nothing attributed) when its span is negative
  /// (more than 2^31 ticks) or touches no block remembered.
  bool add(const PagePlayed& played);
  /// The block's P, once final (the page presented a frame at or past its end).
  std::optional<double> quality(std::uint32_t stage) const;

  /// Holds `report` until its P is final or `until_us` (a time in the caller's clock). Then, or
  /// at once if the P is already final, release() hands it on. A full queue first releases its
  /// oldest report through `out`.
  template <class F>
  void hold(const core::StageReport& report, std::uint64_t until_us, F&& out) {
    if (count_ == kHeld) release_front(out);
    held_[(first_ + count_) % kHeld] = Held{report, until_us};
    ++count_;
  }
  /// Hands on, in stage order, each held report whose P is final or whose wait ended by
  /// `now_us`: out(report with P set, bool from_page). A report whose P is not known goes with
  /// the last P handed (0 before any). Stops at the first report still waiting. Returns how
  /// many went with the page's P.
  template <class F>
  std::size_t release(std::uint64_t now_us, F&& out) {
    std::size_t with_p = 0;
    while (count_ != 0) {
      const Held& h = held_[first_];
      if (!quality(h.report.stage) && now_us < h.until_us) break;
      with_p += release_front(out) ? 1 : 0;
    }
    return with_p;
  }
  /// Reports held now.
  std::size_t held() const { return count_; }
  /// The last P handed on with a report (0 before the first).
  double last_p() const { return last_p_; }

 private:
  struct Block {
    bool valid = false;
    bool done = false;  ///< The page presented a frame at or past its end.
    std::uint32_t stage = 0;
    std::uint32_t rtp_start = 0;
    double weight = 0;    ///< Sum of the seconds' shares.
    double weighted = 0;  ///< Sum of share x P.
  };
  struct Held {
    core::StageReport report;
    std::uint64_t until_us = 0;
  };

  const Block* find(std::uint32_t stage) const {
    const Block& b = blocks_[stage % kBlocks];
    return b.valid && b.stage == stage ? &b : nullptr;
  }
  template <class F>
  bool release_front(F& out) {
    core::StageReport r = held_[first_].report;
    first_ = (first_ + 1) % kHeld;
    --count_;
    const std::optional<double> p = quality(r.stage);
    if (p) last_p_ = *p;
    r.performance = last_p_;
    out(r, p.has_value());
    return p.has_value();
  }

  std::array<Block, kBlocks> blocks_{};
  std::array<Held, kHeld> held_{};
  std::size_t first_ = 0;
  std::size_t count_ = 0;
  double last_p_ = 0;
};

}  // namespace predrop::server::detail
