#pragma once
// What a stream's sessions read blocks from (docs/media.md "Sources"): a sequence of
// frame-aligned blocks of packetized media (the stages of streaming mode, docs/design.md §1),
// each with its packets in send order, their importance for the priority discard and their
// payloads, shared read-only by every reader. A session keeps only its place in the sequence.
//
// Two kinds of source fit the interface:
//   - a file (FileSource): a MediaFile packetized once at start-up; every block is there from
//     the start, a reader joins at block 0, and a looping file goes on for ever;
//   - a live source (issue 23: RTSP publish or pull, a relay from another server): blocks are
//     cut as media arrives and kept in a bounded ring. A block is published whole and is
//     immutable from then on; a reader asks for the next sequence number and gets kNotYet until
//     it is published (a stalled source), kGone once the ring has dropped it (a reader that
//     fell behind rejoins at join_sequence(): a block that starts with a key frame), and kEnded
//     after the source's last block. SourceBlock::hold keeps a block's memory alive while a
//     reader sends it, so a live ring may drop it meanwhile without a copy per reader.
// Packets are packetized once and protected per reader (the SRTP context is per session, the
// payload is not), so a slow reader costs only its own place in the sequence.
//
// Threading: a source is read from any number of threads (the stream server's workers) at
// once; read() and the other queries must be thread-safe (FileSource is immutable). A block's
// spans stay valid while its SourceBlock (its hold) is kept.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "predrop/media/media_file.hpp"

namespace predrop::media {

/// Streams a source may carry (video, audio, ...): the size of SourceBlock's per-stream arrays.
inline constexpr std::size_t kMaxSourceStreams = 4;

/// One block as a source hands it out.
struct SourceBlock {
  /// The source's block number: consecutive from 0 (a looping file counts on across loops).
  std::uint64_t sequence = 0;
  /// Its start on the source's timeline, µs from timeline 0 (non-decreasing in sequence): a
  /// reader sends it at its own time 0 + start_us, each packet send_offset_us later.
  std::uint64_t start_us = 0;
  std::int64_t duration_us = 0;
  /// The block's number for traces (a file's block index; a live source: sequence).
  std::uint32_t index = 0;
  /// Its packets in send order, their importance (core::DiscardPlanner's input), and the bytes
  /// their payload_offset points into.
  std::span<const RtpPacket> packets;
  std::span<const std::uint8_t> importance;
  std::span<const std::uint8_t> arena;
  /// Per stream (RtpPacket::stream): added to each packet's rtp_timestamp (a file's loops), and
  /// the RTP timestamp of the block's start (RTP-Info), both before a session's own offset.
  std::array<std::uint32_t, kMaxSourceStreams> rtp_offset{};
  std::array<std::uint32_t, kMaxSourceStreams> rtp_start{};
  /// Keeps the block's memory alive while it is read (empty for a file, which outlives its
  /// readers).
  std::shared_ptr<const void> hold;

  /// The payload of one of its packets.
  std::span<const std::uint8_t> payload(const RtpPacket& p) const {
    return arena.subspan(static_cast<std::size_t>(p.payload_offset), p.payload_size);
  }
};

/// Whether a block can be read.
enum class BlockState : std::uint8_t {
  kReady,   ///< Here it is.
  kNotYet,  ///< Not produced yet: the source is behind the reader, or stalled. Ask again.
  kGone,    ///< Dropped from a bounded ring: the reader fell behind; rejoin at join_sequence().
  kEnded,   ///< After the source's last block.
};

/// A source of blocks (see the file comment).
class BlockSource {
 public:
  virtual ~BlockSource() = default;
  BlockSource() = default;
  BlockSource(const BlockSource&) = delete;
  BlockSource& operator=(const BlockSource&) = delete;

  /// The streams its packets belong to (RtpPacket::stream indexes this); fixed for its life.
  virtual std::span<const StreamInfo> streams() const = 0;
  /// Media time of the whole source, when it has one (a file that does not loop); nullopt for
  /// a looping file or a live source (the SDP then announces no range).
  virtual std::optional<std::int64_t> duration_us() const = 0;
  /// The media time (of the packets' RTP timestamps, in µs) at timeline 0.
  virtual std::int64_t origin_us() const = 0;
  /// The most packets a block has or may have: readers size their per-block scratch once.
  virtual std::size_t max_block_packets() const = 0;
  /// Where a new reader starts, and where one that fell behind rejoins: a block that starts
  /// with a key frame (a file: 0; a live source: its newest such block).
  virtual std::uint64_t join_sequence() const = 0;
  /// Block `sequence` into `out` when kReady (`out` is left alone otherwise).
  virtual BlockState read(std::uint64_t sequence, SourceBlock& out) const = 0;
  /// When the instant at `media_us` (µs on the packets' timeline, as origin_us()) was captured,
  /// as an NTP time (RFC 3550 §4) of the publisher's clock; nullopt when the source does not
  /// know (a file; a live source before its publisher's first video sender report).
  virtual std::optional<std::uint64_t> capture_ntp(std::int64_t /*media_us*/) const {
    return std::nullopt;
  }
};

/// A MediaFile as a BlockSource: blocks 0 .. n-1 of the file, then (with `loop`) the same again
/// with the timeline and RTP timestamps running on, for ever.
class FileSource final : public BlockSource {
 public:
  /// Throws std::invalid_argument if the file has more than kMaxSourceStreams streams.
  FileSource(std::shared_ptr<const MediaFile> file, bool loop);

  std::span<const StreamInfo> streams() const override { return file_->streams(); }
  std::optional<std::int64_t> duration_us() const override;
  std::int64_t origin_us() const override;
  std::size_t max_block_packets() const override { return max_block_packets_; }
  std::uint64_t join_sequence() const override { return 0; }
  BlockState read(std::uint64_t sequence, SourceBlock& out) const override;

  const MediaFile& file() const { return *file_; }
  bool loop() const { return loop_; }

 private:
  std::shared_ptr<const MediaFile> file_;
  bool loop_;
  std::size_t max_block_packets_ = 0;
  // Per stream: RTP ticks of one pass through the file.
  std::array<std::uint32_t, kMaxSourceStreams> loop_ticks_{};
};

}  // namespace predrop::media
