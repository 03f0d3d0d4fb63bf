// The measuring client (measuring_client.hpp): MeasuringClient::Impl owns the RTSP session, the
// tracks' UDP sockets, the poll timer and the reference, routes each packet, picture and stage to
// the unit that owns it and reports the blocks:
//   chain::StageReceiver     SRTP, stage accounting (L, queueing delay), interim alerts
//   media::Depacketizer, VideoDecoder, ShownFrameScorer   pictures and their block PSNR
//   audio_scoring.hpp        the audio score: alone (audio-only stream) or beside the video's
//   live_picture_matcher.hpp --live: decoded pictures to reference pictures
//   live_latency_meter.hpp   --live: glass-to-glass latency per block (over live_latency.hpp)
//   feedback_sender.hpp      RR + PDFB per block and RR + PDAL alerts to the server
//   receive_impairment.hpp   --impair: drops and stretched arrivals for tests
//   saved_video.hpp          --save: the received access units in a file
// The SDP's tracks, media time's anchor (RTP-Info or the first packet), when a block is
// reported (its pictures scored or its wait over), --pause, and the end of the stream are here.
#include "predrop/client/measuring_client.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <utility>

#include "audio_scoring.hpp"
#include "feedback_sender.hpp"
#include "live_latency_meter.hpp"
#include "live_picture_matcher.hpp"
#include "predrop/chain/stage_receiver.hpp"
#include "predrop/core/log.hpp"
#include "predrop/media/depacketizer.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/media/psnr.hpp"
#include "predrop/media/video_decoder.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/rtsp/client_session.hpp"
#include "predrop/wire/sdes_key.hpp"
#include "receive_impairment.hpp"
#include "saved_video.hpp"

namespace predrop::client {

core::Result<PausePlan> parse_pause(std::string_view text) {
  auto bad = [&] {
    return core::make_error("pause '" + std::string(text) +
                            "': want AT,SECONDS (seconds after PLAY, then how long; both > 0)");
  };
  const auto comma = text.find(',');
  if (comma == std::string_view::npos) return bad();
  const auto ms_of = [](std::string_view s) -> std::optional<std::uint32_t> {
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || !(v > 0 && v <= 86'400)) {
      return std::nullopt;
    }
    return static_cast<std::uint32_t>(std::lround(v * 1000));
  };
  const auto at = ms_of(text.substr(0, comma));
  const auto length = ms_of(text.substr(comma + 1));
  if (!at || !length || *at == 0 || *length == 0) return bad();
  return PausePlan{*at, *length};
}

namespace {

// Our side of one track (the session holds what was negotiated, at the same index).
struct Track {
  std::unique_ptr<net::UdpEndpoint> rtp;
  std::unique_ptr<net::UdpEndpoint> rtcp;
  std::uint32_t rtp_base = 0;  // RTP timestamp of media time 0 (from RTP-Info)
  bool have_base = false;
};

struct PendingBlock {
  core::StageMeasurement m;
  std::uint64_t deadline_us = 0;
};

// The reference file's pictures, for the live matcher.
class DecodedReference final : public ReferencePictures {
 public:
  explicit DecodedReference(media::ReferenceDecoder& decoder) : decoder_(decoder) {}
  std::size_t count() const override { return decoder_.frame_count(); }
  std::int64_t pts_us(std::size_t index) const override { return decoder_.pts_us(index); }
  core::Result<media::FrameView> picture(std::size_t index) override {
    return decoder_.frame(index);
  }

 private:
  media::ReferenceDecoder& decoder_;
};

}  // namespace

struct MeasuringClient::Impl {
  ~Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;

  net::EventLoop& loop;
  const net::Clock& clock;
  ClientOptions options;
  OnBlock on_block;
  OnDone on_done;

