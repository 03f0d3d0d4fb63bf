#pragma once
// Unpredictable numbers from the OS CSPRNG (getrandom(2)), the project's one source of them, for
// what an attacker must not guess: SRTP master keys, session ids, SSRCs, initial RTP sequence
// numbers and timestamp offsets (RFC 3550 §5.1 asks for random ones; RFC 2326 §12.37 session ids
// are the only credential a request carries), the DDL join nonces. Seeded, reproducible streams
// (discard planning, training) use their own generators and are not for secrets.
//
// Errors: a kernel that cannot supply randomness throws std::system_error (it does not once its
// pool is initialised, early in boot); callers use these at set-up, never on the packet path.
#include <cstdint>
#include <span>
#include <string>

#include "predrop/wire/sdes_key.hpp"

namespace predrop::net {

/// Fills `out` from getrandom(2).
void fill_random(std::span<std::uint8_t> out);
/// A uniformly random 64-bit value.
std::uint64_t random_u64();
/// A uniformly random 32-bit value.
std::uint32_t random_u32();
/// A uniformly random 16-bit value.
std::uint16_t random_u16();
/// `bytes` random bytes as upper-case hex (2 characters per byte).
std::string random_hex(std::size_t bytes);
/// A fresh SRTP master key||salt for `suite` (wire::key_salt_size bytes).
wire::SrtpKeyMaterial random_srtp_key(wire::SrtpSuite suite);

}  // namespace predrop::net
