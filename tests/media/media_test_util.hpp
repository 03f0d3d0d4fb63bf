#pragma once
// Small helpers shared by the media tests: files, the ffmpeg CLI, and an RTP loop that feeds a
// MediaFile's packets through the receive path.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "predrop/media/h264_depacketizer.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/media/video_decoder.hpp"

namespace predrop::media::test {

inline const std::string kSample = PREDROP_TEST_SAMPLE;
inline const std::string kSampleOpus = PREDROP_TEST_SAMPLE_OPUS;
inline const std::string kFfmpeg = PREDROP_FFMPEG;

/// A per-test scratch directory under the build tree.
inline std::filesystem::path scratch_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = std::filesystem::path(PREDROP_TEST_TMP) /
                              (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::filesystem::path& path, const std::vector<std::uint8_t>& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

/// Runs a shell command; returns its exit status and fills `output` with stdout+stderr.
inline int run(const std::string& command, std::string* output = nullptr) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buf{};
  std::string text;
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), pipe))
    text += buf.data();
  const int status = pclose(pipe);
  if (output) *output = std::move(text);
  return status;
}

/// Feeds the video packets of `file` for which `keep(packet_index)` holds through an
/// H264Depacketizer (sequence numbers count every video packet, so dropped ones leave gaps, as
/// network loss does) into a VideoDecoder stamped with RTP timestamps, and hands every decoded
/// frame with its display index to `on_frame`. Returns the decoder's statistics.
inline DecoderStats receive_video(
    const MediaFile& file, const std::function<bool(std::size_t)>& keep,
    const std::function<void(std::size_t, const FrameView&)>& on_frame) {
  std::unique_ptr<VideoDecoder> decoder;
  auto created = VideoDecoder::create([&](const FrameView& frame) {
    auto index = file.display_index_for_rtp(static_cast<std::uint32_t>(frame.pts));
    if (index) on_frame(*index, frame);
  });
  EXPECT_TRUE(created) << created.error().message;
  decoder = std::move(created).value();
  H264Depacketizer depacketizer(
      [&](const AccessUnit& au) { decoder->decode(au.data, au.rtp_timestamp); });
  std::uint16_t sequence = 0;
  const auto packets = file.packets();
  for (std::size_t i = 0; i < packets.size(); ++i) {
    const RtpPacket& p = packets[i];
    if (p.stream != file.video_stream()) continue;
    const std::uint16_t seq = sequence++;
    if (!keep(i)) continue;
    depacketizer.push(seq, p.rtp_timestamp, p.marker, file.payload(p));
  }
  depacketizer.flush();
  decoder->flush();
  return decoder->stats();
}

}  // namespace predrop::media::test
