#pragma once
// Unpredictable numbers from the OS CSPRNG (getrandom(2)) for what an attacker must not guess:
// session ids, SSRCs, initial RTP sequence numbers and timestamp offsets (RFC 3550 §5.1 asks for
// random ones; RFC 2326 §12.37 session ids are the only credential a request carries).
#include <cstdint>
#include <span>
#include <string>

namespace predrop::server::detail {

/// Fills `out` from getrandom(2). Throws std::system_error if the kernel refuses (it does not
/// once its pool is initialised, which happens early in boot).
void fill_random(std::span<std::uint8_t> out);
/// A uniformly random 32-bit value.
std::uint32_t random_u32();
/// A uniformly random 16-bit value.
std::uint16_t random_u16();
/// `bytes` random bytes as upper-case hex (2 characters per byte).
std::string random_hex(std::size_t bytes);

}  // namespace predrop::server::detail
