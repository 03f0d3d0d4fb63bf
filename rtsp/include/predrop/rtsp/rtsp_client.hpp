#pragma once
// A small asynchronous RTSP 1.0 client over one TCP connection (RFC 2326): numbers requests with
// CSeq, keeps the Session header once the server assigned one, and matches responses by CSeq.
// Used by the measuring client and the load tester.
//
// Threading: loop thread. Callbacks may destroy the client.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "predrop/core/result.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/socket_address.hpp"
#include "predrop/net/tcp.hpp"
#include "predrop/rtsp/rtsp_message.hpp"

namespace predrop::rtsp {

/// An RTSP connection to one server.
class RtspClient {
 public:
  using OnResponse = std::function<void(core::Result<rtsp::RtspResponse> response)>;
  using OnConnected = std::function<void(const core::Status& result)>;
  using OnClosed = std::function<void(const core::Status& why)>;

  /// Starts connecting; `on_connected` reports the outcome.
  static core::Result<std::unique_ptr<RtspClient>> connect(net::EventLoop& loop,
                                                           const net::SocketAddress& server,
                                                           OnConnected on_connected,
                                                           OnClosed on_closed = {});
  ~RtspClient();
  RtspClient(const RtspClient&) = delete;
  RtspClient& operator=(const RtspClient&) = delete;

  /// Sends a request (CSeq, Session and User-Agent are filled in); `on_response` gets the
  /// response or an error (connection lost, malformed response).
  void send(rtsp::RtspMethod method, const std::string& url, rtsp::RtspHeaders headers,
            OnResponse on_response);
  /// The session id the server assigned (from the first response with a Session header).
  const std::string& session() const { return session_; }
  /// The session timeout the server announced, seconds (60 if none).
  std::uint32_t session_timeout_s() const { return timeout_s_; }
  /// Closes the connection; pending requests fail.
  void close();

 private:
  RtspClient() = default;
  void on_data(std::span<const std::uint8_t> data);
  void fail_all(const std::string& why);

  std::unique_ptr<net::TcpConnection> tcp_;
  rtsp::RtspResponseParser parser_;
  std::map<std::uint32_t, OnResponse> pending_;
  std::uint32_t next_cseq_ = 1;
  std::string session_;
  std::uint32_t timeout_s_ = 60;
  OnClosed on_closed_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // tells callbacks we still exist
};

}  // namespace predrop::rtsp
