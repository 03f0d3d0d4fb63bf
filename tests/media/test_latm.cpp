// MP4A-LATM (RFC 6416, ISO/IEC 14496-3 §1.7.3; predrop/media/latm.hpp): the StreamMuxConfigs
// GStreamer's rtpmp4apay and FFmpeg write, audioMuxVersion 1, what is refused and why, and the
// depacketizer: one frame, subframes, 255-runs, fragments, sequence gaps, and malformed packets
// (truncated, wrong lengths, zero lengths, an element too large), each dropped and counted.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "predrop/media/latm.hpp"

namespace predrop::media {
namespace {

using V = std::vector<std::uint8_t>;

// MSB-first bit writer for hand-made configs.
struct BitWriter {
  V bytes;
  std::size_t bits = 0;
  BitWriter& put(std::uint32_t value, int n) {
    for (int i = n - 1; i >= 0; --i) {
      if (bits % 8 == 0) bytes.push_back(0);
      if (((value >> i) & 1U) != 0) bytes.back() |= static_cast<std::uint8_t>(0x80U >> (bits % 8));
      ++bits;
    }
    return *this;
  }
};

V span_bytes(std::span<const std::uint8_t> s) {
  return V(s.begin(), s.end());
}

TEST(Latm, GStreamersConfigWithTheSyncExtensionOfFfmpegsEncoder) {
  // rtpmp4apay after avenc_aac, 48 kHz stereo: 0x40 (version 0, same time framing, 1 subframe,
  // 1 program, 1 layer), then the encoder's 5-byte AudioSpecificConfig 11 90 56 E5 00 shifted
  // by one bit (LC, 48 kHz, 2 channels, sync extension 0x2b7, SBR absent), and nothing after.
  auto c = parse_latm_config_hex("40002320adca00");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->object_type, 2);
  EXPECT_EQ(c->sample_rate, 48000u);
  EXPECT_EQ(c->channels, 2);
  EXPECT_EQ(c->subframes, 1);
  EXPECT_FALSE(c->other_data);
  // 33 bits: the 0x2b7 extension is part of it, the zero padding of the last byte is not read.
  EXPECT_EQ(c->audio_specific_config, (V{0x11, 0x90, 0x56, 0xe5, 0x00}));
  // voaacenc, 44.1 kHz mono: a 2-byte config, one bit of frameLengthType left (taken as 0).
  auto m = parse_latm_config_hex("40002410");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->sample_rate, 44100u);
  EXPECT_EQ(m->channels, 1);
  EXPECT_EQ(m->audio_specific_config, (V{0x12, 0x08}));
}

TEST(Latm, FfmpegsAndRfc6416sFullConfig) {
  // RFC 6416 §7.4.1's form: ..., frameLengthType 0, latmBufferFullness 0xff, no other data, no
  // CRC (FFmpeg's rtpenc_latm writes it so).
  auto c = parse_latm_config_hex("400023203FC0");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->audio_specific_config, (V{0x11, 0x90}));
  EXPECT_EQ(c->channels, 2);
  // Two subframes per element, other data present.
  BitWriter w;
  w.put(0, 1).put(1, 1).put(1, 6).put(0, 4).put(0, 3);  // numSubFrames 1
  w.put(0x1190, 16).put(0, 3).put(0xff, 8).put(1, 1).put(0, 1);
  auto s = parse_stream_mux_config(w.bytes);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->subframes, 2);
  EXPECT_TRUE(s->other_data);
}

TEST(Latm, AudioMuxVersionOneAndExplicitSbr) {
  // Version 1: taraBufferFullness and the config's length as LatmGetValue(); fill bits after.
  BitWriter w;
  w.put(1, 1).put(0, 1).put(0, 2).put(0xff, 8);  // version 1, A 0, taraBufferFullness 0xff
  w.put(1, 1).put(0, 6).put(0, 4).put(0, 3);
  w.put(0, 2).put(20, 8);       // ascLen 20 bits
  w.put(0x1190, 16).put(0, 4);  // the config, 4 fill bits
  w.put(0, 3).put(0xff, 8).put(0, 1).put(0, 1);
  auto c = parse_stream_mux_config(w.bytes);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->audio_specific_config, (V{0x11, 0x90}));
  EXPECT_EQ(c->sample_rate, 48000u);
  // HE-AAC signalled explicitly: object type 5, 24 kHz core / 48 kHz SBR, then LC.
  BitWriter h;
  h.put(0, 1).put(1, 1).put(0, 6).put(0, 4).put(0, 3);
  h.put(5, 5).put(6, 4).put(2, 4).put(3, 4).put(2, 5).put(0, 3);  // 5, 24 kHz, 2 ch, 48 kHz, LC
  h.put(0, 3).put(0xff, 8).put(0, 2);
  auto he = parse_stream_mux_config(h.bytes);
  ASSERT_TRUE(he.ok()) << he.error().message;
  EXPECT_EQ(he->object_type, 2);
  EXPECT_EQ(he->sample_rate, 24000u);
  EXPECT_EQ(he->channels, 2);
  EXPECT_EQ(he->audio_specific_config.size(), 4u);  // 29 bits
}

