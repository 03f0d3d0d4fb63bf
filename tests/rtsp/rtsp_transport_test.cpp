// Transport header (rtsp/include/predrop/rtsp/rtsp_transport.hpp).
#include "predrop/rtsp/rtsp_transport.hpp"

#include <gtest/gtest.h>

namespace predrop::rtsp {
namespace {

TransportSpec parse_one(std::string_view text) {
  auto r = parse_transport_spec(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : TransportSpec{};
}

TEST(Transport, FfmpegUdpRequest) {
  const auto t = parse_one("RTP/AVP/UDP;unicast;client_port=5094-5095");
  EXPECT_EQ(t.profile, RtpProfile::kAvp);
  EXPECT_EQ(t.lower, LowerTransport::kUdp);
  EXPECT_EQ(t.protocol, "RTP/AVP/UDP");
  EXPECT_FALSE(t.multicast);
  EXPECT_EQ(t.client_port, (PortPair{5094, 5095}));
  EXPECT_FALSE(t.server_port);
  EXPECT_FALSE(t.interleaved);
}

TEST(Transport, FfmpegTcpRequestIsServedOnlyWhenAllowed) {
  auto offers = parse_transport("RTP/AVP/TCP;unicast;interleaved=0-1");
  ASSERT_TRUE(offers.ok());
  EXPECT_EQ((*offers)[0].lower, LowerTransport::kTcp);
  EXPECT_EQ((*offers)[0].interleaved, (ChannelPair{0, 1}));
  EXPECT_FALSE(select_transport(*offers)) << "not allowed by default: 461";
  TransportPolicy tcp;
  tcp.allow_interleaved = true;
  EXPECT_EQ(select_transport(*offers, tcp), 0u);
  // Multicast over TCP, RECORD and foreign profiles stay refused; TCP without interleaved= is
  // taken (the server picks the channels).
  for (const char* no :
       {"RTP/AVP/TCP;multicast;interleaved=0-1", "RTP/AVP/TCP;unicast;interleaved=0-1;mode=RECORD",
        "RAW/RAW/TCP;unicast;interleaved=0-1"}) {
    auto o = parse_transport(no);
    ASSERT_TRUE(o.ok()) << no;
    EXPECT_FALSE(select_transport(*o, tcp)) << no;
  }
  auto bare = parse_transport("RTP/AVP/TCP;unicast");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(select_transport(*bare, tcp), 0u);
  // The reply echoes the TCP spelling with the channels.
  TransportSpec reply;
  reply.protocol = "RTP/AVP/TCP";
  reply.lower = LowerTransport::kTcp;
  reply.interleaved = ChannelPair{2, 3};
  reply.ssrc = 0xBEEF;
  EXPECT_EQ(format_transport(reply), "RTP/AVP/TCP;unicast;interleaved=2-3;ssrc=0000BEEF");
}

TEST(Transport, ProfilesAndParameters) {
  auto t = parse_one("RTP/SAVP;unicast;client_port=4000;mode=\"PLAY\";ssrc=1a2B3c4D;ttl=16");
  EXPECT_EQ(t.profile, RtpProfile::kSavp);
  EXPECT_EQ(t.client_port, (PortPair{4000, 4001})) << "a single port implies RTCP on port + 1";
  EXPECT_EQ(t.mode, "PLAY");
  EXPECT_EQ(t.ssrc, 0x1a2b3c4du);
  EXPECT_EQ(t.ttl, 16);

  t = parse_one("rtp/avpf;multicast;destination=224.2.0.1;port=3456-3457;layers=1");
  EXPECT_EQ(t.profile, RtpProfile::kAvpf);
  EXPECT_TRUE(t.multicast);
  EXPECT_EQ(t.destination, "224.2.0.1");

  t = parse_one("RTP/SAVPF;unicast;client_port=1-2");
  EXPECT_EQ(t.profile, RtpProfile::kSavpf);
  t = parse_one("RAW/RAW/UDP;unicast;client_port=1-2");
  EXPECT_EQ(t.profile, RtpProfile::kOther);
  t = parse_one("RTP/AVP/SCTP;unicast;client_port=1-2");
  EXPECT_EQ(t.profile, RtpProfile::kOther);

  // FFmpeg's server reply, with source and mode=receive.
  t = parse_one(
      "RTP/AVP/UDP;unicast;mode=receive;source=127.0.0.1;client_port=40000-40001;"
      "server_port=5000-5001");
  EXPECT_EQ(t.source, "127.0.0.1");
  EXPECT_EQ(t.server_port, (PortPair{5000, 5001}));
  EXPECT_EQ(t.mode, "receive");
}

TEST(Transport, MalformedSpecsAreErrors) {
  for (const char* bad :
       {"", "RTP", "RTP/AVP/UDP/X", "RTP/;unicast", "RTP/AVP;client_port=",
        "RTP/AVP;client_port=0-1", "RTP/AVP;client_port=65535", "RTP/AVP;client_port=1-70000",
        "RTP/AVP;client_port=a-b", "RTP/AVP;interleaved=255", "RTP/AVP;interleaved=0-256",
        "RTP/AVP;ssrc=123456789", "RTP/AVP;ssrc=xyz", "RTP/AVP;ttl=256", "RTP/AVP;mode=\"a b\"",
        "RTP/AVP;a b=1", "RTP/AVP;=5", "RTP/AVP;client_port=1-2\x01"}) {
    EXPECT_FALSE(parse_transport_spec(bad).ok()) << bad;
  }
  EXPECT_FALSE(parse_transport(",,").ok());
  std::string many;
  for (int i = 0; i < 17; ++i)
    many += "RTP/AVP;unicast;client_port=1000-1001,";
  EXPECT_FALSE(parse_transport(many).ok());
}

TEST(Transport, PicksTheFirstAcceptableAlternative) {
  auto offers = parse_transport(
      "RTP/AVP/TCP;unicast;interleaved=0-1, RTP/AVP;multicast;client_port=1-2,"
      "RTP/AVP;unicast;client_port=6000-6001;mode=record, RTP/AVPF;unicast;client_port=1-2,"
      "RTP/SAVP;unicast;client_port=7000-7001, RTP/AVP;unicast;client_port=8000-8001");
  ASSERT_TRUE(offers.ok()) << offers.error().message;
  ASSERT_EQ(offers->size(), 6u);
  EXPECT_EQ(select_transport(*offers), 4u);
  EXPECT_EQ(select_transport(*offers, {.allow_avp = true, .allow_savp = false}), 5u);
  EXPECT_FALSE(select_transport(*offers, {.allow_avp = false, .allow_savp = false}));
  // No client_port: nowhere to send to.
  offers = parse_transport("RTP/AVP;unicast");
  ASSERT_TRUE(offers.ok());
  EXPECT_FALSE(select_transport(*offers));
}

TEST(Transport, FormatsTheReply) {
  auto t = parse_one("RTP/AVP/UDP;unicast;client_port=5094-5095");
  t.server_port = PortPair{6970, 6971};
  t.ssrc = 0x0000beef;
  EXPECT_EQ(format_transport(t),
            "RTP/AVP/UDP;unicast;client_port=5094-5095;server_port=6970-6971;ssrc=0000BEEF");
  TransportSpec plain;
  plain.client_port = PortPair{5000, 5001};
  plain.server_port = PortPair{6000, 6001};
  plain.ssrc = 0x12345678;
  EXPECT_EQ(format_transport(plain),
            "RTP/AVP;unicast;client_port=5000-5001;server_port=6000-6001;ssrc=12345678");
}

TEST(Transport, FormatThenParseRoundTrips) {
  for (const char* text :
       {"RTP/AVP;unicast;client_port=1-2", "RTP/SAVP/UDP;multicast;destination=224.0.0.1;ttl=3",
        "RTP/AVP/TCP;unicast;interleaved=4-5;mode=PLAY", "RTP/AVP;unicast;destination;source=",
        "RTP/AVP;unicast;client_port=1-2;server_port=3-4;ssrc=00000001;mode=play"}) {
    const auto t = parse_one(text);
    EXPECT_EQ(parse_one(format_transport(t)), t) << text;
  }
}

}  // namespace
}  // namespace predrop::rtsp
