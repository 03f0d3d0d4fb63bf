// RTP codec: RFC 3550 §5.1 header, RFC 8285 extensions, predrop's stage tag and abs-send-time.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "predrop/wire/rtp.hpp"

namespace predrop::wire {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr RtpExtensionIds kIds{.stage = 5, .abs_send_time = 3};

// A header as write_rtp_header() produces it with stage id 5 and abs-send-time id 3.
const Bytes kStageAndAbsHeader = {
    0x90,                    // V=2, P=0, X=1, CC=0
    0xE0,                    // M=1, PT=96
    0x12, 0x34,              // sequence 0x1234
    0x00, 0x01, 0x5F, 0x90,  // timestamp 90000
    0xDE, 0xAD, 0xBE, 0xEF,  // SSRC
    0xBE, 0xDE,              // one-byte extension profile (RFC 8285 §4.2)
    0x00, 0x04,              // block length: 4 words
    0x57,                    // element id 5, L=7: 8 data bytes follow
    0x00, 0x00, 0x00, 0x2A,  //   stage id 42
    0x00, 0x03,              //   index 3
    0x00, 0x64,              //   count 100
    0x32,                    // element id 3, L=2: 3 data bytes follow
    0x12, 0x34, 0x56,        //   abs-send-time 0x123456
    0x00, 0x00, 0x00,        // padding to a 32-bit boundary
};

const RtpHeader kHeader{
    .marker = true, .payload_type = 96, .sequence = 0x1234, .timestamp = 90000, .ssrc = 0xDEADBEEF};
const StageExtension kStage{.stage_id = 42, .index = 3, .count = 100};

Bytes with_payload(Bytes b, const Bytes& payload) {
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

TEST(Rtp, ParsesMinimalHeader) {
  const Bytes pkt = {
      0x80,                    // V=2, P=0, X=0, CC=0
      0x21,                    // M=0, PT=33 (MP2T)
      0x00, 0x07,              // sequence 7
      0x00, 0x00, 0x03, 0xE8,  // timestamp 1000
      0x01, 0x02, 0x03, 0x04,  // SSRC
      0xAA, 0xBB,              // payload
  };
  auto v = parse_rtp(pkt);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->header, (RtpHeader{false, 33, 7, 1000, 0x01020304}));
  EXPECT_EQ(v->header_size, 12u);
  EXPECT_FALSE(v->has_extension);
  EXPECT_EQ(v->payload.size(), 2u);
  EXPECT_EQ(v->payload[0], 0xAA);
  EXPECT_FALSE(v->stage);
  EXPECT_FALSE(v->abs_send_time);
}

TEST(Rtp, ParsesFfmpegPunchPacket) {
  // libavformat's rtp_send_punch_packets(): a bare 12-byte header, everything zero but V.
  const Bytes pkt = {0x80, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  auto v = parse_rtp(pkt, kIds);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->payload.empty());
}

TEST(Rtp, WritesStageAndAbsSendTimeFixture) {
  std::array<std::uint8_t, 64> out{};
  auto n = write_rtp_header(out, kHeader, {kIds, kStage, 0x123456});
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(Bytes(out.begin(), out.begin() + *n), kStageAndAbsHeader);
  EXPECT_EQ(*n, rtp_header_size(kIds));
}

TEST(Rtp, ParsesStageAndAbsSendTimeFixture) {
  const Bytes pkt = with_payload(kStageAndAbsHeader, {1, 2, 3});
  auto v = parse_rtp(pkt, kIds);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->header, kHeader);
  EXPECT_EQ(v->header_size, 32u);
  EXPECT_TRUE(v->has_extension);
  EXPECT_EQ(v->extension_profile, kOneByteExtensionProfile);
  EXPECT_EQ(v->extension_data.size(), 16u);
  ASSERT_TRUE(v->stage);
  EXPECT_EQ(*v->stage, kStage);
  ASSERT_TRUE(v->abs_send_time);
  EXPECT_EQ(*v->abs_send_time, 0x123456u);
  EXPECT_EQ(Bytes(v->payload.begin(), v->payload.end()), (Bytes{1, 2, 3}));
}

