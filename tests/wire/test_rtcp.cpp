// RTCP codec: RFC 3550 §6.4.1 SR, §6.4.2 RR, §6.5 SDES, §6.6 BYE, §6.7 APP/PDFB, §6.1 compound.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "predrop/wire/rtcp.hpp"

namespace predrop::wire {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts)
    out.insert(out.end(), p.begin(), p.end());
  return out;
}

const Bytes kSenderReport = {
    0x81, 0xC8, 0x00, 0x0C,  // V=2, P=0, RC=1 | PT=200 (SR) | length 12 words: 52 bytes
    0x11, 0x22, 0x33, 0x44,  // sender SSRC
    0xE8, 0x00, 0x00, 0x00,  // NTP timestamp, seconds
    0x80, 0x00, 0x00, 0x00,  // NTP timestamp, fraction (0.5 s)
    0x00, 0x01, 0x5F, 0x90,  // RTP timestamp 90000
    0x00, 0x00, 0x03, 0xE8,  // sender's packet count 1000
    0x00, 0x0F, 0x42, 0x40,  // sender's octet count 1000000
    0xAA, 0xBB, 0xCC, 0xDD,  // block: SSRC
    0x40,                    // block: fraction lost 64/256
    0xFF, 0xFF, 0xFE,        // block: cumulative lost -2 (24-bit two's complement)
    0x00, 0x01, 0x00, 0x10,  // block: extended highest sequence (1 cycle, seq 16)
    0x00, 0x00, 0x00, 0x20,  // block: jitter 32
    0x00, 0x80, 0x00, 0x00,  // block: LSR
    0x00, 0x01, 0x00, 0x00,  // block: DLSR 1 s (1/65536 s units)
};

const ReportBlock kBlock{.ssrc = 0xAABBCCDD,
                         .fraction_lost = 64,
                         .cumulative_lost = -2,
                         .extended_highest_sequence = 0x00010010,
                         .jitter = 32,
                         .last_sr = 0x00800000,
                         .delay_since_last_sr = 0x00010000};

SenderReport make_sr() {
  SenderReport sr;
  sr.ssrc = 0x11223344;
  sr.ntp_timestamp = 0xE800000080000000;
  sr.rtp_timestamp = 90000;
  sr.packet_count = 1000;
  sr.octet_count = 1000000;
  sr.blocks.push_back(kBlock);
  return sr;
}

const Bytes kEmptyReceiverReport = {
    0x80, 0xC9, 0x00, 0x01,  // V=2, RC=0 | PT=201 (RR) | length 1 word: 8 bytes
    0x55, 0x66, 0x77, 0x88,  // sender SSRC
};

const Bytes kPdfb = {
    0x80, 0xCC, 0x00, 0x0B,  // V=2, P=0, subtype 0 | PT=204 (APP) | length 11 words: 48 bytes
    0x55, 0x66, 0x77, 0x88,  // reporter SSRC
    'P',  'D',  'F',  'B',   // name
    0x01,                    // version: major 1, minor 0
    0x01,                    // metric: PSNR dB
    0x00, 0x03,              // flags: P valid | queue-delay growth valid
    0xDE, 0xAD, 0xBE, 0xEF,  // media SSRC
    0x00, 0x00, 0x00, 0x07,  // stage id 7
    0x00, 0x0F, 0x42, 0x40,  // L = 1000000 µs
    0x00, 0x00, 0x03, 0x84,  // packets received 900
    0x00, 0x00, 0x03, 0xE8,  // packets announced 1000
    0x40, 0x42, 0x80, 0x00,  // P = 37.0 as binary64 (high word)
    0x00, 0x00, 0x00, 0x00,  //   (low word)
    0xFF, 0xFF, 0xFC, 0x18,  // queue-delay growth -1000 µs
};

const PdfbFeedback kFeedback{.metric = PdfbMetric::kPsnrDb,
                             .performance_valid = true,
                             .queue_delay_valid = true,
                             .media_ssrc = 0xDEADBEEF,
                             .stage_id = 7,
                             .reception_period_us = 1000000,
                             .packets_received = 900,
                             .packets_announced = 1000,
                             .performance = 37.0,
                             .queue_delay_growth_us = -1000};

