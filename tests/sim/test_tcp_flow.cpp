// The simulator's TCP NewReno (tcp_flow.hpp): alone it fills a bottleneck, it halves on loss
// and recovers, short transfers end, CBR sends at its rate. Deterministic, no clock.
#include <gtest/gtest.h>

#include "predrop/sim/tcp_flow.hpp"

namespace predrop::sim {
namespace {

constexpr SimTime kS = 1'000'000;

TEST(TcpFlow, ALongFlowFillsTheBottleneck) {
  EventQueue events;
  Network net(events, TbfConfig{2e6, 3000, 300'000});
  TcpFlow tcp(net, TcpConfig{}, FlowPath{50'000, 50'000}, "tcp");
  tcp.bulk(0, 30 * kS);
  events.run_until(30 * kS);
  // 10-30 s: goodput at least 85 % of the 2 Mbit/s (headers are 5 % of a segment).
  const double bits = 8.0 * static_cast<double>(tcp.delivered_bytes());
  EXPECT_GT(bits / 30.0, 0.8 * 2e6);
  // It hit the queue limit and recovered: some packets were dropped, far from all.
  std::size_t drops = 0;
  for (const auto& r : net.log(tcp.id()))
    drops += r.dropped ? 1 : 0;
  EXPECT_GT(drops, 0u);
  EXPECT_LT(drops, net.log(tcp.id()).size() / 20);
}

TEST(TcpFlow, AShortTransferEndsAndReportsIt) {
  EventQueue events;
  Network net(events, TbfConfig{2e6, 3000, 300'000});
  TcpFlow tcp(net, TcpConfig{}, FlowPath{20'000, 20'000}, "tcp");
  SimTime done_at = -1;
  events.at(0, [&] { tcp.transfer(40'000, [&] { done_at = events.now(); }); });
  events.run_until(10 * kS);
  EXPECT_EQ(tcp.delivered_bytes(), 40'000u);
  // 40 segments in slow start from 10: 3 round trips and the transfer at 2 Mbit/s (~170 ms).
  EXPECT_GT(done_at, 100'000);
  EXPECT_LT(done_at, 600'000);
}

TEST(TcpFlow, ShortTransferSourcesComeAndGo) {
  EventQueue events;
  Network net(events, TbfConfig{2e6, 3000, 300'000});
  TcpFlow tcp(net, TcpConfig{}, FlowPath{50'000, 50'000}, "tcp");
  ShortTransfers src(tcp, 7, 30'000, 50'000, 10 * kS, 300 * kS);
  events.at(0, [&] { src.start(true); });
  events.run_until(300 * kS);
  // ~300 s / (10 s off + a fraction of a second on): about 30 transfers.
  EXPECT_GT(src.transfers(), 15u);
  EXPECT_LT(src.transfers(), 50u);
}

TEST(CbrFlow, SendsAtItsRateUnresponsively) {
  EventQueue events;
  Network net(events, TbfConfig{1e6, 3000, 100'000});
  CbrFlow cbr(net, FlowPath{10'000, 10'000}, "cbr", 1250);
  cbr.run(2e6, 0, 10 * kS);
  events.run_until(11 * kS);
  // 2 Mbit/s offered into 1 Mbit/s: half goes through, half is dropped.
  std::size_t sent = 0;
  std::size_t dropped = 0;
  for (const auto& r : net.log(cbr.id())) {
    ++sent;
    dropped += r.dropped ? 1 : 0;
  }
  EXPECT_NEAR(static_cast<double>(sent), 2000.0, 2.0);
  EXPECT_NEAR(static_cast<double>(dropped) / static_cast<double>(sent), 0.5, 0.03);
}

}  // namespace
}  // namespace predrop::sim
