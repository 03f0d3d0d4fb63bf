// SDP builder and minimal parser (RFC 4566, RFC 4568 §9.1, RFC 8285 §5, RFC 2326 Appendix C).
#include "predrop/rtsp/sdp.hpp"

#include "predrop/core/text_util.hpp"

namespace predrop::rtsp {

using core::make_error;
using core::text::quote_for_error;

namespace {

bool has_line_break(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

// Like is_token, but SDP protos contain '/' ("RTP/SAVP").
bool is_proto(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return core::text::is_tchar(c) || c == '/'; });
}

bool is_digits(std::string_view s, std::size_t max_len) {
  return !s.empty() && s.size() <= max_len && std::all_of(s.begin(), s.end(), core::text::is_digit);
}

bool no_space(std::string_view s) {
  return s.find_first_of(" \t") == std::string_view::npos;
}

bool is_direction(std::string_view s) {
  return s == "sendonly" || s == "recvonly" || s == "sendrecv" || s == "inactive";
}

// Fields of o=, c=, m= and crypto lines: separated by runs of spaces or tabs.
std::vector<std::string_view> split_spaces(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    while (!s.empty() && core::text::is_space(s.front())) {
      s.remove_prefix(1);
    }
    if (s.empty()) {
      break;
    }
    const auto end = s.find_first_of(" \t");
    out.push_back(s.substr(0, end));
    if (end == std::string_view::npos) {
      break;
    }
    s.remove_prefix(end);
  }
  return out;
}

std::string_view addr_type(std::string_view address) {
  return address.find(':') == std::string_view::npos ? "IP4" : "IP6";
}

// Checks an SDP field that ends up inside one line; names the field in the error.
std::string check_text(std::string_view field, std::string_view value) {
  if (has_line_break(value)) {
    return std::string(field) + ": line break or NUL in value";
  }
  return {};
}

// Splits "<word> <rest>" at the first space; rest keeps its leading spaces beyond the first.
std::pair<std::string_view, std::string_view> split_word(std::string_view s) {
  const auto sp = s.find_first_of(" \t");
  if (sp == std::string_view::npos) {
    return {s, {}};
  }
  return {s.substr(0, sp), s.substr(sp + 1)};
}

}  // namespace

std::string_view SdpCrypto::inline_key() const {
  std::string_view k = key_params;
  if (!k.starts_with("inline:")) {
    return {};
  }
  k.remove_prefix(7);
  return k.substr(0, k.find('|'));
}

const SdpExtmap* SdpMedia::find_extmap(std::string_view uri) const {
  for (const auto& e : extmaps) {
    if (e.uri == uri) {
      return &e;
    }
  }
  return nullptr;
}

