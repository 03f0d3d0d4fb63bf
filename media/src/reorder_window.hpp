#pragma once
// Puts a publisher's RTP packets back in sequence order before they are depacketized (a live
// source's ingest, live_source.cpp). UDP paths reorder now and then (Wi-Fi, LTE, several links
// bonded); without a window the depacketizer reads the first packet of a swapped pair as lost
// and the second as late, and a whole picture is damaged for a packet that only came a little
// early. Packets that come in order pass straight through (no copy, no wait); one that comes
// ahead of a gap is copied into one of a fixed set of slots, and the gap is declared lost once
// `hold_packets` packets wait behind it (the latency a loss costs: a few ms at a camera's rate).
// Late packets (behind what was released) and duplicates are dropped and counted. Memory is
// allocated once, at construction. Threading: one writer (the live source's).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace predrop::media::detail {

class ReorderWindow {
 public:
  /// The sequence-number span it holds ahead of the next packet expected; a packet further
  /// ahead is a jump (the stream skipped): what is held is released, then the stream goes on
  /// from it.
  static constexpr std::size_t kSlots = 64;

  struct Packet {
    std::uint16_t sequence = 0;
    std::uint32_t timestamp = 0;
    bool marker = false;
    std::span<const std::uint8_t> payload;
    std::uint64_t arrival_us = 0;
  };

  struct Stats {
    std::uint64_t reordered = 0;   ///< Packets that came ahead of a gap and were held.
    std::uint64_t gaps = 0;        ///< Sequence numbers given up as lost.
    std::uint64_t late = 0;        ///< Packets behind what was released: dropped.
    std::uint64_t duplicates = 0;  ///< Packets already held: dropped.
    std::uint64_t too_large = 0;   ///< Out-of-order packets over max_payload: the gap released.
  };

  /// `hold_packets` in [1, kSlots - 1]: packets held behind a gap before it is given up;
  /// `max_payload`: the largest payload a slot holds.
  explicit ReorderWindow(std::size_t hold_packets = 8, std::size_t max_payload = 2048);

  /// Accounts one packet; `out(const Packet&)` runs for every packet released, in sequence
  /// order, before this returns (the span is valid only during the call).
  template <typename Out>
  void push(const Packet& p, Out&& out);
  /// Releases every held packet in order (the gaps stay gaps): the end of the stream.
  template <typename Out>
  void flush(Out&& out);
  /// Forgets the sequence (a new RTP stream starts anywhere); held packets are dropped.
  void reset();

  const Stats& stats() const { return stats_; }
  std::size_t held() const { return held_; }

 private:
  struct Slot {
    bool used = false;
    std::uint16_t sequence = 0;
    std::uint32_t timestamp = 0;
    bool marker = false;
    std::uint64_t arrival_us = 0;
    std::size_t size = 0;
    std::vector<std::uint8_t> bytes;
  };
  Slot& slot(std::uint16_t sequence) { return slots_[sequence % kSlots]; }
  template <typename Out>
  void release(Slot& s, Out& out);
  // Releases the held packets that follow next_ without a gap.
  template <typename Out>
  void drain(Out& out);
  // Gives up the gap at next_: jumps to the oldest held packet and drains from there.
  template <typename Out>
  void skip_gap(Out& out);

  std::size_t hold_packets_;
  std::size_t max_payload_;
  std::array<Slot, kSlots> slots_;
  std::size_t held_ = 0;
  bool have_next_ = false;
  std::uint16_t next_ = 0;
  Stats stats_;
};

template <typename Out>
void ReorderWindow::release(Slot& s, Out& out) {
  out(Packet{s.sequence, s.timestamp, s.marker, std::span(s.bytes.data(), s.size), s.arrival_us});
  s.used = false;
  --held_;
}

template <typename Out>
void ReorderWindow::drain(Out& out) {
  while (held_ > 0) {
    Slot& s = slot(next_);
    if (!s.used || s.sequence != next_) return;
    release(s, out);
    ++next_;
  }
}

template <typename Out>
void ReorderWindow::skip_gap(Out& out) {
  if (held_ == 0) return;
  std::uint16_t k = 1;
  while (k < kSlots) {
    const Slot& s = slot(static_cast<std::uint16_t>(next_ + k));
    if (s.used && s.sequence == static_cast<std::uint16_t>(next_ + k)) break;
    ++k;
  }
  stats_.gaps += k;
  next_ = static_cast<std::uint16_t>(next_ + k);
  drain(out);
}

template <typename Out>
void ReorderWindow::push(const Packet& p, Out&& out) {
  if (!have_next_) {
    have_next_ = true;
    next_ = p.sequence;
  }
  const auto ahead = static_cast<std::uint16_t>(p.sequence - next_);
  if (ahead == 0) {
    out(p);
    ++next_;
    drain(out);
    return;
  }
  if (ahead >= 0x8000) {
    ++stats_.late;
    return;
  }
  if (ahead >= kSlots) {
    // A jump: what is held goes first, in order, then the stream goes on from this packet.
    flush(out);
    next_ = p.sequence;
    out(p);
    ++next_;
    return;
  }
  Slot& s = slot(p.sequence);
  if (s.used && s.sequence == p.sequence) {
    ++stats_.duplicates;
    return;
  }
  if (p.payload.size() > max_payload_) {
    // Cannot be held: the gaps before it are given up and it goes now.
    ++stats_.too_large;
    while (next_ != p.sequence) {
      Slot& g = slot(next_);
      if (g.used && g.sequence == next_) {
        release(g, out);
      } else {
        ++stats_.gaps;
      }
      ++next_;
    }
    out(p);
    ++next_;
    drain(out);
    return;
  }
  s.used = true;
  s.sequence = p.sequence;
  s.timestamp = p.timestamp;
  s.marker = p.marker;
  s.arrival_us = p.arrival_us;
  s.size = p.payload.size();
  std::copy(p.payload.begin(), p.payload.end(), s.bytes.begin());
  ++held_;
  ++stats_.reordered;
  if (held_ >= hold_packets_) skip_gap(out);
}

template <typename Out>
void ReorderWindow::flush(Out&& out) {
  while (held_ > 0) {
    Slot& s = slot(next_);
    if (s.used && s.sequence == next_) {
      release(s, out);
    } else {
      ++stats_.gaps;
    }
    ++next_;
  }
}

}  // namespace predrop::media::detail
