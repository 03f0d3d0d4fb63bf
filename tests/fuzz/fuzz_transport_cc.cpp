// Fuzzes parse_transport_cc(): every accepted message reports exactly its status count of
// consecutive sequence numbers, and writing them back parses to the same packets.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_check.hpp"
#include "predrop/wire/transport_cc.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace predrop::wire;
  std::vector<TwccPacket> packets;
  const auto f = parse_transport_cc(std::span(data, size), packets);
  if (!f) {
    PREDROP_FUZZ_CHECK(packets.empty());
    return 0;
  }
  PREDROP_FUZZ_CHECK(packets.size() == f->status_count);
  for (std::size_t i = 0; i < packets.size(); ++i) {
    PREDROP_FUZZ_CHECK(packets[i].sequence == static_cast<std::uint16_t>(f->base_sequence + i));
  }
  if (packets.empty()) return 0;
  std::vector<std::uint8_t> buf(24 + 2 * packets.size() + 2 * ((packets.size() + 6) / 7));
  const std::size_t n = write_transport_cc(*f, packets, buf);
  PREDROP_FUZZ_CHECK(n > 0);
  std::vector<TwccPacket> back;
  const auto g = parse_transport_cc(std::span(buf.data(), n), back);
  PREDROP_FUZZ_CHECK(g.has_value() && back == packets);
  PREDROP_FUZZ_CHECK(g->reference_time == f->reference_time && g->media_ssrc == f->media_ssrc);
  return 0;
}
