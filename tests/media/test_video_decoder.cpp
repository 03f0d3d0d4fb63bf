// Receive path on the sample: packetize -> depacketize -> decode equals decoding the file, and
// loss is concealed, never fatal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "media_test_util.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/media/psnr.hpp"
#include "predrop/media/video_decoder.hpp"

namespace predrop::media {
namespace {

using test::kSample;

struct Fixture {
  std::shared_ptr<const MediaFile> file;
  std::unique_ptr<ReferenceDecoder> reference;
};

Fixture open_sample(const ReferenceOptions& options = {}) {
  Fixture fx;
  auto file = MediaFile::open(kSample);
  EXPECT_TRUE(file) << file.error().message;
  if (file) fx.file = *file;
  auto ref = ReferenceDecoder::open(kSample, options);
  EXPECT_TRUE(ref) << ref.error().message;
  if (ref) fx.reference = std::move(ref).value();
  return fx;
}

// Receives the sample's video keeping the packets `keep` accepts, scores it like a player shows
// it, and returns the PSNR of each block.
std::vector<double> block_psnrs(const Fixture& fx, const std::function<bool(std::size_t)>& keep,
                                DecoderStats* stats = nullptr) {
  ShownFrameScorer scorer(*fx.reference);
  const DecoderStats s = test::receive_video(
      *fx.file, keep,
      [&](std::size_t index, const FrameView& frame) { EXPECT_TRUE(scorer.show(index, frame)); });
  if (stats) *stats = s;
  EXPECT_TRUE(scorer.fill_until(fx.reference->frame_count()));
  std::vector<double> out;
  for (const Block& b : fx.file->blocks()) {
    auto psnr = scorer.psnr(b.first_display, b.display_count);
    EXPECT_TRUE(psnr);
    out.push_back(psnr ? *psnr : -1.0);
  }
  return out;
}

TEST(ReferenceDecoder, ServesFramesByDisplayIndex) {
  auto ref = ReferenceDecoder::open(kSample, ReferenceOptions{.max_cached_frames = 8});
  ASSERT_TRUE(ref) << ref.error().message;
  ReferenceDecoder& r = **ref;
  EXPECT_EQ(r.frame_count(), 180u);
  EXPECT_EQ(r.pts_us(30), 1'000'000);
  auto last = r.frame(179);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->width, 640);
  EXPECT_EQ(last->height, 360);
  EXPECT_EQ(last->pts, r.pts_us(179));
  YuvFrame copy179;
  copy179.assign(*last);
  // Going back past the 8-frame window restarts decoding; the pictures are the same.
  auto first = r.frame(0);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->pts, 0);
  auto again = r.frame(179);
  ASSERT_TRUE(again);
  EXPECT_EQ(*frame_mse(*again, copy179.view()), 0.0);
  EXPECT_FALSE(r.frame(180));
}

TEST(VideoDecoder, LosslessRoundTripEqualsDecodingTheFile) {
  Fixture fx = open_sample(ReferenceOptions{.max_cached_frames = 0});
  ASSERT_TRUE(fx.file && fx.reference);
  std::vector<int> seen(fx.reference->frame_count(), 0);
  const DecoderStats stats = test::receive_video(
      *fx.file, [](std::size_t) { return true; },
      [&](std::size_t index, const FrameView& frame) {
        ++seen[index];
        auto ref = fx.reference->frame(index);
        ASSERT_TRUE(ref);
        auto mse = frame_mse(frame, *ref);
        ASSERT_TRUE(mse) << mse.error().message;
        EXPECT_EQ(*mse, 0.0) << "frame " << index;
        EXPECT_FALSE(frame.corrupt);
      });
  EXPECT_EQ(stats.frames, 180u);
  EXPECT_EQ(stats.rejected, 0u);
  EXPECT_EQ(stats.corrupt_frames, 0u);
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));

  for (double psnr : block_psnrs(fx, [](std::size_t) { return true; })) {
    EXPECT_EQ(psnr, kDefaultPsnrCapDb);
  }
}

TEST(VideoDecoder, ParameterSetsFromTheSdpAreAccepted) {
  // A decoder primed with sprop-parameter-sets decodes too (here they are also in-band).
  auto decoder = VideoDecoder::create([](const FrameView&) {},
                                      VideoDecoderOptions{{0, 0, 0, 1, 0x67, 0x64, 0x00, 0x1e}});
  ASSERT_TRUE(decoder);
  (*decoder)->decode({}, 0);
  (*decoder)->flush();
}