  net::SocketAddress server_addr;
  std::string url;
  std::unique_ptr<rtsp::ClientSession> session;
  std::vector<Track> tracks;  // every track of the SDP, all set up, in SDP order
  std::size_t video_track = SIZE_MAX;
  media::Codec video_codec = media::Codec::kH264;
  // An audio-only stream is scored on its audio alone; with video, P is the video's PSNR and the
  // audio is scored beside it when the reference has the same audio (audio_scoring.hpp).
  std::size_t audio_track = SIZE_MAX;
  // The track whose packets are scored and whose RTCP carries the feedback.
  std::size_t scored_track = SIZE_MAX;
  std::optional<wire::SrtpSuite> suite;
  wire::SrtpKeyMaterial key;
  wire::RtpExtensionIds ext_ids{0, 0};
  media::PacketizeOptions packetize;

  std::shared_ptr<const media::MediaFile> reference_media;
  std::unique_ptr<media::ReferenceDecoder> reference;
  std::unique_ptr<media::ShownFrameScorer> scorer;
  std::unique_ptr<media::VideoDecoder> decoder;
  std::unique_ptr<media::Depacketizer> depacketizer;
  std::unique_ptr<AudioScoring> audio;
  std::unique_ptr<chain::StageReceiver> receiver;
  // PDFB and PDAL to the server (options.feedback), made when the scored track is known.
  std::unique_ptr<FeedbackSender> feedback;
  std::unique_ptr<SavedVideo> save;  // --save (saved_video.hpp)

  std::unique_ptr<net::Timer> poll_timer;
  // --pause: PAUSE at pause_due_us, then the PLAY that resumes at resume_due_us (the poll's
  // clock, so that a test's FakeClock drives it); 0 = not planned / not yet known.
  std::uint64_t pause_due_us = 0;
  std::uint64_t resume_due_us = 0;
  std::deque<PendingBlock> pending;
  std::uint64_t last_media_us = 0;
  bool playing = false;
  bool done = false;
  ClientSummary summary;
  double psnr_sum = 0.0;
  std::unique_ptr<ReceiveImpairment> impairment;  // --impair (options.impairments)
  // --live: decoded pictures to reference pictures (live_picture_matcher.hpp), and each
  // stage's earliest video time (its key picture: a block's first in display order), in 90 kHz
  // ticks from the video's rtp_base.
  std::unique_ptr<DecodedReference> live_reference;
  std::unique_ptr<LivePictureMatcher> matcher;
  StageStarts stage_start;
  // --live: each block's glass-to-glass latency (live_latency_meter.hpp), made with the
  // receiver.
  std::unique_ptr<LiveLatencyMeter> latency;

  Impl(net::EventLoop& l, const net::Clock& c, ClientOptions o, OnBlock b, OnDone d)
      : loop(l), clock(c), options(std::move(o)), on_block(std::move(b)), on_done(std::move(d)) {}

  void finish(const core::Status& st) {
    if (done) return;
    done = true;
    if (receiver) {
      summary.srtp_failures = receiver->stats().srtp_auth_failed + receiver->stats().srtp_replay +
                              receiver->stats().srtp_other;
    }
    summary.mean_psnr_db = summary.blocks ? psnr_sum / summary.blocks : 0.0;
    if (audio && audio->beside() && summary.audio_blocks != 0) {
      summary.mean_audio_psnr_db = audio->mean_psnr_db();
    }
    if (depacketizer && decoder) {
      const auto& ds = depacketizer->stats();
      const auto& vs = decoder->stats();
      core::log(
          core::LogLevel::kInfo, "client",
          "depacketizer: %llu packets, %llu lost, %llu fragments dropped, %llu/%llu access "
          "units damaged; decoder: %llu frames, %llu corrupt, %llu rejected; scorer: %zu late",
          (unsigned long long)ds.packets, (unsigned long long)ds.lost,
          (unsigned long long)ds.dropped_fragments, (unsigned long long)ds.damaged_access_units,
          (unsigned long long)ds.access_units, (unsigned long long)vs.frames,
          (unsigned long long)vs.corrupt_frames, (unsigned long long)vs.rejected,
          scorer ? scorer->late() : 0);
    }
    if (audio) audio->log_stats();
    poll_timer.reset();
    for (auto& t : tracks) {
      if (t.rtp) t.rtp->close();
      if (t.rtcp) t.rtcp->close();
    }
    auto cb = std::move(on_done);
    ClientSummary s = summary;
    if (session && playing && st) {
      // Tear down politely, then report; the connection closes either way.
      session->teardown([cb, s, st] {
        if (cb) cb(st, s);
      });
      return;
    }
    if (session) session->close();
    if (cb) cb(st, s);
  }

