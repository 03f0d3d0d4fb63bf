// A publisher on one RTSP connection (see live_publish.hpp).
#include "live_publish.hpp"

#include <algorithm>

#include "predrop/core/log.hpp"
#include "predrop/core/text_util.hpp"
#include "predrop/media/codec.hpp"
#include "predrop/rtsp/rtsp_headers.hpp"
#include "predrop/rtsp/sdp.hpp"
#include "predrop/wire/rtcp.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::server::detail {

namespace {
// The value of fmtp parameter `name` ("" if absent).
std::string_view fmtp_param(std::string_view fmtp, std::string_view name) {
  while (!fmtp.empty()) {
    const auto semi = fmtp.find(';');
    const std::string_view item = core::text::trim(fmtp.substr(0, semi));
    fmtp = semi == std::string_view::npos ? std::string_view{} : fmtp.substr(semi + 1);
    const auto eq = item.find('=');
    if (eq != std::string_view::npos &&
        core::text::iequals(core::text::trim(item.substr(0, eq)), name)) {
      return core::text::trim(item.substr(eq + 1));
    }
  }
  return {};
}

// An audio section predrop can serve: AAC as mpeg4-generic (RFC 3640 AAC-hbr or AAC-lbr, the
// modes players read) or as MP4A-LATM (RFC 6416, cpresent=0: repacked into AAC-hbr), or Opus
// (RFC 7587); an error says why not (the track is then set up and dropped).
core::Result<media::LiveAudioSpec> audio_spec(const rtsp::SdpMedia& m) {
  if (m.payload_type < 0) return core::make_error("no dynamic payload type");
  const std::string_view rtpmap = m.rtpmap;
  const auto slash = rtpmap.find('/');
  if (slash == std::string_view::npos) return core::make_error("no rtpmap");
  const std::string_view encoding = rtpmap.substr(0, slash);
  const std::string_view rest = rtpmap.substr(slash + 1);
  const auto slash2 = rest.find('/');
  const auto rate = core::text::parse_uint<std::uint32_t>(rest.substr(0, slash2));
  std::uint16_t channels = 1;
  if (slash2 != std::string_view::npos) {
    const auto c = core::text::parse_uint<std::uint16_t>(rest.substr(slash2 + 1));
    if (!c || *c == 0 || *c > 8) return core::make_error("a channel count other than 1-8");
    channels = *c;
  }
  if (!rate || *rate < 8000 || *rate > 192000) {
    return core::make_error("a clock rate outside 8000-192000");
  }
  media::LiveAudioSpec a;
  if (core::text::iequals(encoding, "MPEG4-GENERIC")) {
    const std::string_view mode = fmtp_param(m.fmtp, "mode");
    if (!core::text::iequals(mode, "AAC-hbr") && !core::text::iequals(mode, "AAC-lbr")) {
      return core::make_error("mode '" + std::string(mode) + "' (only AAC-hbr and AAC-lbr)");
    }
    if (fmtp_param(m.fmtp, "config").empty() || fmtp_param(m.fmtp, "sizelength").empty()) {
      return core::make_error("no config or sizelength in its fmtp");
    }
    a.codec = media::Codec::kAac;
    const auto width = [&](std::string_view name, int fallback) {
      const std::string_view v = fmtp_param(m.fmtp, name);
      if (v.empty()) return fallback;
      const auto n = core::text::parse_uint<int>(v, 16);
      return n ? *n : -1;
    };
    a.size_length = width("sizelength", 0);
    a.index_length = width("indexlength", 0);
    a.index_delta_length = width("indexdeltalength", 0);
    if (a.size_length <= 0 || a.index_length < 0 || a.index_delta_length < 0) {
      return core::make_error("malformed AU-header lengths");
    }
  } else if (core::text::iequals(encoding, "MP4A-LATM")) {
    // RFC 6416 §7.1: cpresent defaults to 1 (the StreamMuxConfig in every element), which the
    // repacking does not read; GStreamer and FFmpeg send 0 with the config in the fmtp.
    if (fmtp_param(m.fmtp, "cpresent") != "0") {
      return core::make_error(
          "cpresent=1 (the StreamMuxConfig in band) is not supported: "
          "cpresent=0 with config= in the fmtp is");
    }
    auto latm = media::parse_latm_config_hex(fmtp_param(m.fmtp, "config"));
    if (!latm) return core::make_error("its StreamMuxConfig: " + latm.error().message);
    a.codec = media::Codec::kAac;
    a.clock_rate = *rate;
    a.channels = static_cast<std::uint16_t>(latm->channels);
    // What viewers get: AAC-hbr, as a file's AAC (media_file.cpp), at the publisher's RTP clock.
    a.encoding = "MPEG4-GENERIC/" + std::to_string(*rate) + "/" + std::to_string(latm->channels);
    a.fmtp = media::aac_hbr_fmtp(latm->audio_specific_config);
    a.size_length = 13;
    a.index_length = 3;
    a.index_delta_length = 3;
    a.latm = *latm;
    return a;
  } else if (core::text::iequals(encoding, "opus")) {
    if (*rate != 48000) return core::make_error("a clock rate other than 48000");  // RFC 7587 §7
    a.codec = media::Codec::kOpus;
  } else {
    return core::make_error("not AAC (MPEG4-GENERIC, MP4A-LATM) or Opus");
  }
  a.clock_rate = *rate;
  a.channels = channels;
  a.encoding = std::string(rtpmap);
  // Repeated to viewers as announced: only printable characters of one line.
  if (!std::all_of(m.fmtp.begin(), m.fmtp.end(),
                   [](char c) {
                     return static_cast<unsigned char>(c) >= 0x20 &&
                            static_cast<unsigned char>(c) < 0x7f;
                   }) ||
      !std::all_of(a.encoding.begin(), a.encoding.end(), [](char c) {
        return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
      })) {
    return core::make_error("unprintable characters in its rtpmap or fmtp");
  }
  a.fmtp = m.fmtp;
  return a;
}
}  // namespace

