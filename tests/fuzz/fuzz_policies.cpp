// Fuzzes every rate policy's state machine (core::RateController: basic, history, fixed,
// adaptive, capacity) with a script of what the stream server does to it: stage starts with
// their block sizes and discard curves, reports with hostile values (what a receiver holding the
// SRTCP key may send in a PDFB v1.1: any counts, periods, queue delays, dispersion and burst
// words, stages out of order), missing reports, and re-planning requests for a block in flight.
// The server's own inputs (block bytes, discard curves, rate used) stay within their contracts;
// the receiver's do not. Properties: every R the controller hands out is finite and within
// [0, rmax]; a capacity estimate is NaN or finite and not negative; a report that fails
// validation changes nothing.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_reader.hpp"
#include "predrop/core/policy_factory.hpp"
#include "predrop/core/rate_controller.hpp"
#include "predrop/core/stage_report.hpp"

namespace {
using namespace predrop::core;
using predrop::fuzz::Reader;

constexpr const char* kPolicies[] = {"basic", "history", "fixed", "adaptive", "capacity"};

// A value on a scale the byte chooses: 0, small, typical or enormous, so that one input reaches
// divisions by zero and overflowing products as easily as normal readings.
double scaled(Reader& r) {
  const std::uint8_t scale = r.u8();
  const double v = r.u16();
  switch (scale % 6) {
    case 0:
      return 0.0;
    case 1:
      return v;
    case 2:
      return v * 16.0;
    case 3:
      return v * 1024.0;
    case 4:
      return v * 1e9;
    default:
      return v / 65536.0;
  }
}

std::uint64_t scaled_u64(Reader& r) {
  return static_cast<std::uint64_t>(scaled(r));
}

// A discard curve as the planner makes one: removable[k] grows with k, k = 0 .. count.
std::vector<std::uint64_t> curve(Reader& r, std::uint32_t count) {
  std::vector<std::uint64_t> out;
  if ((r.u8() & 1U) == 0) return out;  // no curve (uniform discard)
  out.push_back(0);
  std::uint64_t sum = 0;
  for (std::uint32_t k = 0; k < count && k < 256; ++k) {
    sum += r.u8() * 8ULL;
    out.push_back(sum);
  }
  return out;
}

PathMeasurement path(Reader& r) {
  PathMeasurement p;
  p.bytes_received = scaled_u64(r);
  p.queue_max_us = scaled(r);
  p.queue_min_us = scaled(r);
  p.dispersion_bytes = scaled_u64(r);
  p.dispersion_us = scaled_u64(r);
  p.burst_bytes = scaled_u64(r);
  p.burst_send_us = scaled_u64(r);
  p.burst_arrival_us = scaled_u64(r);
  return p;
}

void check_rate(double rate, double rmax) {
  PREDROP_FUZZ_CHECK(std::isfinite(rate));
  PREDROP_FUZZ_CHECK(rate >= 0.0 && rate <= rmax + 1e-12);
}

void check_decision(const Decision& d, double rmax) {
  check_rate(d.rate, rmax);
  PREDROP_FUZZ_CHECK(std::isnan(d.capacity_estimate) ||
                     (std::isfinite(d.capacity_estimate) && d.capacity_estimate >= 0.0));
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader r{data, size};
  PolicyConfig config;
  const std::uint8_t pick = r.u8();
  config.policy = kPolicies[pick % 5];
  // rmax and the fixed rate from the input; the rest at its defaults (validated elsewhere).
  const double rmax = 0.05 + (r.u8() % 96) / 100.0;
  config.rule.rmax = rmax;
  config.rule.r0 = 0.0;
  config.rule.rp = std::fmin(config.rule.rp, rmax);
  config.rule.k = config.policy == std::string_view("history") ? 1 + r.u8() % 8 : 1;
  config.fixed_rate = (r.u8() % 101) / 100.0 * rmax;
  config.adaptive.rmax = rmax;
  config.capacity.rmax = rmax;
  auto made = make_rate_controller(config);
  if (!made) return 0;
  RateController& c = **made;
  const double limit = config.policy == std::string_view("fixed") ? config.fixed_rate : rmax;

  std::uint32_t stage = 0;         // the stage the server starts next
  std::uint64_t bytes_before = 0;  // what the session sent before it
  check_rate(c.rate(), limit);
  for (int steps = 0; !r.empty() && steps < 4096; ++steps) {
    switch (r.u8() % 5) {
      case 0: {  // a stage starts: the server asks for its R with the block's real size
        StageStart s;
        s.stage = stage++;
        s.block_bytes = scaled_u64(r);
        s.block_duration_us = scaled(r);
        s.bytes_before = bytes_before;
        s.packets = r.u8();
        const std::vector<std::uint64_t> removable = curve(r, s.packets);
        s.removable = removable;
        const double rate = c.rate_for_next(s);
        check_rate(rate, limit);
        bytes_before += s.block_bytes;
        break;
      }
      case 1:
      case 2: {  // a report: counts and measurements as a hostile receiver may send them
        StageReport rep;
        const std::uint8_t how = r.u8();
        rep.stage = (how & 3U) == 0 ? r.u16() : (stage > 0 ? stage - 1 - (how >> 5) % stage : 0);
        rep.reception_period_us = scaled(r);
        rep.performance = static_cast<std::int8_t>(r.u8());
        rep.packets_received = r.u16();
        rep.packets_announced = r.u16();
        if ((how & 4U) != 0) rep.queue_delay_us = scaled(r);
        if ((how & 8U) != 0) rep.rate_used = (r.u8() % 101) / 100.0;
        if ((how & 16U) != 0) rep.path = path(r);
        if ((how & 3U) == 3) rep.reception_period_us = std::numeric_limits<double>::infinity();
        const double before = c.rate();
        auto d = c.on_report(rep);
        if (d) {
          check_decision(*d, limit);
        } else {
          PREDROP_FUZZ_CHECK(c.rate() == before);  // a rejected report changes nothing
        }
        break;
      }
      case 3: {  // a report that will never come
        const std::uint32_t missing = stage > 0 ? stage - 1 : 0;
        check_decision(c.on_report_missing(missing), limit);
        break;
      }
      default: {  // a report arrived while a block is in flight: re-plan its rest?
        StageProgress p;
        p.stage = stage > 0 ? stage - 1 : 0;
        p.elapsed_us = scaled(r);
        p.duration_us = scaled(r);
        p.sent_bytes = scaled_u64(r);
        p.rest_bytes = scaled_u64(r);
        p.rate = c.rate();
        p.rest_packets = r.u8();
        const std::vector<std::uint64_t> removable = curve(r, p.rest_packets);
        p.removable = removable;
        if (auto rest = c.rate_for_rest(p)) check_rate(*rest, limit);
        break;
      }
    }
    check_rate(c.rate(), limit);
  }
  return 0;
}
