// vf_psnr's arithmetic on synthetic pictures (no FFmpeg involved).
#include <gtest/gtest.h>

#include <cmath>

#include "predrop/media/psnr.hpp"
#include "predrop/media/video_frame.hpp"

namespace predrop::media {
namespace {

TEST(PsnrMath, IdenticalPicturesScoreTheCap) {
  const YuvFrame a(16, 8, 100, 128, 128);
  auto mse = frame_mse(a.view(), a.view());
  ASSERT_TRUE(mse);
  EXPECT_EQ(*mse, 0.0);
  EXPECT_EQ(psnr_from_mse(*mse), kDefaultPsnrCapDb);
  EXPECT_EQ(psnr_from_mse(*mse, 100.0), 100.0);
}

TEST(PsnrMath, PlanesAreWeightedByArea) {
  // Luma differs by 3 everywhere, chroma is equal: plane MSEs 9, 0, 0; Y is 4/6 of the samples.
  const YuvFrame a(16, 8, 100, 128, 128);
  const YuvFrame b(16, 8, 103, 128, 128);
  EXPECT_DOUBLE_EQ(*frame_mse(a.view(), b.view()), 9.0 * 4.0 / 6.0);
  // Only U differs by 2: 4 x 1/6.
  const YuvFrame c(16, 8, 100, 130, 128);
  EXPECT_DOUBLE_EQ(*frame_mse(a.view(), c.view()), 4.0 / 6.0);
  EXPECT_NEAR(psnr_from_mse(6.0), 10.0 * std::log10(65025.0 / 6.0), 1e-12);
}

TEST(PsnrMath, OddSizesRoundChromaUp) {
  // 5x3 luma (15 samples), chroma 3x2 (6 each): weights 15/27 and 6/27.
  const YuvFrame a(5, 3, 10, 10, 10);
  const YuvFrame b(5, 3, 11, 10, 12);
  EXPECT_DOUBLE_EQ(*frame_mse(a.view(), b.view()), 1.0 * 15.0 / 27.0 + 4.0 * 6.0 / 27.0);
}

TEST(PsnrMath, AverageIsThePsnrOfTheMeanMse) {
  MseAccumulator acc;
  acc.add(1.0);
  acc.add(100.0);
  const double expected = 10.0 * std::log10(65025.0 / 50.5);
  EXPECT_NEAR(acc.psnr(), expected, 1e-12);
  const double mean_of_psnrs =
      (10.0 * std::log10(65025.0 / 1.0) + 10.0 * std::log10(65025.0 / 100.0)) / 2.0;
  EXPECT_GT(std::abs(acc.psnr() - mean_of_psnrs), 5.0);  // the two really differ
  EXPECT_EQ(MseAccumulator{}.psnr(), kDefaultPsnrCapDb);
}

TEST(PsnrMath, CapAppliesToTinyErrors) {
  EXPECT_EQ(psnr_from_mse(1e-9), kDefaultPsnrCapDb);
  EXPECT_LT(psnr_from_mse(1e-9, 200.0), 200.0);
}

TEST(PsnrMath, SizeMismatchIsAnError) {
  const YuvFrame a(16, 8, 0, 0, 0);
  const YuvFrame b(8, 8, 0, 0, 0);
  auto mse = frame_mse(a.view(), b.view());
  ASSERT_FALSE(mse);
  EXPECT_NE(mse.error().message.find("16x8"), std::string::npos);
  EXPECT_FALSE(frame_mse(FrameView{}, FrameView{}));
}

TEST(PsnrMath, YuvFrameCopiesStridedViews) {
  // A 4x2 picture inside wider rows (stride 8), as decoders hand them out.
  std::uint8_t y[16], u[8], v[8];
  for (int i = 0; i < 16; ++i)
    y[i] = static_cast<std::uint8_t>(i);
  for (int i = 0; i < 8; ++i)
    u[i] = v[i] = static_cast<std::uint8_t>(100 + i);
  FrameView view;
  view.width = 4;
  view.height = 2;
  view.pts = 42;
  view.data = {y, u, v};
  view.stride = {8, 8, 8};
  YuvFrame copy;
  copy.assign(view);
  const FrameView c = copy.view();
  EXPECT_EQ(c.pts, 42);
  EXPECT_EQ(c.stride[0], 4);
  EXPECT_EQ(c.data[0][4], 8);  // second row starts at y[8]
  EXPECT_EQ(*frame_mse(c, view), 0.0);
}

}  // namespace
}  // namespace predrop::media
