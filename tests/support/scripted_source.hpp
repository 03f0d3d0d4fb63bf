#pragma once
// A live-like media::BlockSource for tests (the test double of the Source seam,
// media/include/predrop/media/block_source.hpp): it produces the blocks of a MediaFile one at a
// time when the test says so (publish()), on a timeline that runs on across passes through the
// file; it keeps only the newest `ring` blocks (older ones read as kGone), may stall (the test
// publishes nothing) and end. Every `key_every`-th block is a join point (a block that starts
// with a key frame; a camera's GOP may be longer than a block). Each published block is a copy
// with its own packets and payload bytes held by a shared_ptr, as a live ring holds its blocks:
// a reader that keeps a block after the ring dropped it reads what its SourceBlock holds, not
// freed memory (ASan would say).
#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "predrop/media/block_source.hpp"

namespace predrop::test {

class ScriptedLiveSource final : public media::BlockSource {
 public:
  ScriptedLiveSource(std::shared_ptr<const media::MediaFile> file, std::size_t ring,
                     std::uint64_t key_every = 1)
      : file_(std::move(file)), ring_(ring), key_every_(key_every) {
    for (const auto& b : file_->blocks()) {
      max_packets_ = std::max<std::size_t>(max_packets_, b.packet_count);
    }
  }

  /// Produces the next block (the file's next one, looping, the timeline running on).
  void publish() {
    const auto blocks = file_->blocks();
    const std::uint64_t seq = published_++;
    const media::Block& b = blocks[seq % blocks.size()];
    const std::uint64_t pass = seq / blocks.size();
    auto e = std::make_shared<Entry>();
    for (const media::RtpPacket& p : file_->packets(b)) {
      media::RtpPacket q = p;
      q.payload_offset = e->arena.size();
      const auto payload = file_->payload(p);
      e->arena.insert(e->arena.end(), payload.begin(), payload.end());
      e->packets.push_back(q);
    }
    const auto importance = file_->importance(b);
    e->importance.assign(importance.begin(), importance.end());
    media::SourceBlock& v = e->view;
    v.sequence = seq;
    v.start_us = pass * static_cast<std::uint64_t>(file_->duration_us()) +
                 static_cast<std::uint64_t>(b.start_us - origin_us());
    v.duration_us = b.duration_us;
    v.index = static_cast<std::uint32_t>(seq);
    v.packets = e->packets;
    v.importance = e->importance;
    v.arena = e->arena;
    const auto streams = file_->streams();
    for (std::size_t s = 0; s < streams.size(); ++s) {
      const auto ticks = static_cast<std::uint32_t>(
          static_cast<std::uint64_t>(file_->duration_us()) * streams[s].clock_rate / 1'000'000);
      v.rtp_offset[s] = static_cast<std::uint32_t>(pass) * ticks;
      v.rtp_start[s] = static_cast<std::uint32_t>(v.start_us * streams[s].clock_rate / 1'000'000);
    }
    e->key = seq % key_every_ == 0;
    ring_entries_.push_back(std::move(e));
    while (ring_entries_.size() > ring_)
      ring_entries_.pop_front();
  }
  /// No block after the ones published.
  void end() { ended_ = true; }
  std::uint64_t published() const { return published_; }

  std::span<const media::StreamInfo> streams() const override { return file_->streams(); }
  std::optional<std::int64_t> duration_us() const override { return std::nullopt; }
  std::int64_t origin_us() const override { return file_->blocks().front().start_us; }
  std::size_t max_block_packets() const override { return max_packets_; }
  std::uint64_t join_sequence() const override {
    for (auto it = ring_entries_.rbegin(); it != ring_entries_.rend(); ++it) {
      if ((*it)->key) return (*it)->view.sequence;
    }
    return published_;  // none yet: the next one
  }
  media::BlockState read(std::uint64_t sequence, media::SourceBlock& out) const override {
    if (sequence >= published_)
      return ended_ ? media::BlockState::kEnded : media::BlockState::kNotYet;
    const std::uint64_t oldest = published_ - ring_entries_.size();
    if (sequence < oldest) return media::BlockState::kGone;
    const auto& e = ring_entries_[sequence - oldest];
    out = e->view;
    out.hold = e;
    return media::BlockState::kReady;
  }

 private:
  struct Entry {
    media::SourceBlock view;
    std::vector<media::RtpPacket> packets;
    std::vector<std::uint8_t> importance;
    std::vector<std::uint8_t> arena;
    bool key = false;
  };
  std::shared_ptr<const media::MediaFile> file_;
  std::size_t ring_;
  std::uint64_t key_every_;
  std::size_t max_packets_ = 0;
  std::uint64_t published_ = 0;
  bool ended_ = false;
  std::deque<std::shared_ptr<Entry>> ring_entries_;
};

}  // namespace predrop::test
