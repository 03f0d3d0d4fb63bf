// Fuzzes what a WebRTC session does with any datagram on its socket: the RFC 7983 demux, and for
// what it calls STUN, the ICE-lite responder (forged checks must never nominate or verify).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_check.hpp"
#include "predrop/webrtc/demux.hpp"
#include "predrop/webrtc/ice_lite.hpp"
#include "predrop/webrtc/stun.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace predrop::webrtc;
  const std::span<const std::uint8_t> in(data, size);
  const PacketKind kind = classify_packet(in);
  PREDROP_FUZZ_CHECK(size > 0 || kind == PacketKind::Unknown);
  if (kind != PacketKind::Stun) return 0;

  // A password no fuzzer input can know: a check that passes would be a forgery.
  static IceLiteAgent agent({"fuzzufrg", "never-derivable-by-a-fuzzer-0f3a"}, "");
  std::array<std::uint8_t, 512> resp{};
  std::size_t n = 0;
  const auto from = predrop::net::SocketAddress::v4({192, 0, 2, 9}, 4000);
  const IceVerdict v = agent.on_stun(1, from, in, resp, n);
  PREDROP_FUZZ_CHECK(v != IceVerdict::Respond);
  PREDROP_FUZZ_CHECK(n == 0 && !agent.selected().has_value() && !agent.is_verified(from));
  return 0;
}
