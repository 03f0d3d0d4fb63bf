// media::LiveSource (media/include/predrop/media/live_source.hpp): the sample clip's video sent
// as a publisher would (its RTP packets in send order, timestamps near the 32-bit wrap) is cut
// into blocks that each start with an IDR and its parameter sets, published only when the next
// key frame came (one block held), decodable from any key block with every picture; the ring
// drops old blocks (kGone, join at the newest key block); end() publishes the rest then kEnded;
// garbage and jumping timestamps are counted, never a crash, never a block over the bound.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "predrop/media/h264_depacketizer.hpp"
#include "predrop/media/live_source.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/media/video_decoder.hpp"

namespace predrop {
namespace {

std::shared_ptr<const media::MediaFile> sample() {
  static std::shared_ptr<const media::MediaFile> m = [] {
    media::PacketizeOptions po;
    po.block = {media::BlockSize::Unit::kDuration, 1'000'000};
    auto f = media::MediaFile::open(PREDROP_TEST_SAMPLE, po);
    EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message);
    return f.ok() ? f.value() : nullptr;
  }();
  return m;
}

// What a publisher's SDP carries: the SPS and PPS, Annex B (the first key frame's in-band ones).
media::LiveVideoSpec spec() {
  media::LiveVideoSpec v;
  const auto& file = *sample();
  for (const auto& p : file.packets()) {
    if (p.stream != *file.video_stream() || p.importance != media::kImportanceNever) continue;
    const auto payload = file.payload(p);
    v.parameter_sets.insert(v.parameter_sets.end(), {0, 0, 0, 1});
    v.parameter_sets.insert(v.parameter_sets.end(), payload.begin(), payload.end());
    if (v.parameter_sets.size() > 0 && (payload[0] & 0x1f) == 8) break;  // SPS then PPS
  }
  return v;
}

constexpr std::uint32_t kTimestampBase = 0xFFFF0000u;  // wraps within the first second

// Feeds the sample's (or `clip`'s) video packets with index in [from, to) as RTP; returns the
// next sequence.
struct Publisher {
  media::LiveSource& src;
  std::uint16_t seq = 100;
  std::size_t next = 0;
  std::uint32_t base = kTimestampBase;
  const media::MediaFile* clip = nullptr;
  void until(std::size_t to) {
    const auto& file = clip != nullptr ? *clip : *sample();
    const auto packets = file.packets();
    for (; next < to && next < packets.size(); ++next) {
      const auto& p = packets[next];
      if (p.stream != *file.video_stream()) continue;
      const auto& b = file.blocks()[file.frames()[p.frame].block];
      const auto arrival = static_cast<std::uint64_t>(b.start_us + p.send_offset_us);
      src.push_video(seq++, base + p.rtp_timestamp, p.marker, file.payload(p), arrival);
    }
  }
  void all() { until((clip != nullptr ? clip : sample().get())->packets().size()); }
};

TEST(LiveSource, CutsTheStreamIntoKeyBlocksOfTheBlockDuration) {
  media::LiveSourceOptions o;
  o.max_payload = 1200;
  o.ring_blocks = 64;
  media::LiveSource src(spec(), o);
  ASSERT_EQ(src.streams().size(), 1u);
  EXPECT_NE(src.streams()[0].fmtp.find("sprop-parameter-sets="), std::string::npos);
  Publisher pub{src};
  pub.all();
  src.end(10'000'000);
  const auto st = src.stats();
  EXPECT_EQ(st.blocks, sample()->blocks().size());
  EXPECT_EQ(st.key_blocks, st.blocks);
  EXPECT_EQ(st.waiting_for_key, 0u);
  EXPECT_EQ(st.damaged_units, 0u);
  EXPECT_EQ(st.forced_cuts, 0u);
  std::uint64_t last_start = 0;
  std::size_t pictures = 0;
  for (std::uint64_t s = 0; s < st.blocks; ++s) {
    media::SourceBlock b;
    ASSERT_EQ(src.read(s, b), media::BlockState::kReady);
    ASSERT_FALSE(b.packets.empty());
    EXPECT_EQ(b.packets.size(), b.importance.size());
    EXPECT_LE(b.packets.size(), src.max_block_packets());
    EXPECT_EQ(b.importance[0], media::kImportanceNever) << "SPS first";
    EXPECT_EQ(b.packets[0].frame_type, media::FrameType::kKey);
    if (s > 0) {
      EXPECT_GT(b.start_us, last_start);
      EXPECT_NEAR(static_cast<double>(b.start_us), 1e6 * static_cast<double>(s), 1e5);
    }
    last_start = b.start_us;
    bool disposable = false;
    std::int64_t last_offset = 0;
    for (const auto& p : b.packets) {
      EXPECT_LE(p.payload_size, o.max_payload);
      EXPECT_GE(p.send_offset_us, last_offset);
      EXPECT_LT(p.send_offset_us, b.duration_us);
      last_offset = p.send_offset_us;
      disposable = disposable || p.importance <= media::kImportanceDisposableMax;
      if (p.marker) ++pictures;
    }
    EXPECT_TRUE(disposable) << "the sample's B pictures rank lowest";
  }
  EXPECT_EQ(pictures, sample()->video_display_order().size());
  media::SourceBlock b;
  EXPECT_EQ(src.read(st.blocks, b), media::BlockState::kEnded);
}

TEST(LiveSource, ABlockIsPublishedWhenTheNextKeyFrameComesAndDecodesWhole) {
  media::LiveSource src(spec(), {});
  Publisher pub{src};
  const auto& file = *sample();
  const auto& second = file.blocks()[1];
  pub.until(second.first_packet + 3);  // into block 1's key frame, not to its end
  media::SourceBlock b;
  EXPECT_EQ(src.read(0, b), media::BlockState::kNotYet) << "block 0 waits for the next IDR";
  EXPECT_EQ(src.join_sequence(), 0u);
  pub.until(second.first_packet + second.packet_count);
  ASSERT_EQ(src.read(0, b), media::BlockState::kReady);
  const auto hold = src.stats().hold_us_last;
  EXPECT_GE(hold, 900'000u) << "one block held";
  EXPECT_LE(hold, 1'200'000u);

  // Block 0 alone decodes every picture it carries.
  std::size_t frames = 0;
  auto decoder = media::VideoDecoder::create([&](const media::FrameView&) { ++frames; });
  ASSERT_TRUE(decoder) << decoder.error().message;
  media::H264Depacketizer depack(
      [&](const media::AccessUnit& au) { (*decoder)->decode(au.data, au.rtp_timestamp); });
  std::uint16_t seq = 0;
  std::size_t pictures = 0;
  for (const auto& p : b.packets) {
    depack.push(seq++, p.rtp_timestamp, p.marker, b.payload(p));
    if (p.marker) ++pictures;
  }
  depack.flush();
  (*decoder)->flush();
  EXPECT_EQ((*decoder)->stats().corrupt_frames, 0u);
  EXPECT_EQ((*decoder)->stats().rejected, 0u);
  EXPECT_EQ(frames, pictures);
  EXPECT_EQ(pictures, file.blocks()[0].display_count);
}

TEST(LiveSource, TheRingDropsOldBlocksAndReadersJoinAtTheNewestKeyBlock) {
  media::LiveSourceOptions o;
  o.ring_blocks = 2;
  media::LiveSource src(spec(), o);
  Publisher pub{src};
  pub.all();
  const auto blocks = src.stats().blocks;  // the last is held until end()
  ASSERT_GE(blocks, 4u);
  media::SourceBlock b;
  EXPECT_EQ(src.read(0, b), media::BlockState::kGone);
  EXPECT_EQ(src.join_sequence(), blocks - 1);
  ASSERT_EQ(src.read(blocks - 2, b), media::BlockState::kReady);
  const auto held = b.hold;
  b = {};
  src.end(10'000'000);  // publishes the last block: blocks - 2 leaves the ring
  EXPECT_EQ(src.read(blocks - 2, b), media::BlockState::kGone);
  EXPECT_EQ(held.use_count(), 1) << "a reader's block outlives the ring";
}

TEST(LiveSource, PicturesBeforeTheFirstKeyFrameAreDropped) {
  media::LiveSource src(spec(), {});
  Publisher pub{src};
  const auto& file = *sample();
  pub.next = file.blocks()[0].first_packet + file.blocks()[0].packet_count / 2;  // mid-GOP join
  pub.all();
  src.end(10'000'000);
  const auto st = src.stats();
  EXPECT_GT(st.waiting_for_key, 0u);
  EXPECT_EQ(st.blocks, file.blocks().size() - 1);
  EXPECT_EQ(st.key_blocks, st.blocks);
}

TEST(LiveSource, GarbageAndJumpingTimestampsAreCountedNeverACrash) {
  media::LiveSourceOptions o;
  o.max_block_packets = 200;
  media::LiveSource src(spec(), o);
  Publisher pub{src};
  pub.until(sample()->blocks()[1].first_packet + 5);
  std::mt19937 rng(7);
  std::vector<std::uint8_t> junk(1500);
  for (int i = 0; i < 5000; ++i) {
    for (auto& x : junk)
      x = static_cast<std::uint8_t>(rng());
    const std::size_t n = rng() % junk.size();
    src.push_video(static_cast<std::uint16_t>(rng()), static_cast<std::uint32_t>(rng()),
                   (rng() & 1) != 0, std::span(junk).first(n), 2'000'000 + i);
  }
  src.end(3'000'000);
  const auto st = src.stats();
  EXPECT_TRUE(st.ended);
  for (std::uint64_t s = src.join_sequence(); s < st.blocks; ++s) {
    media::SourceBlock b;
    if (src.read(s, b) != media::BlockState::kReady) continue;
    EXPECT_LE(b.packets.size(), 200u);
  }
}

TEST(LiveSource, ARestartedRtpStreamContinuesTheTimelineAtItsFirstKeyFrame) {
  media::LiveSourceOptions o;
  o.ring_blocks = 64;
  media::LiveSource src(spec(), o);
  const auto& file = *sample();
  Publisher first{src};
  first.until(file.blocks()[2].first_packet + file.blocks()[2].packet_count / 2);  // mid-block
  const auto before = src.stats().blocks;
  src.restart(5'000'000);
  EXPECT_EQ(src.stats().blocks, before + 1) << "the block in progress is published";
  // The upstream again from its start, as a new RTP stream: its sequence numbers "behind" the
  // old ones (a depacketizer that remembered them would drop everything as late) and its clock
  // 3 s behind (too small a jump for the timestamp check to see).
  Publisher second{src};
  second.seq = static_cast<std::uint16_t>(first.seq - 30000);
  second.base = kTimestampBase - 3 * 90000;
  second.all();
  src.end(30'000'000);
  const auto st = src.stats();
  EXPECT_EQ(st.restarts, 1u);
  EXPECT_EQ(st.malformed, 0u);
  EXPECT_EQ(st.blocks, before + 1 + file.blocks().size());
  EXPECT_EQ(st.key_blocks, st.blocks);
  std::uint64_t last_end = 0;
  for (std::uint64_t s = 0; s < st.blocks; ++s) {
    media::SourceBlock b;
    ASSERT_EQ(src.read(s, b), media::BlockState::kReady) << s;
    EXPECT_GE(b.start_us, last_end) << "block " << s << " goes back on the timeline";
    if (s == before + 1) {
      EXPECT_LE(b.start_us, last_end + 11) << "the new stream starts where it ended (a tick)";
    }
    last_end = b.start_us + static_cast<std::uint64_t>(b.duration_us);
  }
}

// A path that reorders the publisher's packets (every 7th pair swapped, and one packet 20
// places late): the ingest's reorder window puts the swapped pairs back, so every picture is
// whole and every block as without reordering; the packet too late for the window is dropped
// and counted, and its picture is the only damaged one. Blocks start with a key frame, stay
// within the bound, and decode without a rejection.
TEST(LiveSource, ReorderedPacketsArePutBackAndOnlyAPacketTooLateIsLost) {
  media::LiveSourceOptions o;
  o.ring_blocks = 64;
  media::LiveSource src(spec(), o);
  const auto& file = *sample();
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < file.packets().size(); ++i) {
    if (file.packets()[i].stream == *file.video_stream()) order.push_back(i);
  }
  for (std::size_t k = 7; k + 1 < order.size(); k += 7) {
    std::swap(order[k], order[k + 1]);
  }
  // The late packet: one inside a picture (its neighbours in send order are of the same
  // frame), so that its loss damages that picture and nothing else, whatever the encoder made.
  std::size_t late_at = order.size() / 2;
  while (late_at + 2 < order.size() &&
         !(file.packets()[order[late_at - 1]].frame == file.packets()[order[late_at]].frame &&
           file.packets()[order[late_at + 1]].frame == file.packets()[order[late_at]].frame &&
           !file.packets()[order[late_at]].marker)) {
    ++late_at;
  }
  const std::size_t late = order[late_at];
  order.erase(order.begin() + static_cast<std::ptrdiff_t>(late_at));
  order.insert(order.begin() + static_cast<std::ptrdiff_t>(late_at + 20), late);
  std::vector<std::uint16_t> seq_of(file.packets().size());
  std::uint16_t seq = 100;
  for (std::size_t i = 0; i < file.packets().size(); ++i) {
    seq_of[i] = seq;
    if (file.packets()[i].stream == *file.video_stream()) ++seq;
  }
  for (const std::size_t i : order) {
    const auto& p = file.packets()[i];
    const auto& b = file.blocks()[file.frames()[p.frame].block];
    src.push_video(seq_of[i], kTimestampBase + p.rtp_timestamp, p.marker, file.payload(p),
                   static_cast<std::uint64_t>(b.start_us + p.send_offset_us));
  }
  src.end(10'000'000);
  const auto st = src.stats();
  EXPECT_GT(st.reordered, order.size() / 8);
  EXPECT_EQ(st.late_packets, 1u);
  // The late packet's picture at most (none when it was the first fragment of a slice: the
  // rest of the slice goes with it and the picture is dropped, counted below).
  EXPECT_LE(st.damaged_units, 1u) << "only the late packet's picture";
  EXPECT_EQ(st.malformed, 0u);
  EXPECT_EQ(st.blocks, file.blocks().size());
  EXPECT_EQ(st.key_blocks, st.blocks);
  auto decoder = media::VideoDecoder::create([](const media::FrameView&) {});
  ASSERT_TRUE(decoder) << decoder.error().message;
  media::H264Depacketizer depack(
      [&](const media::AccessUnit& au) { (*decoder)->decode(au.data, au.rtp_timestamp); });
  std::uint16_t out_seq = 0;
  std::size_t pictures = 0;
  for (std::uint64_t s = 0; s < st.blocks; ++s) {
    media::SourceBlock b;
    ASSERT_EQ(src.read(s, b), media::BlockState::kReady) << s;
    EXPECT_LE(b.packets.size(), src.max_block_packets());
    EXPECT_EQ(b.packets[0].frame_type, media::FrameType::kKey) << "block " << s;
    for (const auto& p : b.packets) {
      depack.push(out_seq++, p.rtp_timestamp, p.marker, b.payload(p));
      if (p.marker) ++pictures;
    }
  }
  depack.flush();
  (*decoder)->flush();
  // Every picture but, at most, the one whose packet came too late (a lost first fragment takes
  // its slice with it).
  EXPECT_GE(pictures + 1, file.video_display_order().size());
  EXPECT_EQ((*decoder)->stats().rejected, 0u);
}

// A publisher whose encoder changes its parameters mid-stream (a camera switched from 640x360 to
// 320x180, new SPS/PPS in band before its next IDR, timestamps and sequence numbers going on):
// the change is cut as a key block that carries the new parameter sets first, and from it every
// picture decodes, at the new size, with nothing corrupt.
TEST(LiveSource, AResolutionChangeMidStreamStartsAKeyBlockThatDecodesAtTheNewSize) {
  const std::filesystem::path dir = PREDROP_TEST_TMP;
  std::filesystem::create_directories(dir);
  const std::string small = (dir / "live-small.mp4").string();
  const std::string cmd = std::string(PREDROP_FFMPEG) +
                          " -nostdin -hide_banner -loglevel error -y -f lavfi -i "
                          "testsrc2=s=320x180:r=30:d=2 -c:v libx264 -profile:v main -bf 0 -g 30 "
                          "-x264-params scenecut=0 -pix_fmt yuv420p " +
                          small;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  media::PacketizeOptions po;
  po.block = {media::BlockSize::Unit::kDuration, 1'000'000};
  auto opened = media::MediaFile::open(small, po);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  const auto second_clip = opened.value();

  media::LiveSourceOptions o;
  o.ring_blocks = 64;
  media::LiveSource src(spec(), o);
  Publisher first{src};
  first.all();
  const auto before = src.stats().blocks;  // every block of the first clip but the last
  const auto& a = *sample();
  Publisher second{src};
  second.clip = second_clip.get();
  second.seq = first.seq;
  // One frame period after the first clip's last picture (its timeline is 6 s long).
  second.base = kTimestampBase + static_cast<std::uint32_t>(a.duration_us() * 90 / 1000);
  second.all();
  src.end(20'000'000);
  const auto st = src.stats();
  EXPECT_EQ(st.damaged_units, 0u);
  EXPECT_EQ(st.malformed, 0u);
  EXPECT_EQ(st.timestamp_resets, 0u);
  EXPECT_EQ(st.key_blocks, st.blocks);
  ASSERT_EQ(st.blocks, before + 1 + second_clip->blocks().size());

  std::size_t frames = 0;
  std::size_t wrong_size = 0;
  auto decoder = media::VideoDecoder::create([&](const media::FrameView& f) {
    ++frames;
    if (f.width != 320 || f.height != 180) ++wrong_size;
  });
  ASSERT_TRUE(decoder) << decoder.error().message;
  media::H264Depacketizer depack(
      [&](const media::AccessUnit& au) { (*decoder)->decode(au.data, au.rtp_timestamp); });
  std::uint16_t seq = 0;
  std::size_t pictures = 0;
  for (std::uint64_t s = before + 1; s < st.blocks; ++s) {
    media::SourceBlock b;
    ASSERT_EQ(src.read(s, b), media::BlockState::kReady) << s;
    EXPECT_EQ(b.importance[0], media::kImportanceNever) << "block " << s << ": SPS first";
    EXPECT_EQ(b.packets[0].frame_type, media::FrameType::kKey);
    for (const auto& p : b.packets) {
      depack.push(seq++, p.rtp_timestamp, p.marker, b.payload(p));
      if (p.marker) ++pictures;
    }
  }
  depack.flush();
  (*decoder)->flush();
  EXPECT_EQ(pictures, second_clip->video_display_order().size());
  EXPECT_EQ(frames, pictures);
  EXPECT_EQ(wrong_size, 0u);
  EXPECT_EQ((*decoder)->stats().corrupt_frames, 0u);
  EXPECT_EQ((*decoder)->stats().rejected, 0u);
}

// ---- audio (docs/live.md "Audio") ----

constexpr std::uint32_t kAudioBase = 0x7FFFF000u;  // any: tied to the video by the SRs
constexpr std::uint64_t kNtp = std::uint64_t{3'900'000'000} << 32;  // some NTP second

media::LiveAudioSpec opus() {
  media::LiveAudioSpec a;
  a.codec = media::Codec::kOpus;
  a.clock_rate = 48000;
  a.channels = 2;
  a.encoding = "opus/48000/2";
  a.fmtp = "sprop-stereo=1";
  return a;
}

// The video timeline's 0 is the first IDR's timestamp; the sample's first picture is one.
std::uint32_t first_video_rtp() {
  const auto& file = *sample();
  for (const auto& p : file.packets()) {
    if (p.stream == *file.video_stream()) return kTimestampBase + p.rtp_timestamp;
  }
  return kTimestampBase;
}

// Video as Publisher sends it, and between its packets 20 ms Opus packets of 100 bytes (byte 0:
// the packet's number) whose times, by the sender reports, start `lead_us` after video time 0;
// returns how many were pushed.
std::size_t publish_with_audio(media::LiveSource& src, std::int64_t lead_us) {
  const auto& file = *sample();
  // Video rtp first_video_rtp() and audio rtp kAudioBase are both at NTP kNtp + lead (the
  // audio's report says so for its own timestamp), so audio packet 0 is at video time lead.
  const std::uint64_t lead_ntp = (static_cast<std::uint64_t>(lead_us) << 32) / 1'000'000;
  src.sender_report(0, kNtp, first_video_rtp());
  src.sender_report(1, kNtp + lead_ntp, kAudioBase);
  Publisher pub{src};
  std::size_t sent = 0;
  std::uint16_t seq = 7;
  std::vector<std::uint8_t> payload(100, 0);
  const auto packets = file.packets();
  for (std::size_t i = 0; i < packets.size(); ++i) {
    const auto& p = packets[i];
    if (p.stream != *file.video_stream()) continue;
    const auto& b = file.blocks()[file.frames()[p.frame].block];
    const auto arrival = b.start_us + p.send_offset_us;
    // Audio as a muxer interleaves it: up to 30 ms ahead of the video.
    while (lead_us + static_cast<std::int64_t>(sent) * 20'000 <= arrival + 30'000) {
      payload[0] = static_cast<std::uint8_t>(sent);
      src.push_audio(seq++, kAudioBase + static_cast<std::uint32_t>(sent * 960), false, payload,
                     static_cast<std::uint64_t>(arrival));
      ++sent;
    }
    pub.until(i + 1);
  }
  return sent;
}

// The capture clock (docs/live.md "Glass-to-glass latency per block"): the video's SR dates the
// timeline in the publisher's NTP clock, also when it came before the first packet (as ffmpeg
// sends its first); a restart forgets it until the new stream's next SR.
TEST(LiveSource, TheVideoSenderReportDatesTheTimelineInThePublishersClock) {
  media::LiveSourceOptions o;
  o.ring_blocks = 64;
  media::LiveSource src(spec(), o);
  EXPECT_FALSE(src.capture_ntp(0)) << "no SR yet";
  // Timeline 0 (the first IDR, first_video_rtp()) was captured 0.25 s after NTP kNtp: the SR
  // names kNtp at 0.25 s (22 500 ticks) before it.
  src.sender_report(0, kNtp, first_video_rtp() - 22'500);
  EXPECT_FALSE(src.capture_ntp(0)) << "before the origin the SR waits";
  Publisher pub{src};
  pub.until(sample()->blocks()[1].first_packet);
  const std::uint64_t quarter = (std::uint64_t{1} << 32) / 4;
  ASSERT_TRUE(src.capture_ntp(0));
  EXPECT_EQ(*src.capture_ntp(0), kNtp + quarter);
  EXPECT_EQ(*src.capture_ntp(1'000'000), kNtp + quarter + (std::uint64_t{1} << 32));
  EXPECT_EQ(*src.capture_ntp(-250'000), kNtp);
  EXPECT_EQ(*src.capture_ntp(3'600'000'000), kNtp + quarter + (std::uint64_t{3600} << 32))
      << "an hour on (no overflow)";
  EXPECT_EQ(*src.capture_ntp(-3'600'250'000), kNtp - (std::uint64_t{3600} << 32));
  // A later SR, across the 32-bit wrap of the timestamps (kTimestampBase wraps in the first
  // second): 2 s of RTP after timeline 0 is 2 s of NTP after its capture.
  src.sender_report(0, kNtp + 9 * quarter, first_video_rtp() + 2 * 90'000);
  EXPECT_EQ(*src.capture_ntp(2'000'000), kNtp + 9 * quarter);
  EXPECT_EQ(*src.capture_ntp(0), kNtp + quarter);
  src.restart(5'000'000);
  EXPECT_FALSE(src.capture_ntp(0)) << "a new RTP stream: the old clock's SR dates nothing";
}

TEST(LiveSource, AudioGoesOnTheVideoTimelineByTheSenderReportsAndIsNeverDiscarded) {
  media::LiveSourceOptions o;
  o.ring_blocks = 64;
  media::LiveSource src(spec(), o, opus());
  ASSERT_EQ(src.streams().size(), 2u);
  EXPECT_EQ(src.streams()[1].kind, media::MediaKind::kAudio);
  EXPECT_EQ(src.streams()[1].encoding, "opus/48000/2");
  EXPECT_EQ(src.streams()[1].fmtp, "sprop-stereo=1");
  EXPECT_EQ(src.streams()[1].payload_type, o.audio_payload_type);
  const std::size_t sent = publish_with_audio(src, 500'000);
  ASSERT_GT(sent, 100u);
  src.end(60'000'000);
  const auto st = src.stats();
  EXPECT_EQ(st.audio_packets, sent);
  EXPECT_EQ(st.audio_dropped, 0u);
  std::size_t got = 0;
  for (std::uint64_t s = 0; s < st.blocks; ++s) {
    media::SourceBlock b;
    ASSERT_EQ(src.read(s, b), media::BlockState::kReady);
    EXPECT_EQ(b.rtp_start[1], static_cast<std::uint32_t>(b.start_us * 48000 / 1'000'000));
    std::int64_t last_offset = 0;
    for (std::size_t i = 0; i < b.packets.size(); ++i) {
      const auto& p = b.packets[i];
      EXPECT_GE(p.send_offset_us, last_offset) << "send order";
      last_offset = p.send_offset_us;
      if (p.stream != 1) continue;
      EXPECT_EQ(b.importance[i], media::kImportanceNever);
      EXPECT_EQ(p.frame_type, media::FrameType::kAudio);
      ASSERT_EQ(p.payload_size, 100u);
      EXPECT_EQ(b.payload(p)[0], static_cast<std::uint8_t>(got)) << "in order, none lost";
      // Packet n is at 0.5 s + 20 ms n on the timeline, 48 kHz from 0.
      EXPECT_EQ(p.rtp_timestamp, 24000u + 960u * got);
      // In the block of its time (the last block's end is estimated: it may run over).
      const auto t = static_cast<std::int64_t>(p.rtp_timestamp) * 1'000'000 / 48000;
      EXPECT_GE(t, static_cast<std::int64_t>(b.start_us)) << "block " << s;
      if (s + 1 < st.blocks) {
        EXPECT_LT(t, static_cast<std::int64_t>(b.start_us) + b.duration_us);
      }
      ++got;
    }
  }
  EXPECT_EQ(got, sent);
}

// Audio before both sender reports (GStreamer's first come a second or two into the stream) is
// placed by its arrival against the pictures'; without an audio track it is dropped.
TEST(LiveSource, AudioBeforeBothSenderReportsIsPlacedByItsArrival) {
  media::LiveSourceOptions o;
  {
    media::LiveSource src(spec(), o, opus());
    Publisher pub{src};
    std::vector<std::uint8_t> payload(50, 1);
    pub.until(sample()->blocks()[1].first_packet);
    src.sender_report(1, kNtp, kAudioBase);  // the video's report never comes
    for (std::uint32_t k = 0; k < 10; ++k) {
      src.push_audio(static_cast<std::uint16_t>(k), kAudioBase + 960 * k, false, payload,
                     1'000'000 + 20'000 * k);
    }
    src.end(10'000'000);
    EXPECT_EQ(src.stats().audio_packets, 10u);
    EXPECT_EQ(src.stats().audio_dropped, 0u);
    EXPECT_EQ(src.stats().audio_by_arrival, 10u);
    EXPECT_EQ(src.stats().audio_report_offset_us, 0) << "the reports never came";
  }
  {
    media::LiveSource src(spec(), o);  // no audio track announced
    std::vector<std::uint8_t> payload(50, 1);
    src.push_audio(1, 0, false, payload, 0);
    EXPECT_EQ(src.streams().size(), 1u);
    EXPECT_EQ(src.stats().audio_dropped, 0u) << "counted at the next publication";
    src.end(1);
    EXPECT_EQ(src.stats().audio_dropped, 1u);
  }
}

// 150 Opus packets, 20 ms apart, arriving with the pictures from 0.2 s of the stream on (the
// file's send times are its pictures' arrivals); the sender reports come with packet 50 when
// `report_at_us` is set, saying that audio timestamp kAudioBase is at `report_at_us` on the
// video's timeline. Returns each packet's audio RTP timestamp on the source's 48 kHz timeline.
std::vector<std::uint32_t> audio_by_arrival_then_reports(std::optional<std::int64_t> report_at_us,
                                                         media::LiveSourceStats& st) {
  media::LiveSourceOptions o;
  o.ring_blocks = 64;
  media::LiveSource src(spec(), o, opus());
  Publisher pub{src};
  const auto& file = *sample();
  const auto packets = file.packets();
  std::uint32_t k = 0;
  for (std::size_t i = 0; i < packets.size() && k < 150; ++i) {
    const auto& p = packets[i];
    const auto& b = file.blocks()[file.frames()[p.frame].block];
    const std::int64_t arrival = b.start_us + p.send_offset_us;
    while (k < 150 && 200'000 + 20'000 * std::int64_t{k} <= arrival) {
      if (k == 50 && report_at_us) {
        src.sender_report(0, kNtp, first_video_rtp());
        src.sender_report(1, kNtp + (static_cast<std::uint64_t>(*report_at_us) << 32) / 1'000'000,
                          kAudioBase);
      }
      const std::vector<std::uint8_t> payload(100, static_cast<std::uint8_t>(k));
      src.push_audio(static_cast<std::uint16_t>(k), kAudioBase + 960 * k, true, payload,
                     static_cast<std::uint64_t>(200'000 + 20'000 * std::int64_t{k}));
      ++k;
    }
    pub.until(i + 1);
  }
  src.end(60'000'000);
  st = src.stats();
  std::vector<std::uint32_t> rtp(150, 0);
  for (std::uint64_t s = 0; s < st.blocks; ++s) {
    media::SourceBlock b;
    EXPECT_EQ(src.read(s, b), media::BlockState::kReady);
    for (const auto& p : b.packets) {
      if (p.stream == 1) rtp[b.payload(p)[0]] = p.rtp_timestamp;
    }
  }
  return rtp;
}

TEST(LiveSource, AudioPlacedByArrivalMovesToTheReportsPlaceOnlyWhenMoreThanTenMsOff) {
  media::LiveSourceStats st;
  const auto arrival = audio_by_arrival_then_reports(std::nullopt, st);
  EXPECT_EQ(st.audio_dropped, 0u);
  EXPECT_EQ(st.audio_by_arrival, 150u);
  // Packet 0 arrived at 0.2 s of the file's send schedule: placed there, give or take the lead
  // of the pictures sent with it (their decode order against their display times).
  const auto t0_us = static_cast<std::int64_t>(arrival[0]) * 1'000'000 / 48'000;
  EXPECT_NEAR(t0_us, 200'000, 80'000);
  for (std::uint32_t k = 1; k < 150; ++k) {
    EXPECT_EQ(arrival[k] - arrival[0], 960u * k) << "the publisher's own spacing";
  }
  // Reports 5 ms from the arrival's place: kept, no step.
  const std::int64_t at_us = t0_us + 5'000;
  const auto near = audio_by_arrival_then_reports(at_us, st);
  EXPECT_EQ(st.audio_by_arrival, 50u);
  EXPECT_NEAR(st.audio_report_offset_us, 5'000, 50);
  EXPECT_EQ(near, arrival);
  // Reports 300 ms later than the arrival's place: packets from 50 on move by 300 ms.
  const auto far = audio_by_arrival_then_reports(t0_us + 300'000, st);
  EXPECT_NEAR(st.audio_report_offset_us, 300'000, 50);
  for (std::uint32_t k = 0; k < 50; ++k) {
    EXPECT_EQ(far[k], arrival[k]);
  }
  for (std::uint32_t k = 50; k < 150; ++k) {
    EXPECT_NEAR(static_cast<double>(far[k] - arrival[k]), 300 * 48.0, 2.0) << k;
  }
}

TEST(LiveSource, AnAacPacketLargerThanThePayloadSizeIsSplitBetweenItsAccessUnits) {
  media::LiveSourceOptions o;
  o.max_payload = 1200;
  media::LiveAudioSpec aac;
  aac.codec = media::Codec::kAac;
  aac.clock_rate = 48000;
  aac.channels = 1;
  aac.encoding = "MPEG4-GENERIC/48000/1";
  aac.fmtp = "profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3";
  media::LiveSource src(spec(), o, aac);
  src.sender_report(0, kNtp, first_video_rtp());
  src.sender_report(1, kNtp, kAudioBase);
  Publisher pub{src};
  pub.until(sample()->blocks()[0].packet_count / 2);
  // Three AUs of 500, 450 and 400 bytes (bytes 0xA0, 0xB0, 0xC0) in one packet of 1356 bytes.
  const std::size_t sizes[] = {500, 450, 400};
  std::vector<std::uint8_t> packet = {0x00, 0x30};  // 48 bits of AU headers
  for (const std::size_t n : sizes) {
    packet.push_back(static_cast<std::uint8_t>(n >> 5));
    packet.push_back(static_cast<std::uint8_t>((n & 0x1f) << 3));  // index (delta) 0
  }
  for (std::size_t k = 0; k < 3; ++k) {
    packet.insert(packet.end(), sizes[k], static_cast<std::uint8_t>(0xA0 + 0x10 * k));
  }
  src.push_audio(1, kAudioBase + 4 * 1024, true, packet, 0);
  src.end(10'000'000);
  EXPECT_EQ(src.stats().audio_dropped, 0u);
  std::vector<media::RtpPacket> audio;
  std::vector<std::vector<std::uint8_t>> payloads;
  for (std::uint64_t s = 0; s < src.stats().blocks; ++s) {
    media::SourceBlock b;
    ASSERT_EQ(src.read(s, b), media::BlockState::kReady);
    for (const auto& p : b.packets) {
      if (p.stream != 1) continue;
      audio.push_back(p);
      const auto bytes = b.payload(p);
      payloads.emplace_back(bytes.begin(), bytes.end());
    }
  }
  ASSERT_EQ(audio.size(), 2u) << "AUs 1 and 2 fit one packet, AU 3 the next";
  EXPECT_EQ(audio[1].rtp_timestamp - audio[0].rtp_timestamp, 2u * 1024u);
  EXPECT_FALSE(audio[0].marker);
  EXPECT_TRUE(audio[1].marker);
  ASSERT_EQ(payloads[0].size(), 2u + 4u + 950u);
  EXPECT_EQ(payloads[0][1], 32) << "two AU headers";
  EXPECT_EQ(((payloads[0][2] << 5) | (payloads[0][3] >> 3)), 500);
  EXPECT_EQ(((payloads[0][4] << 5) | (payloads[0][5] >> 3)), 450);
  EXPECT_EQ(payloads[0][6], 0xA0);
  EXPECT_EQ(payloads[0][6 + 500], 0xB0);
  ASSERT_EQ(payloads[1].size(), 2u + 2u + 400u);
  EXPECT_EQ(payloads[1][1], 16);
  EXPECT_EQ(payloads[1][4], 0xC0);
}

TEST(LiveSource, Mp4aLatmIsRepackedIntoAacHbrBeforeItIsPlaced) {
  // GStreamer's rtpmp4apay: one AudioMuxElement per packet, a long one in two fragments.
  media::LiveSourceOptions o;
  o.max_payload = 1200;
  auto latm = media::parse_latm_config_hex("40002410");
  ASSERT_TRUE(latm.ok()) << latm.error().message;
  media::LiveAudioSpec aac;
  aac.codec = media::Codec::kAac;
  aac.clock_rate = 48000;
  aac.channels = 1;
  aac.encoding = "MPEG4-GENERIC/48000/1";
  aac.fmtp =
      "streamtype=5;profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;"
      "indexdeltalength=3;config=1208";
  aac.latm = *latm;
  media::LiveSource src(spec(), o, aac);
  src.sender_report(0, kNtp, first_video_rtp());
  src.sender_report(1, kNtp, kAudioBase);
  Publisher pub{src};
  pub.until(sample()->blocks()[0].packet_count / 2);
  src.push_audio(10, kAudioBase + 1024, true, std::vector<std::uint8_t>{3, 'a', 'b', 'c'}, 0);
  // 600 bytes of 0x5A: its length 255 + 255 + 90, cut after 100 bytes.
  std::vector<std::uint8_t> element = {255, 255, 90};
  element.insert(element.end(), 600, 0x5A);
  src.push_audio(11, kAudioBase + 2048, false, std::span(element).first(100), 0);
  src.push_audio(12, kAudioBase + 2048, true, std::span(element).subspan(100), 0);
  // A length past the end: dropped, counted.
  src.push_audio(13, kAudioBase + 3072, true, std::vector<std::uint8_t>{9, 'x'}, 0);
  src.end(10'000'000);
  EXPECT_EQ(src.stats().audio_dropped, 1u);
  std::vector<media::RtpPacket> audio;
  std::vector<std::vector<std::uint8_t>> payloads;
  for (std::uint64_t s = 0; s < src.stats().blocks; ++s) {
    media::SourceBlock b;
    ASSERT_EQ(src.read(s, b), media::BlockState::kReady);
    for (const auto& p : b.packets) {
      if (p.stream != 1) continue;
      audio.push_back(p);
      const auto bytes = b.payload(p);
      payloads.emplace_back(bytes.begin(), bytes.end());
    }
  }
  ASSERT_EQ(audio.size(), 2u);
  EXPECT_EQ(audio[1].rtp_timestamp - audio[0].rtp_timestamp, 1024u);
  EXPECT_TRUE(audio[0].marker);
  EXPECT_EQ(payloads[0], (std::vector<std::uint8_t>{0x00, 0x10, 0x00, 0x18, 'a', 'b', 'c'}));
  ASSERT_EQ(payloads[1].size(), 4u + 600u);
  EXPECT_EQ(((payloads[1][2] << 5) | (payloads[1][3] >> 3)), 600);
  EXPECT_EQ(payloads[1][4], 0x5A);
  EXPECT_EQ(src.streams()[1].encoding, "MPEG4-GENERIC/48000/1");
}

}  // namespace
}  // namespace predrop