  void fail(const std::string& why) { finish(core::make_error(why)); }

  void start() {
    auto addr = rtsp::server_address_of(options.url);
    if (!addr) return fail(addr.error().message);
    server_addr = *addr;
    url = options.url;
    rtsp::ClientSessionOptions so;
    so.url = url;
    so.server = server_addr;
    so.feedback = options.feedback;
    rtsp::ClientSession::Handlers h;
    h.on_described =
        [this](const rtsp::SessionDescription& d) -> core::Result<std::vector<std::size_t>> {
      if (auto st = prepare(d); !st) return st.error();
      std::vector<std::size_t> all(d.tracks.size());
      for (std::size_t i = 0; i < all.size(); ++i) {
        all[i] = i;
      }
      return all;
    };
    h.client_ports = [this](const rtsp::SessionTrack& t) { return open_ports(tracks[t.index]); };
    h.on_playing = [this] { on_playing(); };
    h.on_failed = [this](const rtsp::SessionError& e) { on_session_failed(e); };
    session = std::make_unique<rtsp::ClientSession>(loop, so, std::move(h));
    session->start();
  }

  void on_session_failed(const rtsp::SessionError& e) {
    switch (e.step) {
      case rtsp::SessionStep::kConnect:
        return fail("cannot connect to " + server_addr.to_string() + ": " + e.detail);
      case rtsp::SessionStep::kClosed:
        if (!done) fail("the server closed the RTSP connection");
        return;
      case rtsp::SessionStep::kKeepAlive:
        // The keep-alive's answer never ended a run: the stream goes on until it is over.
        core::log(core::LogLevel::kWarn, "client", "%s", e.message().c_str());
        return;
      case rtsp::SessionStep::kDescribe:
        // SDP and reference problems read as themselves; refusals name the request.
        return fail(e.status == 0 ? e.detail : e.message());
      default:
        return fail(e.message());
    }
  }