TEST(Rtp, ExtensionsAreOnlyDecodedUnderTheirIds) {
  auto v = parse_rtp(kStageAndAbsHeader);  // no ids negotiated
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->stage);
  EXPECT_FALSE(v->abs_send_time);
  auto swapped = parse_rtp(kStageAndAbsHeader, {.stage = 3, .abs_send_time = 5});
  ASSERT_TRUE(swapped);  // sizes do not match the ids: ignored, not fatal
  EXPECT_FALSE(swapped->stage);
  EXPECT_FALSE(swapped->abs_send_time);
}

TEST(Rtp, RejectsEveryTruncationOfTheHeader) {
  for (std::size_t len = 0; len < kStageAndAbsHeader.size(); ++len) {
    const std::span<const std::uint8_t> prefix(kStageAndAbsHeader.data(), len);
    EXPECT_FALSE(parse_rtp(prefix, kIds)) << "length " << len;
  }
  EXPECT_TRUE(parse_rtp(kStageAndAbsHeader, kIds));
}

TEST(Rtp, RejectsEveryTruncationOfAPaddedPacket) {
  // With padding, every cut moves the count byte: a prefix either overruns or is zero.
  const Bytes pkt = {
      0xA0,                    // V=2, P=1
      0x60,                    // PT=96
      0x00, 0x01,              // sequence
      0x00, 0x00, 0x00, 0x01,  // timestamp
      0x00, 0x00, 0x00, 0x01,  // SSRC
      0x0A,                    // payload
      0x00, 0x00, 0x03,        // 3 bytes of padding, the last one counts them
  };
  auto full = parse_rtp(pkt);
  ASSERT_TRUE(full);
  EXPECT_EQ(full->padding_size, 3u);
  EXPECT_EQ(full->payload.size(), 1u);
  for (std::size_t len = 0; len < pkt.size(); ++len) {
    EXPECT_FALSE(parse_rtp(std::span(pkt.data(), len))) << "length " << len;
  }
}

TEST(Rtp, RejectsBadVersion) {
  for (std::uint8_t v : {0x00, 0x40, 0xC0}) {
    Bytes pkt = kStageAndAbsHeader;
    pkt[0] = static_cast<std::uint8_t>((pkt[0] & 0x3F) | v);
    auto r = parse_rtp(pkt, kIds);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("version"), std::string::npos);
  }
}

TEST(Rtp, ParsesCsrcList) {
  const Bytes pkt = {
      0x82,                    // V=2, CC=2
      0x60,                    // PT=96
      0x00, 0x01,              // sequence
      0x00, 0x00, 0x00, 0x02,  // timestamp
      0x00, 0x00, 0x00, 0x03,  // SSRC
      0x11, 0x11, 0x11, 0x11,  // CSRC 0
      0x22, 0x22, 0x22, 0x22,  // CSRC 1
      0xFF,                    // payload
  };
  auto v = parse_rtp(pkt);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->csrc_count, 2);
  EXPECT_EQ(v->csrc(0), 0x11111111u);
  EXPECT_EQ(v->csrc(1), 0x22222222u);
  EXPECT_EQ(v->header_size, 20u);
  EXPECT_EQ(v->payload.size(), 1u);

  Bytes overrun = pkt;
  overrun[0] = 0x85;  // CC=5 needs 20 bytes of CSRCs, only 9 follow
  EXPECT_FALSE(parse_rtp(overrun));
}

TEST(Rtp, PaddingRules) {
  const Bytes base = {0xA0, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};  // V=2, P=1, fixed header only
  EXPECT_FALSE(parse_rtp(base)) << "P set but no count byte";
  EXPECT_FALSE(parse_rtp(with_payload(base, {0x01, 0x00}))) << "count 0 is invalid";
  EXPECT_FALSE(parse_rtp(with_payload(base, {0x01, 0x03}))) << "count exceeds the payload";
  auto all_padding = parse_rtp(with_payload(base, {0x00, 0x02}));
  ASSERT_TRUE(all_padding);
  EXPECT_TRUE(all_padding->payload.empty());
  // Padding may not eat into the extension block: it only counts bytes after the header.
  Bytes ext = kStageAndAbsHeader;
  ext[0] |= 0x20;
  EXPECT_FALSE(parse_rtp(with_payload(ext, {0x09})));
}

