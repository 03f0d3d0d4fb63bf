#include "predrop/sim/scenario.hpp"

#include <algorithm>
#include <stdexcept>

namespace predrop::sim {

namespace {
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double rate_at(const RateSchedule& s, SimTime t) {
  double r = s.empty() ? 0.0 : s.front().second;
  for (const auto& [at, rate] : s) {
    if (at <= t) r = rate;
  }
  return r;
}

// A clip rotated to start at block `first` (a repeat sees other content first).
std::shared_ptr<const Clip> rotated(const std::shared_ptr<const Clip>& clip, std::size_t first) {
  if (first == 0) return clip;
  auto c = std::make_shared<Clip>();
  const std::size_t n = clip->blocks.size();
  for (std::size_t i = 0; i < n; ++i) {
    c->blocks.push_back(clip->blocks[(first + i) % n]);
  }
  return c;
}
}  // namespace

double capacity_bps(const CaseSpec& spec, Direction direction, SimTime t) {
  if (direction == Direction::kForward) return rate_at(spec.forward_rates, t);
  return spec.backward ? rate_at(spec.backward_rates, t) : 1e12;
}

double fair_share_bps(const CaseSpec& spec, Direction direction, SimTime t) {
  double c = capacity_bps(spec, direction, t);
  unsigned n = 0;
  for (const auto& m : spec.media) {
    const bool paused = m.pause_from_us >= 0 && t >= m.pause_from_us && t < m.pause_until_us;
    if (m.path.direction == direction && t >= m.start_us && t < m.stop_us && !paused) ++n;
  }
  for (const auto& x : spec.tcp) {
    if (x.path.direction == direction && x.short_seed == 0 && t >= x.start_us && t < x.stop_us) ++n;
  }
  for (const auto& x : spec.cbr) {
    if (x.path.direction == direction && t >= x.from_us && t < x.until_us) c -= x.rate_bps;
  }
  return n > 0 ? std::max(0.0, c) / n : std::max(0.0, c);
}

CaseRun run_case(const CaseSpec& spec, const RunOptions& options) {
  if (!options.clip) throw std::invalid_argument("no clip");
  EventQueue events;
  TbfConfig fwd = spec.forward;
  if (!spec.forward_rates.empty()) fwd.rate_bps = spec.forward_rates.front().second;
  std::optional<TbfConfig> bwd = spec.backward;
  if (bwd && !spec.backward_rates.empty()) bwd->rate_bps = spec.backward_rates.front().second;
  Network net(events, fwd, bwd);
  for (std::size_t i = 1; i < spec.forward_rates.size(); ++i) {
    const double r = spec.forward_rates[i].second;
    events.at(spec.forward_rates[i].first,
              [&net, r] { net.link(Direction::kForward).set_rate(r); });
  }
  if (bwd) {
    for (std::size_t i = 1; i < spec.backward_rates.size(); ++i) {
      const double r = spec.backward_rates[i].second;
      events.at(spec.backward_rates[i].first,
                [&net, r] { net.link(Direction::kBackward).set_rate(r); });
    }
  }
  CaseRun run;
  run.case_name = spec.name;
  run.policy_name = options.policy_name;
  run.stream_rate_bps = options.clip->mean_rate_bps();
  std::vector<std::unique_ptr<MediaFlow>> media;
  // One group per direction: the two directions are two bottlenecks.
  const auto forward = options.coupled ? std::make_shared<core::SharedBottleneck>() : nullptr;
  const auto backward = options.coupled ? std::make_shared<core::SharedBottleneck>() : nullptr;
  std::uint64_t rng = options.seed;
  for (std::size_t i = 0; i < spec.media.size(); ++i) {
    const MediaSpec& m = spec.media[i];
    MediaConfig c;
    rng = mix(rng + i);
    c.clip = options.random_clip_offset ? rotated(options.clip, rng % options.clip->blocks.size())
                                        : options.clip;
    c.policy = options.policy;
    c.discard = options.discard;
    c.quality = options.quality;
    c.alert_queue_us = options.alert_queue_us;
    c.coupled = m.path.direction == Direction::kForward ? forward : backward;
    const SimTime jitter =
        options.start_jitter_us > 0 ? static_cast<SimTime>(mix(rng) % options.start_jitter_us) : 0;
    c.start_us = m.start_us + jitter;
    c.stop_us = std::min(m.stop_us, spec.duration_us);
    c.pause_from_us = m.pause_from_us;
    c.pause_until_us = m.pause_until_us;
    media.push_back(std::make_unique<MediaFlow>(net, c, m.path, "media" + std::to_string(i)));
    run.media_flow_ids.push_back(media.back()->id());
    media.back()->start();
  }
  std::vector<std::unique_ptr<TcpFlow>> tcp;
  std::vector<std::unique_ptr<ShortTransfers>> shorts;
  for (std::size_t i = 0; i < spec.tcp.size(); ++i) {
    const TcpSpec& t = spec.tcp[i];
    tcp.push_back(std::make_unique<TcpFlow>(net, TcpConfig{}, t.path, "tcp" + std::to_string(i)));
    run.tcp_flow_ids.push_back(tcp.back()->id());
    if (t.short_seed == 0) {
      tcp.back()->bulk(t.start_us, t.stop_us);
    } else {
      shorts.push_back(std::make_unique<ShortTransfers>(*tcp.back(), t.short_seed + options.seed,
                                                        30'000, 50'000, 10'000'000, t.stop_us));
      ShortTransfers* s = shorts.back().get();
      const bool on = t.starts_on;
      events.at(t.start_us, [s, on] { s->start(on); });
    }
  }
  std::vector<std::unique_ptr<CbrFlow>> cbr;
  for (std::size_t i = 0; i < spec.cbr.size(); ++i) {
    const CbrSpec& c = spec.cbr[i];
    cbr.push_back(std::make_unique<CbrFlow>(net, c.path, "cbr" + std::to_string(i)));
    run.cbr_flow_ids.push_back(cbr.back()->id());
    cbr.back()->run(c.rate_bps, c.from_us, c.until_us);
  }
  events.run_until(spec.duration_us + 3'000'000);
  for (const auto& m : media) {
    run.media.push_back(m->blocks());
  }
  for (std::uint32_t f = 0; f < net.flows(); ++f) {
    run.logs.push_back(net.log(f));
    run.flow_names.push_back(net.name(f));
    run.flow_paths.push_back(net.path(f));
  }
  return run;
}

}  // namespace predrop::sim
