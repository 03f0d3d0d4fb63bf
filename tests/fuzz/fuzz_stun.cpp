// Fuzzes parse_stun(): for every message it accepts, the views stay inside the input, the
// integrity check runs without fault, and re-writing what was read parses back to the same
// values (transaction id, USERNAME, PRIORITY, ICE role, USE-CANDIDATE, XOR-MAPPED-ADDRESS).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_check.hpp"
#include "predrop/webrtc/stun.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace predrop::webrtc;
  const std::span<const std::uint8_t> in(data, size);
  const auto m = parse_stun(in);
  if (!m) return 0;
  PREDROP_FUZZ_CHECK(m->size == size);
  PREDROP_FUZZ_CHECK(
      m->username.empty() ||
      (reinterpret_cast<const std::uint8_t*>(m->username.data()) >= data &&
       reinterpret_cast<const std::uint8_t*>(m->username.data()) + m->username.size() <=
           data + size));
  PREDROP_FUZZ_CHECK(m->integrity_offset == 0 || m->integrity_offset + 24 <= size);
  (void)verify_stun_integrity(in, *m, "fuzz-password");

  std::array<std::uint8_t, 1024> out{};
  StunWriter w(out, m->message_class, m->method & 0x0FFF, m->transaction_id);
  if (!m->username.empty()) w.add_text(StunAttr::Username, m->username);
  if (m->priority) w.add_u32(StunAttr::Priority, *m->priority);
  if (m->ice_controlling) w.add_u64(StunAttr::IceControlling, *m->ice_controlling);
  if (m->use_candidate) w.add_flag(StunAttr::UseCandidate);
  if (m->xor_mapped) w.add_xor_mapped_address(*m->xor_mapped);
  w.add_message_integrity("fuzz-password");
  w.add_fingerprint();
  PREDROP_FUZZ_CHECK(w.ok());
  const std::span<const std::uint8_t> written(out.data(), w.size());
  const auto back = parse_stun(written);
  PREDROP_FUZZ_CHECK(back.has_value());
  PREDROP_FUZZ_CHECK(back->message_class == m->message_class && back->method == m->method);
  PREDROP_FUZZ_CHECK(back->transaction_id == m->transaction_id);
  PREDROP_FUZZ_CHECK(back->username == m->username);
  PREDROP_FUZZ_CHECK(back->priority == m->priority);
  PREDROP_FUZZ_CHECK(back->ice_controlling == m->ice_controlling);
  PREDROP_FUZZ_CHECK(back->use_candidate == m->use_candidate);
  PREDROP_FUZZ_CHECK(back->xor_mapped == m->xor_mapped);
  PREDROP_FUZZ_CHECK(back->has_fingerprint);
  PREDROP_FUZZ_CHECK(verify_stun_integrity(written, *back, "fuzz-password"));
  return 0;
}