TEST(Rtp, OneByteElementEdgeCases) {
  const Bytes head = {0x90, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};  // V=2, X=1
  // Padding bytes between elements, an unknown element, then the stage element.
  const Bytes ok =
      with_payload(head, {
                             0xBE, 0xDE, 0x00, 0x04,              // profile, 4 words
                             0x00, 0x00,                          // padding
                             0x90, 0xAB,                          // id 9 (unknown), 1 byte
                             0x57,                                // id 5, 8 bytes
                             0,    0,    0,    7,    0, 1, 0, 2,  //   stage 7, index 1, count 2
                             0x00, 0x00, 0x00, 0x00,              // padding
                         });
  auto v = parse_rtp(ok, kIds);
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_TRUE(v->stage);
  EXPECT_EQ(*v->stage, (StageExtension{7, 1, 2}));

  // Id 15 stops processing (RFC 8285 §4.2), even if what follows would be malformed.
  const Bytes stop = with_payload(head, {
                                            0xBE, 0xDE, 0x00, 0x01,  // profile, 1 word
                                            0x32, 0x00, 0x00, 0x01,  // id 3, 3 bytes (abs = 1)
                                            0xBE, 0xDE, 0x00, 0x01,  // next block? no, payload
                                        });
  auto s = parse_rtp(stop, kIds);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->abs_send_time, 1u);
  const Bytes reserved = with_payload(head, {
                                                0xBE, 0xDE, 0x00, 0x02,  // profile, 2 words
                                                0xFF,                    // id 15: stop here
                                                0x57, 0x00, 0x00,        // would overrun
                                                0x32, 0x00, 0x00, 0x01,  // never read
                                            });
  auto r = parse_rtp(reserved, kIds);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->stage);
  EXPECT_FALSE(r->abs_send_time);

  // An element longer than the rest of its block is malformed.
  const Bytes overrun = with_payload(head, {
                                               0xBE, 0xDE, 0x00, 0x01,  // profile, 1 word
                                               0x57, 0x00, 0x00, 0x00,  // id 5 wants 8 bytes
                                               0xAA, 0xAA, 0xAA, 0xAA,  // payload, not block
                                           });
  EXPECT_FALSE(parse_rtp(overrun, kIds));

  // A stage element of the wrong size is ignored; the packet is still good.
  const Bytes wrong_size = with_payload(head, {
                                                  0xBE, 0xDE, 0x00, 0x01,  // profile, 1 word
                                                  0x52, 0x00, 0x00, 0x01,  // id 5, 3 bytes
                                              });
  auto w = parse_rtp(wrong_size, kIds);
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->stage);

  // The first element of an id wins.
  const Bytes dup = with_payload(head, {
                                           0xBE, 0xDE, 0x00, 0x02,  // profile, 2 words
                                           0x32, 0x00, 0x00, 0x01,  // abs = 1
                                           0x32, 0x00, 0x00, 0x02,  // abs = 2
                                       });
  EXPECT_EQ(parse_rtp(dup, kIds)->abs_send_time, 1u);

  // An empty extension block is legal.
  auto empty = parse_rtp(with_payload(head, {0xBE, 0xDE, 0x00, 0x00, 0x77}), kIds);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->header_size, 16u);
  EXPECT_EQ(empty->payload.size(), 1u);
}

TEST(Rtp, TwoByteElementsAreFoundAndSkipped) {
  const Bytes pkt = {
      0x90, 0x60, 0,    1, 0, 0, 0, 1, 0, 0, 0, 1,  // V=2, X=1, fixed header
      0x10, 0x00,                                   // two-byte profile, appbits 0 (RFC 8285 §4.3)
      0x00, 0x05,                                   // 5 words
      0xC8, 0x00,                                   // id 200, length 0 (legal in this form)
      0x00,                                         // padding
      0x05, 0x08,                                   // id 5, length 8
      0,    0,    0,    9, 0, 4, 0, 5,              //   stage 9, index 4, count 5
      0x03, 0x03,                                   // id 3, length 3
      0xAB, 0xCD, 0xEF,                             //   abs-send-time
      0x00, 0x00,                                   // padding
      0x42,                                         // payload
  };
  auto v = parse_rtp(pkt, kIds);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->extension_profile, 0x1000);
  EXPECT_EQ(v->stage, (StageExtension{9, 4, 5}));
  EXPECT_EQ(v->abs_send_time, 0xABCDEFu);
  ASSERT_EQ(v->payload.size(), 1u);
  EXPECT_EQ(v->payload[0], 0x42);

  Bytes truncated_element = pkt;
  truncated_element[20] = 0x20;  // id 5 now claims 32 bytes
  EXPECT_FALSE(parse_rtp(truncated_element, kIds));
}

