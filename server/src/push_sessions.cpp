#include "push_sessions.hpp"

#include <fstream>
#include <stdexcept>

#include "predrop/net/os_random.hpp"
#include "session_description.hpp"

namespace predrop::server::detail {

namespace {
const StreamDefinition& stream_named(const StreamServerOptions& options, const std::string& name) {
  for (const auto& s : options.streams) {
    if (s.name == name) {
      if (s.live) throw std::runtime_error("stream " + name + " is published: it cannot be pushed");
      return s;
    }
  }
  throw std::runtime_error("push of unknown stream " + name);
}
}  // namespace

std::vector<std::unique_ptr<SessionEntry>> make_push_sessions(const StreamServerOptions& options,
                                                              const SessionTable& sessions) {
  std::vector<std::unique_ptr<SessionEntry>> out;
  for (const PushTarget& push : options.pushes) {
    const StreamDefinition& stream = stream_named(options, push.stream);
    auto entry = std::make_unique<SessionEntry>();
    entry->id = sessions.fresh_id();
    entry->stream = &stream;
    entry->source = stream.source;
    if (options.srtp) entry->key = net::random_srtp_key(*options.srtp);
    const std::string ip = push.destination.ip_string();
    for (std::size_t i = 0; i < stream.source->streams().size(); ++i) {
      const auto port = static_cast<std::uint16_t>(push.destination.port() + 2 * i);
      SessionTrack t;
      t.media_stream = static_cast<std::uint8_t>(i);
      t.rtp_destination = net::SocketAddress::from_ip(ip, port).value();
      t.rtcp_destination =
          net::SocketAddress::from_ip(ip, static_cast<std::uint16_t>(port + 1)).value();
      t.ssrc = fresh_ssrc(*entry);
      t.initial_sequence = net::random_u16();
      t.timestamp_offset = net::random_u32();
      entry->tracks.push_back(t);
      entry->track_ids.push_back(static_cast<std::uint32_t>(i));
    }
    const SdpSettings sdp{options.srtp, options.block_attribute};
    std::ofstream f(push.sdp_file, std::ios::binary | std::ios::trunc);
    f << push_sdp(describe_stream(stream, options.srtp ? &entry->key : nullptr, "127.0.0.1", sdp),
                  push.destination);
    if (!f) throw std::runtime_error("cannot write SDP file " + push.sdp_file);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace predrop::server::detail