TEST(VideoDecoder, FlushDrainsAndDecodingResumesAtTheNextKeyframe) {
  Fixture fx = open_sample();
  ASSERT_TRUE(fx.file && fx.reference);
  const MediaFile& f = *fx.file;
  std::vector<std::size_t> shown;
  double worst_mse = 0.0;
  auto decoder = VideoDecoder::create([&](const FrameView& frame) {
    auto index = f.display_index_for_rtp(static_cast<std::uint32_t>(frame.pts));
    ASSERT_TRUE(index);
    shown.push_back(*index);
    auto ref = fx.reference->frame(*index);
    ASSERT_TRUE(ref);
    worst_mse = std::max(worst_mse, *frame_mse(frame, *ref));
  });
  ASSERT_TRUE(decoder);
  H264Depacketizer depacketizer(
      [&](const AccessUnit& au) { (*decoder)->decode(au.data, au.rtp_timestamp); });
  std::uint16_t seq = 0;
  for (const Block& b : f.blocks()) {
    for (const RtpPacket& p : f.packets(b)) {
      if (p.stream == 0) depacketizer.push(seq++, p.rtp_timestamp, p.marker, f.payload(p));
    }
    // End of every block: everything it shows is out after a flush; blocks start at keyframes.
    depacketizer.flush();
    (*decoder)->flush();
    EXPECT_EQ(shown.size(), b.first_display + b.display_count);
  }
  EXPECT_EQ(shown.size(), 180u);
  EXPECT_EQ(worst_mse, 0.0);
}

TEST(VideoDecoder, LossIsConcealedAndScoresFiniteLowerPsnr) {
  Fixture fx = open_sample();
  ASSERT_TRUE(fx.file && fx.reference);
  // Lose every 40th video packet except in-band parameter sets (which carry importance 255).
  std::size_t video_seen = 0, lost = 0;
  const auto packets = fx.file->packets();
  auto keep = [&](std::size_t i) {
    if (packets[i].importance == kImportanceNever) return true;
    if (++video_seen % 40 != 0) return true;
    ++lost;
    return false;
  };
  DecoderStats stats;
  std::size_t last_index = 0;
  ShownFrameScorer scorer(*fx.reference);
  stats = test::receive_video(*fx.file, keep, [&](std::size_t index, const FrameView& frame) {
    last_index = std::max(last_index, index);
    EXPECT_TRUE(scorer.show(index, frame));
  });
  EXPECT_GT(lost, 20u);
  // Decoding went on to the end. A small B-frame is one packet, so a loss can remove a frame
  // entirely; every frame that kept any data was decoded.
  EXPECT_GE(last_index, 175u);
  EXPECT_GE(stats.frames + lost, 180u);
  video_seen = 0;
  lost = 0;
  const auto psnrs = block_psnrs(fx, keep);
  double worst = 1e9;
  for (double p : psnrs) {
    EXPECT_TRUE(std::isfinite(p));
    EXPECT_GT(p, 10.0);
    worst = std::min(worst, p);
  }
  EXPECT_LT(worst, kDefaultPsnrCapDb - 10.0);
  std::printf("every-40th loss: block PSNR");
  for (double p : psnrs)
    std::printf(" %.2f", p);
  std::printf(" dB\n");
}

TEST(VideoDecoder, EntireFramesMissingAreScoredAsTheLastShownFrame) {
  Fixture fx = open_sample();
  ASSERT_TRUE(fx.file && fx.reference);
  // Drop every packet of the first block: nothing is shown, so it scores a black picture; later
  // blocks start with a keyframe and are perfect again.
  const std::uint32_t end = fx.file->blocks()[0].packet_count;
  const auto psnrs = block_psnrs(fx, [&](std::size_t i) { return i >= end; });
  EXPECT_LT(psnrs[0], 15.0);
  for (std::size_t k = 1; k < psnrs.size(); ++k)
    EXPECT_EQ(psnrs[k], kDefaultPsnrCapDb);
}

TEST(VideoDecoder, PriorityDiscardBeatsUniformDiscardAtTheSameRate) {
  Fixture fx = open_sample();
  ASSERT_TRUE(fx.file && fx.reference);
  const MediaFile& f = *fx.file;
  // Mark 10% of each block with the lead's discard planner under two policies.
  auto plan = [&](core::DiscardPolicy policy) {
    std::vector<std::uint8_t> drop(f.packets().size(), 0);
    core::DiscardPlanner planner(policy);
    for (const Block& b : f.blocks()) {
      planner.plan(0.10, f.importance(b),
                   std::span<std::uint8_t>(drop).subspan(b.first_packet, b.packet_count));
    }
    return drop;
  };
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v)
      s += x;
    return s / static_cast<double>(v.size());
  };
  const auto priority = plan(core::DiscardPolicy::kPriority);
  const auto uniform = plan(core::DiscardPolicy::kUniform);
  const double p = mean(block_psnrs(fx, [&](std::size_t i) { return priority[i] == 0; }));
  const double u = mean(block_psnrs(fx, [&](std::size_t i) { return uniform[i] == 0; }));
  std::printf("10%% discard: priority %.2f dB, uniform %.2f dB\n", p, u);
  EXPECT_GT(p, u + 3.0);
}

}  // namespace
}  // namespace predrop::media