// PDFB v1.1: the v1.0 fixture with the minor version 1 and seven words of path measurements.
const Bytes kPdfbV11 = {
    0x80, 0xCC, 0x00, 0x13,  // V=2, P=0, subtype 0 | PT=204 (APP) | length 19 words: 80 bytes
    0x55, 0x66, 0x77, 0x88,  // reporter SSRC
    'P',  'D',  'F',  'B',   // name
    0x11,                    // version: major 1, minor 1
    0x01,                    // metric: PSNR dB
    0x00, 0x03,              // flags: P valid | queue-delay growth valid
    0xDE, 0xAD, 0xBE, 0xEF,  // media SSRC
    0x00, 0x00, 0x00, 0x07,  // stage id 7
    0x00, 0x0F, 0x42, 0x40,  // L = 1000000 µs
    0x00, 0x00, 0x03, 0x84,  // packets received 900
    0x00, 0x00, 0x03, 0xE8,  // packets announced 1000
    0x40, 0x42, 0x80, 0x00,  // P = 37.0 as binary64 (high word)
    0x00, 0x00, 0x00, 0x00,  //   (low word)
    0xFF, 0xFF, 0xFC, 0x18,  // queue-delay growth -1000 µs
    0x00, 0x01, 0x86, 0xA0,  // v1.1: bytes received 100000
    0x00, 0x01, 0x5F, 0x90,  //       largest queueing delay 90000 µs
    0x00, 0x00, 0x03, 0xE8,  //       smallest queueing delay 1000 µs
    0x00, 0x00, 0x27, 0x10,  //       dispersion bytes 10000
    0x00, 0x01, 0x86, 0xA0,  //       dispersion µs 100000 (0.1 bytes/µs = 800 kbit/s)
    0x00, 0x00, 0x2E, 0xE0,  //       burst bytes 12000
    0x00, 0x00, 0x27, 0x10,  //       burst send span 10000 µs
    0x00, 0x01, 0xD4, 0xC0,  //       burst arrival span 120000 µs
};

const PdfbFeedback kFeedbackV11{.metric = PdfbMetric::kPsnrDb,
                                .performance_valid = true,
                                .queue_delay_valid = true,
                                .media_ssrc = 0xDEADBEEF,
                                .stage_id = 7,
                                .reception_period_us = 1000000,
                                .packets_received = 900,
                                .packets_announced = 1000,
                                .performance = 37.0,
                                .queue_delay_growth_us = -1000,
                                .has_path = true,
                                .bytes_received = 100000,
                                .queue_max_us = 90000,
                                .queue_min_us = 1000,
                                .dispersion_bytes = 10000,
                                .dispersion_us = 100000,
                                .burst_bytes = 12000,
                                .burst_send_us = 10000,
                                .burst_arrival_us = 120000};

// What FFmpeg 5.1 sends back to an RTP sender (libavformat/rtpdec.c,
// ff_rtp_check_and_send_back_rr): one RR with one block, then SDES with the host name as CNAME.
const Bytes kFfmpegReceiverReport = {
    0x81, 0xC9, 0x00, 0x07,  // V=2, RC=1 | PT=201 (RR) | length 7: 32 bytes
    0x12, 0x34, 0x56, 0x79,  // sender SSRC: ffmpeg uses the media SSRC + 1
    0x12, 0x34, 0x56, 0x78,  // block: media SSRC
    0x00,                    // block: fraction lost 0
    0x00, 0x00, 0x05,        // block: cumulative lost 5
    0x00, 0x00, 0x10, 0x00,  // block: extended highest sequence 4096
    0x00, 0x00, 0x00, 0x0C,  // block: jitter 12
    0x00, 0x00, 0x00, 0x00,  // block: LSR 0 (no SR received yet)
    0x00, 0x00, 0x00, 0x00,  // block: DLSR 0
    0x81, 0xCA, 0x00, 0x04,  // V=2, SC=1 | PT=202 (SDES) | length (7 + 6 + 3) / 4 = 4: 20 bytes
    0x12, 0x34, 0x56, 0x79,  // chunk SSRC
    0x01, 0x06,              // item CNAME, 6 bytes
    'f',  'f',  'h',  'o',  's', 't',
    0x00,              // END item
    0x00, 0x00, 0x00,  // padding to 32 bits
};

