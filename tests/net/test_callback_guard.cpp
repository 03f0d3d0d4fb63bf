// The one exception boundary (net::CallbackGuard): what it counts, what it hands to the owner's
// recovery; and net/'s own use of it in every libuv trampoline (issue 10, "no exception escapes
// an event-loop callback"): a callback that throws is counted by kind and contained — a timer
// keeps firing, a UDP endpoint delivers the next datagram, and a TCP connection whose data
// handler threw is closed while the listener and every other connection go on. Faults are
// injected by handlers that throw on purpose.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "predrop/net/callback_guard.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/tcp.hpp"
#include "predrop/net/udp_endpoint.hpp"

namespace predrop::net {
namespace {

TEST(CallbackGuard, CountsPerKindAndHandsWhatToTheRecovery) {
  CallbackGuard guard("test");
  std::vector<std::string> recovered;
  auto recover = [&](const char* what) { recovered.emplace_back(what); };
  EXPECT_TRUE(guard.run(
      CallbackKind::kTimer, [] {}, recover));
  EXPECT_FALSE(guard.run(
      CallbackKind::kTimer, [] { throw std::runtime_error("one"); }, recover));
  EXPECT_FALSE(guard.run(
      CallbackKind::kUdpReceive, [] { throw std::logic_error("two"); }, recover));
  EXPECT_FALSE(guard.run(
      CallbackKind::kUdpReceive, [] { throw 42; }, recover));
  EXPECT_EQ(guard.count(CallbackKind::kTimer), 1u);
  EXPECT_EQ(guard.count(CallbackKind::kUdpReceive), 2u);
  EXPECT_EQ(guard.count(CallbackKind::kRtsp), 0u);
  EXPECT_EQ(guard.total(), 3u);
  ASSERT_EQ(recovered.size(), 3u);
  EXPECT_EQ(recovered[0], "one");
  EXPECT_EQ(recovered[1], "two");
  EXPECT_EQ(recovered[2], "an exception not derived from std::exception");
}

TEST(CallbackGuard, ARecoveryThatThrowsIsSwallowedAndCountedOnce) {
  CallbackGuard guard("test");
  int recoveries = 0;
  const bool ok = guard.run(
      CallbackKind::kCall, [] { throw std::runtime_error("work"); },
      [&](const char*) {
        ++recoveries;
        throw std::runtime_error("recovery");
      });
  EXPECT_FALSE(ok);
  EXPECT_EQ(recoveries, 1);
  EXPECT_EQ(guard.count(CallbackKind::kCall), 1u);
  // Without a recovery the guard only counts.
  EXPECT_FALSE(guard.run(CallbackKind::kCall, [] { throw std::runtime_error("again"); }));
  EXPECT_EQ(guard.total(), 2u);
}

TEST(LoopGuard, ThrowingTimerIsCountedAndKeepsFiring) {
  EventLoop loop;
  const std::uint64_t before = loop_guard().count(CallbackKind::kTimer);
  int fired = 0;
  Timer timer(loop, [&] {
    ++fired;
    if (fired == 3) {
      loop.stop();
      return;
    }
    throw std::runtime_error("injected timer fault");
  });
  timer.start(1, 1);
  loop.run();
  timer.stop();
  EXPECT_EQ(fired, 3);
  EXPECT_EQ(loop_guard().count(CallbackKind::kTimer) - before, 2u);
  EXPECT_TRUE(loop.close().ok());
}

TEST(LoopGuard, ThrowingUdpHandlerLosesOnlyThatDatagram) {
  EventLoop loop;
  const std::uint64_t before = loop_guard().count(CallbackKind::kUdpReceive);
  std::vector<std::string> delivered;
  auto rx =
      UdpEndpoint::open(loop, SocketAddress::loopback_v4(0), UdpOptions{},
                        [&](std::span<const std::uint8_t> d, const SocketAddress&, std::uint64_t) {
                          std::string text(reinterpret_cast<const char*>(d.data()), d.size());
                          if (text == "poison") throw std::runtime_error("injected datagram fault");
                          delivered.push_back(text);
                          if (text == "after") loop.stop();
                        });
  ASSERT_TRUE(rx.ok()) << rx.error().message;
  auto tx = UdpEndpoint::open(loop, SocketAddress::loopback_v4(0), UdpOptions{}, nullptr);
  ASSERT_TRUE(tx.ok()) << tx.error().message;
  const std::string poison = "poison";
  const std::string after = "after";
  const auto to = rx.value()->local_address();
  ASSERT_TRUE(
      tx.value()->send({reinterpret_cast<const std::uint8_t*>(poison.data()), poison.size()}, to));
  ASSERT_TRUE(
      tx.value()->send({reinterpret_cast<const std::uint8_t*>(after.data()), after.size()}, to));
  loop.run();
  EXPECT_EQ(delivered, std::vector<std::string>{"after"});
  EXPECT_EQ(loop_guard().count(CallbackKind::kUdpReceive) - before, 1u);
  rx.value().reset();
  tx.value().reset();
  EXPECT_TRUE(loop.close().ok());
}

// A server whose per-connection data handler throws for one peer: that peer's connection is
// closed (it sees EOF), the other peer is still answered, and the listener still accepts.
TEST(LoopGuard, ThrowingTcpDataHandlerClosesOnlyThatConnection) {
  EventLoop loop;
  const std::uint64_t before = loop_guard().count(CallbackKind::kTcpData);
  std::vector<std::unique_ptr<TcpConnection>> accepted;
  auto listener = TcpListener::listen(
      loop, SocketAddress::loopback_v4(0), [&](std::unique_ptr<TcpConnection> c) {
        TcpConnection* raw = c.get();
        accepted.push_back(std::move(c));
        (void)raw->start(
            [raw](std::span<const std::uint8_t> d) {
              std::string text(reinterpret_cast<const char*>(d.data()), d.size());
              if (text.find("poison") != std::string::npos) {
                throw std::runtime_error("injected request fault");
              }
              (void)raw->write("echo:" + text);
            },
            [](const core::Status&) {});
      });
  ASSERT_TRUE(listener.ok()) << listener.error().message;
  const auto addr = listener.value()->local_address();

  struct Peer {
    std::unique_ptr<TcpConnection> tcp;
    std::string received;
    bool closed = false;
  };
  Peer bad;
  Peer good;
  int done = 0;
  auto finish = [&] {
    if (++done == 2) loop.stop();
  };
  auto open_peer = [&](Peer& p, std::string first) {
    auto c = TcpConnection::connect(loop, addr, [&p, first, &finish](const core::Status& st) {
      ASSERT_TRUE(st.ok());
      (void)p.tcp->start(
          [&p, &finish](std::span<const std::uint8_t> d) {
            p.received.append(reinterpret_cast<const char*>(d.data()), d.size());
            if (p.received.find("echo:") != std::string::npos) finish();
          },
          [&p, &finish](const core::Status&) {
            p.closed = true;
            finish();
          });
      (void)p.tcp->write(first);
    });
    ASSERT_TRUE(c.ok());
    p.tcp = std::move(c.value());
  };
  open_peer(bad, "poison");
  open_peer(good, "hello");
  loop.run();
  EXPECT_TRUE(bad.closed);
  EXPECT_TRUE(bad.received.empty());
  EXPECT_FALSE(good.closed);
  EXPECT_EQ(good.received, "echo:hello");
  EXPECT_EQ(loop_guard().count(CallbackKind::kTcpData) - before, 1u);
  EXPECT_GE(loop_guard().total(), 1u);
  bad.tcp.reset();
  good.tcp.reset();
  accepted.clear();
  listener.value().reset();
  EXPECT_TRUE(loop.close().ok());
}

TEST(CallbackGuard, KindsHaveStableNames) {
  // The server's metric labels are among them (predrop_callback_exceptions_total{kind}).
  for (std::size_t k = 0; k < kCallbackKinds; ++k) {
    EXPECT_STRNE(to_string(static_cast<CallbackKind>(k)), "unknown") << k;
  }
  EXPECT_STREQ(to_string(CallbackKind::kRtsp), "rtsp");
  EXPECT_STREQ(to_string(CallbackKind::kRtcp), "rtcp");
  EXPECT_STREQ(to_string(CallbackKind::kMetrics), "metrics");
  EXPECT_STREQ(to_string(CallbackKind::kTimer), "timer");
  EXPECT_STREQ(to_string(CallbackKind::kTcpData), "tcp_data");
  EXPECT_STREQ(to_string(CallbackKind::kUdpReceive), "udp_receive");
}

}  // namespace
}  // namespace predrop::net
