// [blocks] (how a stream is cut into stages and paced) and [discard] (which packets of a stage
// are discarded).
#include <limits>

#include "config_reader.hpp"

namespace predrop::config::detail {

void read_blocks(Reader& r, const toml::table& t, BlockConfig& b, BlockSizeKeys& seen) {
  const std::vector<Key> keys = {
      {"duration_ms",
       [&](const toml::node& n) {
         std::uint32_t v = 0;
         r.unsigned_into(n, v, 10, 60000);
         b.duration_ms = v;
         seen.duration = true;
       }},
      {"bytes",
       [&](const toml::node& n) {
         std::uint64_t v = 0;
         r.unsigned_into(n, v, 1500, std::int64_t{1} << 30);
         b.bytes = v;
         seen.bytes = true;
       }},
      {"pacing", [&](const toml::node& n) { r.enumeration(n, kPacings, b.pacing); }},
      {"rtp_payload_bytes",
       [&](const toml::node& n) { r.unsigned_into(n, b.rtp_payload_bytes, 256, 8192); }},
      {"pacing_quantum_ms",
       [&](const toml::node& n) { r.unsigned_into(n, b.pacing_quantum_ms, 0, 50); }},
  };
  r.section(t, "blocks", keys);
}

void finish_blocks(const toml::table& root, Reader& r, BlockConfig& b, const BlockSizeKeys& seen) {
  // toml++ tables iterate in key order, so the exclusivity check comes after the whole section.
  if (seen.bytes && seen.duration) {
    const auto* bytes = find_node(root, "blocks.bytes");
    return r.fail(bytes ? bytes->source() : root.source(), "blocks.bytes",
                  "set either blocks.duration_ms or blocks.bytes, not both");
  }
  if (seen.bytes) {
    b.duration_ms.reset();
  }
}

void check_blocks(const BlockConfig& b, Problems& problems) {
  if (b.duration_ms && b.bytes) {
    problems.add(
        Problem{"blocks.bytes", "set either blocks.duration_ms or blocks.bytes, not both"});
  } else if (!b.duration_ms && !b.bytes) {
    problems.add(Problem{"blocks.duration_ms", "set one of blocks.duration_ms or blocks.bytes"});
  }
  if (b.duration_ms) {
    problems.add(range_problem("blocks.duration_ms", *b.duration_ms, 10, 60000));
  }
  if (b.bytes) {
    problems.add(range_problem("blocks.bytes", *b.bytes, 1500, std::uint64_t{1} << 30));
  }
  problems.add(range_problem("blocks.rtp_payload_bytes", b.rtp_payload_bytes, 256, 8192));
  problems.add(range_problem("blocks.pacing_quantum_ms", b.pacing_quantum_ms, 0, 50));
}

void read_discard(Reader& r, const toml::table& t, DiscardConfig& d) {
  const std::vector<Key> keys = {
      {"policy", [&](const toml::node& n) { r.enumeration(n, kDiscardPolicies, d.policy); }},
      {"seed",
       [&](const toml::node& n) {
         r.unsigned_into(n, d.seed, 0, std::numeric_limits<std::int64_t>::max());
       }},
  };
  r.section(t, "discard", keys);
}

}  // namespace predrop::config::detail