class CountingVisitor : public RtcpVisitor {
 public:
  void on_sender_report(const SenderReport&) override { ++sr; }
  void on_receiver_report(const ReceiverReport&) override { ++rr; }
  void on_sdes_item(std::uint32_t, std::uint8_t type, std::string_view text) override {
    items.push_back(std::to_string(type) + ":" + std::string(text));
  }
  void on_bye(std::uint32_t ssrc) override { byes.push_back(ssrc); }
  void on_pdfb(std::uint32_t reporter, const PdfbFeedback& fb) override {
    ++pdfb;
    last_reporter = reporter;
    last = fb;
  }
  void on_app(std::uint8_t subtype, std::uint32_t, std::string_view name,
              std::span<const std::uint8_t> data) override {
    apps.push_back(std::string(name) + "/" + std::to_string(subtype) + "/" +
                   std::to_string(data.size()));
  }
  void on_other(std::uint8_t type, std::span<const std::uint8_t> packet) override {
    others.push_back(type);
    other_size = packet.size();
  }

  int sr = 0;
  int rr = 0;
  int pdfb = 0;
  std::uint32_t last_reporter = 0;
  PdfbFeedback last;
  std::vector<std::string> items;
  std::vector<std::uint32_t> byes;
  std::vector<std::string> apps;
  std::vector<std::uint8_t> others;
  std::size_t other_size = 0;
};

TEST(Rtcp, WritesSenderReportFixture) {
  std::array<std::uint8_t, 128> out{};
  auto n = write_sender_report(out, make_sr());
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(Bytes(out.begin(), out.begin() + *n), kSenderReport);
}

TEST(Rtcp, ParsesSenderReportFixture) {
  auto c = parse_rtcp_compound(kSenderReport);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->sender_report);
  EXPECT_FALSE(c->receiver_report);
  EXPECT_EQ(*c->sender_report, make_sr());
  EXPECT_EQ(c->packet_count, 1u);
}

TEST(Rtcp, ReceiverReportRoundTrips) {
  std::array<std::uint8_t, 1024> out{};
  ReceiverReport rr{.ssrc = 0x55667788};
  auto n = write_receiver_report(out, rr);
  ASSERT_TRUE(n);
  EXPECT_EQ(Bytes(out.begin(), out.begin() + *n), kEmptyReceiverReport);

  for (std::size_t k = 0; k < kMaxReportBlocks; ++k) {
    ReportBlock b = kBlock;
    b.ssrc = static_cast<std::uint32_t>(k);
    b.cumulative_lost = static_cast<std::int32_t>(k) * 1000 - 8'388'608;  // from the minimum
    ASSERT_TRUE(rr.blocks.push_back(b));
  }
  EXPECT_FALSE(rr.blocks.push_back(kBlock)) << "RC has five bits";
  n = write_receiver_report(out, rr);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 8 + 31 * kReportBlockSize);
  auto c = parse_rtcp_compound(std::span(out.data(), *n));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->receiver_report);
  EXPECT_EQ(*c->receiver_report, rr);
}

TEST(Rtcp, CumulativeLostIsClampedTo24BitsSigned) {
  ReceiverReport rr;
  ReportBlock b;
  b.cumulative_lost = 10'000'000;
  rr.blocks.push_back(b);
  b.cumulative_lost = -10'000'000;
  rr.blocks.push_back(b);
  std::array<std::uint8_t, 64> out{};
  ASSERT_TRUE(write_receiver_report(out, rr));
  EXPECT_EQ(out[13], 0x7F);  // first block's cumulative lost: 0x7FFFFF
  EXPECT_EQ(out[14], 0xFF);
  EXPECT_EQ(out[37], 0x80);  // second block's: 0x800000
  EXPECT_EQ(out[38], 0x00);
  auto c = parse_rtcp_compound(std::span(out.data(), 56));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->receiver_report->blocks[0].cumulative_lost, 0x7FFFFF);
  EXPECT_EQ(c->receiver_report->blocks[1].cumulative_lost, -0x800000);
}

TEST(Pdfb, WritesFixture) {
  std::array<std::uint8_t, 64> out{};
  auto n = write_pdfb(out, 0x55667788, kFeedback);
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, kPdfbPacketSize);
  EXPECT_EQ(Bytes(out.begin(), out.begin() + *n), kPdfb);
}

TEST(Pdfb, ParsesFixture) {
  std::uint32_t reporter = 0;
  auto fb = parse_pdfb(kPdfb, &reporter);
  ASSERT_TRUE(fb) << fb.error().message;
  EXPECT_EQ(*fb, kFeedback);
  EXPECT_EQ(reporter, 0x55667788u);
}

