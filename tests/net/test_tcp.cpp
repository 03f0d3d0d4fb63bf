// TcpListener and TcpConnection over real loopback sockets and a real libuv loop: byte exchange,
// orderly and abrupt closes, a peer vanishing mid-write, idle timeout, setup errors, and a plain
// POSIX client. Every test ends with a clean loop close.
#include "predrop/net/tcp.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "loop_watchdog.hpp"

namespace predrop::net {
namespace {

void expect_clean_close(EventLoop& loop) {
  auto st = loop.close();
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(loop.forced_closes(), 0u);
  EXPECT_EQ(loop.handle_count(), 0u);
}

std::string as_string(std::span<const std::uint8_t> d) {
  return std::string(d.begin(), d.end());
}

// A server side that echoes and records how its connection ended.
struct EchoServer {
  std::unique_ptr<TcpListener> listener;
  std::unique_ptr<TcpConnection> conn;
  std::optional<core::Status> closed_with;
  SocketAddress peer;
  int accepted = 0;

  explicit EchoServer(EventLoop& loop) {
    auto l =
        TcpListener::listen(loop, SocketAddress::loopback_v4(0),
                            [this](std::unique_ptr<TcpConnection> c) { on_accept(std::move(c)); });
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.error().message);
    if (l.ok()) listener = std::move(l.value());
  }
  void on_accept(std::unique_ptr<TcpConnection> c) {
    ++accepted;
    conn = std::move(c);
    peer = conn->peer_address();
    auto st =
        conn->start([this](std::span<const std::uint8_t> d) { (void)conn->write(as_string(d)); },
                    [this](const core::Status& why) {
                      closed_with = why;
                      conn.reset();  // Destroying the connection inside on_close is allowed.
                      listener.reset();
                    });
    EXPECT_TRUE(st.ok());
  }
};

TEST(Tcp, EchoRoundTripAndOrderlyClose) {
  EventLoop loop;
  std::string reply;
  std::optional<core::Status> connect_result;
  SocketAddress client_local;
  {
    auto guard = test::loop_watchdog(loop, "expected event never happened");
    EchoServer server(loop);
    ASSERT_TRUE(server.listener);
    std::unique_ptr<TcpConnection> client;
    auto c =
        TcpConnection::connect(loop, server.listener->local_address(), [&](const core::Status& st) {
          connect_result = st;
          ASSERT_TRUE(st.ok()) << st.error().message;
          client_local = client->local_address();
          ASSERT_TRUE(client
                          ->start(
                              [&](std::span<const std::uint8_t> d) {
                                reply += as_string(d);
                                if (reply == "hello, world") {
                                  client.reset();  // We hang up.
                                }
                              },
                              [](const core::Status&) { ADD_FAILURE() << "client on_close"; })
                          .ok());
          ASSERT_TRUE(client->write("hello, ").ok());
          ASSERT_TRUE(client->write("world").ok());
        });
    ASSERT_TRUE(c.ok()) << c.error().message;
    client = std::move(c.value());
    loop.run();  // Ends when the server has seen EOF and dropped connection and listener.
    EXPECT_EQ(server.accepted, 1);
    ASSERT_TRUE(server.closed_with.has_value());
    EXPECT_TRUE(server.closed_with->ok()) << "orderly close by the peer is reported as ok()";
    EXPECT_EQ(server.peer, client_local);
  }
  ASSERT_TRUE(connect_result.has_value());
  EXPECT_EQ(reply, "hello, world");
  expect_clean_close(loop);
}

TEST(Tcp, LargeTransferArrivesWholeBeforeCloseAfterWrites) {
  constexpr std::size_t kChunk = 256 * 1024;
  constexpr std::size_t kChunks = 16;  // 4 MiB: more than the socket buffers take at once.
  EventLoop loop;
  std::size_t received = 0;
  std::uint64_t checksum = 0;
  std::optional<core::Status> server_closed;
  {
    auto guard = test::loop_watchdog(loop, "expected event never happened");
    std::unique_ptr<TcpConnection> server_conn;
    std::unique_ptr<TcpListener> listener;
    auto l = TcpListener::listen(loop, SocketAddress::loopback_v4(0),
                                 [&](std::unique_ptr<TcpConnection> c) {
                                   server_conn = std::move(c);
                                   ASSERT_TRUE(server_conn
                                                   ->start(
                                                       [&](std::span<const std::uint8_t> d) {
                                                         received += d.size();
                                                         for (auto b : d)
                                                           checksum += b;
                                                       },
                                                       [&](const core::Status& why) {
                                                         server_closed = why;
                                                         server_conn.reset();
                                                         listener.reset();
                                                       })
                                                   .ok());
                                 });
    ASSERT_TRUE(l.ok());
    listener = std::move(l.value());
    std::unique_ptr<TcpConnection> client;
    std::uint64_t sent_sum = 0;
    auto c = TcpConnection::connect(loop, listener->local_address(), [&](const core::Status& st) {
      ASSERT_TRUE(st.ok());
      for (std::size_t i = 0; i < kChunks; ++i) {
        std::string chunk(kChunk, static_cast<char>(i + 1));
        sent_sum += static_cast<std::uint64_t>(i + 1) * kChunk;
        ASSERT_TRUE(client->write(std::move(chunk)).ok());
      }
      EXPECT_GT(client->write_queue_bytes(), 0u);  // libuv holds what the kernel did not take.
      client->close_after_writes();
    });
    ASSERT_TRUE(c.ok());
    client = std::move(c.value());
    loop.run();
    EXPECT_EQ(checksum, sent_sum);
  }
  EXPECT_EQ(received, kChunk * kChunks);
  ASSERT_TRUE(server_closed.has_value());
  EXPECT_TRUE(server_closed->ok());
  expect_clean_close(loop);
}

TEST(Tcp, PeerVanishingMidWriteClosesWithAnError) {
  EventLoop loop;
  std::optional<core::Status> server_closed;
  bool client_got_data = false;
  {
    auto guard = test::loop_watchdog(loop, "expected event never happened");
    std::unique_ptr<TcpConnection> server_conn;
    std::unique_ptr<TcpConnection> client;
    std::unique_ptr<TcpListener> listener;
    auto l = TcpListener::listen(
        loop, SocketAddress::loopback_v4(0), [&](std::unique_ptr<TcpConnection> c) {
          server_conn = std::move(c);
          ASSERT_TRUE(server_conn
                          ->start([](std::span<const std::uint8_t>) {},
                                  [&](const core::Status& why) {
                                    server_closed = why;
                                    server_conn.reset();
                                    listener.reset();
                                  })
                          .ok());
          // Far more than loopback socket buffers hold: most of it
          // stays queued in libuv, owned by the write requests.
          for (int i = 0; i < 64; ++i) {
            ASSERT_TRUE(server_conn->write(std::string(1 << 20, 'x')).ok());
          }
          EXPECT_GT(server_conn->write_queue_bytes(), 0u);
        });
    ASSERT_TRUE(l.ok());
    listener = std::move(l.value());
    auto c = TcpConnection::connect(loop, listener->local_address(), [&](const core::Status& st) {
      ASSERT_TRUE(st.ok());
      ASSERT_TRUE(client
                      ->start(
                          [&](std::span<const std::uint8_t>) {
                            // Vanish with unread data in the kernel: the close sends a reset.
                            client_got_data = true;
                            client.reset();
                          },
                          [](const core::Status&) {})
                      .ok());
    });
    ASSERT_TRUE(c.ok());
    client = std::move(c.value());
    loop.run();
  }
  EXPECT_TRUE(client_got_data);
  ASSERT_TRUE(server_closed.has_value());
  EXPECT_FALSE(server_closed->ok());
  if (!server_closed->ok()) {
    const std::string& msg = server_closed->error().message;
    EXPECT_TRUE(msg.find("ECONNRESET") != std::string::npos ||
                msg.find("EPIPE") != std::string::npos)
        << msg;
  }
  expect_clean_close(loop);
}

TEST(Tcp, DestroyingAConnectionWithQueuedWritesIsSafe) {
  EventLoop loop;
  std::optional<core::Status> client_closed;
  {
    auto guard = test::loop_watchdog(loop, "expected event never happened");
    std::unique_ptr<TcpConnection> client;
    std::unique_ptr<TcpListener> listener;
    auto l = TcpListener::listen(loop, SocketAddress::loopback_v4(0),
                                 [&](std::unique_ptr<TcpConnection> c) {
                                   for (int i = 0; i < 32; ++i) {
                                     ASSERT_TRUE(c->write(std::string(1 << 20, 'y')).ok());
                                   }
                                   // `c` dies here with megabytes queued: libuv cancels the
                                   // writes and each request frees its own buffer.
                                   listener.reset();
                                 });
    ASSERT_TRUE(l.ok());
    listener = std::move(l.value());
    auto c = TcpConnection::connect(loop, listener->local_address(), [&](const core::Status& st) {
      ASSERT_TRUE(st.ok());
      ASSERT_TRUE(client
                      ->start([](std::span<const std::uint8_t>) {},
                              [&](const core::Status& why) {
                                client_closed = why;
                                client.reset();
                              })
                      .ok());
    });
    ASSERT_TRUE(c.ok());
    client = std::move(c.value());
    loop.run();
  }
  // The client sees the server's close: EOF after the bytes that made it, or a reset.
  EXPECT_TRUE(client_closed.has_value());
  expect_clean_close(loop);
}

TEST(Tcp, IdleTimeoutClosesASilentConnection) {
  EventLoop loop;
  std::optional<core::Status> server_closed;
  {
    auto guard = test::loop_watchdog(loop, "expected event never happened");
    std::unique_ptr<TcpConnection> server_conn;
    std::unique_ptr<TcpConnection> client;
    std::unique_ptr<TcpListener> listener;
    auto l = TcpListener::listen(loop, SocketAddress::loopback_v4(0),
                                 [&](std::unique_ptr<TcpConnection> c) {
                                   server_conn = std::move(c);
                                   ASSERT_TRUE(server_conn
                                                   ->start([](std::span<const std::uint8_t>) {},
                                                           [&](const core::Status& why) {
                                                             server_closed = why;
                                                             server_conn.reset();
                                                             listener.reset();
                                                             client.reset();
                                                           })
                                                   .ok());
                                   server_conn->set_idle_timeout(20);
                                 });
    ASSERT_TRUE(l.ok());
    listener = std::move(l.value());
    auto c = TcpConnection::connect(loop, listener->local_address(), [](const core::Status& st) {
      ASSERT_TRUE(st.ok());  // ...and then say nothing.
    });
    ASSERT_TRUE(c.ok());
    client = std::move(c.value());
    loop.run();
  }
  ASSERT_TRUE(server_closed.has_value());
  ASSERT_FALSE(server_closed->ok());
  EXPECT_NE(server_closed->error().message.find("idle timeout"), std::string::npos);
  expect_clean_close(loop);
}

TEST(Tcp, ConnectToAClosedPortReportsAnError) {
  EventLoop loop;
  std::optional<core::Status> result;
  {
    auto guard = test::loop_watchdog(loop, "expected event never happened");
    SocketAddress free_port;
    {
      // Borrow a port number that nothing listens on any more.
      auto l = TcpListener::listen(loop, SocketAddress::loopback_v4(0), [](auto) {});
      ASSERT_TRUE(l.ok());
      free_port = l.value()->local_address();
    }
    std::unique_ptr<TcpConnection> client;
    auto c = TcpConnection::connect(loop, free_port, [&](const core::Status& st) {
      result = st;
      EXPECT_FALSE(client->is_open());  // A failed connect closes the connection.
      EXPECT_FALSE(client->write("x").ok());
      client.reset();
    });
    ASSERT_TRUE(c.ok());
    client = std::move(c.value());
    loop.run();
  }
  ASSERT_TRUE(result.has_value());
  ASSERT_FALSE(result->ok());
  EXPECT_NE(result->error().message.find("ECONNREFUSED"), std::string::npos)
      << result->error().message;
  expect_clean_close(loop);
}

TEST(Tcp, ListenOnABusyPortFails) {
  EventLoop loop;
  {
    auto a = TcpListener::listen(loop, SocketAddress::loopback_v4(0), [](auto) {});
    ASSERT_TRUE(a.ok());
    auto b = TcpListener::listen(loop, a.value()->local_address(), [](auto) {});
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.error().message.find("EADDRINUSE"), std::string::npos) << b.error().message;
  }
  expect_clean_close(loop);
}

