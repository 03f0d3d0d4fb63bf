// Fuzzes parse_generic_nack() and parse_key_frame_request(): an accepted NACK names 17 numbers at
// most per FCI and never more than the cap; its numbers written back parse to the same set.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_check.hpp"
#include "predrop/wire/rtcp_nack.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace predrop::wire;
  const std::span<const std::uint8_t> in(data, size);
  (void)parse_key_frame_request(in);
  constexpr std::size_t kCap = 256;
  std::vector<std::uint16_t> seqs;
  const auto n = parse_generic_nack(in, seqs, kCap);
  if (!n) {
    PREDROP_FUZZ_CHECK(seqs.empty());
    return 0;
  }
  PREDROP_FUZZ_CHECK(n->fcis >= 1);
  PREDROP_FUZZ_CHECK(seqs.size() <= kCap);
  PREDROP_FUZZ_CHECK(seqs.size() + n->truncated <= std::size_t{n->fcis} * 17);
  PREDROP_FUZZ_CHECK(seqs.size() + n->truncated >= n->fcis);
  if (n->truncated != 0) return 0;
  std::vector<std::uint8_t> buf(12 + 4 * seqs.size());
  const std::size_t w = write_generic_nack(n->sender_ssrc, n->media_ssrc, seqs, buf);
  PREDROP_FUZZ_CHECK(w > 0);
  std::vector<std::uint16_t> back;
  const auto m = parse_generic_nack(std::span(buf.data(), w), back, 65536);
  PREDROP_FUZZ_CHECK(m && m->media_ssrc == n->media_ssrc);
  std::sort(seqs.begin(), seqs.end());
  seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
  std::sort(back.begin(), back.end());
  back.erase(std::unique(back.begin(), back.end()), back.end());
  PREDROP_FUZZ_CHECK(back == seqs);
  return 0;
}
