#pragma once
// The player page's P attributed to blocks (docs/webrtc.md "Quality in the page"). The page
// reports, with each second's P, the RTP timestamps of the last video frame presented at the
// second's start and at its end (requestVideoFrameCallback's rtpTimestamp): the second played the
// media of (rtp_from, rtp_to]. A block is the video RTP span from its stage's first timestamp to
// the next stage's. A second counts for each block in proportion to the share of its span the
// block holds (a second in which no frame came, rtp_from == rtp_to, counts whole for the block
// the standing picture is in), and a block's P is the weighted mean of the seconds that touched
// it, final once the page presented a frame at or past the block's end.
//
// The browser block reports that wait for these P are held in page_report_hold.hpp. Pure: no
// clock, no socket. No allocation.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace predrop::server::detail {

/// One second of play as the page attributes it: P over the media it presented.
struct PagePlayed {
  double p = 0;                ///< The second's P, in [0, 1].
  std::uint32_t rtp_from = 0;  ///< RTP timestamp of the last frame presented when it began.
  std::uint32_t rtp_to = 0;    ///< ... and when it ended.
};

/// Blocks' P from the page's seconds.
class PageQualityJoin {
 public:
  /// Blocks remembered: reports older than this many stages get no P.
  static constexpr std::size_t kBlocks = 16;

  /// Stage `stage` begins; its first video RTP timestamp is `rtp_start`.
  void begin_block(std::uint32_t stage, std::uint32_t rtp_start);
  /// Attributes one second of play. False (nothing attributed) when its span is negative
  /// (more than 2^31 ticks) or touches no block remembered.
  bool add(const PagePlayed& played);
  /// The block's P, once final (the page presented a frame at or past its end).
  std::optional<double> quality(std::uint32_t stage) const;

 private:
  struct Block {
    bool valid = false;
    bool done = false;  ///< The page presented a frame at or past its end.
    std::uint32_t stage = 0;
    std::uint32_t rtp_start = 0;
    double weight = 0;    ///< Sum of the seconds' shares.
    double weighted = 0;  ///< Sum of share x P.
  };

  const Block* find(std::uint32_t stage) const {
    const Block& b = blocks_[stage % kBlocks];
    return b.valid && b.stage == stage ? &b : nullptr;
  }

  std::array<Block, kBlocks> blocks_{};
};

}  // namespace predrop::server::detail