TEST(Tcp, DestroyingAConnectionWhileConnectingIsSafe) {
  EventLoop loop;
  bool called = false;
  {
    auto l = TcpListener::listen(loop, SocketAddress::loopback_v4(0), [](auto) {});
    ASSERT_TRUE(l.ok());
    auto c = TcpConnection::connect(loop, l.value()->local_address(),
                                    [&](const core::Status&) { called = true; });
    ASSERT_TRUE(c.ok());
    // Both die before the loop runs: the connect request is cancelled and frees itself.
  }
  loop.run();
  EXPECT_FALSE(called);
  expect_clean_close(loop);
}

TEST(Tcp, PlainPosixClientTalksToTheServer) {
  EventLoop loop;
  std::string request_seen;
  std::optional<core::Status> server_closed;
  std::string client_got;
  {
    auto guard = test::loop_watchdog(loop, "expected event never happened");
    std::unique_ptr<TcpConnection> server_conn;
    std::unique_ptr<TcpListener> listener;
    auto l = TcpListener::listen(
        loop, SocketAddress::loopback_v4(0), [&](std::unique_ptr<TcpConnection> c) {
          server_conn = std::move(c);
          ASSERT_TRUE(
              server_conn
                  ->start(
                      [&](std::span<const std::uint8_t> d) {
                        request_seen += as_string(d);
                        if (request_seen.find("\r\n\r\n") != std::string::npos) {
                          ASSERT_TRUE(
                              server_conn->write("RTSP/1.0 200 OK\r\nCSeq: 1\r\n\r\n").ok());
                          server_conn->close_after_writes();  // Reply, then hang up.
                          listener.reset();
                        }
                      },
                      [&](const core::Status& why) { server_closed = why; })
                  .ok());
        });
    ASSERT_TRUE(l.ok());
    listener = std::move(l.value());
    const std::uint16_t port = listener->local_address().port();

    // A blocking client on its own thread; the loop thread serves it.
    std::thread client([port, &client_got] {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(port);
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        ::close(fd);
        return;
      }
      const std::string req = "OPTIONS rtsp://127.0.0.1/x RTSP/1.0\r\nCSeq: 1\r\n\r\n";
      (void)::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
      char buf[512];
      ssize_t n;
      while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0)
        client_got.append(buf, buf + n);
      ::close(fd);
    });
    loop.run();  // Ends once the server has replied, shut down and closed.
    client.join();
    server_conn.reset();
  }
  EXPECT_EQ(request_seen, "OPTIONS rtsp://127.0.0.1/x RTSP/1.0\r\nCSeq: 1\r\n\r\n");
  EXPECT_EQ(client_got, "RTSP/1.0 200 OK\r\nCSeq: 1\r\n\r\n");
  EXPECT_FALSE(server_closed.has_value());  // close_after_writes() does not call on_close.
  expect_clean_close(loop);
}

}  // namespace
}  // namespace predrop::net