TEST(Pdfb, RejectsEveryTruncation) {
  for (std::size_t len = 0; len < kPdfb.size(); ++len) {
    EXPECT_FALSE(parse_pdfb(std::span(kPdfb.data(), len))) << "length " << len;
  }
  const std::span<const std::uint8_t> payload(kPdfb.data() + 12, kPdfbPayloadSize);
  for (std::size_t len = 0; len < payload.size(); ++len) {
    EXPECT_FALSE(parse_pdfb_payload(payload.first(len))) << "payload length " << len;
  }
}

TEST(Pdfb, VersionRules) {
  Bytes v2 = kPdfb;
  v2[12] = 0x02;  // major 2
  auto r = parse_pdfb(v2);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("major version 2"), std::string::npos) << r.error().message;
  Bytes v0 = kPdfb;
  v0[12] = 0x00;
  EXPECT_FALSE(parse_pdfb(v0));
  // A minor above 0 must carry v1.1's eight words: the v1.0 size under minor 1 or 15 is cut.
  Bytes v1_15 = kPdfb;
  v1_15[12] = 0xF1;
  r = parse_pdfb(v1_15);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("truncated"), std::string::npos) << r.error().message;
  Bytes v1_1_short = concat({kPdfb, {0xCA, 0xFE, 0xBA, 0xBE}});
  v1_1_short[3] = 0x0C;   // length 12 words: one appended word, not eight
  v1_1_short[12] = 0x11;  // major 1, minor 1
  EXPECT_FALSE(parse_pdfb(v1_1_short));

  // A later minor (1.2) appends a word after v1.1's: a v1.1 reader reads its fields, skips it.
  Bytes v1_2 = concat({kPdfbV11, {0xCA, 0xFE, 0xBA, 0xBE}});
  v1_2[3] = 0x14;   // length 20 words
  v1_2[12] = 0x21;  // major 1, minor 2
  auto fb = parse_pdfb(v1_2);
  ASSERT_TRUE(fb) << fb.error().message;
  EXPECT_EQ(*fb, kFeedbackV11);

  // The v1.1 words under minor 0 are an error: v1.0 is exactly 36 bytes.
  Bytes v1_0_long = kPdfbV11;
  v1_0_long[12] = 0x01;
  r = parse_pdfb(v1_0_long);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("trailing"), std::string::npos) << r.error().message;
}

TEST(Pdfb, V11WritesAndParsesFixture) {
  std::array<std::uint8_t, 96> out{};
  auto n = write_pdfb(out, 0x55667788, kFeedbackV11);
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, kPdfbPacketSizeV11);
  EXPECT_EQ(Bytes(out.begin(), out.begin() + *n), kPdfbV11);
  std::uint32_t reporter = 0;
  auto fb = parse_pdfb(kPdfbV11, &reporter);
  ASSERT_TRUE(fb) << fb.error().message;
  EXPECT_EQ(*fb, kFeedbackV11);
  EXPECT_EQ(reporter, 0x55667788u);
  // Without the path fields the writer still writes exactly v1.0, what a v1.0 reader expects.
  PdfbFeedback v10 = kFeedbackV11;
  v10.has_path = false;
  n = write_pdfb(out, 0x55667788, v10);
  ASSERT_TRUE(n);
  EXPECT_EQ(Bytes(out.begin(), out.begin() + *n), kPdfb);
}

TEST(Pdfb, V11RejectsEveryTruncationAndRoundTripsInACompound) {
  for (std::size_t len = 0; len < kPdfbV11.size(); ++len) {
    EXPECT_FALSE(parse_pdfb(std::span(kPdfbV11.data(), len))) << "length " << len;
  }
  const std::span<const std::uint8_t> payload(kPdfbV11.data() + 12, kPdfbPayloadSizeV11);
  for (std::size_t len = 0; len < payload.size(); ++len) {
    EXPECT_FALSE(parse_pdfb_payload(payload.first(len))) << "payload length " << len;
  }
  std::array<std::uint8_t, 256> out{};
  ReceiverReport rr;
  rr.ssrc = 0x55667788;
  auto n = write_feedback_compound(out, rr, kFeedbackV11, "predrop");
  ASSERT_TRUE(n) << n.error().message;
  auto c = parse_rtcp_compound(std::span(out.data(), *n));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->pdfb().size(), 1u);
  EXPECT_EQ(c->pdfb()[0], kFeedbackV11);
}

