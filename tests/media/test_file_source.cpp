// media::FileSource (media/include/predrop/media/block_source.hpp): the sample clip's blocks as
// a BlockSource. Without loop: blocks 0 .. n-1, then kEnded, and a duration for the SDP range.
// With loop: block n is block 0 again one file later on the timeline, its RTP timestamps one
// pass of the file's clock later; never ended, no duration.
#include <gtest/gtest.h>

#include <memory>

#include "predrop/media/block_source.hpp"

namespace predrop {
namespace {

std::shared_ptr<const media::MediaFile> sample() {
  static std::shared_ptr<const media::MediaFile> m = [] {
    media::PacketizeOptions po;
    po.block = {media::BlockSize::Unit::kDuration, 1'000'000};
    auto f = media::MediaFile::open(PREDROP_TEST_SAMPLE, po);
    EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message);
    return f.ok() ? f.value() : nullptr;
  }();
  return m;
}

TEST(FileSource, TheFileBlockByBlockThenItsEnd) {
  media::FileSource src(sample(), false);
  const auto blocks = sample()->blocks();
  ASSERT_GT(blocks.size(), 1u);
  EXPECT_EQ(src.join_sequence(), 0u);
  EXPECT_EQ(src.duration_us(), sample()->duration_us());
  EXPECT_EQ(src.origin_us(), blocks.front().start_us);
  std::size_t largest = 0;
  for (std::uint64_t s = 0; s < blocks.size(); ++s) {
    media::SourceBlock b;
    ASSERT_EQ(src.read(s, b), media::BlockState::kReady);
    EXPECT_EQ(b.sequence, s);
    EXPECT_EQ(b.index, blocks[s].index);
    EXPECT_EQ(b.packets.size(), blocks[s].packet_count);
    EXPECT_EQ(b.importance.size(), blocks[s].packet_count);
    EXPECT_EQ(b.start_us, static_cast<std::uint64_t>(blocks[s].start_us - blocks[0].start_us));
    EXPECT_EQ(b.rtp_offset[0], 0u);
    EXPECT_FALSE(b.hold) << "a file outlives its readers";
    const auto& first = b.packets.front();
    EXPECT_TRUE(std::equal(b.payload(first).begin(), b.payload(first).end(),
                           sample()->payload(first).begin()));
    largest = std::max<std::size_t>(largest, blocks[s].packet_count);
  }
  EXPECT_EQ(src.max_block_packets(), largest);
  media::SourceBlock after;
  EXPECT_EQ(src.read(blocks.size(), after), media::BlockState::kEnded);
}

TEST(FileSource, ALoopingFileRunsOnWithItsTimeline) {
  media::FileSource src(sample(), true);
  const auto blocks = sample()->blocks();
  const auto n = blocks.size();
  EXPECT_FALSE(src.duration_us());
  media::SourceBlock first, again;
  ASSERT_EQ(src.read(0, first), media::BlockState::kReady);
  ASSERT_EQ(src.read(n, again), media::BlockState::kReady);
  EXPECT_EQ(again.index, first.index);
  EXPECT_EQ(again.start_us, first.start_us + static_cast<std::uint64_t>(sample()->duration_us()));
  const auto video = sample()->streams()[0];
  const auto ticks = static_cast<std::uint32_t>(
      static_cast<std::uint64_t>(sample()->duration_us()) * video.clock_rate / 1'000'000);
  EXPECT_EQ(again.rtp_offset[0], ticks);
  EXPECT_EQ(again.rtp_start[0], first.rtp_start[0] + ticks);
  media::SourceBlock far;
  EXPECT_EQ(src.read(100 * n + 3, far), media::BlockState::kReady);
  EXPECT_EQ(far.index, blocks[3].index);
}

}  // namespace
}  // namespace predrop
