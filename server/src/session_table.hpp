#pragma once
// The sessions of one StreamServer (stream_server.hpp): each set-up session by its id (the
// credential a request names it by), by the addresses its client's RTCP comes from (the RTCP
// port's demultiplexing), their public numbers, and which of them have expired. It holds and
// finds; the facade decides when a session is added, started or removed, and applies the
// expiry verdicts.
//
// Threading: the server's loop thread.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "predrop/net/socket_address.hpp"
#include "predrop/server/block_history.hpp"
#include "predrop/server/server_options.hpp"
#include "predrop/server/stream_session.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::server::detail {

/// One session as the server keeps it: what SETUP set up, and the StreamSession PLAY started.
struct SessionEntry {
  std::string id;            ///< The credential a request names it by; never shown elsewhere.
  std::uint64_t number = 0;  ///< Public ordinal (1, 2, ...), the metrics label.
  /// IP address the session was set up from (port ignored): only requests from it control the
  /// session. Empty for push sessions, which nobody controls.
  std::optional<net::SocketAddress> owner;
  std::uint64_t connection = 0;              ///< Id of the connection it was set up on.
  const StreamDefinition* stream = nullptr;  ///< Its name and configuration.
  /// What it reads blocks from: the stream's source when it was set up (a published stream's
  /// publisher may change meanwhile; the session keeps reading the source it joined).
  std::shared_ptr<const media::BlockSource> source;
  wire::SrtpKeyMaterial key;
  bool feedback = false;  ///< The client sends PDFB (SETUP X-Predrop-Feedback).
  std::vector<SessionTrack> tracks;
  std::vector<std::uint32_t> track_ids;    ///< trackID=N of each track, for RTP-Info.
  std::unique_ptr<StreamSession> session;  ///< Created at the first PLAY.
  std::uint64_t last_request_us = 0;
  std::string base_url;
  bool interleaved = false;  ///< Its tracks go on connection `connection` (RTP/AVP/TCP).
  /// A WHEP session (docs/webrtc.md): DTLS-SRTP keys, RTP and RTCP on the RTP socket (rtcp-mux),
  /// started when its DTLS handshake completes rather than at PLAY.
  bool webrtc = false;
  /// A WHEP session with transport-cc: the extension id of the transport-wide sequence number
  /// (the browser's a=extmap id); 0 = not negotiated.
  std::uint8_t transport_cc_id = 0;
  /// A WHEP session with NACK and RTX (docs/webrtc.md "NACK and RTX"): the browser's rtx payload
  /// type (0 = not negotiated), the RTX stream's SSRC and first sequence number.
  std::uint8_t rtx_payload_type = 0;
  std::uint32_t rtx_ssrc = 0;
  std::uint16_t rtx_initial_sequence = 0;
  /// A WHEP session that negotiated NACK, PLI or FIR: its RTCP feedback is read.
  bool rtcp_fb = false;
  std::uint32_t slot = kNoSlot;  ///< Its key in the pacer, once it was ever queued.
  std::uint64_t setup_us = 0;    ///< When it was added (the server's clock): "since" in the API.
  BlockHistory history;          ///< Its last blocks, for the control API.
  static constexpr std::uint32_t kNoSlot = UINT32_MAX;
};

/// The sessions of one server.
class SessionTable {
 public:
  using Map = std::map<std::string, std::unique_ptr<SessionEntry>>;

  /// Sessions of worker `worker` of `worker_count` are numbered worker + 1 + k * worker_count.
  SessionTable(std::uint32_t worker, std::uint32_t worker_count);

  /// A fresh session id: 128 random bits as hex (RFC 2326 §12.37: the id is the only credential
  /// a request carries, so it must not be guessable), not in use here.
  std::string fresh_id() const;
  /// Adds `entry` and gives it its number; returns it.
  SessionEntry& add(std::unique_ptr<SessionEntry> entry);
  /// Makes the RTCP addresses of the entry's UDP tracks find it (after its session started).
  void index_addresses(const SessionEntry& entry);
  /// Takes the session out (and out of the address index); nullptr if unknown.
  std::unique_ptr<SessionEntry> remove(const std::string& id);

  SessionEntry* find(const std::string& id) const;
  /// The session whose client sends RTCP from `from`, or nullptr.
  SessionEntry* by_address(const net::SocketAddress& from) const;
  const Map& all() const { return sessions_; }
  std::size_t size() const { return sessions_.size(); }
  /// The sessions that were started (PLAY), in id order.
  std::vector<const StreamSession*> started() const;

  /// The sessions whose client was last heard of (a request or RTCP) more than `timeout_us`
  /// before `now_us`; push sessions never expire.
  std::vector<std::string> expired(std::uint64_t now_us, std::uint64_t timeout_us) const;

  /// Every session out at once (the server stops).
  void clear();

 private:
  std::uint32_t worker_;
  std::uint32_t worker_count_;
  std::uint64_t numbers_ = 0;
  Map sessions_;
  std::unordered_map<net::SocketAddress, std::string> by_address_;
};

/// A random SSRC (RFC 3550 §8.1) distinct from those of the entry's own tracks.
std::uint32_t fresh_ssrc(const SessionEntry& entry);

}  // namespace predrop::server::detail
