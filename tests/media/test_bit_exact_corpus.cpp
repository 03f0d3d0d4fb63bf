// Lossless means bit-exact, for content other than the sample: a corpus generated at test time
// with the ffmpeg CLI (several lavfi sources with scene cuts, x264 from very low to very high
// rates so NAL units span a few bytes to tens of kB, several slices per frame, I-only and long
// GOPs, B-pyramid, a large resolution; MP4, Matroska and MPEG-TS; AAC and Opus) is packetized by
// MediaFile and received again through the RTP receive path, and every NAL unit and every audio
// frame must come back byte for byte as ffmpeg itself extracts them from the container
// (`-c copy` to Annex B for video, `framecrc` of the packets for audio).
//
// Regression (issue 10, finding 2): the packetizer used to decide "Annex B" by sniffing a
// sample's first bytes, and a 4-byte length prefix 00 00 01 xx (NAL units of 256..511 bytes)
// looks like a start code; such NAL units were sent one byte longer with a wrong first byte.
// Each clip here must contain NAL units of that size, or the test says the corpus lost its edge.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "media_test_util.hpp"
#include "predrop/media/h264_depacketizer.hpp"
#include "predrop/media/media_file.hpp"

namespace predrop::media::test {
namespace {

using Bytes = std::vector<std::uint8_t>;

struct Clip {
  std::string name;
  std::string file;  // container by extension
  std::string video_source;
  std::string video_codec;      // libx264 options
  std::string audio;            // "aac", "opus" or ""
  bool expect_256_511 = true;   // holds NAL units whose 4-byte length prefix reads 00 00 01 xx
  std::size_t min_largest = 0;  // its largest NAL unit is at least this big
};

const std::vector<Clip>& corpus() {
  static const std::vector<Clip> clips = {
      // Scene cut from a test pattern to a fractal, 40 kbit/s: tiny P/B NAL units, VBR.
      {"low_rate_scene_cut", "low.mp4",
       "testsrc2=s=320x240:r=30:d=1[a];mandelbrot=s=320x240:r=30,trim=duration=1[b];"
       "[a][b]concat=n=2:v=1:a=0[out0]",
       "-b:v 40k -bf 3 -x264-params b-pyramid=normal", "aac"},
      // Four slices per frame at a very high rate, Opus audio, Matroska.
      {"slices_high_rate", "slices.mkv",
       "smptehdbars=s=640x360:r=25:d=1[a];life=s=640x360:r=25:mold=10:ratio=0.3:seed=7,trim="
       "duration=1,"
       "format=yuv420p[b];[a][b]concat=n=2:v=1:a=0[out0]",
       "-crf 8 -x264-params slices=4", "opus", false, 4'000},
      // I-only at a low rate in MPEG-TS (Annex B in the container, ADTS audio). Seeded: with a
      // random first row some runs had no NAL unit of 256..511 bytes at all.
      {"intra_only_ts", "intra.ts",
       "cellauto=s=320x240:r=30:rule=110:seed=7,trim=duration=2,format=yuv420p[out0]",
       "-g 1 -b:v 300k", "aac"},
      // A long GOP with B-pyramid and a scene cut, mid rate.
      {"long_gop_b_pyramid", "longgop.mp4",
       "rgbtestsrc=s=352x288:r=30:d=1[a];testsrc2=s=352x288:r=30:d=1[b];"
       "[a][b]concat=n=2:v=1:a=0[out0]",
       "-g 250 -bf 4 -x264-params b-pyramid=normal -crf 30", ""},
      // A large picture: NAL units of tens of kB, fragmented into many FU-A packets.
      {"large_1080p", "large.mp4", "testsrc2=s=1920x1080:r=25:d=0.6[out0]", "-crf 16 -bf 2", "",
       false, 20'000},
  };
  return clips;
}

// Splits an Annex B byte stream at 3- and 4-byte start codes. Trailing zero bytes belong to the
// next start code (a NAL unit never ends in 0x00: rbsp_trailing_bits).
std::vector<Bytes> split_annexb(std::span<const std::uint8_t> data) {
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i + 2 < data.size(); ++i) {
    if (data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1) {
      starts.push_back(i + 3);
      i += 2;
    }
  }
  std::vector<Bytes> out;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    std::size_t end = k + 1 < starts.size() ? starts[k + 1] - 3 : data.size();
    while (end > starts[k] && data[end - 1] == 0)
      --end;
    out.emplace_back(data.begin() + static_cast<std::ptrdiff_t>(starts[k]),
                     data.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

bool is_slice(const Bytes& nal) {
  const int type = nal.empty() ? 0 : (nal[0] & 0x1f);
  return type >= 1 && type <= 5;
}

std::uint32_t adler32(std::span<const std::uint8_t> data) {
  // FFmpeg's framecrc muxer: av_adler32_update(0, ...), i.e. Adler-32 started at 0, not 1.
  std::uint32_t a = 0;
  std::uint32_t b = 0;
  for (std::uint8_t byte : data) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}

std::string make_clip(const Clip& clip) {
  const auto path = scratch_dir() / clip.file;
  std::string audio_in;
  std::string audio_out = "-an";
  if (clip.audio == "aac") {
    audio_in = " -f lavfi -i sine=f=330:d=3";
    audio_out = "-c:a aac -b:a 48k -t 2";
  } else if (clip.audio == "opus") {
    audio_in = " -f lavfi -i sine=f=500:d=3";
    audio_out = "-c:a libopus -b:a 32k -t 2";
  }
  const std::string cmd = kFfmpeg + " -nostdin -hide_banner -loglevel error -y -f lavfi -i \"" +
                          clip.video_source + "\"" + audio_in + " -c:v libx264 -pix_fmt yuv420p " +
                          clip.video_codec + " " + audio_out + " " + path.string();
  std::string output;
  EXPECT_EQ(run(cmd, &output), 0) << cmd << "\n" << output;
  return path.string();
}

// The source's NAL units as ffmpeg extracts them (h264_mp4toannexb: length prefixes replaced by
// start codes using the container's own avcC length size).
std::vector<Bytes> reference_slices(const std::string& file) {
  const auto out = scratch_dir() / "reference.h264";
  std::string output;
  const std::string cmd = kFfmpeg + " -nostdin -hide_banner -loglevel error -y -i " + file +
                          " -map 0:v -c copy -bsf:v h264_mp4toannexb -f h264 " + out.string();
  EXPECT_EQ(run(cmd, &output), 0) << cmd << "\n" << output;
  std::vector<Bytes> slices;
  for (auto& nal : split_annexb(read_file(out))) {
    if (is_slice(nal)) slices.push_back(std::move(nal));
  }
  return slices;
}

// (size, adler32) of every audio packet as ffmpeg's demuxer hands it out, ADTS headers removed.
std::vector<std::pair<std::size_t, std::uint32_t>> reference_audio(const std::string& file) {
  std::string output;
  const std::string cmd = kFfmpeg + " -nostdin -hide_banner -loglevel error -i " + file +
                          " -map 0:a -c copy" +
                          (file.ends_with(".ts") ? " -bsf:a aac_adtstoasc" : "") + " -f framecrc -";
  EXPECT_EQ(run(cmd, &output), 0) << cmd << "\n" << output;
  std::vector<std::pair<std::size_t, std::uint32_t>> frames;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    // stream, dts, pts, duration, size, 0xcrc[, flags]
    std::vector<std::string> fields;
    std::istringstream parts(line);
    std::string f;
    while (std::getline(parts, f, ',')) {
      fields.push_back(f);
    }
    if (fields.size() < 6) continue;
    frames.emplace_back(std::stoul(fields[4]),
                        static_cast<std::uint32_t>(std::stoul(fields[5], nullptr, 16)));
  }
  return frames;
}

class BitExactCorpus : public ::testing::TestWithParam<Clip> {};

TEST_P(BitExactCorpus, EveryNalUnitAndAudioFrameSurvivesPacketizeAndDepacketize) {
  const Clip& clip = GetParam();
  const std::string file = make_clip(clip);
  PacketizeOptions po;
  po.block = {BlockSize::Unit::kDuration, 500'000};
  auto opened = MediaFile::open(file, po);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  const MediaFile& media = *opened.value();
  EXPECT_EQ(media.warning_count(), 0u)
      << (media.warnings().empty() ? std::string() : media.warnings().front());

  // Video: every packet, in order, through the receive-side depacketizer.
  std::vector<Bytes> received;
  std::uint64_t damaged = 0;
  H264Depacketizer depacketizer([&](const AccessUnit& au) {
    damaged += au.damaged ? 1 : 0;
    for (auto& nal : split_annexb(au.data)) {
      if (is_slice(nal)) received.push_back(std::move(nal));
    }
  });
  std::uint16_t sequence = 0;
  std::vector<Bytes> audio_frames;
  Bytes partial_audio;
  const bool aac = clip.audio == "aac";
  for (const RtpPacket& p : media.packets()) {
    const auto payload = media.payload(p);
    if (p.stream == media.video_stream()) {
      depacketizer.push(sequence++, p.rtp_timestamp, p.marker, payload);
      continue;
    }
    if (aac) {
      // RFC 3640 AAC-hbr: AU-headers-length (16 bits) + one 16-bit AU-header, then the data;
      // a fragmented access unit repeats the header and ends with the marker bit.
      ASSERT_GE(payload.size(), 4u);
      partial_audio.insert(partial_audio.end(), payload.begin() + 4, payload.end());
      if (p.marker) audio_frames.push_back(std::exchange(partial_audio, {}));
    } else {
      audio_frames.emplace_back(payload.begin(), payload.end());  // RFC 7587: one per packet
    }
  }
  depacketizer.flush();
  EXPECT_EQ(damaged, 0u);

  const std::vector<Bytes> reference = reference_slices(file);
  ASSERT_FALSE(reference.empty());
  ASSERT_EQ(received.size(), reference.size());
  std::size_t in_256_511 = 0;
  std::size_t smallest = SIZE_MAX;
  std::size_t largest = 0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    ASSERT_EQ(received[i].size(), reference[i].size()) << "slice NAL unit " << i;
    ASSERT_TRUE(received[i] == reference[i]) << "slice NAL unit " << i << " differs";
    const std::size_t n = reference[i].size();
    in_256_511 += n >= 256 && n <= 511 ? 1 : 0;
    smallest = std::min(smallest, n);
    largest = std::max(largest, n);
  }
  RecordProperty("slices", static_cast<int>(reference.size()));
  RecordProperty("smallest", static_cast<int>(smallest));
  RecordProperty("largest", static_cast<int>(largest));
  if (clip.expect_256_511) {
    EXPECT_GT(in_256_511, 0u) << "the corpus no longer has NAL units of 256..511 bytes";
  }
  EXPECT_GE(largest, clip.min_largest) << "the clip no longer has NAL units that large";

  if (!clip.audio.empty()) {
    const auto ref_audio = reference_audio(file);
    ASSERT_FALSE(ref_audio.empty());
    ASSERT_EQ(audio_frames.size(), ref_audio.size());
    for (std::size_t i = 0; i < ref_audio.size(); ++i) {
      ASSERT_EQ(audio_frames[i].size(), ref_audio[i].first) << "audio frame " << i;
      ASSERT_EQ(adler32(audio_frames[i]), ref_audio[i].second) << "audio frame " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, BitExactCorpus, ::testing::ValuesIn(corpus()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace predrop::media::test
