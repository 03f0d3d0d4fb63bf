// Fuzzes the tensor chunk payload parser and the receive path built on it.
//  1. parse_chunk() on the whole input: never crashes; whatever it accepts re-encodes with
//     encode_chunk() to exactly the input bytes, and value()/copy_to() agree bit for bit.
//  2. The input as a script of records driving a StageCollector (2 workers, a 64-element tensor in
//     chunks of 8): each record is
//       i8 stage delta | u8 contributor | u8 announced | u8 time step (ms) | u16 length | payload
//     and a stage delta of -128 forces the current stage closed. Checks the stage invariants:
//     every closed stage's chunk counts add up, and the average is always finite (non-finite
//     values must be rejected).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_check.hpp"
#include "predrop/ddl/chunk.hpp"
#include "predrop/ddl/importance.hpp"
#include "predrop/ddl/stage_collector.hpp"

namespace {
using namespace predrop::ddl;

void check_single(std::span<const std::uint8_t> in) {
  auto v = parse_chunk(in);
  if (!v) return;
  const ChunkHeader& h = v->header;
  PREDROP_FUZZ_CHECK(h.count >= 1);
  PREDROP_FUZZ_CHECK(std::uint64_t{h.offset} + h.count <= h.tensor_elements);
  PREDROP_FUZZ_CHECK(in.size() == chunk_payload_size(h.count));
  std::vector<float> values(h.count);
  v->copy_to(values);
  for (std::size_t i = 0; i < values.size(); ++i) {
    PREDROP_FUZZ_CHECK(std::bit_cast<std::uint32_t>(values[i]) ==
                       std::bit_cast<std::uint32_t>(v->value(i)));
  }
  std::vector<std::uint8_t> out(in.size());
  auto n = encode_chunk(h, values, out);
  PREDROP_FUZZ_CHECK(n.ok() && n.value() == in.size());
  PREDROP_FUZZ_CHECK(std::equal(out.begin(), out.end(), in.begin()));

  // Importance over the carried values: any float input, never the reserved 255.
  auto plan = chunk_tensor(h.count, 7);
  PREDROP_FUZZ_CHECK(plan.ok());
  std::vector<std::uint8_t> imp(plan->size());
  tensor_importance(values, plan.value(), imp);
  for (const auto q : imp)
    PREDROP_FUZZ_CHECK(q <= kMaxImportance);
}

void check_report(const ClosedStage& r, const ChunkPlan& plan, std::span<const float> avg,
                  std::span<const std::uint16_t> counts) {
  PREDROP_FUZZ_CHECK(r.chunks_full + r.chunks_partial + r.chunks_empty == plan.size());
  PREDROP_FUZZ_CHECK(r.received + r.missing == 2 * plan.size());
  PREDROP_FUZZ_CHECK(r.lost <= r.expected);
  PREDROP_FUZZ_CHECK(r.first_us <= r.last_us);
  std::size_t sum = 0;
  for (const auto c : counts) {
    PREDROP_FUZZ_CHECK(c <= 2);
    sum += c;
  }
  PREDROP_FUZZ_CHECK(sum == r.received);
  for (const float x : avg)
    PREDROP_FUZZ_CHECK(std::isfinite(x));
}

void run_script(std::span<const std::uint8_t> in) {
  const ChunkPlan plan = chunk_tensor(64, 8).value();
  StageCollector rx(plan, 2, DeadlineConfig{1'000, 50'000, 10'000, 2.0, 5}, 2);
  std::vector<float> avg(64);
  std::vector<std::uint16_t> counts(plan.size());
  std::uint32_t stage = 1000;
  std::uint64_t now = 0;
  std::size_t pos = 0;
  while (in.size() - pos >= 6) {
    const auto delta = static_cast<std::int8_t>(in[pos]);
    const std::uint32_t contributor = in[pos + 1] % 3;  // 2 is invalid on purpose
    const std::uint16_t announced = in[pos + 2] % 12;
    now += std::uint64_t{in[pos + 3]} * 1000;
    std::size_t len = std::size_t{in[pos + 4]} << 8 | in[pos + 5];
    pos += 6;
    len = std::min(len, in.size() - pos);
    const auto payload = in.subspan(pos, len);
    pos += len;
    if (delta == -128) {
      if (auto r = rx.force_close(now, avg, counts)) check_report(*r, plan, avg, counts);
      continue;
    }
    stage += static_cast<std::uint32_t>(static_cast<std::int32_t>(delta));
    if (auto v = parse_chunk(payload)) {
      rx.on_chunk(stage, contributor, announced, *v, now);
    }
    while (auto r = rx.poll(now, avg, counts))
      check_report(*r, plan, avg, counts);
    // poll() was called until it closed nothing, so no deadline can be due any more.
    if (const auto at = rx.deadline_at_us()) PREDROP_FUZZ_CHECK(*at > now);
  }
  const auto& c = rx.counters();
  PREDROP_FUZZ_CHECK(c.stages_complete + c.stages_deadline + c.stages_forced <= 1u << 20);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> in(data, size);
  check_single(in);
  run_script(in);
  return 0;
}
