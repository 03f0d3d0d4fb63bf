// The audio score (issue 24): PCM, AAC and Opus clips generated at test time; every packet
// received scores the cap in every block, a lost packet lowers its block's score to what the
// silence it leaves predicts and leaves the other blocks at the cap, and stray packets are
// counted, not scored.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "media_test_util.hpp"
#include "predrop/media/audio_scorer.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/media/pcm.hpp"

namespace predrop::media {
namespace {

std::shared_ptr<const MediaFile> clip(const std::string& name, const std::string& args) {
  const auto path = test::scratch_dir() / name;
  std::string out;
  EXPECT_EQ(
      test::run(test::kFfmpeg + " -nostdin -loglevel error -y " + args + " " + path.string(), &out),
      0)
      << out;
  auto opened = MediaFile::open(path.string());
  EXPECT_TRUE(opened) << opened.error().message;
  return opened ? *opened : nullptr;
}

// Pushes every audio packet of the file except those `drop` says, and returns each block's score.
std::vector<double> scores(const std::shared_ptr<const MediaFile>& file,
                           const std::function<bool(std::size_t)>& drop = {}) {
  auto scorer = AudioScorer::create(file);
  EXPECT_TRUE(scorer) << scorer.error().message;
  if (!scorer) return {};
  std::size_t n = 0;
  for (const RtpPacket& p : file->packets()) {
    if (p.stream != file->audio_stream()) continue;
    if (drop && drop(n++)) continue;
    (*scorer)->push(p.rtp_timestamp, file->payload(p));
  }
  std::vector<double> out;
  for (std::uint32_t b = 0; b < file->blocks().size(); ++b) {
    const auto psnr = (*scorer)->psnr(b, 60.0);
    EXPECT_TRUE(psnr);
    out.push_back(psnr ? *psnr : 0.0);
  }
  EXPECT_EQ((*scorer)->stats().unmatched, 0u);
  return out;
}

TEST(AudioScorer, IntactPcmScoresTheCapAndALostPacketItsSilence) {
  // A 1 kHz sine, 48 kHz stereo L16, 3 s.
  const auto file = clip("s16.wav", "-f lavfi -i sine=frequency=1000:sample_rate=48000:d=3 -ac 2");
  ASSERT_TRUE(file);
  for (double s : scores(file)) {
    EXPECT_DOUBLE_EQ(s, 60.0);
  }
  // Lose packet 10 (block 0): its samples are heard as silence, so the block's MSE is their
  // energy over the block's sample count.
  const auto lossy = scores(file, [](std::size_t i) { return i == 10; });
  ASSERT_GE(lossy.size(), 2u);
  std::vector<float> lost;
  pcm_to_float(file->payload(file->packets()[10]), 2, lost);
  double energy = 0;
  for (float v : lost) {
    energy += double{v} * v;
  }
  const double block_samples = static_cast<double>(file->blocks()[0].bytes) / 2;
  const double expected = 10 * std::log10(block_samples / energy);
  // ffmpeg's sine has amplitude 1/8, upmixed to stereo at -3 dB: A^2/2 = 1/256 per sample.
  EXPECT_NEAR(energy / static_cast<double>(lost.size()), 1.0 / 256, 1.0 / 2048);
  EXPECT_NEAR(lossy[0], expected, 0.2);
  for (std::size_t b = 1; b < lossy.size(); ++b) {
    EXPECT_DOUBLE_EQ(lossy[b], 60.0);
  }
}

TEST(AudioScorer, L24AndCodedAudioScoreTheCapWhenIntactAndLessWhenNot) {
  for (const auto& [name, args] : {std::pair<std::string, std::string>{"s24.wav", "-c:a pcm_s24le"},
                                   {"aac.m4a", "-c:a aac -b:a 96k"},
                                   {"opus.mka", "-c:a libopus -b:a 64k"},
                                   {"lame.mp3", "-c:a libmp3lame -b:a 128k"}}) {
    const auto file =
        clip(name, "-f lavfi -i sine=frequency=440:sample_rate=48000:d=2.5 -ac 2 " + args);
    ASSERT_TRUE(file);
    const auto intact = scores(file);
    ASSERT_GE(intact.size(), 2u) << name;
    for (double s : intact) {
      EXPECT_DOUBLE_EQ(s, 60.0) << name;
    }
    const auto lossy = scores(file, [](std::size_t i) { return i == 5; });
    EXPECT_LT(lossy[0], 50.0) << name;
    EXPECT_GT(lossy[0], 10.0) << name;
  }
}

TEST(AudioScorer, StrayPacketsAreCountedNotScored) {
  const auto file = clip("mono.wav", "-f lavfi -i sine=sample_rate=8000:d=1.5");
  ASSERT_TRUE(file);
  auto scorer = AudioScorer::create(file);
  ASSERT_TRUE(scorer);
  const std::uint8_t junk[4] = {1, 2, 3, 4};
  (*scorer)->push(12345, junk);  // no frame at this timestamp
  const RtpPacket& first = file->packets()[0];
  (*scorer)->push(first.rtp_timestamp, file->payload(first));
  (*scorer)->push(first.rtp_timestamp, file->payload(first));  // a duplicate
  EXPECT_EQ((*scorer)->stats().unmatched, 2u);
  EXPECT_EQ((*scorer)->stats().packets, 3u);
  // Block 0 heard one packet of many: far below the cap but a number.
  const auto s = (*scorer)->psnr(0, 60.0);
  ASSERT_TRUE(s);
  EXPECT_LT(*s, 30.0);
}

TEST(AudioScorer, AFileWithoutAudioIsRefused) {
  const auto file = clip("video.mkv", "-f lavfi -i testsrc2=s=64x64:r=10:d=1 -c:v libx264");
  ASSERT_TRUE(file);
  EXPECT_FALSE(AudioScorer::create(file));
}

}  // namespace
}  // namespace predrop::media
