// Fuzzes the transport-cc edge of chain::FeedbackIntake (docs/webrtc.md "Adaptation from
// transport-cc"): an RTCP datagram (plain: the session has no SRTP, so the bytes reach the
// framing walk and parse_transport_cc as they are), in a compound or alone, read against a send
// log of two stages and a ledger that holds them. Checks that every report names a stage the
// ledger holds, with its R, and that no stage reports more packets received than announced.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_check.hpp"
#include "predrop/chain/feedback_intake.hpp"
#include "predrop/chain/report_ledger.hpp"
#include "predrop/chain/transport_feedback.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace predrop;
  if (size > 4096) return 0;
  chain::StageLedger ledger;
  for (std::uint32_t s = 0; s < 3; ++s) {
    chain::StageRecord& r =
        ledger.open(s, std::uint64_t{1'000'000} * (s + 4), [](const chain::StageRecord&) {});
    r.rate = 0.1 * (s + 1);
    r.packets = 10;
    r.ended = true;
  }
  chain::TransportFeedback twcc;
  for (std::uint16_t i = 0; i < 20; ++i) {
    twcc.send_log().record(i, chain::SentPacket{1'000'000u + i * 1000u, 1u + i / 10u,
                                                static_cast<std::uint16_t>(i % 10), 10, 1242});
  }
  chain::IntakeConfig config;
  config.tracks.push_back(chain::IntakeTrack{0x1111, 0, 90000, std::nullopt, {}});
  config.pdfb = false;
  config.rr_reports = true;
  chain::FeedbackIntake intake(config);
  intake.set_transport_feedback(&twcc);
  std::vector<std::uint8_t> buffer(data, data + size);
  buffer.resize(size + 64);
  const std::array<std::uint64_t, 1> sent{30};
  // Twice: the second read meets the meter's state the first left.
  for (int round = 0; round < 2; ++round) {
    std::copy(data, data + size, buffer.begin());
    const chain::Intake& in = intake.read(buffer, size, 0, sent, ledger);
    for (const core::StageReport& r : in.reports) {
      PREDROP_FUZZ_CHECK(ledger.find(r.stage) != nullptr);
      PREDROP_FUZZ_CHECK(r.rate_used.has_value());
      if (in.transport_cc != 0 && r.packets_announced != 0) {
        PREDROP_FUZZ_CHECK(r.packets_received <= r.packets_announced);
      }
    }
  }
  return 0;
}
