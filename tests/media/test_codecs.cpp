// Issue 24 on files generated at test time with the ffmpeg CLI: H.265 (x265 with two temporal
// sub-layers, a scene cut) and VP8 (libvpx two-layer pattern, error resilient) are packetized with
// the SDP lines FFmpeg's own RTP muxer writes and the importance docs/media.md states; the packets
// come back through the depacketizer and decoder to the pictures ffmpeg decodes from the file; a
// file with one supported and one unsupported stream serves the supported one and names the
// other, and an unsupported video codec alone keeps its clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <sstream>
#include <string>

#include "media_test_util.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/media/depacketizer.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/media/mpa.hpp"
#include "predrop/media/psnr.hpp"
#include "predrop/media/video_decoder.hpp"

namespace predrop::media {
namespace {

std::string make_clip(const std::string& name, const std::string& args) {
  const auto path = test::scratch_dir() / name;
  std::string out;
  const int rc =
      test::run(test::kFfmpeg + " -nostdin -loglevel error -y " + args + " " + path.string(), &out);
  EXPECT_EQ(rc, 0) << out;
  return path.string();
}

// Every rtpmap/fmtp line of ours is in the SDP FFmpeg's RTP muxer writes for the same file.
// av_sdp_create numbers the dynamic payload types from 96 in stream order, so an audio-only
// file's audio is its 96 where ours is the configured audio type (97): compared as FFmpeg's.
void expect_sdp_like_ffmpeg(const MediaFile& file, const std::string& path) {
  auto reference = ffmpeg_reference_sdp(path);
  ASSERT_TRUE(reference) << reference.error().message;
  int ffmpeg_pt = 96;
  for (const StreamInfo& s : file.streams()) {
    if (s.payload_type < 96) {
      // A static type (MP3: 14): FFmpeg announces it on the m= line and writes no rtpmap; ours
      // names it anyway (docs/media.md "MP3").
      EXPECT_NE(reference->find(" RTP/AVP " + std::to_string(s.payload_type) + "\r\n"),
                std::string::npos)
          << *reference;
      continue;
    }
    std::istringstream lines(s.sdp_attributes());
    std::string line;
    const std::string ours = ":" + std::to_string(s.payload_type) + " ";
    const std::string theirs = ":" + std::to_string(ffmpeg_pt++) + " ";
    while (std::getline(lines, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (const auto at = line.find(ours); at != std::string::npos) {
        line.replace(at, ours.size(), theirs);
      }
      EXPECT_NE(reference->find(line + "\r\n"), std::string::npos)
          << line << "\nnot in FFmpeg's SDP:\n"
          << *reference;
    }
  }
}

// Depacketizes and decodes every video packet; returns how many pictures decoded identical to
// the reference decoder's picture of the same display index, and the total decoded.
std::pair<std::size_t, std::size_t> identical_pictures(const MediaFile& file,
                                                       const std::string& path, Codec codec) {
  auto reference = ReferenceDecoder::open(path);
  EXPECT_TRUE(reference) << reference.error().message;
  if (!reference) return {0, 0};
  std::size_t identical = 0;
  std::size_t decoded = 0;
  VideoDecoderOptions options;
  options.codec = codec;
  auto decoder = VideoDecoder::create(
      [&](const FrameView& frame) {
        ++decoded;
        const auto index = file.display_index_for_rtp(static_cast<std::uint32_t>(frame.pts));
        if (!index) return;
        auto ref = (*reference)->frame(*index);
        if (!ref) return;
        const auto mse = frame_mse(frame, *ref);
        if (mse && *mse == 0.0) ++identical;
      },
      options);
  EXPECT_TRUE(decoder) << decoder.error().message;
  auto depacketizer = make_depacketizer(
      codec, [&](const AccessUnit& au) { (*decoder)->decode(au.data, au.rtp_timestamp); });
  std::uint16_t sequence = 0;
  for (const RtpPacket& p : file.packets()) {
    if (p.stream != file.video_stream()) continue;
    depacketizer->push(sequence++, p.rtp_timestamp, p.marker, file.payload(p));
  }
  depacketizer->flush();
  (*decoder)->flush();
  EXPECT_EQ(depacketizer->stats().damaged_access_units, 0u);
  return {identical, decoded};
}

TEST(Codecs, H265TemporalSubLayersGoFirstAndParameterSetsNever) {
  const auto path =
      make_clip("x265.mkv",
                "-f lavfi -i testsrc2=s=320x240:r=30:d=1 -f lavfi -i "
                "life=s=320x240:r=30:mold=10:ratio=0.3:seed=7,trim=duration=1,format=yuv420p "
                "-filter_complex [0][1]concat=n=2:v=1:a=0,format=yuv420p -c:v libx265 "
                "-x265-params log-level=error:temporal-layers=1:bframes=3:keyint=30");
  PacketizeOptions options;
  options.max_payload = 600;  // FUs as well as single NAL unit packets and APs
  auto opened = MediaFile::open(path, options);
  ASSERT_TRUE(opened) << opened.error().message;
  const MediaFile& file = **opened;
  ASSERT_TRUE(file.video_stream());
  EXPECT_EQ(file.streams()[0].codec, Codec::kH265);
  EXPECT_EQ(file.streams()[0].encoding, "H265/90000");
  EXPECT_NE(file.streams()[0].fmtp.find("sprop-vps="), std::string::npos);
  expect_sdp_like_ffmpeg(file, path);

  std::size_t upper_layer = 0;
  std::size_t keys = 0;
  for (const Frame& f : file.frames()) {
    if (f.type == FrameType::kKey) {
      ++keys;
      EXPECT_EQ(f.importance, kImportanceKey);
    }
    if (f.temporal_id > 0 && !f.reference) {
      ++upper_layer;
      EXPECT_LE(f.importance, kImportanceDisposableMax);
    }
    if (f.reference && f.type != FrameType::kKey) {
      EXPECT_GE(f.importance, kImportanceReferenceMin);
    }
  }
  EXPECT_GE(keys, 2u);
  EXPECT_GE(upper_layer, 20u) << "x265 made no TemporalId 1 sub-layer non-reference pictures";
  // Every IRAP picture is preceded by VPS, SPS and PPS that are never dropped; the AP carrying
  // them starts with the PayloadHdr of type 48.
  std::size_t never = 0;
  std::size_t aps = 0;
  std::size_t fus = 0;
  for (const RtpPacket& p : file.packets()) {
    const auto payload = file.payload(p);
    const int type = (payload[0] >> 1) & 0x3f;
    aps += type == 48;
    fus += type == 49;
    if (p.importance == kImportanceNever) ++never;
  }
  EXPECT_GE(never, keys);
  EXPECT_GE(aps, keys);
  EXPECT_GT(fus, 0u);

  const auto [identical, decoded] = identical_pictures(file, path, Codec::kH265);
  EXPECT_EQ(decoded, 60u);
  EXPECT_EQ(identical, decoded);
}

// A libvpx clip in two temporal layers (made with `args`): its upper layer's frames are
// non-reference, so disposable; its key frames are kept; every picture decodes identical after
// the round trip. `more` checks what one codec adds.
void expect_disposable_upper_layer(const std::string& name, const std::string& args, Codec codec,
                                   const std::string& encoding, const std::string& encoder,
                                   const std::function<void(const MediaFile&)>& more = {}) {
  const auto path = make_clip(name, args);
  auto opened = MediaFile::open(path);
  ASSERT_TRUE(opened) << opened.error().message;
  const MediaFile& file = **opened;
  EXPECT_EQ(file.streams()[0].codec, codec);
  EXPECT_EQ(file.streams()[0].encoding, encoding);
  expect_sdp_like_ffmpeg(file, path);
  std::size_t droppable = 0;
  std::size_t keys = 0;
  for (const Frame& f : file.frames()) {
    if (f.type == FrameType::kKey) {
      ++keys;
      EXPECT_EQ(f.importance, kImportanceKey);
    } else if (!f.reference) {
      ++droppable;
      EXPECT_LE(f.importance, kImportanceDisposableMax);
    }
  }
  EXPECT_GE(keys, 2u);
  EXPECT_GE(droppable, 20u) << encoder << " made no non-reference frames in its upper layer";
  if (more) more(file);
  const auto [identical, decoded] = identical_pictures(file, path, codec);
  EXPECT_EQ(decoded, 60u);
  EXPECT_EQ(identical, decoded);
}

TEST(Codecs, Vp8NonReferenceFramesAreDisposableAndKeyFramesKept) {
  expect_disposable_upper_layer(
      "vp8.webm",
      "-f lavfi -i testsrc2=s=320x240:r=30:d=2 -c:v libvpx -b:v 400k -g 30 -error-resilient 1 "
      "-ts-parameters ts_layering_mode=2:ts_target_bitrate=250,400",
      Codec::kVp8, "VP8/90000", "libvpx", [](const MediaFile& file) {
        // The N bit of every packet says what the frame header says.
        for (const RtpPacket& p : file.packets()) {
          const bool n = (file.payload(p)[0] & 0x20) != 0;
          EXPECT_EQ(n, !file.frames()[p.frame].reference);
        }
      });
}

TEST(Codecs, Vp9NonReferenceFramesAreDisposableAndKeyFramesKept) {
  expect_disposable_upper_layer("vp9.webm",
                                "-f lavfi -i testsrc2=s=320x240:r=30:d=2 -c:v libvpx-vp9 -b:v 500k "
                                "-g 30 -error-resilient 1 -deadline realtime -cpu-used 8 "
                                "-ts-parameters ts_layering_mode=2:ts_target_bitrate=300,500",
                                Codec::kVp9, "VP9/90000", "libvpx-vp9");
}

// AV1 (AOMedia RTP payload format): AV1/90000 without fmtp (FFmpeg 5.1 has no AV1 RTP muxer to
// compare with), every key frame's first packet has N and carries the sequence header, which is
// never discarded; key frames 254; every picture decodes identical after the round trip. Returns
// the file for more checks.
std::shared_ptr<const MediaFile> expect_av1(const std::string& name, const std::string& args,
                                            std::size_t max_payload) {
  const auto path = make_clip(name, args);
  PacketizeOptions options;
  options.max_payload = max_payload;
  auto opened = MediaFile::open(path, options);
  EXPECT_TRUE(opened) << opened.error().message;
  if (!opened) return nullptr;
  const MediaFile& file = **opened;
  EXPECT_EQ(file.streams()[0].codec, Codec::kAv1);
  EXPECT_EQ(file.streams()[0].sdp_attributes(), "a=rtpmap:96 AV1/90000\r\n");
  EXPECT_EQ(file.warning_count(), 0u) << (file.warnings().empty() ? "" : file.warnings()[0]);
  std::size_t keys = 0;
  for (const Frame& f : file.frames()) {
    if (f.type != FrameType::kKey) continue;
    ++keys;
    EXPECT_EQ(f.importance, kImportanceKey);
    const RtpPacket& first = file.packets()[f.first_packet];
    const auto payload = file.payload(first);
    EXPECT_EQ(payload[0] & 0x08, 0x08) << "N bit";
    // W = 0: a length, then the OBU header of type 1 (sequence header), never discarded.
    EXPECT_EQ((payload[2] >> 3) & 0x0f, 1);
    EXPECT_EQ(first.importance, kImportanceNever);
  }
  EXPECT_GE(keys, 2u);
  for (const RtpPacket& p : file.packets()) {
    EXPECT_LE(p.payload_size, max_payload);
  }
  const auto [identical, decoded] = identical_pictures(file, path, Codec::kAv1);
  EXPECT_EQ(decoded, file.video_display_order().size());
  EXPECT_EQ(identical, decoded);
  return *opened;
}

TEST(Codecs, Av1FromLibaomIsServedBitExact) {
  // Realtime libaom in MP4: one frame per temporal unit; the sequence header is in av1C and in
  // the key frames' samples. 400-byte payloads so that OBUs fragment.
  const auto file = expect_av1("aom.mp4",
                               "-f lavfi -i testsrc2=s=320x240:r=30:d=2 -c:v libaom-av1 "
                               "-usage realtime -cpu-used 8 -g 30 -b:v 400k",
                               400);
  ASSERT_TRUE(file);
  EXPECT_EQ(file->video_display_order().size(), 60u);
}

TEST(Codecs, Av1HierarchicalNonReferenceFramesAreDisposable) {
  // SVT-AV1's random-access hierarchy (4 levels): temporal units of hidden frames plus
  // show_existing_frame headers; the top level refreshes no reference slot
  // (refresh_frame_flags = 0), so it is disposable and goes first; in IVF.
  const auto file = expect_av1("svt.ivf",
                               "-f lavfi -i testsrc2=s=320x240:r=30:d=2 -c:v libsvtav1 -g 32 "
                               "-svtav1-params hierarchical-levels=3:preset=12",
                               1200);
  ASSERT_TRUE(file);
  std::size_t disposable = 0;
  for (const Frame& f : file->frames()) {
    if (f.reference) continue;
    ++disposable;
    EXPECT_LE(f.importance, kImportanceDisposableMax);
  }
  EXPECT_GE(disposable, 20u) << "SVT-AV1 made no non-reference frames";
  std::printf("SVT-AV1: %zu pictures, %zu disposable, %zu packets\n", file->frames().size(),
              disposable, file->packets().size());
  // The priority planner's order takes every disposable picture's packets before any other
  // (sequence headers are not in it at all: expect_av1).
  for (const Block& b : file->blocks()) {
    const auto importance = file->importance(b);
    std::vector<std::uint32_t> order(importance.size());
    const std::size_t droppable = core::DiscardPlanner::priority_order(importance, order);
    std::size_t disposable_packets = 0;
    for (std::uint32_t i = 0; i < importance.size(); ++i) {
      const RtpPacket& p = file->packets()[b.first_packet + i];
      disposable_packets += file->frames()[p.frame].reference ? 0 : 1;
    }
    ASSERT_LE(disposable_packets, droppable);
    for (std::size_t k = 0; k < droppable; ++k) {
      const RtpPacket& p = file->packets()[b.first_packet + order[k]];
      const Frame& f = file->frames()[p.frame];
      EXPECT_EQ(!f.reference, k < disposable_packets) << "block " << b.index << " rank " << k;
      if (k < disposable_packets) {
        EXPECT_NE(f.type, FrameType::kKey);
      }
    }
  }
}

// Linear PCM (RFC 3551 L16, RFC 3190 L24) from `args`: the rtpmap FFmpeg writes, packets of whole
// sample frames under the limit with contiguous timestamps, audio never discarded, and the
// payloads together are the file's samples in network order (what `ffmpeg -f s16be` writes).
void expect_pcm(const std::string& name, const std::string& args, const std::string& encoding,
                Codec codec, const std::string& raw_format, std::size_t frame_bytes) {
  const auto path = make_clip(name, args);
  PacketizeOptions options;
  options.max_payload = 1000;
  auto opened = MediaFile::open(path, options);
  ASSERT_TRUE(opened) << opened.error().message;
  const MediaFile& file = **opened;
  ASSERT_EQ(file.streams().size(), 1u);
  EXPECT_EQ(file.streams()[0].codec, codec);
  EXPECT_EQ(file.streams()[0].encoding, encoding);
  EXPECT_TRUE(file.streams()[0].fmtp.empty());
  expect_sdp_like_ffmpeg(file, path);
  std::vector<std::uint8_t> sent;
  std::optional<std::uint32_t> next_ts;
  for (const RtpPacket& p : file.packets()) {
    const auto payload = file.payload(p);
    EXPECT_LE(payload.size(), options.max_payload);
    EXPECT_EQ(payload.size() % frame_bytes, 0u);
    EXPECT_EQ(p.importance, kImportanceNever);
    if (next_ts) {
      EXPECT_EQ(p.rtp_timestamp, *next_ts);
    }
    next_ts = p.rtp_timestamp + static_cast<std::uint32_t>(payload.size() / frame_bytes);
    sent.insert(sent.end(), payload.begin(), payload.end());
  }
  EXPECT_GE(file.blocks().size(), 2u);
  const auto raw = test::scratch_dir() / (name + ".raw");
  std::string out;
  ASSERT_EQ(test::run(test::kFfmpeg + " -nostdin -loglevel error -y -i " + path + " -f " +
                          raw_format + " " + raw.string(),
                      &out),
            0)
      << out;
  const auto want = test::read_file(raw);
  EXPECT_EQ(sent.size(), want.size());
  EXPECT_TRUE(sent == want) << "payloads differ from the file's samples in network order";
}

TEST(Codecs, L16FromWavIsTheFilesSamplesInNetworkOrder) {
  expect_pcm("s16le.wav", "-f lavfi -i sine=frequency=440:sample_rate=48000:duration=2.5 -ac 2",
             "L16/48000/2", Codec::kL16, "s16be", 4);
}

TEST(Codecs, L16FromBigEndianAiffIsCopied) {
  expect_pcm("s16be.aiff", "-f lavfi -i sine=frequency=300:sample_rate=16000:duration=2.5",
             "L16/16000/1", Codec::kL16, "s16be", 2);
}

TEST(Codecs, L24FromWavIsTheFilesSamplesInNetworkOrder) {
  expect_pcm("s24le.wav",
             "-f lavfi -i sine=frequency=1000:sample_rate=48000:duration=2.5 -ac 2 -c:a pcm_s24le",
             "L24/48000/2", Codec::kL24, "s24be", 6);
}

// MP3 (RFC 2250) from `args` at a payload limit: static type 14, MPA/90000, one frame per packet
// (fragments above the limit), never discarded, 90 kHz timestamps; the reassembled frames are the
// file's frames back to back (what the mp3 muxer writes without tags).
void expect_mp3(const std::string& name, const std::string& args, std::size_t max_payload,
                bool fragments) {
  const auto path = make_clip(name, args);
  PacketizeOptions options;
  options.max_payload = max_payload;
  auto opened = MediaFile::open(path, options);
  ASSERT_TRUE(opened) << opened.error().message;
  const MediaFile& file = **opened;
  ASSERT_EQ(file.streams().size(), 1u);
  const StreamInfo& info = file.streams()[0];
  EXPECT_EQ(info.codec, Codec::kMp3);
  EXPECT_EQ(info.payload_type, 14);
  EXPECT_EQ(info.clock_rate, 90000u);
  EXPECT_EQ(info.sdp_attributes(), "a=rtpmap:14 MPA/90000\r\n");
  expect_sdp_like_ffmpeg(file, path);
  std::vector<std::uint8_t> frames;
  std::size_t fragmented = 0;
  MpaReassembler r([&](std::uint32_t, std::span<const std::uint8_t> f) {
    frames.insert(frames.end(), f.begin(), f.end());
  });
  for (const RtpPacket& p : file.packets()) {
    EXPECT_LE(p.payload_size, max_payload);
    EXPECT_EQ(p.importance, kImportanceNever);
    const auto parsed = parse_mpa_payload(file.payload(p));
    ASSERT_TRUE(parsed);
    fragmented += parsed->fragment_offset != 0;
    r.push(p.rtp_timestamp, file.payload(p));
  }
  r.flush();
  EXPECT_EQ(r.malformed(), 0u);
  EXPECT_EQ(fragmented > 0, fragments);
  const auto copy = test::scratch_dir() / (name + ".frames.mp3");
  std::string out;
  ASSERT_EQ(test::run(test::kFfmpeg + " -nostdin -loglevel error -y -i " + path +
                          " -c copy -write_xing 0 -id3v2_version 0 -f mp3 " + copy.string(),
                      &out),
            0)
      << out;
  EXPECT_TRUE(frames == test::read_file(copy)) << "reassembled frames differ from the file's";
}

TEST(Codecs, Mp3FramesGoOnePerPacket) {
  expect_mp3("lame.mp3",
             "-f lavfi -i sine=frequency=440:sample_rate=44100:duration=2.5 -ac 2 -c:a libmp3lame "
             "-b:a 128k",
             1200, false);
}

TEST(Codecs, Mp3FramesAboveTheLimitAreFragmented) {
  // 320 kbit/s at 32 kHz: 1440-byte frames, over a 600-byte limit.
  expect_mp3("lame32k.mp3",
             "-f lavfi -i sine=frequency=440:sample_rate=32000:duration=2.5 -ac 2 -c:a libmp3lame "
             "-b:a 320k",
             600, true);
}

TEST(Codecs, PcmBesideUnsupportedVideoIsServedAndUnsupportedAudioAloneIsAnError) {
  const auto both = make_clip("mpeg4_pcm.avi",
                              "-f lavfi -i testsrc2=s=160x120:r=10:d=1 -f lavfi -i sine=d=1 "
                              "-c:v mpeg4 -c:a pcm_s16le");
  auto file = MediaFile::open(both);
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_FALSE((*file)->video_stream());
  ASSERT_TRUE((*file)->audio_stream());
  EXPECT_EQ((*file)->streams()[*(*file)->audio_stream()].codec, Codec::kL16);
  ASSERT_EQ((*file)->skipped().size(), 1u);

  const auto flac = make_clip("audio.flac", "-f lavfi -i sine=d=1");
  auto error = MediaFile::open(flac);
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().message.find("no AAC, Opus, MP3 or PCM audio"), std::string::npos)
      << error.error().message;
}

TEST(Codecs, UnsupportedVideoIsSkippedWhenAudioRemainsAndAnErrorWhenAlone) {
  const auto both = make_clip("mpeg4_aac.mkv",
                              "-f lavfi -i testsrc2=s=160x120:r=10:d=1 -f lavfi -i sine=d=1 "
                              "-c:v mpeg4 -c:a aac");
  auto file = MediaFile::open(both);
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_FALSE((*file)->video_stream());
  ASSERT_TRUE((*file)->audio_stream());
  ASSERT_EQ((*file)->skipped().size(), 1u);
  EXPECT_NE((*file)->skipped()[0].find("unsupported video codec mpeg4"), std::string::npos);

  const auto alone = make_clip("mpeg4.mp4", "-f lavfi -i testsrc2=s=160x120:r=10:d=1 -c:v mpeg4");
  auto error = MediaFile::open(alone);
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().message.find(
                "unsupported video codec mpeg4 (supported: H.264, H.265, VP8, VP9, AV1)"),
            std::string::npos)
      << error.error().message;
}

}  // namespace
}  // namespace predrop::media