TEST(Rtp, UnknownProfileIsSkippedWhole) {
  const Bytes pkt = {
      0x90, 0x60, 0,    1,    0, 0, 0, 1, 0, 0, 0, 1,  // V=2, X=1
      0xAB, 0xCD, 0x00, 0x01,                          // profile 0xABCD, 1 word
      0x57, 0xFF, 0xFF, 0xFF,                          // would be an overrun if read as 0xBEDE
      0x99,                                            // payload
  };
  auto v = parse_rtp(pkt, kIds);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->stage);
  EXPECT_EQ(v->payload.size(), 1u);
  Bytes overrun = pkt;
  overrun[15] = 0x02;  // 2 words, only 5 bytes follow
  EXPECT_FALSE(parse_rtp(overrun, kIds));
}

TEST(Rtp, WriterRejectsBadInputs) {
  std::array<std::uint8_t, 64> out{};
  EXPECT_FALSE(write_rtp_header(out, kHeader, {{.stage = 15}, kStage, 0}));
  EXPECT_FALSE(write_rtp_header(out, kHeader, {{.abs_send_time = 16}, kStage, 0}));
  EXPECT_FALSE(write_rtp_header(out, kHeader, {{.stage = 4, .abs_send_time = 4}, kStage, 0}));
  RtpHeader bad_pt = kHeader;
  bad_pt.payload_type = 128;
  EXPECT_FALSE(write_rtp_header(out, bad_pt, {}));
  for (std::size_t len = 0; len < kStageAndAbsHeader.size(); ++len) {
    EXPECT_FALSE(write_rtp_header(std::span(out.data(), len), kHeader, {kIds, kStage, 0}))
        << "length " << len;
  }
}

// A WebRTC peer with transport-cc (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2): the
// transport-wide sequence number alone, as the server sends it to a browser.
const Bytes kTransportSequenceHeader = {
    0x90, 0xE0, 0x12, 0x34, 0x00, 0x01, 0x5F, 0x90, 0xDE, 0xAD, 0xBE, 0xEF,  // as above
    0xBE, 0xDE,  // one-byte extension profile
    0x00, 0x01,  // block length: 1 word
    0x31,        // element id 3, L=1: 2 data bytes follow
    0xAB, 0xCD,  //   transport-wide sequence number 0xABCD
    0x00,        // padding to a 32-bit boundary
};

TEST(Rtp, WritesAndParsesTheTransportWideSequenceNumber) {
  const RtpExtensionIds ids{.transport_sequence = 3};
  std::array<std::uint8_t, 64> out{};
  RtpExtensions ext{ids, kStage, 0};
  ext.transport_sequence = 0xABCD;
  auto n = write_rtp_header(out, kHeader, ext);
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(Bytes(out.begin(), out.begin() + *n), kTransportSequenceHeader);
  auto v = parse_rtp(with_payload(kTransportSequenceHeader, {1}), ids);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->transport_sequence.value_or(0), 0xABCD);
  EXPECT_FALSE(v->stage);
  // All three: stage, abs-send-time, transport sequence (9 + 4 + 3 = 16 bytes), and the layout
  // knows where the number goes.
  const RtpExtensionIds all{.stage = 1, .abs_send_time = 2, .transport_sequence = 3};
  EXPECT_EQ(rtp_header_size(all), 32u);
  ext.ids = all;
  n = write_rtp_header(out, kHeader, ext);
  ASSERT_TRUE(n);
  const auto layout = RtpHeaderLayout::create(all);
  ASSERT_TRUE(layout);
  EXPECT_TRUE(layout->matches(out));
  EXPECT_EQ(layout->transport_sequence_offset(), 12u + 4 + 9 + 4 + 1);
  EXPECT_EQ(out[layout->transport_sequence_offset() - 1], 0x31);
  v = parse_rtp(std::span(out.data(), *n), all);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->transport_sequence.value_or(0), 0xABCD);
  EXPECT_EQ(*v->stage, kStage);
  EXPECT_FALSE(write_rtp_header(out, kHeader, {{.stage = 3, .transport_sequence = 3}, kStage, 0}));
  EXPECT_FALSE(write_rtp_header(out, kHeader, {{.transport_sequence = 15}, kStage, 0}));
}