  core::Status prepare(const rtsp::SessionDescription& d) {
    // Block settings: the server says how it cut the file, so that our reference packetization
    // matches its blocks exactly.
    if (d.block_attribute) {
      auto block = rtsp::parse_block_attribute(*d.block_attribute);
      if (!block) return block.error();
      if (block->duration_us) {
        packetize.block = {media::BlockSize::Unit::kDuration, *block->duration_us};
      }
      if (block->bytes) packetize.block = {media::BlockSize::Unit::kBytes, *block->bytes};
      if (block->payload) packetize.max_payload = *block->payload;
    }
    for (const auto& t : d.tracks) {
      if (t.key) {
        if (suite && (*suite != t.key->suite || !(key == t.key->key))) {
          return core::make_error("tracks with different SRTP keys are not supported");
        }
        suite = t.key->suite;
        key = t.key->key;
      }
      if (t.extensions.stage != 0) ext_ids.stage = t.extensions.stage;
      if (t.extensions.abs_send_time != 0) ext_ids.abs_send_time = t.extensions.abs_send_time;
      if (t.media.kind == "video" && video_track == SIZE_MAX) {
        const auto codec = media::video_codec_from_rtpmap(t.media.rtpmap);
        if (!codec) return core::make_error("unsupported video rtpmap '" + t.media.rtpmap + "'");
        video_codec = *codec;
        video_track = tracks.size();
      }
      if (t.media.kind == "audio" && audio_track == SIZE_MAX &&
          media::audio_codec_from_rtpmap(t.media.rtpmap)) {
        audio_track = tracks.size();
      }
      tracks.emplace_back();
    }
    if (video_track == SIZE_MAX && audio_track == SIZE_MAX) {
      return core::make_error(
          "the stream has no video track and no audio track of a codec "
          "this client scores (AAC, Opus, L16, L24, MP3)");
    }
    scored_track = video_track != SIZE_MAX ? video_track : audio_track;
    if (ext_ids.stage == 0) {
      return core::make_error("the server announces no urn:predrop:stage extension");
    }
    auto media_file = media::MediaFile::open(options.reference, packetize);
    if (!media_file) return core::make_error("reference: " + media_file.error().message);
    reference_media = std::move(media_file.value());
    if (video_track == SIZE_MAX) return prepare_audio();
    auto ref = media::ReferenceDecoder::open(options.reference);
    if (!ref) return core::make_error("reference: " + ref.error().message);
    reference = std::move(ref.value());
    scorer = std::make_unique<media::ShownFrameScorer>(*reference);
    if (options.live) {
      live_reference = std::make_unique<DecodedReference>(*reference);
      matcher = std::make_unique<LivePictureMatcher>(*live_reference);
    }
    media::VideoDecoderOptions decoder_options;
    decoder_options.codec = video_codec;
    auto dec = media::VideoDecoder::create([this](const media::FrameView& f) { on_frame(f); },
                                           decoder_options);
    if (!dec) return core::make_error(dec.error().message);
    decoder = std::move(dec.value());
    depacketizer = media::make_depacketizer(video_codec, [this](const media::AccessUnit& au) {
      if (save) {
        save->write(au.data,
                    static_cast<std::uint32_t>(au.rtp_timestamp - tracks[video_track].rtp_base));
      }
      const auto pts = static_cast<std::int64_t>(au.rtp_timestamp - tracks[video_track].rtp_base);
      if (latency) latency->on_access_unit(pts, au.rtp_timestamp);
      decoder->decode(au.data, pts);
    });
    if (!options.save_video.empty()) {
      auto saved = SavedVideo::create(options.save_video, video_codec, *reference_media);
      if (!saved) return saved.error();
      save = std::move(saved.value());
    }
    if (audio_track != SIZE_MAX && reference_media->audio_stream()) {
      // The audio beside the video: scored too, reported beside P (never fed back).
      auto made = AudioScoring::create(reference_media, AudioScoring::Role::kBeside);
      if (made) {
        audio = std::move(made.value());
      } else {
        core::log(core::LogLevel::kWarn, "client", "audio not scored: %s",
                  made.error().message.c_str());
      }
    }
    return prepare_receiver();
  }

  core::Status prepare_audio() {
    if (!reference_media->audio_stream()) {
      return core::make_error("reference: no audio stream to score the audio-only stream with");
    }
    auto made = AudioScoring::create(reference_media, AudioScoring::Role::kAlone);
    if (!made) return core::make_error("reference: " + made.error().message);
    audio = std::move(made.value());
    return prepare_receiver();
  }

  core::Status prepare_receiver() {
    chain::ReceiverConfig rc;
    rc.extension_ids = ext_ids;
    if (!options.impairments.empty()) {
      impairment = std::make_unique<ReceiveImpairment>(options.impairments);
      rc.impairment = [this](const wire::RtpPacketView& v, std::uint64_t& arrival) {
        return impairment->apply(v, arrival);
      };
    }
    std::optional<net::SrtpSession> srtp_in;
    std::optional<net::SrtpSession> srtcp_in;
    std::optional<net::SrtpSession> srtcp_out;
    if (suite) {
      srtp_in.emplace(net::SrtpDirection::Inbound, *suite, key);
      if (options.live) srtcp_in.emplace(net::SrtpDirection::Inbound, *suite, key);
      srtcp_out.emplace(net::SrtpDirection::Outbound, *suite, key);
    }
    if (options.live) latency = std::make_unique<LiveLatencyMeter>(std::move(srtcp_in));
    if (options.feedback) rc.alert.queue_threshold_us = std::int64_t{options.alert_ms} * 1000;
    receiver = std::make_unique<chain::StageReceiver>(
        rc, std::move(srtp_in), [this](const wire::RtpPacketView& v, std::uint64_t) { on_rtp(v); },
        [this](const core::StageMeasurement& m) { on_stage(m); });
    receiver->set_on_alert([this](const core::StageAlert& a) { send_alert(a); });
    if (options.feedback) {
      feedback = std::make_unique<FeedbackSender>(*session, scored_track, std::move(srtcp_out),
                                                  net::random_u32());
    }
    return core::Ok{};
  }

