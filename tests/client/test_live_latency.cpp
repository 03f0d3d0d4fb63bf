// The measuring client's glass-to-glass latency per block (client/src/live_latency.hpp): the
// server's PDCT in an SR compound sets the capture clock; pictures are dated by their RTP
// timestamps from it; a block's mean and largest latency; nothing before the first clock. And
// the client's glue around it (client/src/live_latency_meter.hpp): pictures back to their RTP
// timestamps, into the block whose start is the latest at or before them, on a fake wall clock.
#include "live_latency.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "live_latency_meter.hpp"
#include "predrop/wire/rtcp.hpp"

namespace predrop::client {
namespace {

// An SR compound of SSRC 7 with a PDCT: RTP 90000 was captured at Unix 1 800 000 000 s.
std::vector<std::uint8_t> sr_with_pdct() {
  std::vector<std::uint8_t> c = {
      0x80, 0xC8, 0x00, 0x06, 0, 0, 0, 7,  // SR, SSRC 7
      0xEE, 0xF4, 0x50, 0x80, 0, 0, 0, 0,  // NTP
      0,    1,    0x5F, 0x90, 0, 0, 0, 1,  // RTP 90000, 1 packet
      0,    0,    0,    10,                // octets
  };
  std::array<std::uint8_t, wire::kPdctPacketSize> app{};
  const auto n = wire::write_pdct(app, 7, wire::PdctClock{90000, 0xEEF4508000000000ULL});
  EXPECT_TRUE(n.ok());
  c.insert(c.end(), app.begin(), app.end());
  return c;
}

constexpr std::int64_t kCaptured = 1'800'000'000'000'000;  // µs, of RTP 90000

TEST(LiveLatency, DatesPicturesByTheServersCaptureClockPerBlock) {
  LiveLatency l;
  l.on_picture(1, 90000, kCaptured + 500'000);
  EXPECT_FALSE(l.take(1)) << "no clock yet: nothing dated";
  const std::vector<std::uint8_t> compound = sr_with_pdct();
  const std::vector<std::uint8_t> plain_sr(compound.begin(), compound.begin() + 28);
  EXPECT_FALSE(l.on_rtcp(plain_sr)) << "an SR without PDCT (a file stream)";
  EXPECT_FALSE(l.on_rtcp(std::vector<std::uint8_t>{1, 2, 3})) << "no RTCP";
  ASSERT_TRUE(l.on_rtcp(sr_with_pdct()));
  // Block 2: pictures at RTP 90000 and 93600 (40 ms later), decoded 900 and 1000 ms after
  // their capture.
  l.on_picture(2, 90000, kCaptured + 900'000);
  l.on_picture(2, 93600, kCaptured + 40'000 + 1'000'000);
  // Block 3: one picture 1 s on, across nothing: 800 ms.
  l.on_picture(3, 180000, kCaptured + 1'000'000 + 800'000);
  const auto b2 = l.take(2);
  ASSERT_TRUE(b2);
  EXPECT_DOUBLE_EQ(b2->mean_ms, 950.0);
  EXPECT_DOUBLE_EQ(b2->max_ms, 1000.0);
  EXPECT_EQ(b2->pictures, 2u);
  EXPECT_FALSE(l.take(2)) << "taken once";
  const auto b3 = l.take(3);
  ASSERT_TRUE(b3);
  EXPECT_DOUBLE_EQ(b3->mean_ms, 800.0);
}

std::int64_t g_wall_us = 0;
std::int64_t fake_wall() {
  return g_wall_us;
}

TEST(LiveLatencyMeter, DatesEachPictureIntoTheBlockThatStartedLatestBeforeIt) {
  LiveLatencyMeter m(std::nullopt, &fake_wall);
  // Pictures at pts 0 and 3600 (40 ms) are RTP 90000 and 93600; block 1 starts at 0, block 2
  // at 3600.
  m.on_access_unit(0, 90000);
  m.on_access_unit(3600, 93600);
  const StageStarts starts = {{1, 0}, {2, 3600}};
  g_wall_us = kCaptured + 900'000;
  m.on_picture(0, starts);
  EXPECT_FALSE(m.take(1)) << "no clock yet: nothing dated";
  m.on_server_rtcp(std::vector<std::uint8_t>(1501, 0));  // too long for an SR: ignored
  m.on_server_rtcp(sr_with_pdct());
  m.on_picture(0, starts);
  g_wall_us = kCaptured + 40'000 + 1'000'000;
  m.on_picture(3600, starts);
  m.on_picture(7200, starts);      // never handed to the decoder: no RTP timestamp
  m.on_picture(-3600, starts);     // before every block's start
  m.on_picture(0, StageStarts{});  // no block known yet
  const auto b1 = m.take(1);
  ASSERT_TRUE(b1);
  EXPECT_DOUBLE_EQ(b1->mean_ms, 900.0);
  EXPECT_EQ(b1->pictures, 1u);
  const auto b2 = m.take(2);
  ASSERT_TRUE(b2);
  EXPECT_DOUBLE_EQ(b2->mean_ms, 1000.0);
  EXPECT_EQ(b2->pictures, 1u);
  // Once the stream is over, the pictures drained from the decoder were held, not late.
  m.drain();
  m.on_picture(3600, starts);
  EXPECT_FALSE(m.take(2));
}

}  // namespace
}  // namespace predrop::client