TEST(Rtp, HeaderSizesPerLayout) {
  EXPECT_EQ(rtp_header_size({}), 12u);
  EXPECT_EQ(rtp_header_size({.stage = 1}), 12u + 4 + 12);             // 9 bytes -> 12
  EXPECT_EQ(rtp_header_size({.abs_send_time = 2}), 12u + 4 + 4);      // 4 bytes
  EXPECT_EQ(rtp_header_size({.stage = 1, .abs_send_time = 2}), 32u);  // 13 bytes -> 16
}

TEST(Rtp, PacketRoundTripForEveryLayout) {
  const Bytes payload = {9, 8, 7, 6, 5};
  for (RtpExtensionIds ids : {RtpExtensionIds{}, RtpExtensionIds{.stage = 1},
                              RtpExtensionIds{.abs_send_time = 14}, kIds}) {
    std::array<std::uint8_t, 64> out{};
    auto n = write_rtp_packet(out, kHeader, {ids, kStage, 0xFEDCBA}, payload);
    ASSERT_TRUE(n);
    auto v = parse_rtp(std::span(out.data(), *n), ids);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->header, kHeader);
    EXPECT_EQ(v->stage.has_value(), ids.stage != 0);
    if (ids.stage != 0) {
      EXPECT_EQ(*v->stage, kStage);
    }
    EXPECT_EQ(v->abs_send_time.has_value(), ids.abs_send_time != 0);
    if (ids.abs_send_time != 0) {
      EXPECT_EQ(*v->abs_send_time, 0xFEDCBAu);
    }
    EXPECT_EQ(Bytes(v->payload.begin(), v->payload.end()), payload);
  }
  std::array<std::uint8_t, 20> small{};
  EXPECT_FALSE(write_rtp_packet(small, kHeader, {}, Bytes(9, 0)));
}

TEST(RtpHeaderLayout, PatchEqualsReserializing) {
  for (RtpExtensionIds ids : {RtpExtensionIds{}, RtpExtensionIds{.stage = 2},
                              RtpExtensionIds{.abs_send_time = 7}, kIds}) {
    auto layout = RtpHeaderLayout::create(ids);
    ASSERT_TRUE(layout);
    EXPECT_EQ(layout->header_size(), rtp_header_size(ids));
    std::array<std::uint8_t, 64> buf{};
    ASSERT_TRUE(write_rtp_header(buf, RtpHeader{}, {ids, {}, 0}));
    EXPECT_TRUE(layout->matches(buf));

    const RtpHeader h{.marker = true,
                      .payload_type = 111,
                      .sequence = 65535,
                      .timestamp = 0xFFFFFFFF,
                      .ssrc = 0x01020304};
    const StageExtension st{.stage_id = 0xA0B0C0D0, .index = 65534, .count = 65535};
    ASSERT_TRUE(layout->patch(buf, h, st, 0x00ABCDEF));
    std::array<std::uint8_t, 64> expected{};
    ASSERT_TRUE(write_rtp_header(expected, h, {ids, st, 0x00ABCDEF}));
    EXPECT_EQ(buf, expected);
  }
}

