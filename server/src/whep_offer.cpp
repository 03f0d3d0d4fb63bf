// A WHEP offer's session entry and SDP answer; see whep_offer.hpp.
#include "whep_offer.hpp"

#include <algorithm>
#include <initializer_list>
#include <mutex>
#include <set>

#include "predrop/core/log.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/webrtc/whep_sdp.hpp"

namespace predrop::server::detail {
namespace {

WhepSetup refused(int status, std::string why) {
  WhepSetup s;
  s.outcome.status = status;
  s.outcome.error = std::move(why);
  return s;
}

const StreamDefinition* find_stream(const StreamServerOptions& options, std::string_view name) {
  for (const auto& s : options.streams) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// The first stream of `kind` of the source; nullopt when it has none.
std::optional<std::uint8_t> stream_index(const media::BlockSource& source, media::MediaKind kind) {
  const auto streams = source.streams();
  for (std::size_t i = 0; i < streams.size(); ++i) {
    if (streams[i].kind == kind) return static_cast<std::uint8_t>(i);
  }
  return std::nullopt;
}

// Says once per stream (and process: every worker asks) why its audio track cannot go to a
// browser, e.g. AAC; offers are not logged one by one.
void log_audio_refused_once(const std::string& stream, const std::string& why) {
  static std::mutex mutex;
  static std::set<std::string> said;
  const std::lock_guard lock(mutex);
  if (!said.insert(stream).second) return;
  core::log(core::LogLevel::kWarn, "webrtc",
            "stream '%s': its audio is not sent to browsers (%s); video only (said once)",
            stream.c_str(), why.c_str());
}

// A random SSRC other than those given.
std::uint32_t other_ssrc(std::initializer_list<std::uint32_t> taken) {
  std::uint32_t ssrc = 0;
  while (ssrc == 0 || std::find(taken.begin(), taken.end(), ssrc) != taken.end()) {
    ssrc = net::random_u32();
  }
  return ssrc;
}

}  // namespace

WhepSetup prepare_whep_session(const StreamServerOptions& options, const SessionTable& sessions,
                               std::string_view stream_name, std::string_view offer_sdp,
                               const net::SocketAddress& peer, const WhepEndpoint& endpoint) {
  const StreamDefinition* stream = find_stream(options, stream_name);
  if (stream == nullptr) return refused(404, "no stream '" + std::string(stream_name) + "'");
  auto source = stream->current_source();
  if (!source) return refused(404, "nobody publishes '" + stream->name + "' now");
  const auto video = stream_index(*source, media::MediaKind::kVideo);
  const auto audio = stream_index(*source, media::MediaKind::kAudio);
  if (!video) return refused(406, "stream '" + stream->name + "' has no video");
  auto offer = webrtc::parse_whep_offer(offer_sdp);
  if (!offer) return refused(400, offer.error().message);

  WhepSetup s;
  s.local = webrtc::random_ice_credentials();
  auto entry = std::make_unique<SessionEntry>();
  entry->id = sessions.fresh_id();
  SessionTrack track;
  track.media_stream = *video;
  track.ssrc = fresh_ssrc(*entry);
  track.initial_sequence = net::random_u16();
  track.timestamp_offset = net::random_u32();
  // The RTX stream's SSRC (RFC 4588 §8.3: another SSRC, grouped by a=ssrc-group:FID).
  const std::uint32_t rtx_ssrc = other_ssrc({track.ssrc});
  // Opus audio (docs/webrtc.md "Audio"): its own SSRC, sequence and timestamp offset.
  SessionTrack sound;
  if (audio) {
    sound.media_stream = *audio;
    sound.ssrc = other_ssrc({track.ssrc, rtx_ssrc});
    sound.initial_sequence = net::random_u16();
    sound.timestamp_offset = net::random_u32();
  }
  const bool any = endpoint.bind_ip == "0.0.0.0" || endpoint.bind_ip == "::";
  const webrtc::AnswerParams params{
      s.local,
      endpoint.fingerprint,
      any ? (endpoint.hint.empty() ? "127.0.0.1" : endpoint.hint) : endpoint.bind_ip,
      endpoint.port,
      track.ssrc,
      "predrop",
      rtx_ssrc,
      audio ? sound.ssrc : 0};
  const media::StreamInfo* audio_info = audio ? &source->streams()[*audio] : nullptr;
  auto answer = webrtc::answer_whep_offer(*offer, source->streams()[*video], params, audio_info);
  if (!answer) return refused(406, answer.error().message);
  if (audio_info != nullptr && audio_info->codec != media::Codec::kOpus &&
      !answer->audio_rejected.empty()) {
    log_audio_refused_once(stream->name, answer->audio_rejected);
  }
  track.payload_type = answer->payload_type;
  entry->transport_cc_id = answer->transport_cc_id;
  entry->rtx_payload_type = answer->rtx_payload_type;
  entry->rtx_ssrc = rtx_ssrc;
  entry->rtx_initial_sequence = net::random_u16();
  entry->rtcp_fb = answer->rtx_payload_type != 0 || answer->pli || answer->fir;

  // The same limits as an RTSP SETUP (rtsp_methods.cpp create_session), for the process.
  switch (options.directory->try_add(entry->id, options.worker, peer.ip_string(),
                                     options.max_sessions, options.max_sessions_per_address)) {
    case SessionDirectory::Admit::kAdded:
      break;
    case SessionDirectory::Admit::kFull:
      return refused(503, "session limit reached");
    case SessionDirectory::Admit::kAddressFull:
      return refused(503, "session limit for this address reached");
  }
  entry->owner = peer;
  entry->stream = stream;
  entry->source = std::move(source);
  entry->webrtc = true;
  // The video first: track 0 is the one NACK/RTX and PLI/FIR are about.
  entry->tracks.push_back(track);
  entry->track_ids.push_back(*video);
  if (answer->audio_payload_type != 0) {
    sound.payload_type = answer->audio_payload_type;
    entry->tracks.push_back(sound);
    entry->track_ids.push_back(*audio);
  }
  s.outcome.status = 201;
  s.outcome.answer = std::move(answer.value().sdp);
  s.outcome.session = entry->id;
  s.remote_ufrag = offer->ice_ufrag;
  s.remote_fingerprint = offer->fingerprint_sha256;
  s.entry = std::move(entry);
  return s;
}

}  // namespace predrop::server::detail
