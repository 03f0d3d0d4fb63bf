// The packet path must not allocate (docs/design.md §5): this binary links the counting operator
// new of tests/support/allocation_counter.cpp and checks that successful parses and writes of
// every codec allocate nothing. Errors may allocate (they carry a message) and are not checked
// here.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "allocation_counter.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/rtp.hpp"

namespace predrop::wire {
namespace {

using test::AllocationScope;

TEST(CodecNoAlloc, CounterSeesAllocations) {
  // An error carries a heap-allocated message: proof that the counter is wired up.
  AllocationScope scope;
  auto r = parse_rtp(std::span<const std::uint8_t>{});
  ASSERT_FALSE(r);
  EXPECT_GT(scope.count(), 0u);
}

TEST(CodecNoAlloc, RtpWriteParsePatch) {
  const RtpExtensionIds ids{.stage = 1, .abs_send_time = 2};
  std::array<std::uint8_t, 1500> buf{};
  const std::array<std::uint8_t, 100> payload{};
  auto layout = RtpHeaderLayout::create(ids);
  ASSERT_TRUE(layout);

  AllocationScope scope;
  for (std::uint16_t seq = 0; seq < 100; ++seq) {
    const RtpHeader h{
        .marker = false, .payload_type = 96, .sequence = seq, .timestamp = seq, .ssrc = 7};
    auto n = write_rtp_packet(buf, h, {ids, {1, seq, 100}, seq}, payload);
    ASSERT_TRUE(n);
    ASSERT_TRUE(layout->patch(buf, h, {2, seq, 100}, 5));
    ASSERT_TRUE(layout->patch_abs_send_time(buf, 6));
    auto v = parse_rtp(std::span(buf.data(), *n), ids);
    ASSERT_TRUE(v);
    ASSERT_TRUE(v->stage);
  }
  EXPECT_EQ(scope.count(), 0u);
}

TEST(CodecNoAlloc, RtcpWriteParse) {
  std::array<std::uint8_t, 1500> buf{};
  ReceiverReport rr{.ssrc = 1};
  rr.blocks.push_back(ReportBlock{.ssrc = 2});
  PdfbFeedback fb{.performance_valid = true, .performance = 40.0};
  SenderReport sr{.ssrc = 3};

  AllocationScope scope;
  auto n = write_feedback_compound(buf, rr, fb, "cname");
  ASSERT_TRUE(n);
  auto c = parse_rtcp_compound(std::span(buf.data(), *n));
  ASSERT_TRUE(c);
  ASSERT_EQ(c->feedback_count, 1u);
  RtcpVisitor ignore_all;
  ASSERT_TRUE(parse_rtcp_compound(std::span(buf.data(), *n), ignore_all));
  auto m = write_sender_report_compound(buf, sr, "cname");
  ASSERT_TRUE(m);
  ASSERT_TRUE(parse_rtcp_compound(std::span(buf.data(), *m)));
  EXPECT_EQ(scope.count(), 0u);
}

}  // namespace
}  // namespace predrop::wire