TEST(Pdfb, FieldRules) {
  Bytes metric0 = kPdfb;
  metric0[13] = 0;
  EXPECT_FALSE(parse_pdfb(metric0));
  Bytes metric9 = kPdfb;
  metric9[13] = 9;  // a metric a later version may add: kept, not rejected
  ASSERT_TRUE(parse_pdfb(metric9));
  EXPECT_EQ(static_cast<int>(parse_pdfb(metric9)->metric), 9);

  Bytes reserved_flags = kPdfb;
  reserved_flags[14] = 0xFF;
  reserved_flags[15] = 0xFD;  // all reserved bits set, bit1 (queue delay) clear
  auto fb = parse_pdfb(reserved_flags);
  ASSERT_TRUE(fb);
  EXPECT_TRUE(fb->performance_valid);
  EXPECT_FALSE(fb->queue_delay_valid);

  Bytes nan = kPdfb;
  nan[36] = 0x7F;  // P = NaN (0x7FF8...)
  nan[37] = 0xF8;
  EXPECT_FALSE(parse_pdfb(nan)) << "P marked valid must be finite";
  nan[15] = 0x02;  // P not valid: its value does not matter
  EXPECT_TRUE(parse_pdfb(nan));

  Bytes wrong_name = kPdfb;
  wrong_name[11] = 'C';
  EXPECT_FALSE(parse_pdfb(wrong_name));
  Bytes wrong_subtype = kPdfb;
  wrong_subtype[0] = 0x81;
  EXPECT_FALSE(parse_pdfb(wrong_subtype));
  Bytes wrong_type = kPdfb;
  wrong_type[1] = kRtcpBye;
  EXPECT_FALSE(parse_pdfb(wrong_type));
}

TEST(Pdfb, WriterRejectsInvalidFeedback) {
  std::array<std::uint8_t, 64> out{};
  PdfbFeedback fb = kFeedback;
  fb.performance = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(write_pdfb(out, 1, fb));
  fb.performance_valid = false;
  EXPECT_TRUE(write_pdfb(out, 1, fb));
  fb.metric = static_cast<PdfbMetric>(0);
  EXPECT_FALSE(write_pdfb(out, 1, fb));
}