TEST(Latm, RefusesWhatItCannotRepackWithAReason) {
  const auto refused = [](const V& config, const std::string& why) {
    auto c = parse_stream_mux_config(config);
    ASSERT_FALSE(c.ok()) << why;
    EXPECT_NE(c.error().message.find(why), std::string::npos) << c.error().message;
  };
  refused(V{0x00, 0x00, 0x23, 0x20}, "allStreamsSameTimeFraming 0");
  refused(V{0x40, 0x10, 0x23, 0x20}, "more than one program");
  refused(V{0x40, 0x02, 0x23, 0x20}, "more than one layer");
  refused(V{0xc0}, "audioMuxVersionA 1");
  refused(V{}, "truncated");
  refused(V{0x40}, "truncated");
  refused(V{0x40, 0x00, 0x23}, "truncated");  // the config cut in its channels
  // Object type 42 (USAC) through the escape, channelConfiguration 0 (a PCE), 960-sample frames,
  // a reserved rate, frameLengthType 1 (fixed frame lengths).
  {
    BitWriter w;
    w.put(0x40, 8).put(0, 7).put(31, 5).put(10, 6).put(3, 4).put(2, 4).put(0, 8);
    refused(w.bytes, "audio object type 42");
  }
  {
    BitWriter w;
    w.put(0x40, 8).put(0, 7).put(2, 5).put(3, 4).put(0, 4).put(0, 3).put(0, 8);
    refused(w.bytes, "channelConfiguration 0");
  }
  {
    BitWriter w;
    w.put(0x40, 8).put(0, 7).put(2, 5).put(3, 4).put(2, 4).put(4, 3).put(0, 8);
    refused(w.bytes, "960-sample");
  }
  {
    BitWriter w;
    w.put(0x40, 8).put(0, 7).put(2, 5).put(13, 4).put(2, 4).put(0, 3).put(0, 8);
    refused(w.bytes, "reserved sampling frequency");
  }
  {
    BitWriter w;
    w.put(0x40, 8).put(0, 7).put(0x1190, 16).put(1, 3).put(0xff, 8).put(0, 2);
    refused(w.bytes, "frameLengthType 1");
  }
  // Version 1 with an ascLen past the end.
  {
    BitWriter w;
    w.put(1, 1).put(0, 1).put(0, 2).put(0xff, 8).put(1, 1).put(0, 13).put(0, 2).put(200, 8);
    w.put(0x1190, 16);
    refused(w.bytes, "truncated AudioSpecificConfig");
  }
  for (const char* hex : {"", "4", "40002", "4000zz20", "0x4000"}) {
    EXPECT_FALSE(parse_latm_config_hex(hex).ok()) << hex;
  }
}

// GStreamer's config: one frame per element.
LatmConfig gst_config() {
  auto c = parse_latm_config_hex("40002320adca00");
  EXPECT_TRUE(c.ok());
  return *c;
}

TEST(Latm, OneFrameBecomesAnAacHbrPayload) {
  LatmDepacketizer d(gst_config());
  const V packet = {3, 'a', 'b', 'c'};
  const V out = span_bytes(d.push(1, 1000, true, packet));
  // AU-headers-length 16, the header: size 3 << 3, index 0; the frame.
  EXPECT_EQ(out, (V{0x00, 0x10, 0x00, 0x18, 'a', 'b', 'c'}));
  // A 300-byte frame: its length as 255 + 45.
  V big = {255, 45};
  for (int i = 0; i < 300; ++i) {
    big.push_back(static_cast<std::uint8_t>(i));
  }
  const V o2 = span_bytes(d.push(2, 2024, true, big));
  ASSERT_EQ(o2.size(), 4u + 300u);
  EXPECT_EQ(((o2[2] << 8) | o2[3]) >> 3, 300);
  EXPECT_EQ(o2[4], 0);
  EXPECT_EQ(o2.back(), static_cast<std::uint8_t>(299));
  // Two elements in one packet: two frames, in order.
  const V o3 = span_bytes(d.push(3, 3048, true, V{1, 'x', 2, 'y', 'z'}));
  EXPECT_EQ(o3, (V{0x00, 0x20, 0x00, 0x08, 0x00, 0x10, 'x', 'y', 'z'}));
  EXPECT_EQ(d.stats().elements, 3u);
  EXPECT_EQ(d.stats().malformed, 0u);
}

