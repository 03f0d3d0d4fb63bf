// SDES a=crypto codec and base64; see sdes_key.hpp for the RFC sections and what we accept.
#include "predrop/wire/sdes_key.hpp"

#include <cassert>

namespace predrop::wire {
namespace {

using core::make_error;
using core::Result;

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Value of a base64 character, or -1 if it is not in the alphabet ('=' included).
constexpr int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') {
    return c - 'A';
  }
  if (c >= 'a' && c <= 'z') {
    return c - 'a' + 26;
  }
  if (c >= '0' && c <= '9') {
    return c - '0' + 52;
  }
  if (c == '+') {
    return 62;
  }
  if (c == '/') {
    return 63;
  }
  return -1;
}

constexpr bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
constexpr bool is_wsp(char c) {
  return c == ' ' || c == '\t';
}

// Removes leading blanks; true if there was at least one (RFC 4568 §9.1 uses 1*WSP).
bool skip_wsp(std::string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && is_wsp(s[n])) {
    ++n;
  }
  s.remove_prefix(n);
  return n > 0;
}

// Takes the leading token up to the next blank.
std::string_view take_token(std::string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && !is_wsp(s[n])) {
    ++n;
  }
  const std::string_view token = s.substr(0, n);
  s.remove_prefix(n);
  return token;
}

// RFC 4568 §9.2: lifetime = ["2^"] 1*(DIGIT).
bool valid_lifetime(std::string_view s) {
  if (s.starts_with("2^")) {
    s.remove_prefix(2);
  }
  if (s.empty()) {
    return false;
  }
  for (char c : s) {
    if (!is_digit(c)) {
      return false;
    }
  }
  return true;
}

std::string quoted(std::string_view s) {
  std::string q = "'";
  q.append(s.substr(0, 64));
  if (s.size() > 64) {
    q.append("...");
  }
  q.push_back('\'');
  return q;
}

}  // namespace

std::string_view suite_name(SrtpSuite suite) {
  switch (suite) {
    case SrtpSuite::AesCm128HmacSha1_80:
      return "AES_CM_128_HMAC_SHA1_80";
    case SrtpSuite::AesCm128HmacSha1_32:
      return "AES_CM_128_HMAC_SHA1_32";
    case SrtpSuite::AeadAes128Gcm:
      return "AEAD_AES_128_GCM";
  }
  return "UNKNOWN";
}

std::optional<SrtpSuite> suite_from_name(std::string_view name) {
  for (SrtpSuite s :
       {SrtpSuite::AesCm128HmacSha1_80, SrtpSuite::AesCm128HmacSha1_32, SrtpSuite::AeadAes128Gcm}) {
    if (suite_name(s) == name) {
      return s;
    }
  }
  return std::nullopt;
}

std::size_t master_salt_size(SrtpSuite suite) {
  return suite == SrtpSuite::AeadAes128Gcm ? 12 : 14;
}

std::size_t key_salt_size(SrtpSuite suite) {
  return kSrtpMasterKeySize + master_salt_size(suite);
}

std::string base64_encode(std::span<const std::uint8_t> bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = (std::uint32_t{bytes[i]} << 16) | (std::uint32_t{bytes[i + 1]} << 8) |
                            std::uint32_t{bytes[i + 2]};
    out.push_back(kAlphabet[(v >> 18) & 0x3F]);
    out.push_back(kAlphabet[(v >> 12) & 0x3F]);
    out.push_back(kAlphabet[(v >> 6) & 0x3F]);
    out.push_back(kAlphabet[v & 0x3F]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest != 0) {
    std::uint32_t v = std::uint32_t{bytes[i]} << 16;
    if (rest == 2) {
      v |= std::uint32_t{bytes[i + 1]} << 8;
    }
    out.push_back(kAlphabet[(v >> 18) & 0x3F]);
    out.push_back(kAlphabet[(v >> 12) & 0x3F]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 0x3F] : '=');
    out.push_back('=');
  }
  return out;
}

Result<std::size_t> base64_decode(std::string_view text, std::span<std::uint8_t> out) {
  if (text.size() % 4 != 0) {
    return make_error("base64 length " + std::to_string(text.size()) +
                      " is not a multiple of 4 ('=' padding is required)");
  }
  std::size_t pad = 0;
  if (!text.empty() && text.back() == '=') {
    ++pad;
  }
  if (text.size() >= 2 && text[text.size() - 2] == '=') {
    ++pad;
  }
  const std::size_t size = text.size() / 4 * 3 - pad;
  if (size > out.size()) {
    return make_error("base64 decodes to " + std::to_string(size) + " bytes, more than the " +
                      std::to_string(out.size()) + " expected");
  }
  std::size_t o = 0;
  for (std::size_t g = 0; g < text.size(); g += 4) {
    const bool last = g + 4 == text.size();
    const std::size_t chars = last ? 4 - pad : 4;
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      int d = 0;
      if (k < chars) {
        d = base64_value(text[g + k]);
        if (d < 0) {
          return make_error("invalid base64 character at offset " + std::to_string(g + k));
        }
      }
      v = (v << 6) | static_cast<std::uint32_t>(d);
    }
    // RFC 4648 §3.5: the bits after the last byte must be zero in a canonical encoding.
    if ((pad == 1 && last && (v & 0xFF) != 0) || (pad == 2 && last && (v & 0xFFFF) != 0)) {
      return make_error("base64 has non-zero bits after its last byte (non-canonical)");
    }
    out[o++] = static_cast<std::uint8_t>(v >> 16);
    if (chars >= 3) {
      out[o++] = static_cast<std::uint8_t>(v >> 8);
    }
    if (chars == 4) {
      out[o++] = static_cast<std::uint8_t>(v);
    }
  }
  return o;
}

