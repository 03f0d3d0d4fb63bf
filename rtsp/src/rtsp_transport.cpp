// RTSP Transport header (RFC 2326 §12.39).
#include "predrop/rtsp/rtsp_transport.hpp"

#include <cstdio>

#include "predrop/core/text_util.hpp"

namespace predrop::rtsp {

using core::make_error;
using core::text::iequals;
using core::text::quote_for_error;
using core::text::trim;

namespace {

constexpr std::size_t kMaxAlternatives = 16;
constexpr std::size_t kMaxSpecBytes = 1024;

// "a-b" or "a" (then b = a + 1). Zero is not a port.
std::optional<PortPair> parse_port_pair(std::string_view v) {
  const auto [a, b] = core::text::split_once(v, '-');
  const auto rtp = core::text::parse_uint<std::uint16_t>(core::text::trim(a));
  if (!rtp || *rtp == 0) {
    return std::nullopt;
  }
  if (v.find('-') == std::string_view::npos) {
    if (*rtp == 65535) {
      return std::nullopt;
    }
    return PortPair{*rtp, static_cast<std::uint16_t>(*rtp + 1)};
  }
  const auto rtcp = core::text::parse_uint<std::uint16_t>(core::text::trim(b));
  if (!rtcp || *rtcp == 0) {
    return std::nullopt;
  }
  return PortPair{*rtp, *rtcp};
}

std::optional<ChannelPair> parse_channel_pair(std::string_view v) {
  const auto [a, b] = core::text::split_once(v, '-');
  const auto rtp = core::text::parse_uint<std::uint8_t>(core::text::trim(a));
  if (!rtp) {
    return std::nullopt;
  }
  if (v.find('-') == std::string_view::npos) {
    if (*rtp == 255) {
      return std::nullopt;
    }
    return ChannelPair{*rtp, static_cast<std::uint8_t>(*rtp + 1)};
  }
  const auto rtcp = core::text::parse_uint<std::uint8_t>(core::text::trim(b));
  if (!rtcp) {
    return std::nullopt;
  }
  return ChannelPair{*rtp, *rtcp};
}

std::string_view unquote(std::string_view v) {
  v = core::text::trim(v);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
    v = v.substr(1, v.size() - 2);
  }
  return v;
}

}  // namespace

core::Result<TransportSpec> parse_transport_spec(std::string_view text) {
  text = core::text::trim(text);
  if (text.empty()) {
    return make_error("empty transport spec");
  }
  if (text.size() > kMaxSpecBytes) {
    return make_error("transport spec longer than 1024 bytes");
  }
  if (core::text::has_ctl(text)) {
    return make_error("control character in transport spec");
  }

  TransportSpec spec;
  const auto [protocol, params] = core::text::split_once(text, ';');
  const auto proto = core::text::trim(protocol);
  std::vector<std::string_view> parts;
  core::text::for_each_piece(proto, '/', [&](std::string_view p) { parts.push_back(p); });
  if (parts.size() < 2 || parts.size() > 3 ||
      !std::all_of(parts.begin(), parts.end(), core::text::is_token)) {
    return make_error("malformed transport protocol " + core::text::quote_for_error(proto));
  }
  spec.protocol = std::string(proto);
  spec.profile = RtpProfile::kOther;
  if (core::text::iequals(parts[0], "RTP")) {
    if (core::text::iequals(parts[1], "AVP")) {
      spec.profile = RtpProfile::kAvp;
    }
    if (core::text::iequals(parts[1], "SAVP")) {
      spec.profile = RtpProfile::kSavp;
    }
    if (core::text::iequals(parts[1], "AVPF")) {
      spec.profile = RtpProfile::kAvpf;
    }
    if (core::text::iequals(parts[1], "SAVPF")) {
      spec.profile = RtpProfile::kSavpf;
    }
  }
  if (parts.size() == 3) {
    if (core::text::iequals(parts[2], "TCP")) {
      spec.lower = LowerTransport::kTcp;
    } else if (!core::text::iequals(parts[2], "UDP")) {
      spec.profile = RtpProfile::kOther;  // e.g. SCTP: well-formed but nothing we can serve
    }
  }

  std::string error;
  if (!params.empty()) {
    core::text::for_each_piece(params, ';', [&](std::string_view p) {
      if (!error.empty()) {
        return;
      }
      p = core::text::trim(p);
      if (p.empty()) {
        return;
      }
      const auto eq = p.find('=');
      const auto name = core::text::trim(p.substr(0, eq));
      const auto value =
          eq == std::string_view::npos ? std::string_view{} : core::text::trim(p.substr(eq + 1));
      const bool has_value = eq != std::string_view::npos;
      const auto bad = [&](std::string_view what) {
        error = "invalid " + std::string(what) + " " + core::text::quote_for_error(value);
      };
      if (core::text::iequals(name, "unicast")) {
        spec.multicast = false;
      } else if (core::text::iequals(name, "multicast")) {
        spec.multicast = true;
      } else if (core::text::iequals(name, "client_port")) {
        spec.client_port = parse_port_pair(value);
        if (!spec.client_port) {
          bad("client_port");
        }
      } else if (core::text::iequals(name, "server_port")) {
        spec.server_port = parse_port_pair(value);
        if (!spec.server_port) {
          bad("server_port");
        }
      } else if (core::text::iequals(name, "interleaved")) {
        spec.interleaved = parse_channel_pair(value);
        if (!spec.interleaved) {
          bad("interleaved");
        }
      } else if (core::text::iequals(name, "ssrc")) {
        const auto v =
            value.size() <= 8 ? core::text::parse_hex<std::uint32_t>(value) : std::nullopt;
        if (!v) {
          bad("ssrc");
        }
        spec.ssrc = v;
      } else if (core::text::iequals(name, "ttl")) {
        const auto v = core::text::parse_uint<std::uint8_t>(value);
        if (!v) {
          bad("ttl");
        }
        spec.ttl = v;
      } else if (core::text::iequals(name, "mode")) {
        const auto m = unquote(value);
        if (!core::text::is_token(m)) {
          bad("mode");
        } else {
          spec.mode = std::string(m);
        }
      } else if (core::text::iequals(name, "destination")) {
        spec.destination = std::string(has_value ? value : std::string_view{});
      } else if (core::text::iequals(name, "source")) {
        spec.source = std::string(value);
      } else if (!core::text::is_token(name)) {
        error = "malformed transport parameter " + core::text::quote_for_error(p);
      }
      // Other parameters (layers, port, append, ...) are ignored, as §12.39 intends.
    });
  }
  if (!error.empty()) {
    return make_error(error);
  }
  return spec;
}