core::Result<Announced> read_announce(std::string_view text) {
  auto sdp = rtsp::parse_sdp(text);
  if (!sdp) return core::make_error("SDP: " + sdp.error().message);
  return read_live_sdp(*sdp);
}

core::Result<Announced> read_live_sdp(const rtsp::SdpSession& sdp) {
  Announced out;
  bool have_video = false;
  for (const rtsp::SdpMedia& m : sdp.media) {
    PublishedTrack t;
    t.control = m.control;
    t.payload_type = m.payload_type;
    const auto slash = m.rtpmap.find('/');
    const std::string_view encoding = std::string_view(m.rtpmap).substr(0, slash);
    if (!have_video && m.kind == "video" && core::text::iequals(encoding, "H264")) {
      const std::string_view mode = fmtp_param(m.fmtp, "packetization-mode");
      if (!mode.empty() && mode != "0" && mode != "1") {
        return core::make_error("H.264 packetization-mode " + std::string(mode) +
                                " (interleaved) is not supported: use 0 or 1");
      }
      if (slash != std::string::npos) {
        const auto rate = core::text::parse_uint<std::uint32_t>(std::string_view(m.rtpmap).substr(
            slash + 1, m.rtpmap.find('/', slash + 1) - slash - 1));
        if (!rate || *rate == 0) return core::make_error("H.264 rtpmap without a clock rate");
        out.video.clock_rate = *rate;
      }
      std::string_view sets = fmtp_param(m.fmtp, "sprop-parameter-sets");
      while (!sets.empty()) {
        const auto comma = sets.find(',');
        const std::string_view one = sets.substr(0, comma);
        sets = comma == std::string_view::npos ? std::string_view{} : sets.substr(comma + 1);
        auto nal = wire::base64_decode(one);
        if (!nal || nal->empty()) return core::make_error("malformed sprop-parameter-sets");
        out.video.parameter_sets.insert(out.video.parameter_sets.end(), {0, 0, 0, 1});
        out.video.parameter_sets.insert(out.video.parameter_sets.end(), nal->begin(), nal->end());
      }
      out.video.profile_level_id = std::string(fmtp_param(m.fmtp, "profile-level-id"));
      if (out.video.profile_level_id.size() > 6 ||
          !std::all_of(out.video.profile_level_id.begin(), out.video.profile_level_id.end(),
                       [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; })) {
        out.video.profile_level_id.clear();  // not ours to repeat if it is not hex
      }
      t.video = true;
      have_video = true;
    } else if (!out.audio && m.kind == "audio") {
      auto a = audio_spec(m);
      if (a) {
        out.audio = *a;
        t.audio = true;
        out.audio_unserved.clear();
      } else if (out.audio_unserved.empty()) {
        // Printable in a log line: the rtpmap as announced, cut short.
        std::string name = m.rtpmap.substr(0, 40);
        std::replace_if(
            name.begin(), name.end(),
            [](char c) {
              return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f;
            },
            '?');
        out.audio_unserved = "'" + name + "': " + a.error().message;
      }
    }
    out.tracks.push_back(std::move(t));
  }
  if (!have_video) return core::make_error("no H.264 video stream in the SDP");
  return out;
}