TEST(Pdfb, Saturation) {
  EXPECT_EQ(saturate_u32(5'000'000'000ull), 0xFFFFFFFFu);
  EXPECT_EQ(saturate_u32(42), 42u);
  EXPECT_EQ(saturate_i32(-5'000'000'000ll), std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(saturate_i32(5'000'000'000ll), std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(saturate_i32(-7), -7);
}

TEST(RtcpCompound, FeedbackCompoundFixture) {
  std::array<std::uint8_t, 256> out{};
  auto n = write_feedback_compound(out, ReceiverReport{.ssrc = 0x55667788}, kFeedback);
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(Bytes(out.begin(), out.begin() + *n), concat({kEmptyReceiverReport, kPdfb}));

  auto c = parse_rtcp_compound(std::span(out.data(), *n));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->receiver_report);
  EXPECT_EQ(c->receiver_report->ssrc, 0x55667788u);
  EXPECT_TRUE(c->receiver_report->blocks.empty());
  ASSERT_EQ(c->pdfb().size(), 1u);
  EXPECT_EQ(c->pdfb()[0], kFeedback);
  EXPECT_EQ(c->packet_count, 2u);
}

TEST(RtcpCompound, FeedbackCompoundWithCnameAndSeveralReports) {
  ReceiverReport rr{.ssrc = 9};
  rr.blocks.push_back(kBlock);
  std::array<PdfbFeedback, 5> reports{};
  for (std::size_t i = 0; i < reports.size(); ++i) {
    reports[i] = kFeedback;
    reports[i].stage_id = static_cast<std::uint32_t>(100 + i);
  }
  std::array<std::uint8_t, 512> out{};
  auto n = write_feedback_compound(out, rr, reports, "client@predrop");
  ASSERT_TRUE(n) << n.error().message;
  auto c = parse_rtcp_compound(std::span(out.data(), *n));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(*c->receiver_report, rr);
  EXPECT_EQ(c->cname, "client@predrop");
  ASSERT_EQ(c->feedback_count, kMaxPdfbPerCompound);
  EXPECT_EQ(c->feedback_dropped, 1u);
  for (std::size_t i = 0; i < kMaxPdfbPerCompound; ++i)
    EXPECT_EQ(c->pdfb()[i], reports[i]);

  CountingVisitor v;  // the visitor sees all five, with the RR's SSRC as reporter
  ASSERT_TRUE(parse_rtcp_compound(std::span(out.data(), *n), v));
  EXPECT_EQ(v.pdfb, 5);
  EXPECT_EQ(v.last_reporter, 9u);
  EXPECT_EQ(v.last.stage_id, 104u);

  EXPECT_FALSE(write_feedback_compound(out, rr, std::span<const PdfbFeedback>{}));
}

TEST(RtcpCompound, SenderReportWithCname) {
  std::array<std::uint8_t, 256> out{};
  auto n = write_sender_report_compound(out, make_sr(), "server");
  ASSERT_TRUE(n);
  // SR (52) + SDES: header 4 + SSRC 4 + type, length, "server", END = 9 -> 12.
  EXPECT_EQ(*n, 52u + 4 + 4 + 12);
  auto c = parse_rtcp_compound(std::span(out.data(), *n));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(*c->sender_report, make_sr());
  EXPECT_EQ(c->cname, "server");
  auto alone = write_sender_report_compound(out, make_sr());
  ASSERT_TRUE(alone);
  EXPECT_EQ(*alone, 52u);
}

TEST(RtcpCompound, CnameSizesAndPadding) {
  std::array<std::uint8_t, 300> out{};
  for (std::size_t len = 0; len <= 255; ++len) {
    const std::string cname(len, 'x');
    auto n = write_sdes_cname(out, 1, cname);
    ASSERT_TRUE(n);
    EXPECT_EQ(*n % 4, 0u);
    // Always room for at least one null octet after the text.
    EXPECT_GE(*n, 4 + 4 + 2 + len + 1);
    EXPECT_LE(*n, 4 + 4 + 2 + len + 4);
  }
  EXPECT_FALSE(write_sdes_cname(out, 1, std::string(256, 'x')));
}

TEST(RtcpCompound, ParsesFfmpegReceiverReport) {
  auto c = parse_rtcp_compound(kFfmpegReceiverReport);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->receiver_report);
  EXPECT_EQ(c->receiver_report->ssrc, 0x12345679u);
  ASSERT_EQ(c->receiver_report->blocks.size(), 1u);
  const ReportBlock& b = c->receiver_report->blocks[0];
  EXPECT_EQ(b.ssrc, 0x12345678u);
  EXPECT_EQ(b.cumulative_lost, 5);
  EXPECT_EQ(b.extended_highest_sequence, 4096u);
  EXPECT_EQ(b.jitter, 12u);
  EXPECT_EQ(c->cname, "ffhost");
  EXPECT_EQ(c->feedback_count, 0u);
  EXPECT_EQ(c->packet_count, 2u);
}

TEST(RtcpCompound, ParsesFfmpegPunchReceiverReport) {
  // libavformat's rtp_send_punch_packets(): an RR with SSRC 0 and no blocks.
  const Bytes punch = {0x80, 0xC9, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00};
  auto c = parse_rtcp_compound(punch);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->receiver_report->blocks.empty());
}

TEST(RtcpCompound, VisitorSeesEveryPacketKind) {
  const Bytes compound = concat({
      kFfmpegReceiverReport,
      {
          0x82, 0xCA, 0x00, 0x06,       // SDES, SC=2, length 6: 28 bytes
          0x00, 0x00, 0x00, 0x01,       // chunk 1 SSRC
          0x01, 0x01, 'a',              //   CNAME "a"
          0x06, 0x03, 'g',  's',  't',  //   TOOL "gst"
          0x00, 0x00, 0x00, 0x00,       //   END + padding
          0x00, 0x00, 0x00, 0x02,       // chunk 2 SSRC
          0x01, 0x01, 'b',  0x00,       //   CNAME "b", END
      },
      {
          0x81, 0xCB, 0x00, 0x02,  // BYE, SC=1, length 2: 12 bytes
          0x12, 0x34, 0x56, 0x78,  // SSRC
          0x03, 'b', 'y', 'e',     // reason "bye"
      },
      {
          0x83, 0xCC, 0x00, 0x03,  // APP, subtype 3, length 3: 16 bytes
          0x00, 0x00, 0x00, 0x09,  // SSRC
          'T', 'E', 'S', 'T',      // name
          0x01, 0x02, 0x03, 0x04,  // data
      },
      {
          0x81, 0xCD, 0x00, 0x03,  // RTPFB (205) generic NACK, length 3: 16 bytes
          0x00, 0x00, 0x00, 0x01,  // sender SSRC
          0x00, 0x00, 0x00, 0x02,  // media SSRC
          0x00, 0x10, 0x00, 0x00,  // PID 16, BLP 0
      },
      kPdfb,
  });
  CountingVisitor v;
  auto s = parse_rtcp_compound(compound, v);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(v.rr, 1);
  EXPECT_EQ(v.sr, 0);
  EXPECT_EQ(v.items, (std::vector<std::string>{"1:ffhost", "1:a", "6:gst", "1:b"}));
  EXPECT_EQ(v.byes, (std::vector<std::uint32_t>{0x12345678}));
  EXPECT_EQ(v.apps, (std::vector<std::string>{"TEST/3/4"}));
  EXPECT_EQ(v.others, (std::vector<std::uint8_t>{205}));
  EXPECT_EQ(v.other_size, 16u);
  EXPECT_EQ(v.pdfb, 1);
  EXPECT_EQ(v.last, kFeedback);
  auto c = parse_rtcp_compound(compound);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->has_bye);
  EXPECT_EQ(c->packet_count, 7u);
}

