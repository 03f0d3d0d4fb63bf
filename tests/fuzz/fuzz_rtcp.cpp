// Fuzzes parse_rtcp_compound() (both the visitor and the summary form, which must agree) and
// checks round trips: the first SR/RR and every PDFB written again parse back to equal values,
// and an RR + CNAME + PDFB compound rebuilt from the summary parses back to the same summary.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_check.hpp"
#include "predrop/wire/pdal.hpp"
#include "predrop/wire/pdct.hpp"
#include "predrop/wire/rtcp.hpp"

namespace {
using namespace predrop::wire;

// Equality with P compared bit for bit, so that a NaN P (allowed when not marked valid) still
// counts as equal to itself.
bool same(const PdfbFeedback& a, const PdfbFeedback& b) {
  PdfbFeedback x = a;
  PdfbFeedback y = b;
  const bool same_p =
      std::bit_cast<std::uint64_t>(a.performance) == std::bit_cast<std::uint64_t>(b.performance);
  x.performance = y.performance = 0.0;
  return same_p && x == y;
}

class Recorder : public RtcpVisitor {
 public:
  void on_sender_report(const SenderReport&) override { ++reports; }
  void on_receiver_report(const ReceiverReport&) override { ++reports; }
  void on_pdfb(std::uint32_t, const PdfbFeedback& fb) override { pdfbs.push_back(fb); }
  int reports = 0;
  std::vector<PdfbFeedback> pdfbs;
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> in(data, size);
  (void)looks_like_rtcp(in);
  (void)parse_pdfb(in);
  // PDAL (the interim alert): any payload either fails cleanly or writes back to its first
  // 24 bytes (reserved bytes and what a later minor appends are not kept).
  if (auto alert = parse_pdal_payload(in)) {
    std::array<std::uint8_t, kPdalPacketSize> pdal{};
    auto n = write_pdal(pdal, 0x01020304, *alert);
    PREDROP_FUZZ_CHECK(n && *n == kPdalPacketSize);
    auto again = parse_pdal_payload(std::span<const std::uint8_t>(pdal).subspan(12));
    PREDROP_FUZZ_CHECK(again && *again == *alert);
  }
  // PDCT (a live stream's capture clock): the same rules, 16 bytes; dating any timestamp by it
  // is defined (no overflow) for any clock.
  if (auto clock = parse_pdct_payload(in)) {
    std::array<std::uint8_t, kPdctPacketSize> pdct{};
    auto n = write_pdct(pdct, 0x01020304, *clock);
    PREDROP_FUZZ_CHECK(n && *n == kPdctPacketSize);
    auto again = parse_pdct_payload(std::span<const std::uint8_t>(pdct).subspan(12));
    PREDROP_FUZZ_CHECK(again && *again == *clock);
    (void)pdct_capture_unix_us(*clock, clock->rtp_timestamp ^ 0x80000000u, 90000);
  }

  Recorder rec;
  const auto walked = parse_rtcp_compound(in, rec);
  const auto c = parse_rtcp_compound(in);
  PREDROP_FUZZ_CHECK(walked.ok() == c.ok());
  if (!c) return 0;
  PREDROP_FUZZ_CHECK(c->sender_report.has_value() != c->receiver_report.has_value());
  PREDROP_FUZZ_CHECK(rec.reports >= 1);
  PREDROP_FUZZ_CHECK(c->feedback_count + c->feedback_dropped == rec.pdfbs.size());
  for (std::size_t i = 0; i < c->feedback_count; ++i) {
    PREDROP_FUZZ_CHECK(same(c->feedback[i], rec.pdfbs[i]));
  }

  std::vector<std::uint8_t> out(2048);
  if (c->sender_report) {
    auto n = write_sender_report(out, *c->sender_report);
    PREDROP_FUZZ_CHECK(n);
    auto back = parse_rtcp_compound(std::span(out.data(), *n));
    PREDROP_FUZZ_CHECK(back && back->sender_report && *back->sender_report == *c->sender_report);
  }
  for (const PdfbFeedback& fb : rec.pdfbs) {
    auto n = write_pdfb(out, 0x01020304, fb);
    PREDROP_FUZZ_CHECK(n);
    std::uint32_t reporter = 0;
    auto back = parse_pdfb(std::span(out.data(), *n), &reporter);
    PREDROP_FUZZ_CHECK(back && same(*back, fb) && reporter == 0x01020304);
  }
  if (c->receiver_report) {
    auto n = c->feedback_count == 0
                 ? write_receiver_report(out, *c->receiver_report)
                 : write_feedback_compound(out, *c->receiver_report, c->pdfb(), c->cname);
    PREDROP_FUZZ_CHECK(n);
    auto back = parse_rtcp_compound(std::span(out.data(), *n));
    PREDROP_FUZZ_CHECK(back && back->receiver_report);
    PREDROP_FUZZ_CHECK(*back->receiver_report == *c->receiver_report);
    PREDROP_FUZZ_CHECK(back->feedback_count == c->feedback_count);
    for (std::size_t i = 0; i < c->feedback_count; ++i) {
      PREDROP_FUZZ_CHECK(same(back->feedback[i], c->feedback[i]));
    }
    if (c->feedback_count != 0) PREDROP_FUZZ_CHECK(back->cname == c->cname);
  }
  return 0;
}