std::optional<std::string_view> url_secret(std::string_view url) {
  const auto q = url.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view query = url.substr(q + 1);
  query = query.substr(0, query.find('#'));
  while (!query.empty()) {
    const auto amp = query.find_first_of("&/");
    const std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (item.substr(0, 7) == "secret=") return item.substr(7);
  }
  return std::nullopt;
}

bool secret_matches(std::string_view given, std::string_view expected) {
  // Every byte of the expected secret is looked at whatever `given` is.
  unsigned diff = given.size() == expected.size() ? 0U : 1U;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const char g = i < given.size() ? given[i] : '\0';
    diff |= static_cast<unsigned>(static_cast<unsigned char>(g) ^
                                  static_cast<unsigned char>(expected[i]));
  }
  return diff == 0 && !expected.empty();
}

std::string_view url_control(std::string_view url) {
  const auto slash = url.rfind('/');
  std::string_view last = slash == std::string_view::npos ? url : url.substr(slash + 1);
  // GStreamer's rtspclientsink keeps the query at the end: ".../live/stream=0?secret=s".
  return last.substr(0, last.find_first_of("?#"));
}

bool names_published_stream(std::string_view url, std::string_view stream,
                            std::span<const PublishedTrack> tracks) {
  const auto parsed = rtsp::parse_rtsp_url(url);
  if (!parsed) return false;
  const std::string_view name = parsed->stream;
  if (name == stream) return true;
  // "live/stream=0": a track control the URL parser does not know as an index (GStreamer's).
  if (name.size() <= stream.size() + 1 || name.substr(0, stream.size()) != stream ||
      name[stream.size()] != '/') {
    return false;
  }
  const std::string_view control = name.substr(stream.size() + 1);
  return std::any_of(tracks.begin(), tracks.end(), [&](const PublishedTrack& t) {
    return !t.control.empty() && url_control(t.control) == control;
  });
}

std::optional<RtpFields> read_rtp(std::span<const std::uint8_t> p) {
  // RFC 3550 §5.1: version 2, CSRCs, an extension block, padding; every length checked.
  if (p.size() < 12 || (p[0] >> 6) != 2) return std::nullopt;
  RtpFields f;
  f.marker = (p[1] & 0x80) != 0;
  f.payload_type = p[1] & 0x7f;
  f.sequence = static_cast<std::uint16_t>((p[2] << 8) | p[3]);
  f.timestamp =
      (std::uint32_t{p[4]} << 24) | (std::uint32_t{p[5]} << 16) | (std::uint32_t{p[6]} << 8) | p[7];
  std::size_t head = 12 + 4 * std::size_t{static_cast<std::uint8_t>(p[0] & 0x0f)};
  if (p.size() < head) return std::nullopt;
  if ((p[0] & 0x10) != 0) {
    if (p.size() < head + 4) return std::nullopt;
    head += 4 + 4 * std::size_t{static_cast<std::uint16_t>((p[head + 2] << 8) | p[head + 3])};
    if (p.size() < head) return std::nullopt;
  }
  std::size_t end = p.size();
  if ((p[0] & 0x20) != 0) {
    const std::size_t pad = p.back();
    if (pad == 0 || pad > end - head) return std::nullopt;
    end -= pad;
  }
  f.payload = p.subspan(head, end - head);
  return f;
}

