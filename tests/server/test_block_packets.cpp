// A block's packets as one session sends them (server/src/block_packets.hpp): the packets of
// the streams set up, their link bytes from a point on, and the discard curve of priority
// discard in link bytes.
#include "block_packets.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace predrop::server::detail {
namespace {

media::RtpPacket packet(std::uint8_t stream, std::uint16_t payload) {
  media::RtpPacket p;
  p.stream = stream;
  p.payload_size = payload;
  return p;
}

TEST(BlockPackets, OnlyThePacketsOfStreamsSetUpArePickedInOrder) {
  // Stream 0 video (track 0), stream 1 audio not set up.
  const std::array<media::RtpPacket, 5> packets{packet(0, 100), packet(1, 10), packet(0, 200),
                                                packet(1, 20), packet(0, 300)};
  const std::array<std::uint8_t, 5> importance{9, 1, 8, 2, 7};
  const std::array<int, 2> track_of_stream{0, -1};
  std::array<std::uint32_t, 5> index{};
  std::array<std::uint8_t, 5> picked{};
  ASSERT_EQ(pick_packets(packets, importance, track_of_stream, index, picked), 3u);
  EXPECT_EQ((std::array<std::uint32_t, 3>{index[0], index[1], index[2]}),
            (std::array<std::uint32_t, 3>{0, 2, 4}));
  EXPECT_EQ((std::array<std::uint8_t, 3>{picked[0], picked[1], picked[2]}),
            (std::array<std::uint8_t, 3>{9, 8, 7}));
  // No more than the scratch holds (the size the source promised).
  EXPECT_EQ(pick_packets(packets, importance, track_of_stream, std::span(index).first(2), picked),
            2u);
}

TEST(BlockPackets, DisposablePacketsAreThoseOfFramesNothingRefersTo) {
  // A key frame, a reference frame, two disposable ones (the lowest and the highest importance
  // of that class), and audio.
  const std::array<std::uint8_t, 5> importance{
      media::kImportanceKey, media::kImportanceReferenceMin, 0, media::kImportanceDisposableMax,
      media::kImportanceNever};
  EXPECT_EQ(disposable_packets(importance), 2u);
  EXPECT_EQ(disposable_packets(std::span(importance).first(2)), 0u);
  EXPECT_EQ(disposable_packets({}), 0u);
}

TEST(BlockPackets, LinkBytesArePayloadPlusTheOverheadOfEachPacketFromTheFirstOn) {
  const std::array<media::RtpPacket, 4> packets{packet(0, 100), packet(1, 10), packet(0, 200),
                                                packet(0, 300)};
  const BlockPackets all{packets.data(), nullptr, packets.size()};
  EXPECT_EQ(link_bytes(all, 0, 50), 100u + 10 + 200 + 300 + 4 * 50);
  EXPECT_EQ(link_bytes(all, 2, 50), 200u + 300 + 2 * 50);
  EXPECT_EQ(link_bytes(all, 4, 50), 0u);
  // Through an index: packets 0, 2, 3 only.
  const std::array<std::uint32_t, 3> index{0, 2, 3};
  const BlockPackets picked{packets.data(), index.data(), index.size()};
  EXPECT_EQ(link_bytes(picked, 1, 50), 200u + 300 + 2 * 50);
}

TEST(BlockPackets, TheDiscardCurveAddsLinkBytesInThePlannersDiscardOrder) {
  const std::array<media::RtpPacket, 4> packets{packet(0, 100), packet(0, 200), packet(0, 300),
                                                packet(0, 400)};
  const BlockPackets block{packets.data(), nullptr, packets.size()};
  // Lowest importance first; 255 is never discarded: packet 2 (1), then 0 (3), then 3 (5).
  const std::array<std::uint8_t, 4> importance{3, 255, 1, 5};
  std::vector<std::uint32_t> order(4);
  std::vector<std::uint64_t> removable(5);
  const auto curve = discard_curve(block, importance, 0, 10, order, removable);
  EXPECT_EQ(std::vector<std::uint64_t>(curve.begin(), curve.end()),
            (std::vector<std::uint64_t>{0, 310, 310 + 110, 310 + 110 + 410}));
  // From packet 2 on: importance {1, 5} of packets 2 and 3.
  const auto rest = discard_curve(block, std::span(importance).subspan(2), 2, 10, order, removable);
  EXPECT_EQ(std::vector<std::uint64_t>(rest.begin(), rest.end()),
            (std::vector<std::uint64_t>{0, 310, 310 + 410}));
}

}  // namespace
}  // namespace predrop::server::detail
