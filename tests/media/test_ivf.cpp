// IVF headers (the libvpx container) byte for byte, and IvfWriter's file: header, frame headers,
// frame count set on close. That FFmpeg decodes what the measuring client saves is checked end to
// end by interop_codecs.sh (VP8, VP9) and interop_av1.sh (AV1).
#include "predrop/media/ivf.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace predrop::media {
namespace {

TEST(Ivf, FourccOfTheCodecsItCarries) {
  EXPECT_EQ(ivf_fourcc(Codec::kVp8), (std::array<char, 4>{'V', 'P', '8', '0'}));
  EXPECT_EQ(ivf_fourcc(Codec::kVp9), (std::array<char, 4>{'V', 'P', '9', '0'}));
  EXPECT_EQ(ivf_fourcc(Codec::kAv1), (std::array<char, 4>{'A', 'V', '0', '1'}));
  EXPECT_FALSE(ivf_fourcc(Codec::kH264));
  EXPECT_FALSE(ivf_fourcc(Codec::kH265));
  EXPECT_FALSE(ivf_fourcc(Codec::kOpus));
}

TEST(Ivf, FileHeaderBytes) {
  IvfHeader h;
  h.fourcc = {'V', 'P', '8', '0'};
  h.width = 320;   // 0x0140
  h.height = 240;  // 0x00f0
  h.rate = 90000;  // 0x00015f90
  h.scale = 1;
  h.frames = 0x0102;
  const std::array<std::uint8_t, 32> want = {
      'D',  'K',  'I',  'F',    // signature
      0x00, 0x00,               // version 0
      0x20, 0x00,               // header size 32
      'V',  'P',  '8',  '0',    // fourcc
      0x40, 0x01, 0xf0, 0x00,   // width, height
      0x90, 0x5f, 0x01, 0x00,   // time base denominator (rate)
      0x01, 0x00, 0x00, 0x00,   // numerator (scale)
      0x02, 0x01, 0x00, 0x00,   // frame count
      0x00, 0x00, 0x00, 0x00};  // unused
  EXPECT_EQ(ivf_file_header(h), want);
}

TEST(Ivf, FrameHeaderBytes) {
  const std::array<std::uint8_t, 12> want = {0x34, 0x12, 0x00, 0x00,   // size 0x1234
                                             0x08, 0x07, 0x06, 0x05,   // time stamp, low word
                                             0x04, 0x03, 0x02, 0x01};  // high word
  EXPECT_EQ(ivf_frame_header(0x1234, 0x0102030405060708ULL), want);
}

TEST(Ivf, WriterSetsTheFrameCountOnClose) {
  const auto path = std::filesystem::temp_directory_path() / "predrop_test_ivf.ivf";
  IvfHeader h;
  h.fourcc = {'A', 'V', '0', '1'};
  h.width = 64;
  h.height = 48;
  {
    auto w = IvfWriter::create(path.string(), h);
    ASSERT_TRUE(w) << w.error().message;
    const std::vector<std::uint8_t> a = {0x12, 0x00, 0x0a};
    const std::vector<std::uint8_t> b = {0x12};
    w.value()->write(a, 0);
    w.value()->write(b, 3000);
  }  // the destructor closes
  std::ifstream in(path, std::ios::binary);
  const std::vector<std::uint8_t> got((std::istreambuf_iterator<char>(in)),
                                      std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  h.frames = 2;
  std::vector<std::uint8_t> want;
  const auto file = ivf_file_header(h);
  want.insert(want.end(), file.begin(), file.end());
  const auto f0 = ivf_frame_header(3, 0);
  want.insert(want.end(), f0.begin(), f0.end());
  want.insert(want.end(), {0x12, 0x00, 0x0a});
  const auto f1 = ivf_frame_header(1, 3000);
  want.insert(want.end(), f1.begin(), f1.end());
  want.push_back(0x12);
  EXPECT_EQ(got, want);
}

TEST(Ivf, UnwritablePathIsAnError) {
  EXPECT_FALSE(IvfWriter::create("/nonexistent-dir/x.ivf", IvfHeader{}));
}

}  // namespace
}  // namespace predrop::media