TEST(RtcpCompound, PdfbWithAnotherSubtypeIsPlainApp) {
  Bytes other = kPdfb;
  other[0] = 0x81;  // subtype 1 is not ours
  CountingVisitor v;
  ASSERT_TRUE(parse_rtcp_compound(concat({kEmptyReceiverReport, other}), v));
  EXPECT_EQ(v.pdfb, 0);
  EXPECT_EQ(v.apps, (std::vector<std::string>{"PDFB/1/36"}));
}

TEST(RtcpCompound, RejectsEveryTruncation) {
  const Bytes compound = concat({kFfmpegReceiverReport, kPdfb});  // packets end at 32, 52, 100
  for (std::size_t len = 0; len < compound.size(); ++len) {
    auto c = parse_rtcp_compound(std::span(compound.data(), len));
    if (len == 32 || len == 52) {
      EXPECT_TRUE(c) << "a cut at a packet boundary is a shorter valid compound, length " << len;
    } else {
      EXPECT_FALSE(c) << "length " << len;
    }
  }
  EXPECT_TRUE(parse_rtcp_compound(compound));
}

TEST(RtcpCompound, FramingRules) {
  EXPECT_FALSE(parse_rtcp_compound(Bytes{}));
  EXPECT_FALSE(parse_rtcp_compound(Bytes{0x80, 0xC9, 0x00}));

  Bytes bad_version = kEmptyReceiverReport;
  bad_version[0] = 0x40;
  EXPECT_FALSE(parse_rtcp_compound(bad_version));
  Bytes second_bad_version = concat({kEmptyReceiverReport, kPdfb});
  second_bad_version[8] = 0xC0;
  auto r = parse_rtcp_compound(second_bad_version);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("version"), std::string::npos);

  // First packet must be SR or RR (RFC 3550 §6.1).
  auto first = parse_rtcp_compound(kPdfb);
  ASSERT_FALSE(first);
  EXPECT_NE(first.error().message.find("SR or RR"), std::string::npos);

  // Lengths must add up to the datagram: trailing bytes that are not a packet are rejected.
  EXPECT_FALSE(parse_rtcp_compound(concat({kEmptyReceiverReport, {0x00, 0x00}})));
  Bytes too_long = kEmptyReceiverReport;
  too_long[3] = 0x02;  // claims 12 bytes
  EXPECT_FALSE(parse_rtcp_compound(too_long));

  // RC claims more blocks than the packet holds.
  Bytes rc_overrun = kEmptyReceiverReport;
  rc_overrun[0] = 0x81;
  EXPECT_FALSE(parse_rtcp_compound(rc_overrun));
  Bytes sr_short = {0x80, 0xC8, 0x00, 0x01, 0, 0, 0, 1};  // SR without sender info
  EXPECT_FALSE(parse_rtcp_compound(sr_short));

  // SDES and BYE bodies that overrun their packet.
  EXPECT_FALSE(parse_rtcp_compound(
      concat({kEmptyReceiverReport, {0x81, 0xCA, 0x00, 0x02, 0, 0, 0, 1, 0x01, 0x09, 'a', 'b'}})));
  EXPECT_FALSE(
      parse_rtcp_compound(concat({kEmptyReceiverReport, {0x82, 0xCA, 0x00, 0x01, 0, 0, 0, 1}})));
  EXPECT_FALSE(
      parse_rtcp_compound(concat({kEmptyReceiverReport, {0x82, 0xCB, 0x00, 0x01, 0, 0, 0, 1}})));
  EXPECT_FALSE(
      parse_rtcp_compound(concat({kEmptyReceiverReport, {0x80, 0xCC, 0x00, 0x01, 0, 0, 0, 1}})));
}

