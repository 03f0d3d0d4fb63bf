// Our PSNR against the real ffmpeg CLI's vf_psnr "average:" on pairs of clips.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "media_test_util.hpp"
#include "predrop/media/psnr.hpp"
#include "predrop/media/video_decoder.hpp"

namespace predrop::media {
namespace {

using test::kFfmpeg;
using test::kSample;

// The "average:" figure of `ffmpeg -lavfi psnr`, frames paired by index (docs/design.md §6).
double ffmpeg_psnr(const std::string& a, const std::string& b) {
  std::string out;
  const int status = test::run(
      kFfmpeg + " -nostdin -hide_banner -i " + a + " -i " + b +
          " -lavfi \"[0:v]settb=1/30,setpts=N[a];[1:v]settb=1/30,setpts=N[b];[a][b]psnr\" -f null "
          "-",
      &out);
  EXPECT_EQ(status, 0) << out;
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(R"(average:([0-9.]+|inf))"))) {
    ADD_FAILURE() << "no PSNR in ffmpeg output:\n" << out;
    return -1.0;
  }
  return m[1] == "inf" ? INFINITY : std::stod(m[1]);
}

// Ours: decode both files, vf_psnr's frame MSE, PSNR of the mean MSE (cap far above).
double our_psnr(const std::string& a, const std::string& b) {
  auto ra = ReferenceDecoder::open(a);
  auto rb = ReferenceDecoder::open(b);
  EXPECT_TRUE(ra && rb);
  if (!ra || !rb) return -1.0;
  EXPECT_EQ((*ra)->frame_count(), (*rb)->frame_count());
  MseAccumulator acc;
  YuvFrame fa;
  for (std::size_t i = 0; i < std::min((*ra)->frame_count(), (*rb)->frame_count()); ++i) {
    auto va = (*ra)->frame(i);
    EXPECT_TRUE(va);
    fa.assign(*va);  // frame() views are valid until the next call on the same decoder only
    auto vb = (*rb)->frame(i);
    EXPECT_TRUE(vb);
    auto mse = frame_mse(fa.view(), *vb);
    EXPECT_TRUE(mse);
    acc.add(*mse);
  }
  return acc.psnr(1000.0);
}

std::string reencode(const std::string& bitrate, const std::string& extra = "") {
  const auto out = test::scratch_dir() / ("sample-" + bitrate + ".mp4");
  const int status = test::run(kFfmpeg + " -nostdin -loglevel error -y -i " + kSample +
                               " -an -c:v libx264 -preset veryfast -b:v " + bitrate + " " + extra +
                               " " + out.string());
  EXPECT_EQ(status, 0);
  return out.string();
}

TEST(PsnrVsFfmpeg, LowBitrateReencodeAgreesWithinATenthOfADecibel) {
  const std::string low = reencode("150k");
  const double ffmpeg = ffmpeg_psnr(kSample, low);
  const double ours = our_psnr(kSample, low);
  std::printf("sample vs 150k re-encode: ours %.4f dB, ffmpeg %.4f dB\n", ours, ffmpeg);
  EXPECT_NEAR(ours, ffmpeg, 0.1);
  EXPECT_GT(ours, 15.0);
  EXPECT_LT(ours, 45.0);
}

TEST(PsnrVsFfmpeg, MediumBitrateWithOddSizeAgrees) {
  // An odd picture size (chroma rounded up) and another quality level.
  const std::string mid = reencode("600k", "-vf crop=639:359:0:0");
  const std::string ref = reencode("8000k", "-vf crop=639:359:0:0");
  const double ffmpeg = ffmpeg_psnr(ref, mid);
  const double ours = our_psnr(ref, mid);
  std::printf("639x359 8000k vs 600k: ours %.4f dB, ffmpeg %.4f dB\n", ours, ffmpeg);
  EXPECT_NEAR(ours, ffmpeg, 0.1);
}

TEST(PsnrVsFfmpeg, IdenticalClipsAreInfiniteForFfmpegAndCappedForUs) {
  EXPECT_TRUE(std::isinf(ffmpeg_psnr(kSample, kSample)));
  auto a = ReferenceDecoder::open(kSample);
  ASSERT_TRUE(a);
  ShownFrameScorer scorer(**a);
  auto b = ReferenceDecoder::open(kSample);
  ASSERT_TRUE(b);
  for (std::size_t i = 0; i < (*b)->frame_count(); ++i) {
    auto v = (*b)->frame(i);
    ASSERT_TRUE(v);
    ASSERT_TRUE(scorer.show(i, *v));
  }
  auto psnr = scorer.psnr(0, (*b)->frame_count());
  ASSERT_TRUE(psnr);
  EXPECT_EQ(*psnr, kDefaultPsnrCapDb);
}

}  // namespace
}  // namespace predrop::media
