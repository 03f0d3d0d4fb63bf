// The event-loop boundary (issue 10, "no exception escapes an event-loop callback"): a callback
// that throws is counted by kind and contained — a timer keeps firing, a UDP endpoint delivers
// the next datagram, and a TCP connection whose data handler threw is closed while the listener
// and every other connection go on. Faults are injected by handlers that throw on purpose.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "predrop/net/callback_faults.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/tcp.hpp"
#include "predrop/net/udp_endpoint.hpp"

namespace predrop::net {
namespace {

TEST(CallbackFaults, ThrowingTimerIsCountedAndKeepsFiring) {
  EventLoop loop;
  const std::uint64_t before = callback_faults(CallbackKind::kTimer);
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
  EXPECT_EQ(callback_faults(CallbackKind::kTimer) - before, 2u);
  EXPECT_TRUE(loop.close().ok());
}

TEST(CallbackFaults, ThrowingUdpHandlerLosesOnlyThatDatagram) {
  EventLoop loop;
  const std::uint64_t before = callback_faults(CallbackKind::kUdpReceive);
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
  EXPECT_EQ(callback_faults(CallbackKind::kUdpReceive) - before, 1u);
  rx.value().reset();
  tx.value().reset();
  EXPECT_TRUE(loop.close().ok());
}

// A server whose per-connection data handler throws for one peer: that peer's connection is
// closed (it sees EOF), the other peer is still answered, and the listener still accepts.
TEST(CallbackFaults, ThrowingTcpDataHandlerClosesOnlyThatConnection) {
  EventLoop loop;
  const std::uint64_t before = callback_faults(CallbackKind::kTcpData);
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
  EXPECT_EQ(callback_faults(CallbackKind::kTcpData) - before, 1u);
  EXPECT_GE(callback_faults_total(), 1u);
  bad.tcp.reset();
  good.tcp.reset();
  accepted.clear();
  listener.value().reset();
  EXPECT_TRUE(loop.close().ok());
}

TEST(CallbackFaults, KindsHaveStableNames) {
  EXPECT_STREQ(to_string(CallbackKind::kTimer), "timer");
  EXPECT_STREQ(to_string(CallbackKind::kTcpData), "tcp_data");
  EXPECT_STREQ(to_string(CallbackKind::kUdpReceive), "udp_receive");
}

}  // namespace
}  // namespace predrop::net