  core::Result<rtsp::PortPair> open_ports(Track& t) {
    // An even RTP port and the next one for RTCP (RFC 3550 §11); retry on collisions.
    std::mt19937 gen{net::random_u32()};
    for (int attempt = 0; attempt < 64; ++attempt) {
      const auto port = static_cast<std::uint16_t>(30000 + 2 * (gen() % 15000));
      net::UdpOptions uo;
      uo.recv_buffer_bytes = 4 << 20;
      // The meter measures packet spacing and in-stage queueing delay: arrival times from the
      // kernel, not from when this loop (busy decoding and scoring) got to the datagram.
      uo.kernel_timestamps = options.kernel_timestamps;
      auto rtp = net::UdpEndpoint::open(
          loop, net::SocketAddress::any_v4(port), uo,
          [this](std::span<const std::uint8_t> d, const net::SocketAddress&, std::uint64_t at) {
            const std::uint64_t arrival = options.kernel_timestamps ? at : clock.now_us();
            last_media_us = arrival;
            ++summary.packets;
            receiver->on_datagram(d, arrival);
          });
      if (!rtp) continue;
      auto rtcp =
          net::UdpEndpoint::open(loop, net::SocketAddress::any_v4(port + 1), {},
                                 [this](std::span<const std::uint8_t> d, const net::SocketAddress&,
                                        std::uint64_t) { on_server_rtcp(d); });
      if (!rtcp) continue;
      t.rtp = std::move(rtp.value());
      t.rtcp = std::move(rtcp.value());
      if (feedback && &t == &tracks[scored_track]) feedback->use_socket(*t.rtcp);
      return rtsp::PortPair{t.rtp->local_address().port(), t.rtcp->local_address().port()};
    }
    return core::make_error("no free UDP port pair");
  }

  void on_playing() {
    const auto& negotiated = session->tracks();
    bool base_from_rtp_info = false;
    bool audio_base_from_rtp_info = false;
    for (std::size_t i = 0; i < tracks.size() && i < negotiated.size(); ++i) {
      Track& t = tracks[i];
      if (negotiated[i].rtp_info_rtptime && !t.have_base) {
        t.rtp_base = *negotiated[i].rtp_info_rtptime;
        t.have_base = true;
        base_from_rtp_info = base_from_rtp_info || i == scored_track;
        audio_base_from_rtp_info =
            audio_base_from_rtp_info || (audio && audio->beside() && i == audio_track);
      }
    }
    // RTP-Info's rtptime belongs to the first block's start; media time 0 is earlier by it.
    const auto back_to_zero = [this](std::size_t track, std::uint8_t stream) {
      const auto& first = reference_media->blocks().front();
      const auto rate = reference_media->streams()[stream].clock_rate;
      tracks[track].rtp_base -= static_cast<std::uint32_t>(
          static_cast<std::uint64_t>(std::max<std::int64_t>(0, first.start_us)) * rate / 1'000'000);
    };
    if (base_from_rtp_info) {
      back_to_zero(scored_track,
                   audio && audio->alone() ? audio->stream() : *reference_media->video_stream());
    }
    if (audio_base_from_rtp_info) back_to_zero(audio_track, audio->stream());
    playing = true;
    last_media_us = clock.now_us();
    poll_timer = std::make_unique<net::Timer>(loop, [this] { poll(); });
    poll_timer->start(20, 20);
    if (options.pause_at_ms != 0 && options.pause_ms != 0 && pause_due_us == 0) {
      pause_due_us = last_media_us + options.pause_at_ms * 1000ull;
    }
    core::log(core::LogLevel::kInfo, "client", "playing %s (session %s, SRTP %s)", url.c_str(),
              session->session_id().c_str(),
              suite ? std::string(wire::suite_name(*suite)).c_str() : "off");
  }

