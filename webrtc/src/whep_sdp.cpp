// WHEP offer reading and answer writing; rules in predrop/webrtc/whep_sdp.hpp.
#include "predrop/webrtc/whep_sdp.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <initializer_list>
#include <string>

#include "predrop/wire/rtp.hpp"

namespace predrop::webrtc {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

template <class T>
bool to_number(std::string_view s, T& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

// "a=rtpmap:96 VP8/90000" -> codec; "a=fmtp:96 x=y" -> its fmtp.
void read_rtpmap(std::string_view value, OfferedMedia& m) {
  const std::size_t sp = value.find(' ');
  std::uint8_t pt = 0;
  if (sp == std::string_view::npos || !to_number(value.substr(0, sp), pt) || pt > 127) return;
  const std::string_view enc = value.substr(sp + 1);
  const std::size_t slash = enc.find('/');
  OfferedCodec c;
  c.payload_type = pt;
  c.name = std::string(enc.substr(0, slash));
  if (slash != std::string_view::npos) {
    const std::string_view rest = enc.substr(slash + 1);
    (void)to_number(rest.substr(0, rest.find('/')), c.clock_rate);
  }
  m.codecs.push_back(std::move(c));
}

void read_fmtp(std::string_view value, OfferedMedia& m) {
  const std::size_t sp = value.find(' ');
  std::uint8_t pt = 0;
  if (sp == std::string_view::npos || !to_number(value.substr(0, sp), pt)) return;
  for (OfferedCodec& c : m.codecs) {
    if (c.payload_type == pt) c.fmtp = std::string(value.substr(sp + 1));
  }
}

// The value of `key` in an fmtp line ("a=b;c=d"), lower-cased; empty when absent.
std::string fmtp_param(std::string_view fmtp, std::string_view key) {
  const std::string f = lower(fmtp);
  const std::string k = lower(key) + "=";
  std::size_t at = 0;
  while (at < f.size()) {
    while (at < f.size() && (f[at] == ' ' || f[at] == ';')) {
      ++at;
    }
    const std::size_t end = std::min(f.find(';', at), f.size());
    if (f.compare(at, k.size(), k) == 0) return f.substr(at + k.size(), end - at - k.size());
    at = end;
  }
  return {};
}

// The offered payload type for the stream's codec, best first; nullptr when none fits.
const OfferedCodec* pick_codec(const OfferedMedia& m, const media::StreamInfo& video) {
  const OfferedCodec* best = nullptr;
  int best_score = 0;
  const std::string stream_profile = fmtp_param(video.fmtp, "profile-level-id");
  for (const OfferedCodec& c : m.codecs) {
    int score = 0;
    const std::string name = lower(c.name);
    switch (video.codec) {
      case media::Codec::kVp8:
        score = name == "vp8" ? 1 : 0;
        break;
      case media::Codec::kVp9:
        // VP9 profile 0 (8-bit 4:2:0) is what the packetizer's files are.
        if (name == "vp9") {
          const std::string profile = fmtp_param(c.fmtp, "profile-id");
          score = profile.empty() || profile == "0" ? 2 : 1;
        }
        break;
      case media::Codec::kH265:
        score = name == "h265" ? 1 : 0;
        break;
      case media::Codec::kAv1:
        score = name == "av1" ? 1 : 0;
        break;
      case media::Codec::kH264: {
        if (name != "h264" || fmtp_param(c.fmtp, "packetization-mode") != "1") break;
        const std::string p = fmtp_param(c.fmtp, "profile-level-id");
        // Same profile_idc as the stream's SPS first; then constrained baseline 42e0, which
        // every browser decodes with the same decoder it uses for the rest.
        score = !stream_profile.empty() && p.substr(0, 2) == stream_profile.substr(0, 2) ? 4
                : p.starts_with("42e0")                                                  ? 3
                                                                                         : 2;
        break;
      }
      default:
        break;
    }
    if (score > best_score) {
      best = &c;
      best_score = score;
    }
  }
  return best;
}

// "a=extmap:3 http://...transport-wide-cc..." (or "3/recvonly ...") -> the id.
void read_extmap(std::string_view value, OfferedMedia& m) {
  const std::size_t sp = value.find(' ');
  if (sp == std::string_view::npos) return;
  std::string_view uri = value.substr(sp + 1);
  uri = uri.substr(0, uri.find(' '));  // extension attributes may follow
  if (uri != wire::kTransportSequenceUri) return;
  std::uint8_t id = 0;
  const std::string_view id_text = value.substr(0, std::min(sp, value.find('/')));
  if (to_number(id_text, id) && id >= 1 && id <= wire::kMaxOneByteExtensionId) {
    m.transport_cc_id = id;
  }
}

// "a=rtcp-fb:96 transport-cc", "a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli",
// "a=rtcp-fb:96 ccm fir", or any of them for "*".
void read_rtcp_fb(std::string_view value, OfferedMedia& m) {
  const std::size_t sp = value.find(' ');
  if (sp == std::string_view::npos) return;
  const std::string_view kind = value.substr(sp + 1);
  bool OfferedCodec::*flag = nullptr;
  if (kind == "transport-cc") flag = &OfferedCodec::transport_cc;
  if (kind == "nack") flag = &OfferedCodec::nack;
  if (kind == "nack pli") flag = &OfferedCodec::nack_pli;
  if (kind == "ccm fir") flag = &OfferedCodec::ccm_fir;
  if (flag == nullptr) return;
  const std::string_view pt_text = value.substr(0, sp);
  std::uint8_t pt = 0;
  const bool all = pt_text == "*";
  if (!all && !to_number(pt_text, pt)) return;
  for (OfferedCodec& c : m.codecs) {
    if (all || c.payload_type == pt) c.*flag = true;
  }
}

// The offered rtx payload type whose apt is `pt` (RFC 4588 §8.6); nullptr when none.
const OfferedCodec* find_rtx(const OfferedMedia& m, std::uint8_t pt) {
  for (const OfferedCodec& c : m.codecs) {
    if (lower(c.name) != "rtx" || c.payload_type == pt) continue;
    std::uint8_t apt = 0;
    if (to_number(fmtp_param(c.fmtp, "apt"), apt) && apt == pt) return &c;
  }
  return nullptr;
}

// The offered Opus payload type (opus/48000/2, RFC 7587 §7); nullptr when none.
const OfferedCodec* pick_opus(const OfferedMedia& m) {
  for (const OfferedCodec& c : m.codecs) {
    if (lower(c.name) == "opus" && c.clock_rate == 48000) return &c;
  }
  return nullptr;
}

std::string rejected_section(const OfferedMedia& m) {
  std::string pt = m.codecs.empty() ? "0" : std::to_string(m.codecs.front().payload_type);
  const std::string proto =
      m.kind == "application" ? "UDP/DTLS/SCTP webrtc-datachannel" : "UDP/TLS/RTP/SAVPF " + pt;
  return "m=" + m.kind + " 0 " + proto + "\r\nc=IN IP4 0.0.0.0\r\na=mid:" + m.mid +
         "\r\na=inactive\r\n";
}

}  // namespace

core::Result<WhepOffer> parse_whep_offer(std::string_view sdp) {
  WhepOffer o;
  OfferedMedia* m = nullptr;
  while (!sdp.empty()) {
    const std::size_t nl = sdp.find('\n');
    std::string_view line = sdp.substr(0, nl);
    sdp = nl == std::string_view::npos ? std::string_view{} : sdp.substr(nl + 1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.starts_with("m=")) {
      o.media.emplace_back();
      m = &o.media.back();
      m->kind = std::string(line.substr(2, line.find(' ') - 2));
      continue;
    }
    if (!line.starts_with("a=")) continue;
    const std::string_view attr = line.substr(2);
    const std::size_t colon = attr.find(':');
    const std::string_view name = attr.substr(0, colon);
    const std::string_view value =
        colon == std::string_view::npos ? std::string_view{} : attr.substr(colon + 1);
    if (name == "ice-ufrag" && o.ice_ufrag.empty()) o.ice_ufrag = value;
    if (name == "ice-pwd" && o.ice_pwd.empty()) o.ice_pwd = value;
    if (name == "setup" && o.setup.empty()) o.setup = value;
    if (name == "fingerprint" && o.fingerprint_sha256.empty() &&
        lower(value.substr(0, value.find(' '))) == "sha-256" &&
        value.find(' ') != std::string_view::npos) {
      o.fingerprint_sha256 = value.substr(value.find(' ') + 1);
    }
    if (m == nullptr) continue;
    if (name == "mid") m->mid = value;
    if (name == "rtpmap") read_rtpmap(value, *m);
    if (name == "fmtp") read_fmtp(value, *m);
    if (name == "extmap") read_extmap(value, *m);
    if (name == "rtcp-fb") read_rtcp_fb(value, *m);
    if (name == "sendonly" || name == "inactive") m->can_receive = false;
  }
  if (o.ice_ufrag.empty() || o.ice_pwd.empty()) {
    return core::make_error("offer without a=ice-ufrag/a=ice-pwd");
  }
  if (o.fingerprint_sha256.empty()) return core::make_error("offer without a=fingerprint:sha-256");
  if (o.setup != "actpass" && o.setup != "active") {
    return core::make_error("offer's a=setup must be actpass or active (the server is passive)");
  }
  if (o.media.empty()) return core::make_error("offer without an m= section");
  return o;
}

core::Result<WhepAnswer> answer_whep_offer(const WhepOffer& offer, const media::StreamInfo& video,
                                           const AnswerParams& p, const media::StreamInfo* audio) {
  const OfferedMedia* chosen = nullptr;
  const OfferedCodec* codec = nullptr;
  for (const OfferedMedia& m : offer.media) {
    if (m.kind != "video" || !m.can_receive || m.mid.empty()) continue;
    if ((codec = pick_codec(m, video)) != nullptr) {
      chosen = &m;
      break;
    }
  }
  if (chosen == nullptr) {
    return core::make_error("the offer has no video m-section that receives " +
                            std::string(media::codec_name(video.codec)) +
                            (video.codec == media::Codec::kH264 ? " (packetization-mode=1)" : ""));
  }
  WhepAnswer a;
  a.payload_type = codec->payload_type;
  a.codec = codec->name;
  const std::string profile = fmtp_param(codec->fmtp, "profile-level-id");
  if (!profile.empty()) a.codec += " (" + profile + ")";
  const std::string pt = std::to_string(codec->payload_type);
  // Transport-wide congestion control (docs/webrtc.md): the browser's id for the sequence
  // number, and its feedback for the payload type sent.
  if (chosen->transport_cc_id != 0 && codec->transport_cc) {
    a.transport_cc_id = chosen->transport_cc_id;
  }

  // Opus audio beside the video, on the same transport (docs/webrtc.md "Audio").
  const OfferedMedia* sound = nullptr;
  const OfferedCodec* opus = nullptr;
  for (const OfferedMedia& m : offer.media) {
    if (m.kind != "audio" || !m.can_receive || m.mid.empty()) continue;
    if (audio == nullptr || p.audio_ssrc == 0) {
      a.audio_rejected = "the stream has no audio track";
      break;
    }
    if (audio->codec != media::Codec::kOpus) {
      a.audio_rejected = "the stream's audio is " + std::string(media::codec_name(audio->codec)) +
                         ", which browsers do not decode; no transcoding here";
      break;
    }
    const OfferedCodec* c = pick_opus(m);
    if (c == nullptr) {
      a.audio_rejected = "the audio m-section offers no opus/48000/2";
      continue;
    }
    // One extension map serves the BUNDLE (RFC 8843 §9.2): every packet, audio too, carries
    // the transport-wide sequence number under the video's id, so the section must offer it so.
    if (a.transport_cc_id != 0 && m.transport_cc_id != a.transport_cc_id) {
      a.audio_rejected = "the audio m-section lacks the video's transport-wide sequence number id";
      continue;
    }
    sound = &m;
    opus = c;
    a.audio_rejected.clear();
    a.audio_payload_type = c->payload_type;
    break;
  }

  std::string s = "v=0\r\no=predrop " + std::to_string(p.ssrc) + " 2 IN IP4 " + p.candidate_ip +
                  "\r\ns=predrop\r\nt=0 0\r\na=group:BUNDLE";
  for (const OfferedMedia& m : offer.media) {
    if (&m == chosen || &m == sound) s += " " + m.mid;
  }
  s += "\r\na=ice-lite\r\na=msid-semantic: WMS predrop\r\n";
  const auto line = [&s](std::initializer_list<std::string_view> parts) {
    for (std::string_view part : parts) {
      s.append(part);
    }
    s.append("\r\n");
  };
  // What every accepted section says: its transport (the same for all: BUNDLE), its direction.
  const auto head = [&](std::string_view kind, const OfferedMedia& m, std::string_view pts) {
    line({"m=", kind, " ", std::to_string(p.candidate_port), " UDP/TLS/RTP/SAVPF ", pts});
    line({"c=IN IP4 ", p.candidate_ip});
    line({"a=mid:", m.mid});
    line({"a=sendonly"});
    line({"a=ice-ufrag:", p.local.ufrag});
    line({"a=ice-pwd:", p.local.pwd});
    line({"a=fingerprint:sha-256 ", p.fingerprint_sha256});
    line({"a=setup:passive"});
    line({"a=rtcp-mux"});
  };
  const auto ssrc_lines = [&](std::uint32_t ssrc, std::string_view track) {
    const std::string n = std::to_string(ssrc);
    line({"a=ssrc:", n, " cname:", p.cname});
    line({"a=ssrc:", n, " msid:predrop ", track});
  };
  const auto candidate = [&] {
    s += "a=candidate:1 1 udp 2130706431 " + p.candidate_ip + " " +
         std::to_string(p.candidate_port) + " typ host\r\na=end-of-candidates\r\n";
  };
  for (const OfferedMedia& m : offer.media) {
    if (&m == sound) {
      const std::string apt = std::to_string(opus->payload_type);
      head("audio", m, apt);
      line({"a=rtpmap:", apt, " ", opus->name, "/48000/2"});
      if (!opus->fmtp.empty()) line({"a=fmtp:", apt, " ", opus->fmtp});
      if (a.transport_cc_id != 0) {
        line({"a=extmap:", std::to_string(a.transport_cc_id), " ", wire::kTransportSequenceUri});
        if (opus->transport_cc) line({"a=rtcp-fb:", apt, " transport-cc"});
      }
      ssrc_lines(p.audio_ssrc, "audio0");
      candidate();
      continue;
    }
    if (&m != chosen) {
      s += rejected_section(m);
      continue;
    }
    // NACK only with RTX (docs/webrtc.md "NACK and RTX"): a retransmission in the stream itself
    // would need its sequence number a second time.
    const OfferedCodec* rtx =
        codec->nack && p.rtx_ssrc != 0 ? find_rtx(m, codec->payload_type) : nullptr;
    const std::string rtx_pt = rtx != nullptr ? std::to_string(rtx->payload_type) : "";
    std::string pts = pt;
    if (rtx != nullptr) pts.append(" ").append(rtx_pt);
    head("video", m, pts);
    line({"a=rtpmap:", pt, " ", codec->name, "/",
          std::to_string(codec->clock_rate == 0 ? 90000 : codec->clock_rate)});
    // The browser's own fmtp for the payload type it offered: the answer agrees to it.
    if (!codec->fmtp.empty()) s += "a=fmtp:" + pt + " " + codec->fmtp + "\r\n";
    // The file's nominal rate (RFC 8866 §6.8): what the player page measures the share of
    // pictures shown against (docs/webrtc.md "Quality in the page").
    if (video.frame_rate > 0 && video.frame_rate < 1000) {
      std::array<char, 16> fps{};
      const int n = std::snprintf(fps.data(), fps.size(), "%.6g", video.frame_rate);
      line({"a=framerate:", std::string_view(fps.data(), static_cast<std::size_t>(n))});
    }
    if (a.transport_cc_id != 0) {
      line({"a=extmap:", std::to_string(a.transport_cc_id), " ", wire::kTransportSequenceUri});
      line({"a=rtcp-fb:", pt, " transport-cc"});
    }
    if (rtx != nullptr) {
      a.rtx_payload_type = rtx->payload_type;
      line({"a=rtcp-fb:", pt, " nack"});
    }
    if (codec->nack_pli) {
      a.pli = true;
      line({"a=rtcp-fb:", pt, " nack pli"});
    }
    if (codec->ccm_fir) {
      a.fir = true;
      line({"a=rtcp-fb:", pt, " ccm fir"});
    }
    if (rtx != nullptr) {
      line({"a=rtpmap:", rtx_pt, " rtx/90000"});
      line({"a=fmtp:", rtx_pt, " apt=", pt});
      line({"a=ssrc-group:FID ", std::to_string(p.ssrc), " ", std::to_string(p.rtx_ssrc)});
    }
    ssrc_lines(p.ssrc, "video0");
    if (rtx != nullptr) {
      // After the media SSRC's lines: a browser takes the first a=ssrc it reads as the primary
      // (the media) one, whatever the FID group says.
      ssrc_lines(p.rtx_ssrc, "video0");
    }
    candidate();
  }
  a.sdp = std::move(s);
  return a;
}

}  // namespace predrop::webrtc
