// Demux + packetize + blocks + importance on the sample clip (6 s, 640x360@30, GOP 30, 2 B-frames
// that are not references, AAC stereo 48 kHz).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>

#include "media_test_util.hpp"
#include "predrop/media/media_file.hpp"

namespace predrop::media {
namespace {

using test::kSample;

std::shared_ptr<const MediaFile> open_or_die(const std::string& path,
                                             const PacketizeOptions& options = {}) {
  auto r = MediaFile::open(path, options);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? *r : nullptr;
}

std::uint8_t nal_type_of(std::span<const std::uint8_t> payload) {
  return payload[0] & 0x1f;
}

// Structural invariants every MediaFile must satisfy, whatever the options.
void check_invariants(const MediaFile& f) {
  const auto packets = f.packets();
  const auto frames = f.frames();
  const auto blocks = f.blocks();
  ASSERT_FALSE(blocks.empty());
  for (const RtpPacket& p : packets) {
    ASSERT_GT(p.payload_size, 0);
    ASSERT_LE(p.payload_size, f.options().max_payload);
    ASSERT_LE(p.payload_offset + p.payload_size, f.arena().size());
    ASSERT_LT(p.frame, frames.size());
    ASSERT_LT(p.stream, f.streams().size());
  }
  // Blocks tile the packet and frame sequences in order.
  std::uint32_t next_packet = 0, next_frame = 0;
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const Block& b = blocks[k];
    EXPECT_EQ(b.index, k);
    EXPECT_EQ(b.first_packet, next_packet);
    EXPECT_EQ(b.first_frame, next_frame);
    next_packet += b.packet_count;
    next_frame += b.frame_count;
    EXPECT_GT(b.duration_us, 0);
    if (k + 1 < blocks.size()) {
      EXPECT_EQ(b.start_us + b.duration_us, blocks[k + 1].start_us);
    }
    EXPECT_EQ(f.importance(b).size(), b.packet_count);
    // Send offsets are monotonic and inside the block.
    std::int64_t last = 0;
    std::uint64_t bytes = 0;
    for (const RtpPacket& p : f.packets(b)) {
      EXPECT_GE(p.send_offset_us, last);
      EXPECT_LT(p.send_offset_us, b.duration_us);
      last = p.send_offset_us;
      bytes += p.payload_size;
    }
    EXPECT_EQ(bytes, b.bytes);
  }
  EXPECT_EQ(next_packet, packets.size());
  EXPECT_EQ(next_frame, frames.size());
  // Every frame's packets are contiguous, inside its block, and point back to it.
  for (std::uint32_t i = 0; i < frames.size(); ++i) {
    const Frame& fr = frames[i];
    const Block& b = blocks[fr.block];
    ASSERT_GE(fr.first_packet, b.first_packet);
    ASSERT_LE(fr.first_packet + fr.packet_count, b.first_packet + b.packet_count);
    ASSERT_GE(i, b.first_frame);
    ASSERT_LT(i, b.first_frame + b.frame_count);
    std::uint32_t bytes = 0;
    for (std::uint32_t p = fr.first_packet; p < fr.first_packet + fr.packet_count; ++p) {
      EXPECT_EQ(packets[p].frame, i);
      EXPECT_EQ(packets[p].rtp_timestamp, fr.rtp_timestamp);
      bytes += packets[p].payload_size;
    }
    EXPECT_EQ(bytes, fr.bytes);
  }
  // Each block shows a contiguous run of display indices, and the runs tile the video.
  std::uint32_t next_display = 0;
  for (const Block& b : blocks) {
    EXPECT_EQ(b.first_display, next_display);
    next_display += b.display_count;
    for (std::uint32_t d = b.first_display; d < b.first_display + b.display_count; ++d) {
      EXPECT_EQ(frames[f.video_display_order()[d]].block, b.index);
      EXPECT_EQ(f.block_for_display(d), b.index);
    }
  }
  EXPECT_EQ(next_display, f.video_display_order().size());
}

TEST(MediaFile, PacketizesTheSample) {
  auto file = open_or_die(kSample);
  ASSERT_TRUE(file);
  const MediaFile& f = *file;
  EXPECT_EQ(f.warning_count(), 0u);
  check_invariants(f);

  ASSERT_EQ(f.streams().size(), 2u);
  ASSERT_EQ(f.video_stream(), 0);
  ASSERT_EQ(f.audio_stream(), 1);
  const StreamInfo& v = f.streams()[0];
  EXPECT_EQ(v.codec, Codec::kH264);
  EXPECT_EQ(v.payload_type, 96);
  EXPECT_EQ(v.clock_rate, 90000u);
  EXPECT_EQ(v.width, 640);
  EXPECT_EQ(v.height, 360);
  EXPECT_DOUBLE_EQ(v.frame_rate, 30.0);
  const StreamInfo& a = f.streams()[1];
  EXPECT_EQ(a.codec, Codec::kAac);
  EXPECT_EQ(a.payload_type, 97);
  EXPECT_EQ(a.clock_rate, 48000u);
  EXPECT_EQ(a.channels, 2);
  EXPECT_EQ(a.encoding, "MPEG4-GENERIC/48000/2");

  EXPECT_EQ(f.video_display_order().size(), 180u);
  EXPECT_EQ(f.duration_us(), 6'000'000);
  // Large frames were fragmented (FU-A) and the payload limit was used.
  const auto biggest = std::max_element(
      f.packets().begin(), f.packets().end(),
      [](const RtpPacket& x, const RtpPacket& y) { return x.payload_size < y.payload_size; });
  EXPECT_EQ(biggest->payload_size, 1200);
}

TEST(MediaFile, DurationBlocksAreOneSecondAndShowThirtyFrames) {
  auto file = open_or_die(kSample);
  ASSERT_TRUE(file);
  const auto blocks = file->blocks();
  ASSERT_EQ(blocks.size(), 6u);
  for (const Block& b : blocks) {
    // Cuts fall on frame boundaries; with GOP = 30 frames = 1 s they fall exactly on the grid.
    EXPECT_EQ(b.start_us, std::int64_t{b.index} * 1'000'000);
    EXPECT_EQ(b.duration_us, 1'000'000);
    EXPECT_EQ(b.first_display, 30 * b.index);
    EXPECT_EQ(b.display_count, 30u);
  }
  // Audio goes to the block that covers its timestamp.
  for (const Frame& fr : file->frames()) {
    if (fr.type != FrameType::kAudio) continue;
    const Block& b = blocks[fr.block];
    if (fr.block > 0) {
      EXPECT_GE(fr.pts_us, b.start_us);
    }
    if (fr.block + 1 < blocks.size()) {
      EXPECT_LT(fr.pts_us, b.start_us + b.duration_us);
    }
  }
}

TEST(MediaFile, OtherDurationsCutAtCleanFrameBoundaries) {
  PacketizeOptions options;
  options.block.value = 250'000;  // not a multiple of the GOP
  auto file = open_or_die(kSample, options);
  ASSERT_TRUE(file);
  check_invariants(*file);
  const auto blocks = file->blocks();
  // Cuts only before I/P frames (3-frame pattern), never drifting from the 250 ms grid.
  EXPECT_GE(blocks.size(), 20u);
  EXPECT_LE(blocks.size(), 24u);
  for (const Block& b : blocks) {
    const std::int64_t grid = (b.start_us + 249'999) / 250'000 * 250'000;
    EXPECT_LT(b.start_us - (grid - 250'000), 250'000 + 100'000) << b.index;
    if (b.index + 1 < blocks.size()) {
      EXPECT_GE(b.duration_us, 150'000);
      EXPECT_LE(b.duration_us, 350'000);
    }
  }
}

TEST(MediaFile, ByteBlocksHoldAtLeastTheBudget) {
  PacketizeOptions options;
  options.block = {BlockSize::Unit::kBytes, 200'000};
  auto file = open_or_die(kSample, options);
  ASSERT_TRUE(file);
  check_invariants(*file);
  const auto blocks = file->blocks();
  ASSERT_GE(blocks.size(), 4u);
  for (const Block& b : blocks) {
    if (b.index + 1 == blocks.size()) break;
    EXPECT_GE(b.bytes, 200'000u);
    EXPECT_LT(b.bytes, 200'000u + 150'000u);  // at most one GOP-part (keyframe + 2 B) over
  }
}

TEST(MediaFile, ImportanceFollowsTheRules) {
  auto file = open_or_die(kSample);
  ASSERT_TRUE(file);
  const MediaFile& f = *file;
  const auto packets = f.packets();
  std::size_t keyframes = 0, parameter_sets = 0;
  for (const Frame& fr : f.frames()) {
    const auto frame_packets = packets.subspan(fr.first_packet, fr.packet_count);
    if (fr.type == FrameType::kAudio) {
      EXPECT_EQ(fr.importance, kImportanceNever);
      for (const RtpPacket& p : frame_packets)
        EXPECT_EQ(p.importance, kImportanceNever);
      continue;
    }
    // The sample's B-frames are disposable and every other frame is a reference.
    EXPECT_EQ(fr.reference, fr.type != FrameType::kBidir);
    if (fr.type == FrameType::kKey) {
      ++keyframes;
      EXPECT_EQ(fr.importance, kImportanceKey);
      // SPS and PPS in-band before every keyframe, never droppable.
      ASSERT_GE(frame_packets.size(), 3u);
      EXPECT_EQ(nal_type_of(f.payload(frame_packets[0])), 7);
      EXPECT_EQ(nal_type_of(f.payload(frame_packets[1])), 8);
    } else if (fr.reference) {
      EXPECT_GE(fr.importance, kImportanceReferenceMin);
      EXPECT_LT(fr.importance, kImportanceKey);
    } else {
      EXPECT_LE(fr.importance, kImportanceDisposableMax);
    }
    for (const RtpPacket& p : frame_packets) {
      const std::uint8_t t = nal_type_of(f.payload(p));
      if (t == 7 || t == 8) {
        ++parameter_sets;
        EXPECT_EQ(p.importance, kImportanceNever);
      } else {
        EXPECT_EQ(p.importance, fr.importance);  // one importance per frame
      }
    }
    // The marker bit ends the access unit.
    for (std::size_t i = 0; i < frame_packets.size(); ++i) {
      EXPECT_EQ(frame_packets[i].marker, i + 1 == frame_packets.size());
    }
  }
  EXPECT_EQ(keyframes, 6u);
  EXPECT_EQ(parameter_sets, 12u);

  for (const Block& b : f.blocks()) {
    // In each block: all disposable frames below all reference frames, distinct importances
    // among disposable frames, and later P frames of a GOP below earlier ones.
    std::set<int> disposable;
    int min_reference = 256, max_disposable = -1, last_p = 256;
    for (const Frame& fr : f.frames().subspan(b.first_frame, b.frame_count)) {
      if (fr.type == FrameType::kAudio) continue;
      if (fr.reference) {
        min_reference = std::min<int>(min_reference, fr.importance);
        if (fr.type == FrameType::kPredicted) {
          EXPECT_LT(fr.importance, last_p);
          last_p = fr.importance;
        }
      } else {
        max_disposable = std::max<int>(max_disposable, fr.importance);
        EXPECT_TRUE(disposable.insert(fr.importance).second) << "duplicate importance";
      }
    }
    EXPECT_LT(max_disposable, min_reference);
    // x264 ends each 30-frame GOP with "B P" before the next IDR: 19 B-frames per GOP.
    EXPECT_EQ(disposable.size(), 19u);
  }
}

TEST(MediaFile, DroppingLowestImportanceFirstThinsDisposableFramesEvenly) {
  auto file = open_or_die(kSample);
  ASSERT_TRUE(file);
  const MediaFile& f = *file;
  const Block& b = f.blocks()[2];
  // Display indices of the block's disposable frames in drop order (lowest importance first).
  std::vector<std::pair<int, std::int32_t>> order;
  for (const Frame& fr : f.frames().subspan(b.first_frame, b.frame_count)) {
    if (fr.type != FrameType::kAudio && !fr.reference)
      order.emplace_back(fr.importance, fr.display_index);
  }
  std::sort(order.begin(), order.end());
  // After dropping any prefix of k frames, no two dropped frames are closer than the even
  // spacing allows by more than a factor of 2 (the bit-reversed order's guarantee, roughly).
  for (std::size_t k = 2; k <= order.size(); ++k) {
    std::vector<std::int32_t> dropped;
    for (std::size_t i = 0; i < k; ++i)
      dropped.push_back(order[i].second);
    std::sort(dropped.begin(), dropped.end());
    int min_gap = 1 << 30;
    for (std::size_t i = 1; i < dropped.size(); ++i) {
      min_gap = std::min(min_gap, dropped[i] - dropped[i - 1]);
    }
    const double even_gap = 30.0 / static_cast<double>(k);
    EXPECT_GE(min_gap, std::max(1.0, even_gap / 2.0 - 1.0)) << "k=" << k;
  }
}

TEST(MediaFile, RtpTimestampsFollowPresentationTime) {
  auto file = open_or_die(kSample);
  ASSERT_TRUE(file);
  const MediaFile& f = *file;
  // Audio: strictly increasing in send order (serial arithmetic: the AAC priming frame sits
  // just before the origin and wraps).
  bool have = false;
  std::uint32_t last = 0;
  for (const RtpPacket& p : f.packets()) {
    if (p.stream != f.audio_stream()) continue;
    if (have) {
      EXPECT_GT(static_cast<std::int32_t>(p.rtp_timestamp - last), 0);
    }
    last = p.rtp_timestamp;
    have = true;
  }
  // Video: increasing in presentation order, 3000 ticks apart at 30 fps, starting at 0; not
  // monotonic in send order because B-frames are sent after the P-frame they precede.
  const auto order = f.video_display_order();
  for (std::size_t d = 0; d < order.size(); ++d) {
    const Frame& fr = f.frames()[order[d]];
    EXPECT_EQ(fr.rtp_timestamp, 3000u * d);
    EXPECT_EQ(f.display_index_for_rtp(fr.rtp_timestamp), d);
  }
  EXPECT_FALSE(f.display_index_for_rtp(1500));
  bool reordered = false;
  std::uint32_t prev = 0;
  for (const Frame& fr : f.frames()) {
    if (fr.type == FrameType::kAudio) continue;
    reordered = reordered || fr.rtp_timestamp < prev;
    prev = fr.rtp_timestamp;
  }
  EXPECT_TRUE(reordered);
}

TEST(MediaFile, SdpAttributesMatchFfmpegsOwnRtpMuxer) {
  auto file = open_or_die(kSample);
  ASSERT_TRUE(file);
  auto reference = ffmpeg_reference_sdp(kSample);
  ASSERT_TRUE(reference) << reference.error().message;
  for (const StreamInfo& s : file->streams()) {
    std::istringstream lines(s.sdp_attributes());
    std::string line;
    while (std::getline(lines, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      EXPECT_NE(reference->find(line + "\r\n"), std::string::npos)
          << line << "\nnot in FFmpeg's SDP:\n"
          << *reference;
    }
  }
  const std::string video = file->streams()[0].sdp_attributes();
  EXPECT_NE(video.find("a=rtpmap:96 H264/90000\r\n"), std::string::npos);
  EXPECT_NE(video.find("packetization-mode=1"), std::string::npos);
  EXPECT_NE(video.find("profile-level-id=64"), std::string::npos);  // High profile
  EXPECT_EQ(file->streams()[0].media(), "video");
  EXPECT_EQ(file->streams()[1].media(), "audio");
}

TEST(MediaFile, SmallPayloadsFragmentVideoAndAudio) {
  PacketizeOptions options;
  options.max_payload = 100;
  auto file = open_or_die(kSample, options);
  ASSERT_TRUE(file);
  check_invariants(*file);
  const MediaFile& f = *file;
  std::size_t audio_fragmented = 0;
  for (const Frame& fr : f.frames()) {
    if (fr.type == FrameType::kAudio && fr.packet_count > 1) {
      ++audio_fragmented;
      // RFC 3640 §3.2.3: every fragment carries the full AU size; marker only on the last.
      for (std::uint32_t i = 0; i < fr.packet_count; ++i) {
        const RtpPacket& p = f.packets()[fr.first_packet + i];
        const auto payload = f.payload(p);
        EXPECT_EQ(payload[0], 0x00);
        EXPECT_EQ(payload[1], 0x10);
        const unsigned au_size = (unsigned{payload[2]} << 5) | (payload[3] >> 3);
        EXPECT_EQ(au_size, fr.bytes - 4 * fr.packet_count);
        EXPECT_EQ(p.marker, i + 1 == fr.packet_count);
      }
    }
  }
  EXPECT_GT(audio_fragmented, 100u);
}

// A frame of many packets is paced, not burst: its packets leave at evenly spread times over the
// first half of the gap to the next frame (the block's end for the last), so a bottleneck's queue
// and a player's socket buffer see the frame's bytes over milliseconds instead of at once.
TEST(MediaFile, AFramesPacketsAreSpreadOverHalfTheGapToTheNextFrame) {
  PacketizeOptions options;
  options.max_payload = 100;  // the sample's I-frames become hundreds of packets
  auto file = open_or_die(kSample, options);
  ASSERT_TRUE(file);
  const MediaFile& f = *file;
  std::size_t spread_frames = 0;
  for (const Block& b : f.blocks()) {
    for (std::uint32_t k = b.first_frame; k < b.first_frame + b.frame_count; ++k) {
      const Frame& fr = f.frames()[k];
      const auto pk = f.packets().subspan(fr.first_packet, fr.packet_count);
      ASSERT_FALSE(pk.empty()) << "frame " << k;
      const std::int64_t start = pk.front().send_offset_us;
      const std::int64_t next = k + 1 < b.first_frame + b.frame_count
                                    ? f.packets()[f.frames()[k + 1].first_packet].send_offset_us
                                    : b.duration_us;
      const std::int64_t spread = (next - start) / 2;
      for (std::size_t i = 0; i < pk.size(); ++i) {
        EXPECT_EQ(pk[i].send_offset_us, start + spread * static_cast<std::int64_t>(i) /
                                                    static_cast<std::int64_t>(pk.size()))
            << "frame " << k << " packet " << i;
      }
      if (pk.size() >= 20 && spread >= 1000) {
        ++spread_frames;
        EXPECT_GT(pk.back().send_offset_us - start, spread / 2) << "frame " << k;
      }
    }
  }
  EXPECT_GT(spread_frames, 100u);
}

TEST(MediaFile, OpusInMatroska) {
  auto file = open_or_die(test::kSampleOpus);
  ASSERT_TRUE(file);
  check_invariants(*file);
  const StreamInfo& a = file->streams()[*file->audio_stream()];
  EXPECT_EQ(a.codec, Codec::kOpus);
  EXPECT_EQ(a.clock_rate, 48000u);
  EXPECT_EQ(a.sdp_attributes(), "a=rtpmap:97 opus/48000/2\r\na=fmtp:97 sprop-stereo=1\r\n");
  auto reference = ffmpeg_reference_sdp(test::kSampleOpus);
  ASSERT_TRUE(reference);
  EXPECT_NE(reference->find(file->streams()[0].sdp_attributes()), std::string::npos);
  EXPECT_NE(reference->find(a.sdp_attributes()), std::string::npos);
  std::size_t markers = 0;
  for (const RtpPacket& p : file->packets())
    markers += p.stream == 1 && p.marker;
  EXPECT_EQ(markers, 1u);  // RFC 7587: first packet of the (only) talkspurt
  EXPECT_EQ(file->video_display_order().size(), 180u);
}

TEST(MediaFile, MpegTsGivesTheSameVideoPackets) {
  const auto ts = test::scratch_dir() / "sample.ts";
  ASSERT_EQ(test::run(test::kFfmpeg + " -nostdin -loglevel error -y -i " + kSample + " -c copy " +
                      ts.string()),
            0);
  auto mp4 = open_or_die(kSample);
  auto mpegts = open_or_die(ts.string());
  ASSERT_TRUE(mp4 && mpegts);
  check_invariants(*mpegts);
  const StreamInfo& a = mpegts->streams()[1];
  EXPECT_NE(a.fmtp.find("config=1190"), std::string::npos);  // AudioSpecificConfig from ADTS
  // The same pictures and NAL units (minus the access unit delimiters TS adds).
  ASSERT_EQ(mpegts->video_display_order().size(), mp4->video_display_order().size());
  for (std::size_t d = 0; d < mp4->video_display_order().size(); ++d) {
    const Frame& x = mp4->frames()[mp4->video_display_order()[d]];
    const Frame& y = mpegts->frames()[mpegts->video_display_order()[d]];
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.importance, y.importance);
    EXPECT_EQ(x.rtp_timestamp, y.rtp_timestamp);
    EXPECT_EQ(x.bytes, y.bytes) << d;
  }
  ASSERT_EQ(mpegts->blocks().size(), mp4->blocks().size());
}

TEST(MediaFile, RejectsBadOptions) {
  PacketizeOptions options;
  options.max_payload = 10;
  EXPECT_FALSE(MediaFile::open(kSample, options));
  options = {};
  options.block.value = 0;
  EXPECT_FALSE(MediaFile::open(kSample, options));
}

}  // namespace
}  // namespace predrop::media
