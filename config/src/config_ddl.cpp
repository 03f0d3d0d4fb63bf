// [ddl]: the relay of DDL mode (docs/ddl.md).
#include "config_reader.hpp"

namespace predrop::config::detail {

void read_ddl(Reader& r, const toml::table& t, DdlConfig& d) {
  const std::vector<Key> keys = {
      {"listen", [&](const toml::node& n) { r.endpoint_into(n, d.listen, true); }},
      {"workers", [&](const toml::node& n) { r.unsigned_into(n, d.workers, 1, 4096); }},
      {"stage_deadline_ms",
       [&](const toml::node& n) {
         if (const auto* s = n.as_string()) {
           if (s->get() != "adaptive") {
             return r.fail(n.source(), "ddl.stage_deadline_ms",
                           "must be a number of ms or \"adaptive\", got " +
                               core::text::quote_for_error(s->get()));
           }
           d.stage_deadline_ms.reset();
           return;
         }
         if (!n.is_integer()) {
           return r.fail_type(n, "ddl.stage_deadline_ms", "an integer (ms) or \"adaptive\"");
         }
         std::uint32_t v = 0;
         r.unsigned_into(n, v, 1, 600000);
         d.stage_deadline_ms = v;
       }},
      {"missing_chunk_fill",
       [&](const toml::node& n) { r.enumeration(n, kFills, d.missing_chunk_fill); }},
      {"chunk_bytes", [&](const toml::node& n) { r.unsigned_into(n, d.chunk_bytes, 64, 8192); }},
      {"max_tensor_elements",
       [&](const toml::node& n) { r.unsigned_into(n, d.max_tensor_elements, 1, 4294967295); }},
      {"worker_egress_discard",
       [&](const toml::node& n) {
         if (const auto b = r.boolean(n)) {
           d.worker_egress_discard = *b;
         }
       }},
      {"pacing", [&](const toml::node& n) { r.enumeration(n, kPacings, d.pacing); }},
  };
  r.section(t, "ddl", keys);
}

void check_ddl(const DdlConfig& d, Problems& problems) {
  if (d.listen.host.empty()) {
    problems.add(Problem{"ddl.listen", "host is empty"});
  }
  problems.add(range_problem("ddl.workers", d.workers, 1, 4096));
  if (d.stage_deadline_ms) {
    problems.add(range_problem("ddl.stage_deadline_ms", *d.stage_deadline_ms, 1, 600000));
  }
  problems.add(range_problem("ddl.chunk_bytes", d.chunk_bytes, 64, 8192));
  problems.add(range_problem("ddl.max_tensor_elements", d.max_tensor_elements, 1, 4294967295u));
}

}  // namespace predrop::config::detail
