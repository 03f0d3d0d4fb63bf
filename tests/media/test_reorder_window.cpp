// media::detail::ReorderWindow (media/src/reorder_window.hpp): in-order packets pass at once; a
// swapped pair, or any order within the hold, comes out sorted; a loss is given up after
// hold_packets; late packets and duplicates are dropped and counted; a jump releases what is
// held; sequence numbers wrap; flush() releases the rest. No clock, no sockets.
#include "reorder_window.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace predrop::media::detail {
namespace {

struct Sink {
  std::vector<std::uint16_t> sequences;
  std::vector<std::uint8_t> first_bytes;
  void operator()(const ReorderWindow::Packet& p) {
    sequences.push_back(p.sequence);
    first_bytes.push_back(p.payload.empty() ? 0 : p.payload[0]);
  }
};

ReorderWindow::Packet packet(std::uint16_t seq, std::vector<std::uint8_t>& storage) {
  storage.assign(100, static_cast<std::uint8_t>(seq));
  return ReorderWindow::Packet{seq, 90u * seq, false, storage, seq};
}

void push(ReorderWindow& w, Sink& out, std::uint16_t seq) {
  std::vector<std::uint8_t> storage;
  w.push(packet(seq, storage), out);
  storage.assign(100, 0xEE);  // the window must have copied what it holds
}

std::vector<std::uint16_t> range(std::uint16_t from, std::uint16_t to) {
  std::vector<std::uint16_t> v;
  for (std::uint16_t s = from; s != to; ++s)
    v.push_back(s);
  return v;
}

TEST(ReorderWindow, InOrderPacketsPassAtOnce) {
  ReorderWindow w;
  Sink out;
  for (std::uint16_t s = 10; s < 20; ++s) {
    push(w, out, s);
    EXPECT_EQ(out.sequences.size(), static_cast<std::size_t>(s - 9)) << "no wait";
  }
  EXPECT_EQ(w.stats().reordered, 0u);
}

TEST(ReorderWindow, ASwappedPairComesOutInOrderWithItsOwnBytes) {
  ReorderWindow w;
  Sink out;
  for (std::uint16_t s : {1, 2, 4, 3, 5}) {
    push(w, out, s);
  }
  EXPECT_EQ(out.sequences, range(1, 6));
  for (std::size_t i = 0; i < out.sequences.size(); ++i) {
    EXPECT_EQ(out.first_bytes[i], static_cast<std::uint8_t>(out.sequences[i]));
  }
  EXPECT_EQ(w.stats().reordered, 1u);
  EXPECT_EQ(w.stats().gaps, 0u);
}

TEST(ReorderWindow, ALossIsGivenUpAfterTheHoldAndALatePacketIsDropped) {
  ReorderWindow w(4);
  Sink out;
  push(w, out, 1);
  for (std::uint16_t s = 3; s < 6; ++s)
    push(w, out, s);  // 2 is missing: 3 packets wait
  EXPECT_EQ(out.sequences, std::vector<std::uint16_t>{1});
  push(w, out, 6);  // the 4th: 2 is given up
  EXPECT_EQ(out.sequences, (std::vector<std::uint16_t>{1, 3, 4, 5, 6}));
  EXPECT_EQ(w.stats().gaps, 1u);
  push(w, out, 2);  // too late now
  EXPECT_EQ(w.stats().late, 1u);
  push(w, out, 7);
  EXPECT_EQ(out.sequences.back(), 7);
  EXPECT_EQ(w.held(), 0u);
}

TEST(ReorderWindow, DuplicatesAreDroppedWhetherHeldOrPassed) {
  ReorderWindow w;
  Sink out;
  for (std::uint16_t s : {1, 3, 3, 2, 2, 4}) {
    push(w, out, s);
  }
  EXPECT_EQ(out.sequences, range(1, 5));
  EXPECT_EQ(w.stats().duplicates, 1u);  // the held 3
  EXPECT_EQ(w.stats().late, 1u);        // the second 2, behind what was released
}

TEST(ReorderWindow, AJumpReleasesWhatIsHeldThenGoesOn) {
  ReorderWindow w;
  Sink out;
  for (std::uint16_t s : {1, 3, 4}) {
    push(w, out, s);
  }
  push(w, out, 1000);
  EXPECT_EQ(out.sequences, (std::vector<std::uint16_t>{1, 3, 4, 1000}));
  push(w, out, 1001);
  EXPECT_EQ(out.sequences.back(), 1001);
}

TEST(ReorderWindow, SequenceNumbersWrap) {
  ReorderWindow w;
  Sink out;
  for (std::uint16_t s : {65534, 0, 65535, 1}) {
    push(w, out, s);
  }
  EXPECT_EQ(out.sequences, (std::vector<std::uint16_t>{65534, 65535, 0, 1}));
}

TEST(ReorderWindow, FlushReleasesTheRestAndResetForgetsTheSequence) {
  ReorderWindow w;
  Sink out;
  for (std::uint16_t s : {1, 3, 5}) {
    push(w, out, s);
  }
  w.flush(out);
  EXPECT_EQ(out.sequences, (std::vector<std::uint16_t>{1, 3, 5}));
  w.reset();
  push(w, out, 40000);  // a new stream: passes at once
  EXPECT_EQ(out.sequences.back(), 40000);
}

TEST(ReorderWindow, AnOversizedEarlyPacketGivesUpTheGapBeforeIt) {
  ReorderWindow w(8, 64);
  Sink out;
  push(w, out, 1);
  std::vector<std::uint8_t> big(500, 7);
  w.push(ReorderWindow::Packet{3, 0, false, big, 0}, out);
  EXPECT_EQ(out.sequences, (std::vector<std::uint16_t>{1, 3}));
  EXPECT_EQ(w.stats().too_large, 1u);
  EXPECT_EQ(w.stats().gaps, 1u);
}

// Any order in which no packet comes more than hold - 1 places early comes out sorted, nothing
// lost, whatever the start (wrap included). The first packet sets where the stream starts (one
// that comes after it but belongs before it is late), so it comes first here.
TEST(ReorderWindow, LocalShufflesComeOutSorted) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const auto start = static_cast<std::uint16_t>(rng());
    std::vector<std::uint16_t> seq;
    for (std::uint16_t i = 0; i < 300; ++i)
      seq.push_back(static_cast<std::uint16_t>(start + i));
    for (std::size_t i = 1; i + 4 <= seq.size(); i += 4) {
      std::shuffle(seq.begin() + static_cast<std::ptrdiff_t>(i),
                   seq.begin() + static_cast<std::ptrdiff_t>(i + 4), rng);
    }
    ReorderWindow w(8);
    Sink out;
    for (std::uint16_t s : seq)
      push(w, out, s);
    w.flush(out);
    ASSERT_EQ(out.sequences.size(), seq.size());
    for (std::size_t i = 0; i < out.sequences.size(); ++i) {
      ASSERT_EQ(out.sequences[i], static_cast<std::uint16_t>(start + i)) << "trial " << trial;
    }
    EXPECT_EQ(w.stats().gaps, 0u);
    EXPECT_EQ(w.stats().late, 0u);
  }
}

}  // namespace
}  // namespace predrop::media::detail
