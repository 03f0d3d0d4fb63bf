#pragma once
// Interleaved TCP on one RTSP connection (RFC 2326 §10.12): which channel pairs its sessions'
// tracks use, which session a client frame on an RTCP channel is for, and the bounded media queue
// every RTP and RTCP frame of those sessions goes through (interleaved_queue.hpp). Created by the
// connection's first RTP/AVP/TCP SETUP; the sessions end with the connection.
//
// Threading: the server's loop thread.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "interleaved_queue.hpp"
#include "predrop/rtsp/rtsp_transport.hpp"
#include "predrop/server/stream_session.hpp"

namespace predrop::server::detail {

/// The interleaved channels and media queue of one RTSP connection.
class InterleavedLink {
 public:
  /// The queue writes to `tcp`, or appends to `output` when `tcp` is null (attached connections);
  /// `frames_total` and `dropped_total` are server-wide counters that outlive it.
  InterleavedLink(net::TcpConnection* tcp, std::string* output, std::size_t capacity,
                  std::uint64_t& frames_total, std::uint64_t& dropped_total);

  /// The channels for a track the client asked for with `spec` on a connection with `link`
  /// (nullptr: none yet, every channel is free): its own when both are free, else the lowest
  /// free even pair (the reply says which; players use what it says, RFC 2326 §12.39); nullopt
  /// when none is free. Pure: reserve() takes them.
  static std::optional<InterleavedChannels> choose(const InterleavedLink* link,
                                                   const rtsp::TransportSpec& spec);
  /// Takes `channels` for session `session`: client frames on its RTCP channel go to it.
  void reserve(const InterleavedChannels& channels, const std::string& session);
  /// Frees the channels of `session`'s interleaved tracks.
  void release(const std::vector<SessionTrack>& tracks);
  /// The session whose RTCP channel `channel` is, if any.
  const std::string* session_for(std::uint8_t channel) const;

  InterleavedQueue& queue() { return *queue_; }
  const InterleavedQueue& queue() const { return *queue_; }

 private:
  bool free(unsigned rtp, unsigned rtcp) const;

  std::map<std::uint8_t, std::string> rtcp_channels_;  // client's RTCP channel -> session id
  std::set<std::uint8_t> in_use_;
  std::unique_ptr<InterleavedQueue> queue_;
};

/// An RTP/AVP/TCP offer (RFC 2326 §10.12), as opposed to UDP.
inline bool is_interleaved(const rtsp::TransportSpec& spec) {
  return spec.lower == rtsp::LowerTransport::kTcp;
}

}  // namespace predrop::server::detail
