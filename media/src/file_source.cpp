#include <algorithm>
#include <stdexcept>

#include "predrop/media/block_source.hpp"

namespace predrop::media {

FileSource::FileSource(std::shared_ptr<const MediaFile> file, bool loop)
    : file_(std::move(file)), loop_(loop) {
  const auto streams = file_->streams();
  if (streams.size() > kMaxSourceStreams) {
    throw std::invalid_argument("a source carries at most 4 streams");
  }
  for (const Block& b : file_->blocks()) {
    max_block_packets_ = std::max<std::size_t>(max_block_packets_, b.packet_count);
  }
  for (std::size_t s = 0; s < streams.size(); ++s) {
    loop_ticks_[s] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(file_->duration_us()) *
                                                streams[s].clock_rate / 1'000'000);
  }
}

std::optional<std::int64_t> FileSource::duration_us() const {
  if (loop_) return std::nullopt;
  return file_->duration_us();
}

std::int64_t FileSource::origin_us() const {
  return file_->blocks().empty() ? 0 : file_->blocks().front().start_us;
}

BlockState FileSource::read(std::uint64_t sequence, SourceBlock& out) const {
  const auto blocks = file_->blocks();
  if (blocks.empty()) return BlockState::kEnded;
  const std::uint64_t loops = sequence / blocks.size();
  if (loops > 0 && !loop_) return BlockState::kEnded;
  const Block& b = blocks[sequence % blocks.size()];
  const auto pass = static_cast<std::uint32_t>(loops);
  out.sequence = sequence;
  out.start_us = loops * static_cast<std::uint64_t>(file_->duration_us()) +
                 static_cast<std::uint64_t>(std::max<std::int64_t>(0, b.start_us - origin_us()));
  out.duration_us = b.duration_us;
  out.index = b.index;
  out.packets = file_->packets(b);
  out.importance = file_->importance(b);
  out.arena = file_->arena();
  const auto streams = file_->streams();
  const auto start = static_cast<std::uint64_t>(std::max<std::int64_t>(0, b.start_us));
  for (std::size_t s = 0; s < streams.size(); ++s) {
    // In 32-bit RTP arithmetic, as the timestamps wrap.
    out.rtp_offset[s] = pass * loop_ticks_[s];
    out.rtp_start[s] =
        static_cast<std::uint32_t>(start * streams[s].clock_rate / 1'000'000) + out.rtp_offset[s];
  }
  out.hold.reset();
  return BlockState::kReady;
}

}  // namespace predrop::media
