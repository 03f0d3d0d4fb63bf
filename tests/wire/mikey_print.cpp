// Prints, per supported SRTP suite, "SUITE KEYHEX BASE64" where BASE64 is the MIKEY message
// predrop announces in `a=key-mgmt:mikey` for a fixed key; mikey_gstreamer_check.py hands each
// to GStreamer's own SDP/MIKEY parser.
#include <cstdio>
#include <string>

#include "predrop/wire/mikey.hpp"

int main() {
  using namespace predrop::wire;
  for (SrtpSuite suite :
       {SrtpSuite::AesCm128HmacSha1_80, SrtpSuite::AesCm128HmacSha1_32, SrtpSuite::AeadAes128Gcm}) {
    SrtpKeyMaterial key;
    key.size = key_salt_size(suite);
    std::string hex;
    for (std::size_t i = 0; i < key.size; ++i) {
      key.bytes[i] = static_cast<std::uint8_t>(0x31 * (i + 1));
      char b[3];
      std::snprintf(b, sizeof b, "%02x", key.bytes[i]);
      hex += b;
    }
    MikeyFields fields;
    fields.csb_id = 0x5EEDu;
    fields.ntp_utc = 0xE7000000'00000000ull;
    const std::string attr = format_key_mgmt_attribute(suite, key, fields);
    std::printf("%s %s %s\n", suite_name(suite).data(), hex.c_str(), attr.substr(17).c_str());
  }
  return 0;
}