TEST(Latm, SubframesAreFramesOfOneElement) {
  auto c = parse_latm_config_hex("410023203FC0");  // numSubFrames 1
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->subframes, 2);
  LatmDepacketizer d(*c);
  const V out = span_bytes(d.push(7, 0, true, V{2, 'a', 'b', 1, 'c'}));
  EXPECT_EQ(out, (V{0x00, 0x20, 0x00, 0x10, 0x00, 0x08, 'a', 'b', 'c'}));
  // An element with only one of its two subframes is truncated.
  EXPECT_TRUE(d.push(8, 2048, true, V{2, 'a', 'b'}).empty());
  EXPECT_EQ(d.stats().malformed, 1u);
}

TEST(Latm, FragmentsAreJoinedUpToTheMarker) {
  LatmDepacketizer d(gst_config());
  V frame;
  for (int i = 0; i < 40; ++i) {
    frame.push_back(static_cast<std::uint8_t>(i + 1));
  }
  V first = {40};
  first.insert(first.end(), frame.begin(), frame.begin() + 10);
  const V rest(frame.begin() + 10, frame.end());
  EXPECT_TRUE(d.push(100, 5000, false, first).empty());
  const V out = span_bytes(d.push(101, 5000, true, rest));
  ASSERT_EQ(out.size(), 4u + 40u);
  EXPECT_EQ(V(out.begin() + 4, out.end()), frame);
  EXPECT_EQ(d.stats().fragments, 1u);
  // A fragment lost: the element's other fragments are dropped (up to its marker); the next
  // element comes out whole.
  EXPECT_TRUE(d.push(102, 6024, false, first).empty());
  EXPECT_TRUE(d.push(104, 6024, false, rest).empty());  // 103 lost, same element
  EXPECT_TRUE(d.push(105, 6024, true, rest).empty());   // its end
  EXPECT_EQ(span_bytes(d.push(106, 7048, true, V{1, 'q'})), (V{0x00, 0x10, 0x00, 0x08, 'q'}));
  // A packet lost at the start of an element: its first packet we see is not joined to the
  // unfinished one before the gap.
  EXPECT_TRUE(d.push(107, 8072, false, first).empty());
  EXPECT_EQ(span_bytes(d.push(109, 9096, true, V{1, 'r'})), (V{0x00, 0x10, 0x00, 0x08, 'r'}));
  // An element that never got its marker is dropped when the timestamp moves on.
  EXPECT_TRUE(d.push(110, 10120, false, first).empty());
  EXPECT_EQ(span_bytes(d.push(111, 11144, true, V{1, 's'})), (V{0x00, 0x10, 0x00, 0x08, 's'}));
  EXPECT_GE(d.stats().malformed, 4u);
}

TEST(Latm, MalformedPacketsAreDroppedAndCounted) {
  LatmDepacketizer d(gst_config());
  std::uint16_t seq = 0;
  const auto dropped = [&](const V& packet) {
    const auto before = d.stats().malformed;
    const std::uint16_t at = seq++;
    EXPECT_TRUE(d.push(at, at * 1024U, true, packet).empty());
    EXPECT_EQ(d.stats().malformed, before + 1);
  };
  dropped(V{});                 // nothing
  dropped(V{5, 'a', 'b'});      // a length past the end
  dropped(V{255});              // a 255-run that ends with the packet
  dropped(V{255, 255, 10, 1});  // 520 bytes said, one there
  dropped(V{0});                // a zero-length frame
  dropped(V{1, 'a', 3, 'b'});   // a second element cut short
  dropped(V{1, 'a', 255});      // trailing bytes that are no element
  // A frame over AAC-hbr's 13-bit size: 8192 bytes.
  V huge(8192 / 255, 255);
  huge.push_back(8192 % 255);
  huge.resize(huge.size() + 8192, 0);
  dropped(huge);
  // An element larger than kMaxElementBytes, in fragments: it and its rest are dropped.
  const V chunk(6000, 1);
  EXPECT_TRUE(d.push(seq++, 99, false, chunk).empty());
  EXPECT_TRUE(d.push(seq++, 99, false, chunk).empty());
  EXPECT_TRUE(d.push(seq++, 99, false, chunk).empty());  // 18000 > 16384
  EXPECT_TRUE(d.push(seq++, 99, true, chunk).empty());
  EXPECT_EQ(span_bytes(d.push(seq++, 100, true, V{1, 'k'})), (V{0x00, 0x10, 0x00, 0x08, 'k'}));
  EXPECT_EQ(d.stats().elements, 1u);
  // reset(): a partial element is forgotten.
  EXPECT_TRUE(d.push(seq++, 200, false, V{2, 'a'}).empty());
  d.reset();
  EXPECT_EQ(span_bytes(d.push(0, 300, true, V{1, 'm'})), (V{0x00, 0x10, 0x00, 0x08, 'm'}));
}

}  // namespace
}  // namespace predrop::media
