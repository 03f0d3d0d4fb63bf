// detail::RtspMethods (server/src/rtsp_methods.hpp): each RTSP request's reply and effects,
// without sockets, loop or StreamServer. A request is handled against a connection and a session
// table the test builds; what it changes comes back as a MethodOutcome and is checked as such.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "rtsp_connections.hpp"
#include "rtsp_methods.hpp"
#include "server_test_util.hpp"
#include "session_table.hpp"

namespace predrop {
namespace {

using server::detail::MethodOutcome;

constexpr std::string_view kUrl = "rtsp://127.0.0.1:8554/sample";

struct Methods {
  server::StreamServerOptions options = test::loopback_options();
  server::ServerStats stats;
  server::detail::SessionTable table{0, 1};
  server::detail::RtspConnection c;
  std::unique_ptr<server::detail::RtspMethods> methods;

  Methods() {
    options.directory = std::make_shared<server::SessionDirectory>();
    c.id = 7;
    c.peer = net::SocketAddress::from_ip("127.0.0.1", 40000).value();
    methods = std::make_unique<server::detail::RtspMethods>(options, table, stats);
  }

  MethodOutcome request(std::string_view method, std::string_view url, std::string_view extra = {},
                        std::uint64_t now = 1000) {
    rtsp::RtspRequestParser parser;
    EXPECT_EQ(parser.feed(test::request_text(method, url, 1, extra)),
              rtsp::RtspParseEvent::kMessage);
    rtsp::RtspRequest req = parser.take_request();
    return methods->handle(c, req, now, 6970);
  }
  // DESCRIBE, remembering its key on the connection as the facade does.
  void describe() {
    MethodOutcome o = request("DESCRIBE", kUrl);
    ASSERT_EQ(o.response.status, 200);
    if (o.key) c.keys.insert_or_assign(o.key->first, o.key->second);
  }
  // SETUP of track 0 over UDP, the session added to the table as the facade does.
  server::detail::SessionEntry& setup() {
    describe();
    MethodOutcome o = request("SETUP", std::string(kUrl) + "/trackID=0",
                              "Transport: RTP/SAVP;unicast;client_port=5000-5001\r\n");
    EXPECT_EQ(o.response.status, 200);
    EXPECT_TRUE(o.created);
    server::detail::SessionEntry& e = table.add(std::move(o.created));
    e.tracks.push_back(o.track->track);
    e.track_ids.push_back(o.track->track_id);
    return e;
  }
};

TEST(RtspMethods, OptionsListsWhatTheServerAnswers) {
  Methods m;
  MethodOutcome o = m.request("OPTIONS", "*");
  EXPECT_EQ(o.response.status, 200);
  EXPECT_EQ(o.response.headers.get("Public").value_or(""),
            "OPTIONS, DESCRIBE, SETUP, PLAY, PAUSE, TEARDOWN, GET_PARAMETER, ANNOUNCE, RECORD");
  EXPECT_EQ(o.action, MethodOutcome::Action::kNone);
  EXPECT_FALSE(o.touch);
}

TEST(RtspMethods, DescribeHandsOutOneKeyPerStreamAndConnection) {
  Methods m;
  MethodOutcome first = m.request("DESCRIBE", kUrl);
  ASSERT_EQ(first.response.status, 200);
  ASSERT_TRUE(first.key);
  EXPECT_EQ(first.key->first, "sample");
  const std::string inline_key = "inline:" + wire::base64_encode(first.key->second.span());
  EXPECT_NE(first.response.body.find(inline_key), std::string::npos);
  EXPECT_NE(first.response.body.find("a=key-mgmt:mikey "), std::string::npos);
  EXPECT_EQ(first.response.headers.get("Content-Base").value_or(""), std::string(kUrl) + "/");
  // Remembered on the connection: the next DESCRIBE says the same key and hands out none.
  m.c.keys.insert_or_assign(first.key->first, first.key->second);
  MethodOutcome again = m.request("DESCRIBE", kUrl);
  EXPECT_FALSE(again.key);
  EXPECT_NE(again.response.body.find(inline_key), std::string::npos);
  EXPECT_EQ(m.request("DESCRIBE", "rtsp://127.0.0.1/other").response.status, 404);
}

TEST(RtspMethods, SetupWithoutDescribeLeavesNoSession) {
  Methods m;
  MethodOutcome o = m.request("SETUP", std::string(kUrl) + "/trackID=0",
                              "Transport: RTP/AVP;unicast;client_port=5000-5001\r\n");
  EXPECT_EQ(o.response.status, 455);
  EXPECT_FALSE(o.created);
  EXPECT_EQ(m.options.directory->size(), 0u);
}

TEST(RtspMethods, SetupCreatesASessionAdmittedToTheDirectory) {
  Methods m;
  m.describe();
  MethodOutcome o = m.request("SETUP", std::string(kUrl) + "/trackID=0",
                              "Transport: RTP/SAVP;unicast;client_port=5000-5001\r\n"
                              "X-Predrop-Feedback: 1\r\n");
  ASSERT_EQ(o.response.status, 200);
  ASSERT_TRUE(o.created);
  EXPECT_EQ(o.created->id.size(), 32u) << "128 random bits as hex";
  EXPECT_TRUE(o.created->feedback);
  EXPECT_EQ(o.created->key, m.c.keys.at("sample"));
  EXPECT_EQ(o.created->connection, 7u);
  ASSERT_TRUE(o.track);
  EXPECT_EQ(o.track->track.rtp_destination.port(), 5000);
  EXPECT_EQ(o.track->track.rtcp_destination->port(), 5001);
  EXPECT_FALSE(o.track->track.interleaved);
  const std::string transport(o.response.headers.get("Transport").value_or(""));
  EXPECT_NE(transport.find("server_port=6970-6971"), std::string::npos) << transport;
  EXPECT_EQ(test::session_of(o.response), o.created->id);
  EXPECT_EQ(m.options.directory->size(), 1u);
  EXPECT_EQ(m.stats.sessions_created, 1u);
}

TEST(RtspMethods, TheSessionLimitIs453) {
  Methods m;
  m.options.max_sessions = 1;
  m.options.directory->try_add("someone", 0, "127.0.0.9", 0, 0);
  m.describe();
  MethodOutcome o = m.request("SETUP", std::string(kUrl) + "/trackID=0",
                              "Transport: RTP/AVP;unicast;client_port=5000-5001\r\n");
  EXPECT_EQ(o.response.status, 453);
  EXPECT_FALSE(o.created);
  EXPECT_EQ(m.stats.sessions_refused, 1u);
}

TEST(RtspMethods, ASessionAnswersOnlyToTheAddressThatSetItUp) {
  Methods m;
  server::detail::SessionEntry& e = m.setup();
  const std::string header = "Session: " + e.id + "\r\n";
  MethodOutcome own = m.request("GET_PARAMETER", kUrl, header, 5000);
  EXPECT_EQ(own.response.status, 200);
  EXPECT_TRUE(own.touch) << "a keep-alive refreshes its session";
  EXPECT_EQ(own.session, e.id);
  m.c.peer = net::SocketAddress::from_ip("127.0.0.2", 40000).value();
  MethodOutcome stranger = m.request("PLAY", kUrl, header);
  EXPECT_EQ(stranger.response.status, 454);
  EXPECT_EQ(stranger.action, MethodOutcome::Action::kNone);
  EXPECT_FALSE(stranger.touch);
  EXPECT_EQ(m.stats.session_requests_foreign, 1u);
}

TEST(RtspMethods, PlayIsAnsweredOnceTheSessionStarted) {
  Methods m;
  EXPECT_EQ(m.request("PLAY", kUrl).response.status, 454) << "no Session header";
  server::detail::SessionEntry& e = m.setup();
  MethodOutcome o = m.request("PLAY", kUrl, "Session: " + e.id + "\r\n");
  EXPECT_EQ(o.response.status, 200);
  EXPECT_EQ(o.action, MethodOutcome::Action::kPlay);
  // The facade could not start it (no StreamSession): the reply becomes 500.
  m.methods->complete(o, &e);
  EXPECT_EQ(o.response.status, 500);
}

TEST(RtspMethods, TeardownEndsTheSessionAndNamesItNoMore) {
  Methods m;
  server::detail::SessionEntry& e = m.setup();
  MethodOutcome o = m.request("TEARDOWN", kUrl, "Session: " + e.id + "\r\n");
  EXPECT_EQ(o.response.status, 200);
  EXPECT_EQ(o.action, MethodOutcome::Action::kTeardown);
  EXPECT_EQ(o.session, e.id);
  EXPECT_FALSE(o.response.headers.get("Session"));
}

TEST(RtspMethods, AnInterleavedSetupTakesTheLowestFreeChannels) {
  Methods m;
  m.describe();
  std::uint64_t frames = 0, dropped = 0;
  m.c.interleaved = std::make_unique<server::detail::InterleavedLink>(nullptr, &m.c.output, 4096,
                                                                      frames, dropped);
  m.c.interleaved->reserve({0, 1}, "other");
  MethodOutcome o = m.request("SETUP", std::string(kUrl) + "/trackID=0",
                              "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n");
  ASSERT_EQ(o.response.status, 200);
  ASSERT_TRUE(o.track && o.track->track.interleaved);
  EXPECT_EQ(o.track->track.interleaved->rtp, 2);
  EXPECT_EQ(o.track->track.interleaved->rtcp, 3);
  EXPECT_NE(std::string(o.response.headers.get("Transport").value_or("")).find("interleaved=2-3"),
            std::string::npos);
  EXPECT_EQ(m.stats.interleaved_sessions, 1u);
  // With interleaved transport refused (no queue), the same offer is 461.
  m.options.interleaved_queue_bytes = 0;
  EXPECT_EQ(m.request("SETUP", std::string(kUrl) + "/trackID=0",
                      "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n")
                .response.status,
            461);
}

TEST(RtspMethods, RecordOnlyAfterAnnounceAndNoPublishingOfAFile) {
  Methods m;
  EXPECT_EQ(m.request("RECORD", kUrl).response.status, 455) << "ANNOUNCE first (docs/live.md)";
  MethodOutcome announce = m.request("ANNOUNCE", kUrl);
  EXPECT_EQ(announce.response.status, 405) << "a file stream is not published";
  EXPECT_TRUE(announce.response.headers.get("Allow"));
  MethodOutcome set = m.request("SET_PARAMETER", kUrl);
  EXPECT_EQ(set.response.status, 405);
  EXPECT_TRUE(set.response.headers.get("Allow"));
  EXPECT_EQ(m.request("FROB", kUrl).response.status, 501);
}

}  // namespace
}  // namespace predrop
