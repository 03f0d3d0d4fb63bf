// RFC 7983 first-byte demux: each range's edges, RTCP vs RTP by packet type.
#include "predrop/webrtc/demux.hpp"

#include <gtest/gtest.h>

#include <array>

namespace predrop::webrtc {
namespace {

PacketKind kind_of(std::uint8_t first, std::uint8_t second = 96) {
  const std::array<std::uint8_t, 2> p{first, second};
  return classify_packet(p);
}

TEST(WebrtcDemux, SortsEachRangeOfRfc7983ByItsEdges) {
  EXPECT_EQ(kind_of(0), PacketKind::Stun);
  EXPECT_EQ(kind_of(3), PacketKind::Stun);
  EXPECT_EQ(kind_of(4), PacketKind::Unknown);
  EXPECT_EQ(kind_of(16), PacketKind::Zrtp);
  EXPECT_EQ(kind_of(19), PacketKind::Zrtp);
  EXPECT_EQ(kind_of(20), PacketKind::Dtls);  // change_cipher_spec
  EXPECT_EQ(kind_of(22), PacketKind::Dtls);  // handshake
  EXPECT_EQ(kind_of(63), PacketKind::Dtls);
  EXPECT_EQ(kind_of(64), PacketKind::TurnChannel);
  EXPECT_EQ(kind_of(79), PacketKind::TurnChannel);
  EXPECT_EQ(kind_of(80), PacketKind::Unknown);
  EXPECT_EQ(kind_of(127), PacketKind::Unknown);
  EXPECT_EQ(kind_of(128), PacketKind::Rtp);
  EXPECT_EQ(kind_of(191), PacketKind::Rtp);
  EXPECT_EQ(kind_of(192), PacketKind::Unknown);
  EXPECT_EQ(kind_of(255), PacketKind::Unknown);
}

TEST(WebrtcDemux, TellsRtcpFromRtpByPacketType) {
  EXPECT_EQ(kind_of(0x80, 96), PacketKind::Rtp);
  EXPECT_EQ(kind_of(0x80, 96 | 0x80), PacketKind::Rtp);  // marker set, PT 96
  EXPECT_EQ(kind_of(0x81, 200), PacketKind::Rtcp);       // SR
  EXPECT_EQ(kind_of(0x81, 201), PacketKind::Rtcp);       // RR
  EXPECT_EQ(kind_of(0x8F, 205), PacketKind::Rtcp);       // transport-cc (RTPFB, FMT 15)
  EXPECT_EQ(kind_of(0x81, 206), PacketKind::Rtcp);       // PLI (PSFB)
  EXPECT_EQ(kind_of(0x80, 224), PacketKind::Rtp);
}

TEST(WebrtcDemux, EmptyAndOneByteRtpAreUnknown) {
  EXPECT_EQ(classify_packet({}), PacketKind::Unknown);
  const std::array<std::uint8_t, 1> one{0x80};
  EXPECT_EQ(classify_packet(one), PacketKind::Unknown);
  EXPECT_EQ(to_string(PacketKind::Dtls), "dtls");
}

}  // namespace
}  // namespace predrop::webrtc
