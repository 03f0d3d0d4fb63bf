// The live stream's picture matcher (client/src/live_picture_matcher.hpp): the first picture is
// found by its content wherever the stream starts in the reference, later ones by their RTP
// timestamps, so a dropped picture leaves its index out and a picture whose timestamp is a
// little off still lands on its own.
#include "live_picture_matcher.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "predrop/media/video_frame.hpp"

namespace predrop::client {
namespace {

constexpr int kSize = 16;
constexpr std::int64_t kIntervalUs = 40'000;  // 25 pictures a second
constexpr std::int64_t kTicks = 3600;         // the same at 90 kHz

// Reference picture i: uniform, its luma 16 + 8 i (neighbours 32 dB apart, half-way 38 dB: below
// the anchor's 40 dB, so only the right picture matches by content; at most 30 pictures).
std::uint8_t luma(std::size_t i) {
  return static_cast<std::uint8_t>(16 + 8 * i);
}

class FakeReference final : public ReferencePictures {
 public:
  explicit FakeReference(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      pictures_.emplace_back(kSize, kSize, luma(i), 128, 128);
    }
  }
  std::size_t count() const override { return pictures_.size(); }
  std::int64_t pts_us(std::size_t index) const override {
    return static_cast<std::int64_t>(index) * kIntervalUs;
  }
  core::Result<media::FrameView> picture(std::size_t index) override {
    ++reads;
    return pictures_.at(index).view();
  }
  std::size_t reads = 0;

 private:
  std::vector<media::YuvFrame> pictures_;
};

// A decoded picture of uniform luma `y` (a reference picture, or one a little off: coding loss),
// its view at RTP time `pts` (90 kHz, any base).
struct Decoded {
  media::YuvFrame frame;
  media::FrameView view(std::int64_t pts) const {
    media::FrameView v = frame.view();
    v.pts = pts;
    return v;
  }
};
Decoded decoded(std::uint8_t y) {
  return Decoded{media::YuvFrame(kSize, kSize, y, 128, 128)};
}

TEST(LivePictureMatcher, AnchorsByContentWhereverTheStreamStarts) {
  FakeReference ref(29);
  LivePictureMatcher m(ref);
  EXPECT_FALSE(m.anchored());
  // The viewer joined at the reference's picture 17 (the stream started 0.68 s into the file);
  // the RTP base is arbitrary and the picture one luma step off the reference (coding loss).
  const std::int64_t base = 1'234'567;
  const auto first = decoded(static_cast<std::uint8_t>(luma(17) + 1));
  EXPECT_EQ(m.match(first.view(base)), 17u);
  EXPECT_TRUE(m.anchored());
  EXPECT_EQ(m.anchor_index(), 17u);
  // Later pictures by timestamp alone: the content is not looked at again.
  const std::size_t reads = ref.reads;
  const auto later = decoded(0);
  EXPECT_EQ(m.match(later.view(base + kTicks)), 18u);
  EXPECT_EQ(m.match(later.view(base + 5 * kTicks)), 22u);
  EXPECT_EQ(ref.reads, reads);
  EXPECT_EQ(m.last_shown(), 22u);
  EXPECT_EQ(m.unanchored(), 0u);
}

TEST(LivePictureMatcher, ADroppedPictureLeavesItsIndexOut) {
  FakeReference ref(30);
  LivePictureMatcher m(ref);
  const std::int64_t base = 90'000;
  std::vector<std::size_t> got;
  for (std::size_t i = 4; i < 12; ++i) {
    if (i == 7 || i == 8) continue;  // dropped by the server's pre-discard (or lost)
    const auto pic = decoded(luma(i));
    const auto index = m.match(pic.view(base + static_cast<std::int64_t>(i - 4) * kTicks));
    ASSERT_TRUE(index);
    got.push_back(*index);
  }
  EXPECT_EQ(got, (std::vector<std::size_t>{4, 5, 6, 9, 10, 11}));
  EXPECT_EQ(m.last_shown(), 11u);
}

TEST(LivePictureMatcher, AShiftedTimestampLandsOnTheNearestPicture) {
  FakeReference ref(30);
  LivePictureMatcher m(ref);
  const std::int64_t base = 0;
  ASSERT_EQ(m.match(decoded(luma(3)).view(base)), 3u);
  // A third of an interval late, then early: still pictures 5 and 6.
  EXPECT_EQ(m.match(decoded(0).view(base + 2 * kTicks + kTicks / 3)), 5u);
  EXPECT_EQ(m.match(decoded(0).view(base + 3 * kTicks - kTicks / 3)), 6u);
  // A reordered (earlier) picture after a later one: its own index; last_shown stays.
  EXPECT_EQ(m.match(decoded(0).view(base + kTicks)), 4u);
  EXPECT_EQ(m.last_shown(), 6u);
  // Stage starts are looked up the same way; past the reference's end: its last picture.
  EXPECT_EQ(m.index_at(base + 10 * kTicks), 13u);
  EXPECT_EQ(m.index_at(base + 100 * kTicks), 29u);
}

TEST(LivePictureMatcher, APictureMatchingNothingIsNotAnAnchor) {
  FakeReference ref(20);
  LivePictureMatcher m(ref);
  // Damaged (concealed) pictures: nothing in the reference above 40 dB.
  EXPECT_FALSE(m.match(decoded(250).view(0)));
  EXPECT_FALSE(m.match(decoded(static_cast<std::uint8_t>(luma(5) + 4)).view(kTicks)));
  EXPECT_EQ(m.unanchored(), 2u);
  EXPECT_FALSE(m.anchored());
  // The next good one anchors, at its own timestamp.
  EXPECT_EQ(m.match(decoded(luma(6)).view(2 * kTicks)), 6u);
  EXPECT_EQ(m.match(decoded(0).view(3 * kTicks)), 7u);
}

}  // namespace
}  // namespace predrop::client
