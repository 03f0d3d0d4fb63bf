// MIKEY PSK_INIT for SRTP keys (see mikey.hpp). Numbers are RFC 3830's: §6.1 common header,
// §6.2 KEMAC, §6.6 T, §6.10 SP (and §6.10.1 SRTP policy parameters), §6.11 RAND, §6.13 KEY_DATA;
// AES-GCM's encryption algorithm number is RFC 7714 §14.1.
#include "predrop/wire/mikey.hpp"

#include <algorithm>
#include <array>

#include "predrop/core/byte_io.hpp"

namespace predrop::wire {

namespace {

constexpr std::uint8_t kVersion = 1;
constexpr std::uint8_t kDataTypePskInit = 0;
constexpr std::uint8_t kPrfMikey1 = 0;
constexpr std::uint8_t kMapTypeSrtpId = 0;

// Payload types (RFC 3830 §6.1 table).
constexpr std::uint8_t kPtLast = 0;
constexpr std::uint8_t kPtKemac = 1;
constexpr std::uint8_t kPtT = 5;
constexpr std::uint8_t kPtSp = 10;
constexpr std::uint8_t kPtRand = 11;
constexpr std::uint8_t kPtKeyData = 20;

constexpr std::uint8_t kTsNtpUtc = 0;
constexpr std::uint8_t kTsNtp = 1;
constexpr std::uint8_t kTsCounter = 2;

constexpr std::uint8_t kProtSrtp = 0;
// SRTP policy parameter types (§6.10.1).
constexpr std::uint8_t kSpEncAlg = 0;
constexpr std::uint8_t kSpEncKeyLen = 1;
constexpr std::uint8_t kSpAuthAlg = 2;
constexpr std::uint8_t kSpAuthKeyLen = 3;
constexpr std::uint8_t kSpSrtpEnc = 7;
constexpr std::uint8_t kSpSrtcpEnc = 8;
constexpr std::uint8_t kSpSrtpAuth = 10;
constexpr std::uint8_t kSpAuthTagLen = 11;

constexpr std::uint8_t kEncNull = 0;
constexpr std::uint8_t kEncAesCm128 = 1;
constexpr std::uint8_t kEncAesGcm128 = 6;  // RFC 7714 §14.1
constexpr std::uint8_t kMacNull = 0;
constexpr std::uint8_t kAuthHmacSha1 = 1;

constexpr std::uint8_t kKeyTgk = 0;
constexpr std::uint8_t kKeyTgkSalt = 1;
constexpr std::uint8_t kKeyTek = 2;
constexpr std::uint8_t kKeyTekSalt = 3;
constexpr std::uint8_t kKvNull = 0;

struct Policy {
  std::uint8_t enc_alg;
  std::uint8_t enc_key_len;
  std::uint8_t auth_alg;
  std::uint8_t auth_len;  // what GStreamer reads as the tag length (see the header)
};

Policy policy_of(SrtpSuite suite) {
  switch (suite) {
    case SrtpSuite::AesCm128HmacSha1_80:
      return {kEncAesCm128, 16, kAuthHmacSha1, 10};
    case SrtpSuite::AesCm128HmacSha1_32:
      return {kEncAesCm128, 16, kAuthHmacSha1, 4};
    case SrtpSuite::AeadAes128Gcm:
      return {kEncAesGcm128, 16, kMacNull, 0};
  }
  return {kEncAesCm128, 16, kAuthHmacSha1, 10};
}

core::Error malformed(const std::string& what) {
  return core::Error{"MIKEY: " + what};
}

}  // namespace

std::vector<std::uint8_t> build_mikey(SrtpSuite suite, const SrtpKeyMaterial& key,
                                      const MikeyFields& fields) {
  const Policy p = policy_of(suite);
  const std::array<std::pair<std::uint8_t, std::uint8_t>, 8> params = {{
      {kSpEncAlg, p.enc_alg},
      {kSpEncKeyLen, p.enc_key_len},
      {kSpAuthAlg, p.auth_alg},
      {kSpAuthKeyLen, p.auth_len},
      {kSpSrtpEnc, 1},
      {kSpSrtcpEnc, 1},
      {kSpSrtpAuth, 1},
      {kSpAuthTagLen, p.auth_len},
  }};
  const std::size_t key_len = key.size;
  const std::size_t size = 10                        // common header, no CS entries
                           + 2 + 8                   // T (NTP-UTC)
                           + 2 + fields.rand.size()  // RAND
                           + 5 + params.size() * 3   // SP
                           + 4 + (4 + key_len) + 1;  // KEMAC { KEY_DATA } + MAC alg
  std::vector<std::uint8_t> out(size);
  core::ByteWriter w(out);
  // Common header.
  w.write_u8(kVersion);
  w.write_u8(kDataTypePskInit);
  w.write_u8(kPtT);        // next payload
  w.write_u8(kPrfMikey1);  // V = 0 (no verification message), PRF MIKEY-1
  w.write_u32(fields.csb_id);
  w.write_u8(0);  // #CS
  w.write_u8(kMapTypeSrtpId);
  // T.
  w.write_u8(kPtRand);
  w.write_u8(kTsNtpUtc);
  w.write_u64(fields.ntp_utc);
  // RAND.
  w.write_u8(kPtSp);
  w.write_u8(static_cast<std::uint8_t>(fields.rand.size()));
  w.write_bytes(fields.rand);
  // SP.
  w.write_u8(kPtKemac);
  w.write_u8(0);  // policy number 0
  w.write_u8(kProtSrtp);
  w.write_u16(static_cast<std::uint16_t>(params.size() * 3));
  for (const auto& [type, value] : params) {
    w.write_u8(type);
    w.write_u8(1);
    w.write_u8(value);
  }
  // KEMAC, NULL encryption and MAC: the "encrypted" data is the KEY_DATA sub-payload itself.
  w.write_u8(kPtLast);
  w.write_u8(kEncNull);
  w.write_u16(static_cast<std::uint16_t>(4 + key_len));
  w.write_u8(kPtLast);  // KEY_DATA: next payload
  w.write_u8(static_cast<std::uint8_t>((kKeyTek << 4) | kKvNull));
  w.write_u16(static_cast<std::uint16_t>(key_len));
  w.write_bytes(key.span());
  w.write_u8(kMacNull);
  out.resize(w.position());
  return out;
}

std::string format_key_mgmt_attribute(SrtpSuite suite, const SrtpKeyMaterial& key,
                                      const MikeyFields& fields) {
  return "a=key-mgmt:mikey " + base64_encode(build_mikey(suite, key, fields));
}

namespace {

// KEY_DATA sub-payloads of a KEMAC; fills key material from the first one.
core::Status parse_key_data(std::span<const std::uint8_t> data, std::vector<std::uint8_t>& key) {
  core::ByteReader r(data);
  const std::uint8_t next = r.read_u8();
  const std::uint8_t type_kv = r.read_u8();
  const std::uint16_t len = r.read_u16();
  const auto key_data = r.read_bytes(len);
  if (!r.ok()) return malformed("KEY_DATA truncated");
  const std::uint8_t type = type_kv >> 4;
  const std::uint8_t kv = type_kv & 0x0f;
  if (type != kKeyTgk && type != kKeyTgkSalt && type != kKeyTek && type != kKeyTekSalt) {
    return malformed("KEY_DATA of unknown type " + std::to_string(type));
  }
  if (kv != kKvNull) return malformed("KEY_DATA with a key validity rule is not supported");
  key.assign(key_data.begin(), key_data.end());
  if (type == kKeyTgkSalt || type == kKeyTekSalt) {
    const std::uint16_t salt_len = r.read_u16();
    const auto salt = r.read_bytes(salt_len);
    if (!r.ok()) return malformed("KEY_DATA salt truncated");
    key.insert(key.end(), salt.begin(), salt.end());
  }
  (void)next;  // further KEY_DATA (other TEKs) are not used
  return core::Ok{};
}

}  // namespace

core::Result<MikeyKey> parse_mikey(std::span<const std::uint8_t> message) {
  core::ByteReader r(message);
  MikeyKey out;
  const std::uint8_t version = r.read_u8();
  const std::uint8_t data_type = r.read_u8();
  std::uint8_t next = r.read_u8();
  r.read_u8();  // V, PRF
  out.csb_id = r.read_u32();
  const std::uint8_t n_cs = r.read_u8();
  const std::uint8_t map_type = r.read_u8();
  if (!r.ok()) return malformed("common header truncated");
  if (version != kVersion) return malformed("version " + std::to_string(version));
  if (data_type != kDataTypePskInit) {
    return malformed("data type " + std::to_string(data_type) + " (only PSK_INIT)");
  }
  if (map_type != kMapTypeSrtpId) return malformed("CS ID map type is not SRTP-ID");
  for (std::uint8_t i = 0; i < n_cs; ++i) {
    r.read_u8();  // policy number
    out.ssrcs.push_back(r.read_u32());
    r.read_u32();  // ROC
  }
  if (!r.ok()) return malformed("CS ID map truncated");

  bool have_key = false;
  bool have_sp = false;
  Policy policy{kEncAesCm128, 16, kAuthHmacSha1, 10};
  std::vector<std::uint8_t> key;
  // Every payload moves the reader forward, so this ends within message.size() iterations.
  while (next != kPtLast) {
    const std::uint8_t type = next;
    next = r.read_u8();
    switch (type) {
      case kPtT: {
        const std::uint8_t ts = r.read_u8();
        if (ts == kTsNtpUtc || ts == kTsNtp) {
          r.skip(8);
        } else if (ts == kTsCounter) {
          r.skip(4);
        } else {
          return malformed("timestamp type " + std::to_string(ts));
        }
        break;
      }
      case kPtRand:
        r.skip(r.read_u8());
        break;
      case kPtSp: {
        r.read_u8();  // policy number
        const std::uint8_t prot = r.read_u8();
        const std::uint16_t len = r.read_u16();
        auto params = r.read_bytes(len);
        if (!r.ok()) break;
        if (prot != kProtSrtp) return malformed("security policy for a protocol other than SRTP");
        core::ByteReader pr(params);
        while (pr.remaining() > 0) {
          const std::uint8_t ptype = pr.read_u8();
          const std::uint8_t plen = pr.read_u8();
          const auto value = pr.read_bytes(plen);
          if (!pr.ok()) return malformed("security policy parameter truncated");
          if (plen != 1) continue;
          switch (ptype) {
            case kSpEncAlg:
              policy.enc_alg = value[0];
              break;
            case kSpEncKeyLen:
              policy.enc_key_len = value[0];
              break;
            case kSpAuthAlg:
              policy.auth_alg = value[0];
              break;
            case kSpAuthKeyLen:
              policy.auth_len = value[0];
              break;
            default:
              break;
          }
        }
        have_sp = true;
        break;
      }
      case kPtKemac: {
        const std::uint8_t enc = r.read_u8();
        const std::uint16_t len = r.read_u16();
        const auto sub = r.read_bytes(len);
        const std::uint8_t mac = r.read_u8();
        if (!r.ok()) break;
        if (enc != kEncNull || mac != kMacNull) {
          return malformed("encrypted or MAC'd KEMAC (no pre-shared key here)");
        }
        if (auto st = parse_key_data(sub, key); !st) return st.error();
        have_key = true;
        break;
      }
      default:
        return malformed("payload type " + std::to_string(type) + " not supported");
    }
    if (!r.ok()) return malformed("payload truncated");
  }
  if (!have_key) return malformed("no KEMAC with a key");
  (void)have_sp;  // without SP, RFC 3830's SRTP defaults apply: AES-CM-128, HMAC-SHA1-80

  if (policy.enc_alg == kEncAesGcm128 && policy.enc_key_len == 16) {
    out.suite = SrtpSuite::AeadAes128Gcm;
  } else if (policy.enc_alg == kEncAesCm128 && policy.enc_key_len == 16 &&
             policy.auth_alg == kAuthHmacSha1) {
    out.suite =
        policy.auth_len == 4 ? SrtpSuite::AesCm128HmacSha1_32 : SrtpSuite::AesCm128HmacSha1_80;
  } else {
    return malformed("SRTP policy not supported (encryption " + std::to_string(policy.enc_alg) +
                     ", key length " + std::to_string(policy.enc_key_len) + ")");
  }
  if (key.size() != key_salt_size(out.suite)) {
    return malformed("key of " + std::to_string(key.size()) + " bytes for a suite that needs " +
                     std::to_string(key_salt_size(out.suite)));
  }
  std::copy(key.begin(), key.end(), out.key.bytes.begin());
  out.key.size = key.size();
  return out;
}

core::Result<MikeyKey> parse_key_mgmt(std::string_view value) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
      s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
      s.remove_suffix(1);
    }
    return s;
  };
  value = trim(value);
  std::string_view data;
  if (value.substr(0, 6) == "mikey " || value.substr(0, 6) == "mikey\t") {
    data = trim(value.substr(6));  // SDP: "mikey <base64>"
  } else if (value.find("prot=mikey") != std::string_view::npos) {
    // RTSP header: prot=mikey; uri="..."; data="<base64>"
    const auto at = value.find("data=\"");
    if (at == std::string_view::npos) return malformed("KeyMgmt without data=");
    const auto start = at + 6;
    const auto end = value.find('"', start);
    if (end == std::string_view::npos) return malformed("KeyMgmt data= not terminated");
    data = value.substr(start, end - start);
  } else {
    return malformed("key management protocol is not mikey");
  }
  if (data.size() > 4096) return malformed("message longer than 4096 base64 characters");
  auto bytes = base64_decode(data);
  if (!bytes) return malformed("bad base64: " + bytes.error().message);
  return parse_mikey(*bytes);
}

}  // namespace predrop::wire
