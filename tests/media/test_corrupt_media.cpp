// Missing, empty, foreign, truncated and corrupted media: a clear error or a partial result with
// warnings, never a crash (also run under ASan+UBSan).
#include <gtest/gtest.h>

#include <random>

#include "media_test_util.hpp"
#include "predrop/media/psnr.hpp"
#include "predrop/media/video_decoder.hpp"

namespace predrop::media {
namespace {

using test::kSample;

std::string expect_error(const std::string& path) {
  auto file = MediaFile::open(path);
  EXPECT_FALSE(file) << path << " opened";
  auto ref = ReferenceDecoder::open(path);
  EXPECT_FALSE(ref) << path << " opened as reference";
  if (file) return "";
  EXPECT_NE(file.error().message.find(path), std::string::npos) << file.error().message;
  return file.error().message;
}

// Whatever MediaFile makes of a damaged file must go through the whole receive path.
void exercise(const std::string& path) {
  auto file = MediaFile::open(path);
  if (!file) return;
  const MediaFile& f = **file;
  for (const RtpPacket& p : f.packets())
    ASSERT_LE(p.payload_size, f.options().max_payload);
  auto ref = ReferenceDecoder::open(path);
  if (!f.video_stream() || !ref) return;
  ShownFrameScorer scorer(**ref);
  test::receive_video(
      f, [](std::size_t) { return true; },
      [&](std::size_t index, const FrameView& frame) { (void)scorer.show(index, frame); });
  if (scorer.fill_until((*ref)->frame_count())) {
    auto psnr = scorer.psnr(0, (*ref)->frame_count());
    if (psnr) {
      EXPECT_GE(*psnr, 0.0);
    }
  }
}

TEST(CorruptMedia, MissingEmptyAndForeignFilesAreErrors) {
  const auto dir = test::scratch_dir();
  const std::string missing = (dir / "does-not-exist.mp4").string();
  EXPECT_NE(expect_error(missing).find("No such file"), std::string::npos);

  const auto empty = dir / "empty.mp4";
  test::write_file(empty, {});
  expect_error(empty.string());

  const auto text = dir / "notes.mp4";
  const std::string words = "This is not a video file, just some text.\n";
  test::write_file(text, std::vector<std::uint8_t>(words.begin(), words.end()));
  expect_error(text.string());
}

TEST(CorruptMedia, AudioOnlyAndUnsupportedCodecs) {
  const auto dir = test::scratch_dir();
  // Audio only: packetized, blocks cut between audio frames.
  const auto audio = dir / "audio.m4a";
  ASSERT_EQ(test::run(test::kFfmpeg + " -nostdin -loglevel error -y -i " + kSample +
                      " -vn -c copy " + audio.string()),
            0);
  auto file = MediaFile::open(audio.string());
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_FALSE((*file)->video_stream());
  EXPECT_EQ((*file)->streams().size(), 1u);
  // AAC frames of 1024 samples at 48 kHz (21.3 ms): cuts at the first frame at or after each
  // second; the first block also holds the priming frame before the origin.
  const auto blocks = (*file)->blocks();
  ASSERT_GE(blocks.size(), 6u);
  for (std::size_t k = 1; k < blocks.size(); ++k) {
    EXPECT_GE(blocks[k].start_us, std::int64_t(k) * 1'000'000);
    EXPECT_LT(blocks[k].start_us, std::int64_t(k) * 1'000'000 + 21'334);
  }
  EXPECT_LT(blocks[0].start_us, 0);
  EXPECT_FALSE(ReferenceDecoder::open(audio.string()));
  // MPEG-4 Part 2 video: a clear "unsupported" error.
  const auto mpeg4 = dir / "mpeg4.mp4";
  ASSERT_EQ(test::run(test::kFfmpeg + " -nostdin -loglevel error -y -i " + kSample +
                      " -t 1 -an -c:v mpeg4 " + mpeg4.string()),
            0);
  EXPECT_NE(expect_error(mpeg4.string()).find("unsupported video codec mpeg4"), std::string::npos);
}

TEST(CorruptMedia, TruncatedMp4WithIndexAtTheEndIsAnError) {
  const auto bytes = test::read_file(kSample);
  const auto half = test::scratch_dir() / "half.mp4";
  test::write_file(half,
                   std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2));
  expect_error(half.string());
}

TEST(CorruptMedia, TruncatedFaststartMp4IsPartialWithWarnings) {
  const auto dir = test::scratch_dir();
  const auto fast = dir / "fast.mp4";
  ASSERT_EQ(test::run(test::kFfmpeg + " -nostdin -loglevel error -y -i " + kSample +
                      " -c copy -movflags +faststart " + fast.string()),
            0);
  const auto bytes = test::read_file(fast);
  const auto half = dir / "fast-half.mp4";
  test::write_file(half,
                   std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2));
  auto file = MediaFile::open(half.string());
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_GT((*file)->warning_count(), 0u);
  EXPECT_LT((*file)->video_display_order().size(), 180u);
  EXPECT_GT((*file)->video_display_order().size(), 30u);
  exercise(half.string());
}

TEST(CorruptMedia, TruncatedMpegTsIsPartial) {
  const auto dir = test::scratch_dir();
  const auto ts = dir / "sample.ts";
  ASSERT_EQ(test::run(test::kFfmpeg + " -nostdin -loglevel error -y -i " + kSample + " -c copy " +
                      ts.string()),
            0);
  const auto bytes = test::read_file(ts);
  const auto cut = dir / "cut.ts";
  // Mid TS packet, mid PES.
  test::write_file(cut,
                   std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2 + 77));
  auto file = MediaFile::open(cut.string());
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_LT((*file)->video_display_order().size(), 180u);
  exercise(cut.string());
}

TEST(CorruptMedia, OverwrittenMiddleStillPacketizesAndDecodes) {
  auto bytes = test::read_file(kSample);
  const std::size_t from = bytes.size() / 2;
  for (std::size_t i = from; i < from + 20'000 && i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::uint8_t>(0xa5 ^ (i * 131));
  }
  const auto path = test::scratch_dir() / "garbled.mp4";
  test::write_file(path, bytes);
  auto file = MediaFile::open(path.string());
  ASSERT_TRUE(file) << file.error().message;
  exercise(path.string());
}

TEST(CorruptMedia, RandomDamageNeverCrashes) {
  const auto original = test::read_file(kSample);
  std::mt19937 rng(1234);
  for (int round = 0; round < 12; ++round) {
    auto bytes = original;
    const int kind = round % 3;
    if (kind == 0) {
      // Scattered byte flips anywhere, including the moov index.
      for (int i = 0; i < 40; ++i)
        bytes[rng() % bytes.size()] ^= static_cast<std::uint8_t>(rng());
    } else if (kind == 1) {
      // A run of zeros.
      const std::size_t at = rng() % bytes.size();
      for (std::size_t i = at; i < std::min(bytes.size(), at + 4096); ++i)
        bytes[i] = 0;
    } else {
      // Truncated at a random point.
      bytes.resize(rng() % bytes.size());
    }
    const auto path = test::scratch_dir() / ("damaged-" + std::to_string(round) + ".mp4");
    test::write_file(path, bytes);
    exercise(path.string());
  }
}

}  // namespace
}  // namespace predrop::media