core::Result<std::vector<TransportSpec>> parse_transport(std::string_view value) {
  std::vector<TransportSpec> out;
  std::string error;
  core::text::for_each_piece(value, ',', [&](std::string_view piece) {
    if (!error.empty()) {
      return;
    }
    if (core::text::trim(piece).empty()) {
      return;  // "a,,b" or a trailing comma: tolerate
    }
    if (out.size() == kMaxAlternatives) {
      error = "more than 16 transport alternatives";
      return;
    }
    auto spec = parse_transport_spec(piece);
    if (!spec) {
      error = spec.error().message;
      return;
    }
    out.push_back(std::move(spec).value());
  });
  if (!error.empty()) {
    return make_error(error);
  }
  if (out.empty()) {
    return make_error("empty Transport header");
  }
  return out;
}

std::optional<std::size_t> select_transport(const std::vector<TransportSpec>& offers,
                                            const TransportPolicy& policy) {
  for (std::size_t i = 0; i < offers.size(); ++i) {
    const auto& t = offers[i];
    const bool profile_ok = (t.profile == RtpProfile::kAvp && policy.allow_avp) ||
                            (t.profile == RtpProfile::kSavp && policy.allow_savp);
    const bool mode_ok = !t.mode || core::text::iequals(*t.mode, "PLAY");
    const bool udp_ok = t.lower == LowerTransport::kUdp && t.client_port && !t.interleaved;
    const bool tcp_ok = t.lower == LowerTransport::kTcp && policy.allow_interleaved;
    if (profile_ok && mode_ok && !t.multicast && (udp_ok || tcp_ok)) {
      return i;
    }
  }
  return std::nullopt;
}

std::string format_transport(const TransportSpec& spec) {
  std::string out = spec.protocol;
  out += spec.multicast ? ";multicast" : ";unicast";
  if (spec.destination) {
    out += ";destination=" + *spec.destination;
  }
  if (spec.source) {
    out += ";source=" + *spec.source;
  }
  const auto pair = [&](std::string_view name, unsigned a, unsigned b) {
    out += ';';
    out += name;
    out += '=' + std::to_string(a) + '-' + std::to_string(b);
  };
  if (spec.interleaved) {
    pair("interleaved", spec.interleaved->rtp, spec.interleaved->rtcp);
  }
  if (spec.ttl) {
    out += ";ttl=" + std::to_string(*spec.ttl);
  }
  if (spec.client_port) {
    pair("client_port", spec.client_port->rtp, spec.client_port->rtcp);
  }
  if (spec.server_port) {
    pair("server_port", spec.server_port->rtp, spec.server_port->rtcp);
  }
  if (spec.ssrc) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08X", static_cast<unsigned>(*spec.ssrc));
    out += ";ssrc=";
    out += buf;
  }
  if (spec.mode) {
    out += ";mode=" + *spec.mode;
  }
  return out;
}

}  // namespace predrop::rtsp