std::optional<std::string_view> SdpMedia::attribute(std::string_view name) const {
  for (const auto& a : attributes) {
    std::string_view v = a;
    if (v == name) {
      return std::string_view{};
    }
    if (v.size() > name.size() && v.starts_with(name) && v[name.size()] == ':') {
      return v.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

// ---- builder --------------------------------------------------------------------------------

core::Result<std::string> build_sdp(const SdpSession& s) {
  // Validate everything first so that a bad field never yields half an SDP.
  std::string err;
  const auto check = [&](std::string_view field, std::string_view value) {
    if (err.empty()) {
      err = check_text(field, value);
    }
  };
  const auto require = [&](bool ok, std::string_view what) {
    if (err.empty() && !ok) {
      err = std::string(what);
    }
  };
  check("origin_username", s.origin_username);
  require(s.origin_username.empty() || no_space(s.origin_username),
          "origin_username: contains a space");
  require(is_digits(s.session_id, 20), "session_id: not 1..20 decimal digits");
  require(is_digits(s.session_version, 20), "session_version: not 1..20 decimal digits");
  check("origin_address", s.origin_address);
  require(!s.origin_address.empty() && no_space(s.origin_address),
          "origin_address: empty or contains a space");
  check("name", s.name);
  check("connection_address", s.connection_address);
  require(no_space(s.connection_address), "connection_address: contains a space");
  check("tool", s.tool);
  check("control", s.control);
  check("range", s.range);
  for (const auto& a : s.attributes) {
    check("session attribute", a);
  }
  for (std::size_t i = 0; i < s.media.size() && err.empty(); ++i) {
    const auto& m = s.media[i];
    const std::string at = "media[" + std::to_string(i) + "].";
    require(core::text::is_token(m.kind), at + "kind: not a token");
    require(is_proto(m.proto), at + "proto: not a token");
    require(m.payload_type >= 0 && m.payload_type <= 127, at + "payload_type: outside 0..127");
    for (const auto& f : m.extra_formats) {
      require(core::text::is_token(f), at + "extra_formats: not a token");
    }
    check(at + "rtpmap", m.rtpmap);
    check(at + "fmtp", m.fmtp);
    check(at + "control", m.control);
    for (const auto& c : m.crypto) {
      require(c.tag <= 999999999, at + "crypto.tag: more than 9 digits");
      require(core::text::is_token(c.suite), at + "crypto.suite: not a token");
      require(!c.key_params.empty() && no_space(c.key_params) && !has_line_break(c.key_params),
              at + "crypto.key_params: empty or contains a space");
      check(at + "crypto.session_params", c.session_params);
    }
    for (const auto& e : m.extmaps) {
      require(e.id >= 1 && e.id <= 255, at + "extmap.id: outside 1..255");
      require(e.direction.empty() || is_direction(e.direction), at + "extmap.direction: unknown");
      require(!e.uri.empty() && no_space(e.uri) && !has_line_break(e.uri),
              at + "extmap.uri: empty or contains a space");
      check(at + "extmap.attributes", e.attributes);
    }
    for (const auto& a : m.attributes) {
      check(at + "attributes", a);
    }
  }
  if (!err.empty()) {
    return make_error("SDP " + err);
  }

  std::string out;
  out.reserve(512 + 256 * s.media.size());
  const auto line = [&](char type, std::string_view a, std::string_view b = {}) {
    out += type;
    out += '=';
    out += a;
    out += b;
    out += "\r\n";
  };
  line('v', "0");
  line('o', (s.origin_username.empty() ? std::string("-") : s.origin_username) + " " +
                s.session_id + " " + s.session_version + " IN " +
                std::string(addr_type(s.origin_address)) + " " + s.origin_address);
  line('s', s.name.empty() ? std::string_view("-") : std::string_view(s.name));
  if (!s.connection_address.empty()) {
    line('c', "IN " + std::string(addr_type(s.connection_address)) + " " + s.connection_address);
  }
  line('t', "0 0");
  if (!s.tool.empty()) {
    line('a', "tool:", s.tool);
  }
  if (!s.control.empty()) {
    line('a', "control:", s.control);
  }
  if (!s.range.empty()) {
    line('a', "range:", s.range);
  }
  for (const auto& a : s.attributes) {
    line('a', a);
  }
  for (const auto& m : s.media) {
    std::string mline = m.kind + " " + std::to_string(m.port) + " " + m.proto + " " +
                        std::to_string(m.payload_type);
    for (const auto& f : m.extra_formats) {
      mline += " " + f;
    }
    line('m', mline);
    if (m.bandwidth_kbps) {
      line('b', "AS:", std::to_string(*m.bandwidth_kbps));
    }
    const auto pt = std::to_string(m.payload_type) + " ";
    if (!m.rtpmap.empty()) {
      line('a', "rtpmap:" + pt, m.rtpmap);
    }
    if (!m.fmtp.empty()) {
      line('a', "fmtp:" + pt, m.fmtp);
    }
    if (!m.control.empty()) {
      line('a', "control:", m.control);
    }
    for (const auto& c : m.crypto) {
      line('a', "crypto:" + std::to_string(c.tag) + " " + c.suite + " " + c.key_params,
           c.session_params.empty() ? std::string() : " " + c.session_params);
    }
    for (const auto& e : m.extmaps) {
      std::string v = "extmap:" + std::to_string(e.id);
      if (!e.direction.empty()) {
        v += "/" + e.direction;
      }
      v += " " + e.uri;
      if (!e.attributes.empty()) {
        v += " " + e.attributes;
      }
      line('a', v);
    }
    for (const auto& a : m.attributes) {
      line('a', a);
    }
  }
  return out;
}

// ---- parser ---------------------------------------------------------------------------------

namespace {

// Fills a single-valued field from the first non-empty occurrence; everything else stays a
// free-form attribute (see the round-trip note in sdp.hpp).
bool take_once(std::string& field, std::string_view value) {
  if (!field.empty() || value.empty()) {
    return false;
  }
  field = std::string(value);
  return true;
}

std::string parse_media_attribute(SdpMedia& m, std::string_view attr) {
  const auto colon = attr.find(':');
  const auto name = attr.substr(0, colon);
  const auto value = colon == std::string_view::npos ? std::string_view{} : attr.substr(colon + 1);
  const auto own_pt = [&](std::string_view v, std::string_view& rest) {
    const auto [pt, r] = split_word(v);
    rest = r;
    const auto n = core::text::parse_uint<int>(pt, 127);
    return n && *n == m.payload_type;
  };
  std::string_view rest;
  if (name == "rtpmap" && own_pt(value, rest) && take_once(m.rtpmap, rest)) {
    return {};
  }
  if (name == "fmtp" && own_pt(value, rest) && take_once(m.fmtp, rest)) {
    return {};
  }
  if (name == "control" && take_once(m.control, value)) {
    return {};
  }
  if (name == "crypto" && colon != std::string_view::npos) {
    const auto f = split_spaces(value);
    if (f.size() < 3 || !is_digits(f[0], 9) || !core::text::is_token(f[1]) || !no_space(f[2])) {
      return "malformed crypto attribute " + core::text::quote_for_error(attr);
    }
    SdpCrypto c;
    c.tag = *core::text::parse_uint<std::uint32_t>(f[0]);
    c.suite = std::string(f[1]);
    c.key_params = std::string(f[2]);
    // Session parameters: the rest after the key params, leading spaces dropped.
    const auto after =
        value.substr(static_cast<std::size_t>(f[2].data() - value.data()) + f[2].size());
    const auto first = after.find_first_not_of(' ');
    if (first != std::string_view::npos) {
      c.session_params = std::string(after.substr(first));
    }
    m.crypto.push_back(std::move(c));
    return {};
  }
  if (name == "extmap" && colon != std::string_view::npos) {
    const auto [id_dir, rest2] = split_word(value);
    const auto [id_text, dir] = core::text::split_once(id_dir, '/');
    const auto id = core::text::parse_uint<int>(id_text, 255);
    std::string_view r = rest2;
    while (!r.empty() && r.front() == ' ') {
      r.remove_prefix(1);
    }
    const auto [uri, attrs] = split_word(r);
    if (!id || *id == 0 || (id_dir.find('/') != std::string_view::npos && !is_direction(dir)) ||
        uri.empty()) {
      return "malformed extmap attribute " + core::text::quote_for_error(attr);
    }
    SdpExtmap e;
    e.id = *id;
    e.direction = std::string(dir);
    e.uri = std::string(uri);
    std::string_view a = attrs;
    while (!a.empty() && a.front() == ' ') {
      a.remove_prefix(1);
    }
    e.attributes = std::string(a);
    m.extmaps.push_back(std::move(e));
    return {};
  }
  m.attributes.emplace_back(attr);
  return {};
}

}  // namespace

core::Result<SdpSession> parse_sdp(std::string_view text, SdpLimits limits) {
  if (text.size() > limits.max_bytes) {
    return make_error("SDP larger than " + std::to_string(limits.max_bytes) + " bytes");
  }
  SdpSession s;
  s.name.clear();
  s.origin_address.clear();
  s.connection_address.clear();
  bool seen_version = false;
  bool seen_origin = false;
  bool seen_connection = false;
  std::size_t line_no = 0;
  std::size_t attrs_in_section = 0;
  std::string err;

  std::size_t at = 0;
  while (at < text.size() && err.empty()) {
    auto nl = text.find('\n', at);
    if (nl == std::string_view::npos) {
      nl = text.size();
    }
    std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      continue;
    }
    const std::string where = "SDP line " + std::to_string(line_no) + ": ";
    if (core::text::has_ctl(line)) {
      return make_error(where + "control character");
    }
    if (line.size() < 2 || line[1] != '=' || !core::text::is_alpha(line[0])) {
      return make_error(where + "not <type>=<value>: " + core::text::quote_for_error(line));
    }
    const char type = line[0];
    const auto value = line.substr(2);
    if (!seen_version) {
      if (type != 'v' || value != "0") {
        return make_error(where + "expected v=0 first");
      }
      seen_version = true;
      continue;
    }
    SdpMedia* media = s.media.empty() ? nullptr : &s.media.back();
    switch (type) {
      case 'o': {
        if (media || seen_origin) {
          break;
        }
        const auto f = split_spaces(value);
        if (f.size() != 6 || !is_digits(f[1], 20) || !is_digits(f[2], 20) || f[3] != "IN") {
          return make_error(where + "malformed o= line");
        }
        s.origin_username = std::string(f[0]);
        s.session_id = std::string(f[1]);
        s.session_version = std::string(f[2]);
        s.origin_address = std::string(f[5]);
        seen_origin = true;
        break;
      }
      case 's':
        if (!media && s.name.empty()) {
          s.name = value.empty() ? "-" : std::string(value);
        }
        break;
      case 'c': {
        const auto f = split_spaces(value);
        if (f.size() != 3 || f[0] != "IN") {
          return make_error(where + "malformed c= line");
        }
        if (!media && !seen_connection) {
          s.connection_address = std::string(f[2]);
          seen_connection = true;
        }
        break;
      }
      case 'b':
        if (media && value.starts_with("AS:")) {
          if (const auto kbps = core::text::parse_uint<std::uint32_t>(value.substr(3))) {
            media->bandwidth_kbps = kbps;
          }
        }
        break;
      case 'm': {
        if (s.media.size() == limits.max_media) {
          return make_error(where + "more than " + std::to_string(limits.max_media) +
                            " media sections");
        }
        const auto f = split_spaces(value);
        if (f.size() < 4 || !core::text::is_token(f[0]) || !is_proto(f[2])) {
          return make_error(where + "malformed m= line");
        }
        SdpMedia m;
        m.kind = std::string(f[0]);
        const auto port =
            core::text::parse_uint<std::uint16_t>(core::text::split_once(f[1], '/').first);
        const auto pt = core::text::parse_uint<int>(f[3], 127);
        if (!port || !pt) {
          return make_error(where + "m= line port or payload type invalid");
        }
        m.port = *port;
        m.proto = std::string(f[2]);
        m.payload_type = *pt;
        for (std::size_t i = 4; i < f.size(); ++i) {
          if (!core::text::is_token(f[i])) {
            return make_error(where + "malformed m= format");
          }
          m.extra_formats.emplace_back(f[i]);
        }
        s.media.push_back(std::move(m));
        attrs_in_section = 0;
        break;
      }
      case 'a': {
        if (++attrs_in_section > limits.max_attributes) {
          return make_error(where + "more than " + std::to_string(limits.max_attributes) +
                            " attributes in one section");
        }
        if (media) {
          err = parse_media_attribute(*media, value);
          if (!err.empty()) {
            err.insert(0, where);
          }
          break;
        }
        const auto colon = value.find(':');
        const auto name = value.substr(0, colon);
        const auto v =
            colon == std::string_view::npos ? std::string_view{} : value.substr(colon + 1);
        if (name == "tool" && take_once(s.tool, v)) {
          break;
        }
        if (name == "control" && take_once(s.control, v)) {
          break;
        }
        if (name == "range" && take_once(s.range, v)) {
          break;
        }
        s.attributes.emplace_back(value);
        break;
      }
      default:
        break;  // t=, i=, u=, e=, p=, k=, r=, z= and unknown types: nothing we need
    }
  }
  if (!err.empty()) {
    return make_error(err);
  }
  if (!seen_version) {
    return make_error("SDP without v=0");
  }
  if (!seen_origin) {
    return make_error("SDP without o= line");
  }
  if (s.name.empty()) {
    s.name = "-";
  }
  return s;
}

}  // namespace predrop::rtsp
