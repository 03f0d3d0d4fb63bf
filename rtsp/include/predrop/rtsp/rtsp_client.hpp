#pragma once
// A small asynchronous RTSP 1.0 client over one TCP connection (RFC 2326): numbers requests with
// CSeq, keeps the Session header once the server assigned one, and matches responses by CSeq.
// ClientSession (client_session.hpp) runs the play handshake on top of it.
//
// Malformed responses fail the request they answer with an error that says what was wrong:
// the request whose CSeq the response carries, or -- when the CSeq is unreadable or missing --
// the oldest request still waiting (a server answers in request order, RFC 2326 §9.1). A
// response whose framing is lost (bad Content-Length, oversize) fails every waiting request and
// drops the connection (on_closed then reports why). Requests the server sends (e.g.
// SET_PARAMETER) are skipped; interleaved frames ("$", RFC 2326 §10.12) go to the on_frame
// handler when one is set (a session whose media comes over the connection), else are skipped.
//
// Threading: loop thread. Callbacks may destroy the client. No exception leaves the client into
// the event loop: one thrown while handling the connection's events (by the client or by a
// callback it runs) is caught, logged, and handled like lost framing -- waiting requests fail
// with "RTSP: internal error ...", the connection is dropped and on_closed says why.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
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
  /// The response (any status) or why there is none (connection lost, malformed response).
  using OnResponse = std::function<void(core::Result<rtsp::RtspResponse> response)>;
  /// Outcome of connect().
  using OnConnected = std::function<void(const core::Status& result)>;
  /// The connection went down by itself (ok() for an orderly close by the server) or was dropped
  /// by the client (an error: lost framing, internal error). Never after close().
  using OnClosed = std::function<void(const core::Status& why)>;
  /// One interleaved frame: its channel and payload (valid during the call only).
  using OnFrame = std::function<void(std::uint8_t channel, std::span<const std::uint8_t> payload)>;

  /// Starts connecting; `on_connected` reports the outcome.
  static core::Result<std::unique_ptr<RtspClient>> connect(net::EventLoop& loop,
                                                           const net::SocketAddress& server,
                                                           OnConnected on_connected,
                                                           OnClosed on_closed = {});
  ~RtspClient();
  RtspClient(const RtspClient&) = delete;
  RtspClient& operator=(const RtspClient&) = delete;

  /// Sends a request (CSeq, Session and User-Agent are filled in); `on_response` gets the
  /// response or an error (connection lost, malformed response). When the request cannot be
  /// written (connection closed), `on_response` gets the error before send() returns.
  void send(rtsp::RtspMethod method, const std::string& url, const rtsp::RtspHeaders& headers,
            OnResponse on_response);
  /// Where interleaved frames go from now on (empty: skipped). The handler may destroy the client.
  void set_on_frame(OnFrame on_frame) { on_frame_ = std::move(on_frame); }
  /// The session id the server assigned (from the first response with a Session header).
  const std::string& session() const { return session_; }
  /// The session timeout the server announced, seconds (60 if none).
  std::uint32_t session_timeout_s() const { return timeout_s_; }
  /// Closes the connection; pending requests fail (before close() returns). Idempotent.
  void close();

 private:
  RtspClient() = default;
  void on_data(std::span<const std::uint8_t> data);
  void on_tcp_closed(const core::Status& why);
  void on_parse_error(const rtsp::RtspParseError& error);
  void deliver(std::uint32_t cseq, core::Result<rtsp::RtspResponse> response);
  void fail_all(const std::string& why);
  void drop(const std::string& why);
  template <typename Fn>
  void contain(const char* where, Fn&& fn);

  std::unique_ptr<net::TcpConnection> tcp_;
  rtsp::RtspResponseParser parser_;
  std::map<std::uint32_t, OnResponse> pending_;
  std::uint32_t next_cseq_ = 1;
  std::string session_;
  std::uint32_t timeout_s_ = 60;
  std::string closed_why_;  // set once the connection is closed: what a later send() reports
  OnClosed on_closed_;
  OnFrame on_frame_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // tells callbacks we still exist
};

}  // namespace predrop::rtsp