Result<std::vector<std::uint8_t>> base64_decode(std::string_view text) {
  std::vector<std::uint8_t> out(text.size() / 4 * 3);
  auto n = base64_decode(text, out);
  if (!n) {
    return n.error();
  }
  out.resize(*n);
  return out;
}

std::string format_crypto_attribute(std::uint32_t tag, SrtpSuite suite,
                                    const SrtpKeyMaterial& key) {
  assert(key.size == key_salt_size(suite));
  assert(tag <= 999'999'999);
  std::string line = "a=crypto:";
  line += std::to_string(tag);
  line += ' ';
  line += suite_name(suite);
  line += " inline:";
  line += base64_encode(key.span());
  return line;
}

Result<CryptoAttribute> parse_crypto_attribute(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n' || is_wsp(line.back()))) {
    line.remove_suffix(1);
  }
  if (line.starts_with("a=")) {
    line.remove_prefix(2);
  }
  if (!line.starts_with("crypto:")) {
    return make_error("not an a=crypto attribute");
  }
  line.remove_prefix(7);

  CryptoAttribute attr;
  std::size_t digits = 0;
  while (digits < line.size() && is_digit(line[digits])) {
    ++digits;
  }
  if (digits == 0 || digits > 9) {
    return make_error("a=crypto tag must be 1 to 9 digits");
  }
  for (std::size_t i = 0; i < digits; ++i) {
    attr.tag = attr.tag * 10 + static_cast<std::uint32_t>(line[i] - '0');
  }
  line.remove_prefix(digits);
  if (!skip_wsp(line)) {
    return make_error("a=crypto tag must be followed by whitespace");
  }

  const std::string_view suite_text = take_token(line);
  const auto suite = suite_from_name(suite_text);
  if (!suite) {
    return make_error("unsupported a=crypto suite " + quoted(suite_text) +
                      " (supported: AES_CM_128_HMAC_SHA1_80, AES_CM_128_HMAC_SHA1_32, "
                      "AEAD_AES_128_GCM)");
  }
  attr.suite = *suite;
  if (!skip_wsp(line)) {
    return make_error("a=crypto has no key-params after the suite");
  }

  const std::string_view key_params = take_token(line);
  skip_wsp(line);
  if (!line.empty()) {
    return make_error("a=crypto session parameter " + quoted(take_token(line)) +
                      " is not supported");
  }
  if (key_params.find(';') != std::string_view::npos) {
    return make_error("a=crypto with several key-params (which needs MKIs) is not supported");
  }
  if (!key_params.starts_with("inline:")) {
    return make_error("a=crypto key method must be 'inline' (RFC 4568 §9.2)");
  }
  std::string_view info = key_params.substr(7);

  const std::size_t bar = info.find('|');
  const std::string_view key_text = info.substr(0, bar);
  std::string_view extras = bar == std::string_view::npos ? std::string_view{} : info.substr(bar);
  for (int field = 0; !extras.empty(); ++field) {
    extras.remove_prefix(1);  // the '|'
    const std::size_t next = extras.find('|');
    const std::string_view f = extras.substr(0, next);
    extras = next == std::string_view::npos ? std::string_view{} : extras.substr(next);
    if (f.find(':') != std::string_view::npos) {
      return make_error("a=crypto MKI " + quoted(f) +
                        " is not supported; predrop uses one master key per direction without MKI");
    }
    if (field > 0) {
      return make_error("a=crypto key-params has an unexpected field " + quoted(f));
    }
    if (!valid_lifetime(f)) {
      return make_error("a=crypto key lifetime " + quoted(f) + " is invalid");
    }
    // The lifetime is ignored: libsrtp's own limits apply and keys are per session anyway.
  }

  // Decode into a buffer larger than any valid key so that a wrong length gets a size message.
  std::array<std::uint8_t, 64> tmp{};
  if (key_text.size() > tmp.size() / 3 * 4) {
    return make_error("a=crypto inline key is too long");
  }
  auto n = base64_decode(key_text, tmp);
  if (!n) {
    return make_error("a=crypto inline key: " + n.error().message);
  }
  if (*n != key_salt_size(attr.suite)) {
    return make_error("a=crypto " + std::string(suite_name(attr.suite)) + " needs a " +
                      std::to_string(key_salt_size(attr.suite)) + "-byte key||salt, got " +
                      std::to_string(*n) + " bytes");
  }
  std::copy_n(tmp.begin(), *n, attr.key.bytes.begin());
  attr.key.size = *n;
  return attr;
}

}  // namespace predrop::wire