Publisher::Frame Publisher::take(const PublishedTrack& t, std::span<const std::uint8_t> packet,
                                 std::uint64_t now_us) {
  if (released) return Frame::kDropped;
  if (!point->owns(token)) return Frame::kReplaced;
  if (!recording || (!t.video && !t.audio)) return Frame::kDropped;  // not yet, or not served
  const auto rtp = read_rtp(packet);
  if (!rtp || rtp->payload_type != t.payload_type) return Frame::kDropped;
  if (t.video) {
    source->push_video(rtp->sequence, rtp->timestamp, rtp->marker, rtp->payload, now_us);
  } else {
    source->push_audio(rtp->sequence, rtp->timestamp, rtp->marker, rtp->payload, now_us);
  }
  return Frame::kTaken;
}

Publisher::Frame Publisher::take_rtcp(const PublishedTrack& t,
                                      std::span<const std::uint8_t> packet) {
  if (released) return Frame::kDropped;
  if (!point->owns(token)) return Frame::kReplaced;
  if (!t.video && !t.audio) return Frame::kDropped;
  return feed_sender_reports(*source, t.video ? 0 : 1, packet) ? Frame::kTaken : Frame::kDropped;
}

bool feed_sender_reports(media::LiveSource& source, std::size_t stream,
                         std::span<const std::uint8_t> rtcp) {
  const auto compound = wire::parse_rtcp_compound(rtcp);
  if (!compound || !compound->sender_report) return false;
  source.sender_report(stream, compound->sender_report->ntp_timestamp,
                       compound->sender_report->rtp_timestamp);
  return true;
}

Publisher::Frame Publisher::on_frame(std::uint8_t channel, std::span<const std::uint8_t> payload,
                                     std::uint64_t now_us) {
  for (const PublishedTrack& t : tracks) {
    if (t.rtp_channel && *t.rtp_channel == channel) return take(t, payload, now_us);
    if (t.rtcp_channel && *t.rtcp_channel == channel) return take_rtcp(t, payload);
  }
  if (!released && !point->owns(token)) return Frame::kReplaced;
  return Frame::kDropped;  // RTCP, or a channel nobody set up
}

Publisher::Frame Publisher::on_datagram(const net::SocketAddress& from,
                                        std::span<const std::uint8_t> payload,
                                        std::uint64_t now_us) {
  for (const PublishedTrack& t : tracks) {
    if (t.udp_from && *t.udp_from == from) return take(t, payload, now_us);
  }
  return Frame::kDropped;
}

Publisher::Frame Publisher::on_rtcp_datagram(const net::SocketAddress& from,
                                             std::span<const std::uint8_t> payload) {
  for (const PublishedTrack& t : tracks) {
    if (t.udp_from && t.udp_from->port() + 1 == from.port() &&
        t.udp_from->with_port(from.port()) == from) {
      return take_rtcp(t, payload);
    }
  }
  return Frame::kDropped;
}

void Publisher::release(std::uint64_t now_us) {
  if (released) return;
  released = true;
  point->release(token, now_us);
  // Once per publication: what the stream carried and what holding a block cost.
  const media::LiveSourceStats st = source->stats();
  core::log(
      core::LogLevel::kInfo, "live",
      "'%s' ended: %llu packets, %llu pictures (%llu damaged, %llu before a key frame, %llu "
      "too large), %llu blocks (%llu key), hold mean %.0f ms max %.0f ms; audio %llu packets "
      "(%llu not used, %llu placed by arrival before the sender reports, which put it %+.1f ms "
      "off)",
      stream.c_str(), static_cast<unsigned long long>(st.packets),
      static_cast<unsigned long long>(st.access_units),
      static_cast<unsigned long long>(st.damaged_units),
      static_cast<unsigned long long>(st.waiting_for_key),
      static_cast<unsigned long long>(st.oversized), static_cast<unsigned long long>(st.blocks),
      static_cast<unsigned long long>(st.key_blocks),
      st.blocks > 0 ? static_cast<double>(st.hold_us_sum) / 1e3 / static_cast<double>(st.blocks)
                    : 0.0,
      static_cast<double>(st.hold_us_max) / 1e3, static_cast<unsigned long long>(st.audio_packets),
      static_cast<unsigned long long>(st.audio_dropped),
      static_cast<unsigned long long>(st.audio_by_arrival),
      static_cast<double>(st.audio_report_offset_us) / 1e3);
}

}  // namespace predrop::server::detail
