#include "predrop/sim/cases.hpp"

namespace predrop::sim {

namespace {
constexpr SimTime kS = 1'000'000;

FlowPath path(SimTime one_way, Direction d = Direction::kForward) {
  return FlowPath{one_way, one_way, d};
}

CaseSpec base(const std::string& name, SimTime seconds, const CaseOptions& o) {
  CaseSpec c;
  c.name = name;
  c.duration_us = seconds * kS;
  c.forward.burst_bytes = o.burst_bytes;
  c.forward.latency_us = o.queue_us;
  return c;
}

RateSchedule scaled(std::initializer_list<std::pair<double, double>> mbps_at, double scale) {
  RateSchedule s;
  for (const auto& [t, mbps] : mbps_at) {
    s.emplace_back(static_cast<SimTime>(t * kS), mbps * 1e6 * scale);
  }
  return s;
}

MediaSpec media(SimTime from_s, SimTime to_s, SimTime one_way, Direction d = Direction::kForward) {
  MediaSpec m;
  m.start_us = from_s * kS;
  m.stop_us = to_s * kS;
  m.path = path(one_way, d);
  return m;
}
}  // namespace

std::vector<CaseSpec> all_cases(const CaseOptions& o) {
  std::vector<CaseSpec> cases;
  const double k = o.scale;
  const SimTime d = o.one_way_us;
  {  // §5.1 variable available capacity, one flow
    CaseSpec c = base("5.1", 100, o);
    c.forward_rates = scaled({{0, 1.0}, {40, 2.5}, {60, 0.6}, {80, 1.0}}, k);
    c.media.push_back(media(0, 100, d));
    cases.push_back(c);
    c.name = "5.1-100ms";
    c.media[0].path = path(100'000);
    cases.push_back(c);
  }
  {  // §5.2 variable capacity, two flows of the same algorithm
    CaseSpec c = base("5.2", 125, o);
    c.forward_rates = scaled({{0, 4.0}, {25, 2.0}, {50, 3.5}, {75, 1.0}, {100, 2.0}}, k);
    c.media.push_back(media(0, 125, d));
    c.media.push_back(media(0, 125, d));
    cases.push_back(c);
  }
  {  // §5.3 congested feedback link: a flow each way, both directions shaped
    CaseSpec c = base("5.3", 100, o);
    c.forward_rates = scaled({{0, 2.0}, {20, 1.0}, {40, 0.5}, {60, 2.0}}, k);
    TbfConfig back = c.forward;
    c.backward = back;
    c.backward_rates = scaled({{0, 2.0}, {35, 0.8}, {70, 2.0}}, k);
    c.media.push_back(media(0, 100, d));
    c.media.push_back(media(0, 100, d, Direction::kBackward));
    cases.push_back(c);
  }
  {  // §5.4 three flows of the same algorithm joining at 0, 20, 40 s
    CaseSpec c = base("5.4", 120, o);
    c.forward_rates = scaled({{0, 3.5}}, k);
    for (SimTime s : {0, 20, 40}) {
      c.media.push_back(media(s, 120, d));
    }
    cases.push_back(c);
  }
  {  // §5.5 RTT fairness: five flows, one-way 10/25/50/100/150 ms, joining 10 s apart
    CaseSpec c = base("5.5", 300, o);
    c.forward_rates = scaled({{0, 4.0}}, k);
    const SimTime owd[] = {10'000, 25'000, 50'000, 100'000, 150'000};
    for (int i = 0; i < 5; ++i) {
      c.media.push_back(media(SimTime{10} * i, 300, owd[i]));
    }
    cases.push_back(c);
  }
  {  // §5.6 one long TCP flow, 300 ms and 1000 ms queues, and at ~0 RTT
    for (const auto& [name, queue, owd] :
         {std::tuple{"5.6-300ms", SimTime{300'000}, d},
          std::tuple{"5.6-1000ms", SimTime{1'000'000}, d},
          std::tuple{"5.6-0rtt", SimTime{300'000}, SimTime{100}}}) {
      CaseSpec c = base(name, 120, o);
      c.forward.latency_us = queue;
      c.forward_rates = scaled({{0, 2.0}}, k);
      c.media.push_back(media(5, 119, owd));
      TcpSpec t;
      t.start_us = 0;
      t.stop_us = 120 * kS;
      t.path = path(owd);
      c.tcp.push_back(t);
      cases.push_back(c);
    }
  }
  {  // §5.7 two flows against ten sources of short TCP transfers (2 start on)
    CaseSpec c = base("5.7", 300, o);
    c.forward_rates = scaled({{0, 2.0}}, k);
    c.media.push_back(media(5, 299, d));
    c.media.push_back(media(5, 299, d));
    for (int i = 0; i < 10; ++i) {
      TcpSpec t;
      t.start_us = 0;
      t.stop_us = 300 * kS;
      t.path = path(d);
      t.short_seed = 1000 + static_cast<std::uint64_t>(i);
      t.starts_on = i < 2;
      c.tcp.push_back(t);
    }
    cases.push_back(c);
  }
  {  // §5.8 pause and resume: flow 0 of three paused 40-60 s
    CaseSpec c = base("5.8", 120, o);
    c.forward_rates = scaled({{0, 3.5}}, k);
    for (int i = 0; i < 3; ++i) {
      c.media.push_back(media(0, 120, d));
    }
    c.media[0].pause_from_us = 40 * kS;
    c.media[0].pause_until_us = 60 * kS;
    cases.push_back(c);
  }
  // The bed's scenarios (bench/README.md), with the RFC's default delay; 100 ms tbf queue and a
  // 4 kB bucket as on the bed. Capacities relative to the stream (820 kbit/s = stream / 1.5).
  const double s = o.stream_bps;
  const auto bed = [&](const std::string& name, SimTime seconds) {
    CaseSpec c = base(name, seconds, o);
    c.forward.latency_us = 100'000;
    c.forward.burst_bytes = 4'000;
    return c;
  };
  {
    CaseSpec c = bed("bed-steady", 45);
    c.forward_rates = {{0, s / 1.5}};
    c.media.push_back(media(0, 45, d));
    cases.push_back(c);
  }
  {
    CaseSpec c = bed("bed-onoff", 60);
    c.forward_rates = {{0, 200e6}, {10 * kS, s / 1.5}, {40 * kS, 200e6}};
    c.media.push_back(media(0, 60, d));
    cases.push_back(c);
  }
  {
    CaseSpec c = bed("bed-cross", 55);
    c.forward_rates = {{0, 2 * s / 1.5}};
    c.media.push_back(media(0, 55, d));
    c.cbr.push_back(CbrSpec{0.65 * s, 10 * kS, 20 * kS, path(d)});
    c.cbr.push_back(CbrSpec{0.65 * s, 30 * kS, 40 * kS, path(d)});
    cases.push_back(c);
  }
  {
    CaseSpec c = bed("bed-shared", 60);
    c.forward_rates = {{0, 200e6}, {10 * kS, 3 * s / 1.5}, {40 * kS, 200e6}};
    for (int i = 0; i < 3; ++i) {
      c.media.push_back(media(0, 60, d));
    }
    cases.push_back(c);
  }
  {
    CaseSpec c = bed("bed-staircase", 70);
    c.forward_rates = {
        {0, 1.3 * s}, {10 * kS, s / 2}, {25 * kS, s / 1.2}, {40 * kS, s / 3}, {55 * kS, 1.3 * s}};
    c.media.push_back(media(0, 70, d));
    cases.push_back(c);
  }
  {  // A download beside the stream on the bed's own queue (the first finding).
    CaseSpec c = bed("bed-tcp", 90);
    c.forward.latency_us = 300'000;
    c.forward_rates = {{0, 2e6 * s / 1.23e6}};
    c.media.push_back(media(0, 90, d));
    TcpSpec t;
    t.start_us = 15 * kS;
    t.stop_us = 60 * kS;
    t.path = path(d);
    c.tcp.push_back(t);
    cases.push_back(c);
  }
  return cases;
}

std::optional<CaseSpec> find_case(const std::string& name, const CaseOptions& options) {
  for (auto& c : all_cases(options)) {
    if (c.name == name) return c;
  }
  return std::nullopt;
}

}  // namespace predrop::sim