  // --pause: the server keeps the session and its controller's state; the stage in flight at the
  // PAUSE closes at its deadline with what arrived (its rest comes after the resume, late).
  void pause_or_resume(std::uint64_t now) {
    if (pause_due_us != 0 && now >= pause_due_us && session->playing()) {
      pause_due_us = 0;
      core::log(core::LogLevel::kInfo, "client", "pausing for %u ms", options.pause_ms);
      session->pause([this] { resume_due_us = clock.now_us() + options.pause_ms * 1000ull; });
    }
    if (resume_due_us != 0 && now >= resume_due_us && session->paused()) {
      resume_due_us = 0;
      session->resume([this] {
        last_media_us = clock.now_us();  // the pause's silence is not the stream's end
        core::log(core::LogLevel::kInfo, "client", "resumed");
      });
    }
  }

  // Media may overtake the PLAY response. The first packet of the stream the server sends is
  // never discarded (video: the SPS of the first keyframe; audio: every packet), so its
  // timestamp anchors the track's media time unless RTP-Info did.
  void anchor(Track& track, std::uint8_t stream, std::uint32_t timestamp) {
    if (track.have_base) return;
    for (const auto& p : reference_media->packets()) {
      if (p.stream == stream) {
        track.rtp_base = timestamp - p.rtp_timestamp;
        break;
      }
    }
    track.have_base = true;
  }

  // The audio track's packets, alone or beside the video.
  void on_audio_rtp(const wire::RtpPacketView& v) {
    Track& track = tracks[audio_track];
    anchor(track, audio->stream(), v.header.timestamp);
    audio->push(v.header.timestamp - track.rtp_base, v.payload);
  }

  void on_rtp(const wire::RtpPacketView& v) {
    if (audio && v.header.payload_type == session->tracks()[audio_track].payload_type) {
      return on_audio_rtp(v);
    }
    if (video_track == SIZE_MAX ||
        v.header.payload_type != session->tracks()[video_track].payload_type) {
      return;
    }
    Track& track = tracks[video_track];
    if (options.live && track.have_base && v.stage) {
      const std::int64_t t = static_cast<std::int32_t>(v.header.timestamp - track.rtp_base);
      auto [it, fresh] = stage_start.try_emplace(v.stage->stage_id, t);
      if (!fresh) it->second = std::min(it->second, t);
    }
    anchor(track, *reference_media->video_stream(), v.header.timestamp);
    depacketizer->push(v.header.sequence, v.header.timestamp, v.header.marker, v.payload);
  }

  // --live: the server's SRs (SRTCP when the session is keyed); their PDCT dates pictures.
  void on_server_rtcp(std::span<const std::uint8_t> d) {
    if (latency) latency->on_server_rtcp(d);
  }

  void on_frame(const media::FrameView& f) {
    ++summary.frames_decoded;
    if (latency) latency->on_picture(f.pts, stage_start);
    if (matcher) {
      const bool anchored = matcher->anchored();
      const auto index = matcher->match(f);
      if (!index) return;  // before the anchor
      if (!anchored) {
        const std::size_t found = matcher->anchor_index();
        core::log(core::LogLevel::kInfo, "client",
                  "live: the first picture is the reference's picture %zu (%.3f s)", found,
                  static_cast<double>(reference->pts_us(found)) / 1e6);
      }
      (void)scorer->show(*index, f);
      settle(clock.now_us());
      return;
    }
    const auto index = reference_media->display_index_for_rtp(static_cast<std::uint32_t>(f.pts));
    if (!index) return;
    (void)scorer->show(*index, f);
    settle(clock.now_us());
  }

