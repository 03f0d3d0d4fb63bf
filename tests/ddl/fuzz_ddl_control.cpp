// Fuzzes the DDL control parser (ddl/include/predrop/ddl/protocol.hpp): parse_control() must never
// crash, and whatever it accepts must write back and parse again to the same messages.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_check.hpp"
#include "predrop/ddl/protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto m = predrop::ddl::parse_control(std::span<const std::uint8_t>(data, size));
  if (!m.ok()) return 0;
  // A PDFB whose P is not valid may carry any bits there; written again it is 0.
  predrop::ddl::ControlMessage& msg = m.value();
  if (msg.feedback && !msg.feedback->performance_valid) msg.feedback->performance = 0.0;
  std::vector<std::uint8_t> out(predrop::ddl::kMaxControlDatagram);
  auto n = predrop::ddl::write_control(out, *m);
  PREDROP_FUZZ_CHECK(n.ok());
  auto again = predrop::ddl::parse_control(std::span<const std::uint8_t>(out.data(), *n));
  PREDROP_FUZZ_CHECK(again.ok());
  PREDROP_FUZZ_CHECK(again->sender_ssrc == m->sender_ssrc);
  PREDROP_FUZZ_CHECK(again->join == m->join);
  PREDROP_FUZZ_CHECK(again->answer == m->answer);
  PREDROP_FUZZ_CHECK(again->stage_closed == m->stage_closed);
  PREDROP_FUZZ_CHECK(again->bye == m->bye);
  PREDROP_FUZZ_CHECK(again->feedback.has_value() == m->feedback.has_value());
  return 0;
}
