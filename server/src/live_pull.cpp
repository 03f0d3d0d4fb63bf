// A pulled stream (predrop/server/live_pull.hpp).
#include "predrop/server/live_pull.hpp"

#include <algorithm>

#include "live_publish.hpp"
#include "predrop/core/log.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/rtsp/client_session.hpp"

namespace predrop::server {

namespace {
// Largest interleaved frame (RFC 2326 §10.12: a 16-bit length) plus SRTP's room.
constexpr std::size_t kScratch = 65535 + net::kSrtpMaxTrailer;

// Whether a (compound) RTCP packet holds a BYE (RFC 3550 §6.6, packet type 203).
bool has_bye(std::span<const std::uint8_t> p) {
  while (p.size() >= 4) {
    if (p[1] == 203) return true;
    const std::size_t len = 4 * (std::size_t{static_cast<std::uint16_t>((p[2] << 8) | p[3])} + 1);
    if (len > p.size()) return false;
    p = p.subspan(len);
  }
  return false;
}

bool same_video(const media::LiveVideoSpec& a, const media::LiveVideoSpec& b) {
  return a.parameter_sets == b.parameter_sets && a.clock_rate == b.clock_rate;
}

double seconds(std::uint64_t us) {
  return static_cast<double>(us) / 1e6;
}
}  // namespace

const char* to_string(PullState state) {
  switch (state) {
    case PullState::kIdle:
      return "idle";
    case PullState::kConnecting:
      return "connecting";
    case PullState::kPlaying:
      return "playing";
    case PullState::kBackingOff:
      return "backing-off";
  }
  return "?";
}

LivePull::LivePull(net::EventLoop& loop, const net::Clock& clock, CallbackGuard& guard,
                   std::string stream, std::shared_ptr<LivePoint> point)
    : loop_(loop),
      clock_(clock),
      guard_(guard),
      point_(std::move(point)),
      settings_(point_->settings().pull.value()),
      backoff_(settings_.backoff),
      scratch_(kScratch),
      token_(LivePoint::next_token()),
      jitter_(net::random_u32()) {
  status_.stream = std::move(stream);
  status_.url = settings_.url;
}

LivePull::~LivePull() {
  stop();
}

void LivePull::start() {
  timer_ = std::make_unique<net::Timer>(
      loop_, [this] { guard_.run(CallbackKind::kTimer, [this] { tick(); }); });
  timer_->start(kTickMs, kTickMs);
  connect(!settings_.always);
}

void LivePull::stop() {
  timer_.reset();
  close_session();
  retired_.reset();
  if (source_) point_->release(token_, clock_.now_us());
  source_.reset();
  status_.state = PullState::kIdle;
}

std::uint64_t LivePull::viewers() const {
  // The point's references to its source, less our own.
  const long refs = point_->references() - (source_ ? 1 : 0);
  return refs > 0 ? static_cast<std::uint64_t>(refs) : 0;
}

void LivePull::connect(bool probe) {
  close_session();
  probing_ = probe;
  ++status_.attempts;
  status_.state = PullState::kConnecting;
  core::log(core::LogLevel::kInfo, "pull", "'%s': %s %s (attempt %llu, %u failed in a row)",
            status_.stream.c_str(), probe ? "describing" : "connecting to", settings_.url.c_str(),
            static_cast<unsigned long long>(status_.attempts), backoff_.failures());
  rtsp::ClientSessionOptions o;
  o.url = settings_.url;
  o.interleaved = true;
  o.headers.set(kRelayHeader, "1");  // an origin with edges serves us instead of redirecting
  o.request_timeout_ms = settings_.request_timeout_ms;
  rtsp::ClientSession::Handlers h;
  h.on_described =
      [this](const rtsp::SessionDescription& d) -> core::Result<std::vector<std::size_t>> {
    std::vector<std::size_t> chosen;
    if (!on_described(d, chosen)) return core::make_error(status_.last_error);
    return chosen;
  };
  h.on_playing = [this] { on_playing(); };
  h.on_failed = [this](const rtsp::SessionError& e) { fail(e.message()); };
  h.on_frame = [this](std::uint8_t channel, std::span<const std::uint8_t> payload) {
    on_frame(channel, payload);
  };
  session_ = std::make_unique<rtsp::ClientSession>(loop_, std::move(o), std::move(h));
  session_->start();  // a bad URL fails at once, through fail()
}

// The upstream's SDP: its video must be what a publisher may send (live_publish.hpp). The
// source is made, or kept when the video is the same as before.
bool LivePull::on_described(const rtsp::SessionDescription& d, std::vector<std::size_t>& chosen) {
  auto announced = detail::read_live_sdp(d.sdp);
  if (!announced) {
    status_.last_error = "upstream SDP: " + announced.error().message;
    return false;
  }
  std::size_t video = 0;
  // read_live_sdp found one video track.
  while (!announced->tracks[video].video) {
    ++video;
  }
  std::optional<std::size_t> audio;
  for (std::size_t i = 0; i < announced->tracks.size(); ++i) {
    if (announced->tracks[i].audio) audio = i;
  }
  if (!source_ || !same_video(spec_, announced->video) || audio_spec_ != announced->audio) {
    if (source_) {
      core::log(core::LogLevel::kWarn, "pull",
                "'%s': the upstream's video parameters changed: a new source (viewers of the "
                "old one get a BYE)",
                status_.stream.c_str());
    }
    if (!announced->audio_unserved.empty()) {
      core::log(core::LogLevel::kWarn, "pull", "'%s': audio %s; not served (video only)",
                status_.stream.c_str(), announced->audio_unserved.c_str());
    }
    spec_ = announced->video;
    audio_spec_ = announced->audio;
    source_ = std::make_shared<media::LiveSource>(spec_, point_->settings().source, audio_spec_);
    (void)point_->claim(token_, source_, clock_.now_us());
    ++status_.new_sources;
    fed_ = false;
  }
  for (std::size_t k = 0; k < pulled_.size(); ++k) {
    Pulled& p = pulled_[k];
    p = Pulled{};
    const std::optional<std::size_t> index = k == 0 ? std::optional(video) : audio;
    if (!index) continue;
    const rtsp::SessionTrack& track = d.tracks.at(*index);
    p.wanted = true;
    p.payload_type = track.payload_type;
    if (track.key) {
      p.srtp = std::make_unique<net::SrtpSession>(net::SrtpDirection::Inbound, track.key->suite,
                                                  track.key->key);
    }
  }
  if (probing_) {
    // Described: that is all a probe wanted. The session goes (no SETUP was sent).
    probing_ = false;
    status_.state = PullState::kIdle;
    last_viewer_us_ = 0;
    core::log(core::LogLevel::kInfo, "pull", "'%s': described; pulled from the first viewer on",
              status_.stream.c_str());
    close_session();  // the session sees itself closed when this returns and stops there
    return true;
  }
  chosen.push_back(video);
  if (audio) chosen.push_back(*audio);
  return true;
}

void LivePull::on_playing() {
  // The session's tracks are those chosen, in that order: the video, then the audio.
  const auto tracks = session_->tracks();
  for (std::size_t k = 0; k < pulled_.size() && k < tracks.size(); ++k) {
    pulled_[k].rtp_channel = tracks[k].channels ? tracks[k].channels->rtp : -1;
    pulled_[k].rtcp_channel = tracks[k].channels ? tracks[k].channels->rtcp : -1;
  }
  const std::uint64_t now = clock_.now_us();
  status_.state = PullState::kPlaying;
  ++status_.plays;
  backoff_.on_playing(now);
  playing_since_us_ = now;
  last_media_us_ = now;
  last_viewer_us_ = now;
  core::log(core::LogLevel::kInfo, "pull", "'%s': playing %s (RTP/AVP/TCP channels %d-%d%s%s)",
            status_.stream.c_str(), settings_.url.c_str(), pulled_[0].rtp_channel,
            pulled_[0].rtcp_channel, pulled_[0].srtp ? ", SRTP" : "",
            pulled_[1].rtp_channel >= 0 ? ", with audio" : "");
}

void LivePull::on_frame(std::uint8_t channel, std::span<const std::uint8_t> payload) {
  if (status_.state != PullState::kPlaying) return;
  if (payload.size() + net::kSrtpMaxTrailer > scratch_.size()) {
    ++status_.dropped;
    return;
  }
  std::copy(payload.begin(), payload.end(), scratch_.begin());
  std::size_t len = payload.size();
  for (std::size_t k = 0; k < pulled_.size(); ++k) {
    Pulled& p = pulled_[k];
    if (channel != p.rtcp_channel) continue;
    if (p.srtp) {
      const auto r = p.srtp->unprotect_rtcp(scratch_, len);
      if (!r) return;
      len = r.length;
    }
    const auto rtcp = std::span<const std::uint8_t>(scratch_).first(len);
    if (has_bye(rtcp)) {
      fail("the upstream sent an RTCP BYE");
      return;
    }
    (void)detail::feed_sender_reports(*source_, k, rtcp);
    return;
  }
  std::size_t k = 0;
  while (k < pulled_.size() && channel != pulled_[k].rtp_channel) {
    ++k;
  }
  if (k == pulled_.size()) {
    ++status_.dropped;
    return;
  }
  Pulled& p = pulled_[k];
  if (p.srtp) {
    const auto r = p.srtp->unprotect_rtp(scratch_, len);
    if (!r) {
      ++status_.dropped;
      return;
    }
    len = r.length;
  }
  const auto rtp = detail::read_rtp(std::span<const std::uint8_t>(scratch_).first(len));
  if (!rtp || rtp->payload_type != p.payload_type) {
    ++status_.dropped;
    return;
  }
  const std::uint64_t now = clock_.now_us();
  last_media_us_ = now;
  ++status_.packets;
  fed_ = true;
  if (k == 0) {
    source_->push_video(rtp->sequence, rtp->timestamp, rtp->marker, rtp->payload, now);
  } else {
    source_->push_audio(rtp->sequence, rtp->timestamp, rtp->marker, rtp->payload, now);
  }
}

void LivePull::fail(const std::string& why) {
  const std::uint64_t now = clock_.now_us();
  const bool was_playing = status_.state == PullState::kPlaying;
  close_session();
  ++status_.failures;
  status_.last_error = why;
  const std::uint64_t delay =
      backoff_.on_failure(now, static_cast<double>(jitter_() - jitter_.min()) /
                                   static_cast<double>(jitter_.max() - jitter_.min() + 1));
  status_.failures_in_a_row = backoff_.failures();
  status_.state = PullState::kBackingOff;
  retry_at_us_ = now + delay;
  const std::string after =
      was_playing ? " after " + std::to_string((now - playing_since_us_) / 1'000'000) + " s playing"
                  : "";
  core::log(core::LogLevel::kWarn, "pull", "'%s': %s%s; again in %.1f s (%u failed in a row)",
            status_.stream.c_str(), why.c_str(), after.c_str(), seconds(delay),
            backoff_.failures());
}

void LivePull::go_idle(const char* why) {
  close_session();
  status_.state = PullState::kIdle;
  core::log(core::LogLevel::kInfo, "pull", "'%s': stopped: %s", status_.stream.c_str(), why);
}

// Ends the upstream session, if any; what the source holds of the old RTP stream is published.
void LivePull::close_session() {
  if (session_) {
    session_->close();
    // Destroyed at the next tick: this may run inside one of the session's own handlers.
    retired_ = std::move(session_);
  }
  if (source_ && fed_) {
    source_->restart(clock_.now_us());
    fed_ = false;
  }
  for (Pulled& p : pulled_) {
    p.rtp_channel = -1;
    p.rtcp_channel = -1;
  }
}

void LivePull::tick() {
  retired_.reset();
  const std::uint64_t now = clock_.now_us();
  const bool wanted = settings_.always || viewers() > 0;
  switch (status_.state) {
    case PullState::kIdle:
      if (wanted) connect(false);
      break;
    case PullState::kConnecting:
      break;  // the session's request timeout bounds it
    case PullState::kPlaying:
      if (now > last_media_us_ + settings_.stall_us) {
        ++status_.stalls;
        fail("no RTP from the upstream for " + std::to_string(settings_.stall_us / 1000) + " ms");
        break;
      }
      if (wanted) {
        last_viewer_us_ = now;
      } else if (now > last_viewer_us_ + settings_.linger_us) {
        go_idle("no viewer for the linger time");
      }
      break;
    case PullState::kBackingOff:
      if (now < retry_at_us_) break;
      if (wanted) {
        connect(false);
      } else if (source_ == nullptr) {
        connect(true);  // nobody watches: only the description is needed, for the first viewer
      } else {
        status_.state = PullState::kIdle;
      }
      break;
  }
}

std::string render_pull_metrics(std::span<const PullStatus> pulls) {
  std::string out =
      "# HELP predrop_pull_state Where each pulled stream is (1 for its state; docs/live.md "
      "\"Pull\").\n# TYPE predrop_pull_state gauge\n";
  for (const PullStatus& p : pulls) {
    for (const PullState s :
         {PullState::kIdle, PullState::kConnecting, PullState::kPlaying, PullState::kBackingOff}) {
      out += "predrop_pull_state{stream=\"" + p.stream + "\",state=\"" + to_string(s) + "\"} " +
             (p.state == s ? "1" : "0") + "\n";
    }
  }
  const auto family = [&](const char* name, const char* type, const char* help, auto value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const PullStatus& p : pulls) {
      out += std::string(name) + "{stream=\"" + p.stream + "\"} " + std::to_string(value(p)) + "\n";
    }
  };
  family("predrop_pull_attempts_total", "counter", "Connections to the upstream begun.",
         [](const PullStatus& p) { return p.attempts; });
  family("predrop_pull_failures_total", "counter",
         "Upstream attempts that failed or broke (refused, 404, timeout, BYE, stall).",
         [](const PullStatus& p) { return p.failures; });
  family("predrop_pull_failures_in_a_row", "gauge",
         "Failures since the last stable run (the back-off's attempt count).",
         [](const PullStatus& p) { return std::uint64_t{p.failures_in_a_row}; });
  family("predrop_pull_plays_total", "counter", "Upstream attempts that reached PLAY.",
         [](const PullStatus& p) { return p.plays; });
  family("predrop_pull_packets_total", "counter", "RTP packets pulled into the stream.",
         [](const PullStatus& p) { return p.packets; });
  family("predrop_pull_dropped_total", "counter",
         "Interleaved frames not used (other channels, not RTP, SRTP failed).",
         [](const PullStatus& p) { return p.dropped; });
  family("predrop_pull_stalls_total", "counter", "Upstreams silent while playing.",
         [](const PullStatus& p) { return p.stalls; });
  return out;
}

std::vector<std::unique_ptr<LivePull>> start_pulls(net::EventLoop& loop, const net::Clock& clock,
                                                   CallbackGuard& guard,
                                                   const std::vector<StreamDefinition>& streams) {
  std::vector<std::unique_ptr<LivePull>> out;
  for (const auto& s : streams) {
    if (!s.live || !s.live->settings().pull) continue;
    out.push_back(std::make_unique<LivePull>(loop, clock, guard, s.name, s.live));
    out.back()->start();
  }
  return out;
}

}  // namespace predrop::server