  void on_stage(const core::StageMeasurement& m) {
    if (audio && audio->alone()) {
      // Audio is scored as soon as its stage closes: every packet of it arrived or never will.
      const auto blocks = reference_media->blocks();
      if (m.stage >= blocks.size()) return;  // beyond the reference (a looping server)
      const auto psnr = audio->psnr(m.stage, options.psnr_cap_db);
      report(m, blocks[m.stage], psnr ? *psnr : std::nan(""));
      if (options.max_blocks != 0 && summary.blocks >= options.max_blocks) finish(core::Ok{});
      return;
    }
    if (!options.live && m.stage + 1 == reference_media->blocks().size()) {
      // The last block: no later picture will push its held-back frames out of the decoder.
      depacketizer->flush();
      decoder->flush();
    }
    const std::uint64_t now = clock.now_us();
    // Live: the wait starts when the next block's start is known (settle_live).
    pending.push_back(
        PendingBlock{m, options.live ? UINT64_MAX : now + options.settle_ms * 1000ull});
    settle(now);
  }

  // --live: a block's pictures are the reference's from its key picture up to the next block's
  // (or, for the last, up to the last picture shown); it is reported once those are scored, or
  // settle_ms after the next block's start was seen, or at the end (`over`).
  void settle_live(std::uint64_t now, bool over) {
    while (!pending.empty() && !done) {
      PendingBlock& p = pending.front();
      const auto start = stage_start.find(p.m.stage);
      if (start == stage_start.end() || !matcher->anchored()) {
        if (!over) return;
        pending.pop_front();  // no picture of it was ever seen: nothing to score against
        continue;
      }
      const auto next = stage_start.upper_bound(p.m.stage);
      const std::size_t first = matcher->index_at(start->second);
      std::size_t end = 0;
      if (next != stage_start.end()) {
        end = matcher->index_at(next->second);
        if (p.deadline_us == 0 || p.deadline_us == UINT64_MAX) {
          p.deadline_us = now + options.settle_ms * 1000ull;
        }
      } else if (over) {
        end = matcher->last_shown() + 1;
      } else {
        return;  // the next block's start is not known yet
      }
      end = std::max(end, first + 1);
      if (scorer->scored_until() < end && now < p.deadline_us && !over) return;
      (void)scorer->fill_until(end);
      auto psnr = scorer->psnr(first, end - first, options.psnr_cap_db);
      media::Block b;
      b.first_display = static_cast<std::uint32_t>(first);
      b.display_count = static_cast<std::uint32_t>(end - first);
      b.packet_count = live_planned(first, end);
      report(p.m, b, psnr ? *psnr : std::nan(""));
      pending.pop_front();
      if (options.max_blocks != 0 && summary.blocks >= options.max_blocks) {
        finish(core::Ok{});
        return;
      }
    }
  }

  // --live: a block's packets before the server's discard (R = 1 - sent / planned). The live
  // source packetizes the publisher's access units as the reference file's are (the same
  // packetizer and payload size, parameter sets before every key picture), so they are the
  // reference's packets of the block's pictures, plus its audio frames' packets of the same
  // time when the stream has audio (an estimate: a publisher's AAC packets are passed through,
  // split only when too large, where the file's are one frame each).
  std::uint32_t live_planned(std::size_t first, std::size_t end) const {
    const auto order = reference_media->video_display_order();
    const auto frames = reference_media->frames();
    end = std::min(end, order.size());
    if (first >= end) return 0;
    std::uint32_t planned = 0;
    for (std::size_t d = first; d < end; ++d) {
      planned += frames[order[d]].packet_count;
    }
    const auto audio_stream = reference_media->audio_stream();
    if (audio_track == SIZE_MAX || !audio_stream) return planned;
    const std::int64_t from = frames[order[first]].pts_us;
    const std::int64_t to = end < order.size() ? frames[order[end]].pts_us : INT64_MAX;
    for (const media::Frame& f : frames) {
      if (f.stream == *audio_stream && f.pts_us >= from && f.pts_us < to) planned += f.packet_count;
    }
    return planned;
  }

