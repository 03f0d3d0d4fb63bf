// The codec table's fmtp (predrop/media/codec.hpp): AAC as RFC 3640 AAC-hbr, the one string a
// file's AAC and a live publisher's (AAC or LATM repacked) are announced with, as FFmpeg's RTP
// muxer writes it (test_media_file compares a file's SDP with FFmpeg's own).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "predrop/media/codec.hpp"

namespace predrop::media {
namespace {

TEST(CodecTable, AacHbrFmtpIsFfmpegsWithTheConfigInUpperCaseHex) {
  // AudioSpecificConfig of AAC-LC, 48 kHz, stereo: object type 2 (00010), sampling index 3
  // (0011), channel configuration 2 (0010), then 000 = 0x11 0x90.
  const std::array<std::uint8_t, 2> lc_48k_stereo{0x11, 0x90};
  EXPECT_EQ(aac_hbr_fmtp(lc_48k_stereo),
            "profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3; "
            "config=1190");
  // HE-AAC's explicit SBR signalling (5 bytes, what a LATM StreamMuxConfig may carry): every
  // byte is two digits, letters upper case.
  const std::array<std::uint8_t, 5> sbr{0x2B, 0x11, 0x88, 0x00, 0xAF};
  EXPECT_TRUE(aac_hbr_fmtp(sbr).ends_with(" config=2B118800AF")) << aac_hbr_fmtp(sbr);
}

TEST(CodecTable, AacHbrFmtpWithoutAConfigEndsAtTheEmptyValue) {
  // A file whose AAC had neither extradata nor ADTS: the SDP still parses, the player refuses.
  const std::string fmtp = aac_hbr_fmtp(std::span<const std::uint8_t>{});
  EXPECT_TRUE(fmtp.ends_with("indexdeltalength=3; config=")) << fmtp;
}

}  // namespace
}  // namespace predrop::media