TEST(RtpHeaderLayout, PatchAbsSendTimeTouchesOnlyThreeBytes) {
  auto layout = RtpHeaderLayout::create(kIds);
  ASSERT_TRUE(layout);
  Bytes buf = with_payload(kStageAndAbsHeader, {0xEE, 0xEE});
  ASSERT_TRUE(layout->patch_abs_send_time(buf, 0x010203));
  Bytes expected = with_payload(kStageAndAbsHeader, {0xEE, 0xEE});
  expected[26] = 0x01;  // abs-send-time data starts after 12 + 4 + 9 + 1 bytes
  expected[27] = 0x02;
  expected[28] = 0x03;
  EXPECT_EQ(buf, expected);
  auto no_abs = RtpHeaderLayout::create({.stage = 5});
  ASSERT_TRUE(no_abs);
  EXPECT_FALSE(no_abs->patch_abs_send_time(buf, 1));
}

TEST(RtpHeaderLayout, RefusesBuffersOfAnotherLayout) {
  auto layout = RtpHeaderLayout::create(kIds);
  ASSERT_TRUE(layout);
  Bytes buf = kStageAndAbsHeader;
  EXPECT_FALSE(layout->patch(std::span(buf.data(), buf.size() - 1), kHeader, kStage, 0));
  auto other = RtpHeaderLayout::create({.stage = 6, .abs_send_time = 3});
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->patch(buf, kHeader, kStage, 0)) << "element id differs";
  auto stage_only = RtpHeaderLayout::create({.stage = 5});
  ASSERT_TRUE(stage_only);
  EXPECT_FALSE(stage_only->patch(buf, kHeader, kStage, 0)) << "block length differs";
  Bytes padded = buf;
  padded[0] |= 0x20;
  EXPECT_FALSE(layout->patch(padded, kHeader, kStage, 0)) << "P bit set";
  RtpHeader bad_pt = kHeader;
  bad_pt.payload_type = 200;
  EXPECT_FALSE(layout->patch(buf, bad_pt, kStage, 0));
  EXPECT_EQ(buf, kStageAndAbsHeader) << "a refused patch writes nothing";
  EXPECT_FALSE(RtpHeaderLayout::create({.stage = 0, .abs_send_time = 15}));
}

TEST(AbsSendTime, Conversions) {
  EXPECT_EQ(abs_send_time_from_us(0), 0u);
  EXPECT_EQ(abs_send_time_from_us(1'000'000), 0x040000u);  // 1 s = 2^18
  EXPECT_EQ(abs_send_time_from_us(500'000), 0x020000u);
  EXPECT_EQ(abs_send_time_from_us(64'000'000), 0u);  // wraps every 64 s
  EXPECT_EQ(abs_send_time_from_us(63'999'999), 0u);  // rounds up into the wrap
  EXPECT_EQ(abs_send_time_to_us(0x040000), 1'000'000u);
  EXPECT_EQ(abs_send_time_to_us(0xFF040000), 1'000'000u) << "upper bits ignored";
  for (std::uint64_t us : {1ull, 3ull, 999'999ull, 12'345'678ull, 63'999'990ull}) {
    const auto back = static_cast<std::int64_t>(abs_send_time_to_us(abs_send_time_from_us(us)));
    EXPECT_LE(std::abs(back - static_cast<std::int64_t>(us)), 2) << us;  // 1/2^18 s ~ 3.8 µs
  }
  // Large clock values (days of uptime) do not overflow.
  EXPECT_EQ(abs_send_time_from_us(86'400'000'000ull * 1000 + 1'000'000), 0x040000u);
}

TEST(AbsSendTime, DeltaIsWrapSafe) {
  const auto before_wrap = abs_send_time_from_us(63'999'000);
  const auto after_wrap = abs_send_time_from_us(64'001'000);
  const auto d = abs_send_time_delta_us(after_wrap, before_wrap);
  EXPECT_NEAR(static_cast<double>(d), 2000.0, 4.0);
  EXPECT_EQ(abs_send_time_delta_us(before_wrap, after_wrap), -d);
  EXPECT_EQ(abs_send_time_delta_us(0x040000, 0), 1'000'000);
  EXPECT_EQ(abs_send_time_delta_us(0, 0x040000), -1'000'000);
  EXPECT_EQ(abs_send_time_delta_us(0x7FFFFF, 0), 32'000'000 - 4);  // just under +32 s
  EXPECT_EQ(abs_send_time_delta_us(0x800000, 0), -32'000'000);     // +32 s reads as -32 s
}

}  // namespace
}  // namespace predrop::wire