  // Reports every pending block whose pictures are all scored (or whose wait is over).
  void settle(std::uint64_t now, bool over = false) {
    if (matcher) return settle_live(now, over);
    while (!pending.empty() && !done && scorer) {
      const PendingBlock& p = pending.front();
      const auto blocks = reference_media->blocks();
      if (p.m.stage >= blocks.size()) {
        pending.pop_front();  // beyond the reference (a looping server): not scored
        continue;
      }
      const media::Block& b = blocks[p.m.stage];
      const std::size_t end = b.first_display + b.display_count;
      if (scorer->scored_until() < end && now < p.deadline_us) return;
      (void)scorer->fill_until(end);
      auto psnr = scorer->psnr(b.first_display, b.display_count, options.psnr_cap_db);
      std::optional<double> audio_psnr;
      if (audio && audio->beside()) audio_psnr = audio->psnr(p.m.stage, options.psnr_cap_db);
      report(p.m, b, psnr ? *psnr : std::nan(""), audio_psnr);
      pending.pop_front();
      if (options.max_blocks != 0 && summary.blocks >= options.max_blocks) {
        finish(core::Ok{});
        return;
      }
    }
  }

  void send_alert(const core::StageAlert& a) {
    if (feedback && feedback->send_alert(a)) ++summary.alerts;
  }

  // `audio_psnr`: the audio's score beside the video's (nullopt when not scored or the block has
  // no audio); P, fed back to the server, stays `psnr`.
  void report(const core::StageMeasurement& m, const media::Block& b, double psnr,
              std::optional<double> audio_psnr = std::nullopt) {
    if (feedback) feedback->send_report(m, psnr);
    BlockResult r;
    r.stage = m.stage;
    r.reception_period_ms = m.reception_period_us / 1000.0;
    r.psnr_db = psnr;
    r.planned = b.packet_count;
    r.sent = m.announced;
    r.received = m.received;
    r.rate = b.packet_count ? 1.0 - static_cast<double>(m.announced) / b.packet_count
                            : (options.live ? std::nan("") : 0.0);
    r.network_loss = m.announced ? 1.0 - static_cast<double>(m.received) / m.announced : 0.0;
    r.queue_delay_ms = m.queue_delay_us.value_or(0.0) / 1000.0;
    if (m.path) {
      r.queue_max_ms = m.path->queue_max_us / 1000.0;
      if (m.path->dispersion_us > 0) {
        r.dispersion_kbps = 8000.0 * static_cast<double>(m.path->dispersion_bytes) /
                            static_cast<double>(m.path->dispersion_us);
      }
    }
    r.frames = b.display_count;
    if (options.live) {
      r.first_reference_picture = b.first_display;
      if (const auto l = latency ? latency->take(m.stage) : std::nullopt) {
        r.latency_ms = l->mean_ms;
        r.latency_max_ms = l->max_ms;
      }
    }
    ++summary.blocks;
    if (std::isfinite(psnr)) psnr_sum += psnr;
    if (audio_psnr) {
      r.audio_psnr_db = *audio_psnr;
      ++summary.audio_blocks;
    }
    if (on_block) on_block(r);
  }

  void poll() {
    if (done || !playing) return;
    const std::uint64_t now = clock.now_us();
    receiver->poll(now);
    settle(now);
    if (done) return;
    pause_or_resume(now);
    if (!session->playing()) return;  // paused (or pausing, resuming): no media is expected
    if (now > last_media_us + options.end_after_idle_ms * 1000ull) {
      // The stream is over: close the last stage, drain the decoder, score what is left.
      if (latency) latency->drain();  // pictures drained now were held, not late
      if (depacketizer) depacketizer->flush();
      if (decoder) decoder->flush();
      receiver->flush();
      for (auto& p : pending) {
        p.deadline_us = 0;
      }
      settle(now, true);
      finish(core::Ok{});
    }
  }
};

MeasuringClient::MeasuringClient(net::EventLoop& loop, const net::Clock& clock,
                                 ClientOptions options, OnBlock on_block, OnDone on_done)
    : impl_(std::make_unique<Impl>(loop, clock, std::move(options), std::move(on_block),
                                   std::move(on_done))) {}

MeasuringClient::~MeasuringClient() = default;

void MeasuringClient::start() {
  impl_->start();
}

void MeasuringClient::stop() {
  impl_->finish(core::Ok{});
}

void MeasuringClient::poll() {
  impl_->poll();
}

}  // namespace predrop::client
