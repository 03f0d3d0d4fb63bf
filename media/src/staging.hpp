#pragma once
// Private to media/src: what the packetizers produce while a file is read, before the builder
// orders frames and cuts blocks. A packetizer appends RTP payloads through PayloadSink; the
// builder keeps one StagedFrame per source frame that points at its staged packets.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bitstream.hpp"
#include "predrop/media/media_file.hpp"

namespace predrop::media::detail {

/// A packet before the final ordering: its payload is already in the arena.
struct StagedPacket {
  std::uint64_t offset = 0;
  std::uint16_t size = 0;
  bool marker = false;
  bool parameter_set = false;
};

/// A frame before the final ordering.
struct StagedFrame {
  Frame frame;
  std::int64_t pts = 0;  ///< In the stream's time base, for exact ordering.
  std::int64_t send_us = 0;
  std::uint32_t first_staged = 0;
  std::uint32_t staged_count = 0;
};

/// Where packetizers put RTP payloads: appended to the file's arena, one StagedPacket each.
class PayloadSink {
 public:
  PayloadSink(std::vector<std::uint8_t>& arena, std::vector<StagedPacket>& packets)
      : arena_(arena), packets_(packets) {}

  /// One RTP payload made of `head` (packetization header, may be empty) then `body`.
  void add(Bytes head, Bytes body, bool marker, bool parameter_set) {
    StagedPacket p;
    p.offset = arena_.size();
    p.size = static_cast<std::uint16_t>(head.size() + body.size());
    p.marker = marker;
    p.parameter_set = parameter_set;
    arena_.insert(arena_.end(), head.begin(), head.end());
    arena_.insert(arena_.end(), body.begin(), body.end());
    packets_.push_back(p);
  }
  /// Packets staged so far (the index the next one gets).
  std::uint32_t count() const { return static_cast<std::uint32_t>(packets_.size()); }
  /// Sets the marker bit of the last staged packet.
  void mark_last() { packets_.back().marker = true; }

 private:
  std::vector<std::uint8_t>& arena_;
  std::vector<StagedPacket>& packets_;
};

/// How a packetizer reports a problem with the input (counted as a MediaFile warning).
using Warn = std::function<void(std::string)>;

}  // namespace predrop::media::detail