TEST(RtcpCompound, PaddingRules) {
  const Bytes padded_app = {
      0xA0, 0xCC, 0x00, 0x03,  // V=2, P=1, subtype 0 | APP | length 3: 16 bytes
      0x00, 0x00, 0x00, 0x09,  // SSRC
      'T',  'E',  'S',  'T',   // name
      0x00, 0x00, 0x00, 0x04,  // 4 bytes of padding, the last counts them
  };
  CountingVisitor v;
  ASSERT_TRUE(parse_rtcp_compound(concat({kEmptyReceiverReport, padded_app}), v));
  EXPECT_EQ(v.apps, (std::vector<std::string>{"TEST/0/0"}));

  Bytes padded_first = concat({kEmptyReceiverReport, kPdfb});
  padded_first[0] |= 0x20;
  EXPECT_FALSE(parse_rtcp_compound(padded_first)) << "padding only on the last packet";

  Bytes zero = concat({kEmptyReceiverReport, padded_app});
  zero.back() = 0;
  EXPECT_FALSE(parse_rtcp_compound(zero));
  Bytes huge = concat({kEmptyReceiverReport, padded_app});
  huge.back() = 13;  // more than the 12-byte body
  EXPECT_FALSE(parse_rtcp_compound(huge));
}

TEST(Rtcp, WritersRejectShortBuffers) {
  std::array<std::uint8_t, 256> out{};
  ReceiverReport rr{.ssrc = 1};
  rr.blocks.push_back(kBlock);
  const auto sr = make_sr();
  for (std::size_t len = 0; len < 52; ++len) {
    const std::span<std::uint8_t> small(out.data(), len);
    EXPECT_FALSE(write_sender_report(small, sr)) << len;
    if (len < 32) {
      EXPECT_FALSE(write_receiver_report(small, rr)) << len;
    }
    if (len < 48) {
      EXPECT_FALSE(write_pdfb(small, 1, kFeedback)) << len;
    }
    if (len < 16) {
      EXPECT_FALSE(write_sdes_cname(small, 1, "abc")) << len;
    }
    if (len < 8) {
      EXPECT_FALSE(write_bye(small, 1)) << len;
    }
  }
  for (std::size_t len = 0; len < 32 + 16 + 48; ++len) {
    EXPECT_FALSE(write_feedback_compound(std::span(out.data(), len), rr, kFeedback, "abc")) << len;
  }
  EXPECT_TRUE(write_feedback_compound(std::span(out.data(), 96), rr, kFeedback, "abc"));
}

TEST(Rtcp, ByeRoundTrip) {
  std::array<std::uint8_t, 64> out{};
  auto n = write_receiver_report(out, ReceiverReport{.ssrc = 3});
  ASSERT_TRUE(n);
  auto m = write_bye(std::span(out).subspan(*n), 3);
  ASSERT_TRUE(m);
  CountingVisitor v;
  ASSERT_TRUE(parse_rtcp_compound(std::span(out.data(), *n + *m), v));
  EXPECT_EQ(v.byes, (std::vector<std::uint32_t>{3}));
}

TEST(Rtcp, Helpers) {
  EXPECT_EQ(ntp_from_unix_us(0), kNtpUnixOffsetSeconds << 32);
  EXPECT_EQ(ntp_from_unix_us(1'500'000), ((kNtpUnixOffsetSeconds + 1) << 32) | 0x80000000u);
  EXPECT_EQ(ntp_compact(0xE800000080000000), 0x00008000u);
  EXPECT_TRUE(looks_like_rtcp(kEmptyReceiverReport));
  EXPECT_TRUE(looks_like_rtcp(kPdfb));
  const Bytes rtp = {0x80, 0xE0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1};  // PT 96 with marker: 0xE0 = 224
  EXPECT_FALSE(looks_like_rtcp(rtp));
  EXPECT_FALSE(looks_like_rtcp(Bytes{0x80, 0xC9}));
}

}  // namespace
}  // namespace predrop::wire
