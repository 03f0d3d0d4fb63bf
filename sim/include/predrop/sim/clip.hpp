#pragma once
// The media a simulated session streams: per block, its packets with their due time in the
// block, link bytes, discard importance and frame. Either the table of a real clip (written by
// bench/pathsim's predrop-clip-table from media::MediaFile, so sizes, key-frame bursts and the
// priority order are the server's own) or a synthetic clip for tests.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/sim/event_queue.hpp"

namespace predrop::sim {

struct ClipPacket {
  SimTime offset_us = 0;        ///< Due time relative to the block's start.
  std::uint32_t bytes = 0;      ///< Link bytes (payload + RTP/SRTP + kLinkOverheadBytes).
  std::uint8_t importance = 0;  ///< core::kNeverDrop = 255 is never discarded.
  std::uint32_t frame = 0;      ///< Frame index within the block (send order).
  bool video = true;
  bool reference = false;  ///< Its frame is referenced by later ones (I, P).
  bool key = false;        ///< Its frame is a key frame.
};

struct ClipBlock {
  SimTime duration_us = 1'000'000;
  std::vector<ClipPacket> packets;
  std::vector<std::uint8_t> importance;  ///< packets[i].importance, for the planner.
  std::uint64_t bytes = 0;
  std::uint32_t frames = 0;  ///< Frames (video and audio) in the block.
};

struct Clip {
  std::vector<ClipBlock> blocks;
  /// Mean link rate over the clip, bit/s.
  double mean_rate_bps() const;
};

/// A synthetic clip: 30 fps, closed GOPs of one block (I, then P with two non-reference B
/// between), audio at 50 packets/s never dropped; frame sizes in bytes.
struct SyntheticClip {
  std::uint32_t blocks = 60;
  double key_bytes = 7'000;
  double p_bytes = 6'000;
  double b_bytes = 2'500;
  std::uint32_t audio_bytes = 290;  ///< Per 20 ms.
  std::uint32_t max_payload = 1200;
  std::uint32_t overhead = 82;  ///< RTP header + extensions + SRTP tag + link.
  /// Bytes factor per block (VBR): block i's frames are scaled by scale[i % size] (empty = 1).
  std::vector<double> scale;
};
Clip make_synthetic_clip(const SyntheticClip& spec);

/// Reads a clip table (CSV:
/// block,duration_us,offset_us,bytes,importance,frame,video,reference,key).
core::Result<Clip> load_clip_table(const std::string& path);
/// Writes one (the same columns).
core::Status save_clip_table(const Clip& clip, const std::string& path);

/// Recomputes importance vectors, byte and frame counts from the packets.
void finish_block(ClipBlock& block);

}  // namespace predrop::sim
