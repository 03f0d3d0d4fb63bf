// WHEP over the metrics listener: which paths are WHEP's, the routes over a fake backend, and
// the endpoint reading an offer's body (in pieces, bounded) before it calls the handler.
#include "predrop/server/whep_http.hpp"

#include <gtest/gtest.h>

#include <string>

#include "fake_clock.hpp"
#include "predrop/server/metrics_endpoint.hpp"

namespace predrop::server {
namespace {

TEST(WhepHttp, NamesItsPathsOnly) {
  EXPECT_TRUE(is_whep_target("/clip/whep"));
  EXPECT_TRUE(is_whep_target("/clip/whep/ABCDEF"));
  EXPECT_TRUE(is_whep_target("/clip/"));
  EXPECT_TRUE(is_whep_target("/clip/player.js"));
  EXPECT_TRUE(is_whep_target("/clip/whep?x=1"));
  EXPECT_FALSE(is_whep_target("/api/whep"));
  EXPECT_FALSE(is_whep_target("/metrics"));
  EXPECT_FALSE(is_whep_target("/"));
  EXPECT_FALSE(is_whep_target("//whep"));
  EXPECT_FALSE(is_whep_target("/clip/whep/a/b"));
  EXPECT_FALSE(is_whep_target("/clip/whep/"));
  EXPECT_FALSE(is_whep_target("/clip/other"));
}

struct FakeBackend {
  std::string stream, offer, ip, ended, rated;
  PageQuality report;
  WhepBackend backend() {
    WhepBackend b;
    b.streams = {"clip"};
    b.offer = [this](std::string_view s, std::string_view o, const net::SocketAddress&,
                     std::string_view ip_hint) {
      stream = s;
      offer = o;
      ip = ip_hint;
      if (s != "clip") return WhepOutcome{404, {}, {}, "no stream"};
      return WhepOutcome{201, "v=0\r\n", "S1", {}};
    };
    b.end = [this](std::string_view s) {
      ended = s;
      return s == "S1";
    };
    b.quality = [this](std::string_view s, const PageQuality& q) {
      rated = s;
      report = q;
      return s == "S1";
    };
    return b;
  }
};

HttpRequest request(std::string_view method, std::string_view target, std::string_view body = {}) {
  HttpRequest q;
  q.method = method;
  q.target = target;
  q.body = body;
  return q;
}

TEST(WhepHttp, PostAnswersCreatedWithTheSdpAndLocation) {
  FakeBackend f;
  const HttpReply r = handle_whep(request("POST", "/clip/whep", "offer-sdp"), f.backend());
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.content_type, "application/sdp");
  EXPECT_EQ(r.body, "v=0\r\n");
  EXPECT_EQ(r.headers, "Location: /clip/whep/S1\r\n");
  EXPECT_EQ(f.offer, "offer-sdp");
  EXPECT_EQ(f.ip, "");  // an attached request has no local address
  EXPECT_EQ(handle_whep(request("POST", "/nope/whep", "x"), f.backend()).status, 404);
}

TEST(WhepHttp, DeleteEndsTheSessionItNames) {
  FakeBackend f;
  EXPECT_EQ(handle_whep(request("DELETE", "/clip/whep/S1"), f.backend()).status, 200);
  EXPECT_EQ(f.ended, "S1");
  EXPECT_EQ(handle_whep(request("DELETE", "/clip/whep/S2"), f.backend()).status, 404);
}

TEST(WhepHttp, TakesThePagesQualityReportForItsSession) {
  EXPECT_TRUE(is_whep_target("/clip/whep/S1/quality"));
  EXPECT_FALSE(is_whep_target("/clip/whep/S1/other"));
  EXPECT_FALSE(is_whep_target("/clip/whep//quality"));
  FakeBackend f;
  const HttpReply r = handle_whep(request("POST", "/clip/whep/S1/quality",
                                          "p=0.9667&decoded=29&dropped=1&freezes=0&freeze_ms=0"),
                                  f.backend());
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(f.rated, "S1");
  EXPECT_DOUBLE_EQ(f.report.p, 0.9667);
  EXPECT_EQ(f.report.frames_decoded, 29U);
  EXPECT_EQ(f.report.frames_dropped, 1U);
  EXPECT_EQ(handle_whep(request("POST", "/clip/whep/S2/quality", "p=1"), f.backend()).status, 404);
  EXPECT_EQ(handle_whep(request("GET", "/clip/whep/S1/quality"), f.backend()).status, 405);
  // "quality" alone is a session's name (DELETE), not a report without a session.
  EXPECT_EQ(handle_whep(request("POST", "/clip/whep/quality", "p=1"), f.backend()).status, 405);
  for (const char* bad :
       {"", "decoded=30", "p=1.5", "p=-0.1", "p=nan", "p=0.5&decoded=-1", "p=0.5&freeze_ms=1000000",
        "p=0.5x", "p=0.5&rtp_from=1", "p=0.5&rtp_to=1", "p=0.5&rtp_from=1&rtp_to=4294967296",
        "p=0.5&rtp_from=-1&rtp_to=2", "p=0.5&rtp_from=&rtp_to=2", "p=0.5&rtp_from=0x10&rtp_to=2"}) {
    EXPECT_EQ(handle_whep(request("POST", "/clip/whep/S1/quality", bad), f.backend()).status, 400)
        << bad;
  }
  const auto q = parse_page_quality("freezes=2&p=0.25&unknown=7&freeze_ms=480\r\n");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->freezes, 2U);
  EXPECT_EQ(q->freeze_ms, 480U);
  EXPECT_DOUBLE_EQ(q->p, 0.25);
  EXPECT_FALSE(q->has_rtp);
  // The media the second played, by the RTP timestamps of the frames presented at its ends.
  const auto span = parse_page_quality("p=0.9&rtp_to=4294967295&rtp_from=4294000000");
  ASSERT_TRUE(span.has_value());
  EXPECT_TRUE(span->has_rtp);
  EXPECT_EQ(span->rtp_from, 4294000000U);
  EXPECT_EQ(span->rtp_to, 4294967295U);
  EXPECT_EQ(handle_whep(request("POST", "/clip/whep/S1/quality", "p=0.5&rtp_from=1&rtp_to=9"),
                        f.backend())
                .status,
            204);
  EXPECT_TRUE(f.report.has_rtp);
  EXPECT_EQ(f.report.rtp_to, 9U);
  // Bodies over 256 bytes are refused whatever they hold.
  EXPECT_FALSE(parse_page_quality("p=0.5&x=" + std::string(250, '1')).has_value());
}

TEST(WhepHttp, ServesThePlayerForKnownStreamsAndRefusesOtherMethods) {
  FakeBackend f;
  const HttpReply page = handle_whep(request("GET", "/clip/"), f.backend());
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<video"), std::string::npos);
  EXPECT_NE(page.headers.find("Content-Security-Policy"), std::string::npos);
  const HttpReply js = handle_whep(request("GET", "/clip/player.js"), f.backend());
  EXPECT_NE(js.body.find("RTCPeerConnection"), std::string::npos);
  EXPECT_EQ(handle_whep(request("GET", "/other/"), f.backend()).status, 404);
  EXPECT_EQ(handle_whep(request("GET", "/clip/whep"), f.backend()).status, 405);
  EXPECT_EQ(handle_whep(request("POST", "/clip/whep/S1"), f.backend()).status, 405);
}

class WhepEndpoint : public ::testing::Test {
 protected:
  WhepEndpoint()
      : endpoint_(
            loop_, net::SocketAddress::loopback_v4(0), [] { return std::string("m 1\n"); }, {},
            clock_) {
    endpoint_.set_whep([this](const HttpRequest& q) { return handle_whep(q, backend_); });
  }
  net::EventLoop loop_;
  test::FakeClock clock_;
  FakeBackend fake_;
  WhepBackend backend_ = fake_.backend();
  MetricsEndpoint endpoint_;
};

void feed(MetricsEndpoint& e, std::uint64_t id, std::string_view text) {
  e.receive(id, std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

TEST_F(WhepEndpoint, ReadsTheOfferBodyInPiecesBeforeAnswering) {
  const std::uint64_t id = endpoint_.attach_connection();
  feed(endpoint_, id, "POST /clip/whep HTTP/1.1\r\nContent-Type: application/sdp\r\n");
  feed(endpoint_, id, "Content-Length: 9\r\n\r\noffer");
  EXPECT_TRUE(endpoint_.take_output(id).empty());  // 4 bytes of the body still to come
  feed(endpoint_, id, "-sdp");
  const std::string out = endpoint_.take_output(id);
  EXPECT_EQ(out.rfind("HTTP/1.0 201 Created\r\n", 0), 0U) << out;
  EXPECT_NE(out.find("Location: /clip/whep/S1\r\n"), std::string::npos);
  EXPECT_EQ(fake_.offer, "offer-sdp");
}

TEST_F(WhepEndpoint, RefusesAnOversizedOffer) {
  const std::uint64_t id = endpoint_.attach_connection();
  feed(endpoint_, id, "POST /clip/whep HTTP/1.1\r\nContent-Length: 9999999\r\n\r\n");
  EXPECT_EQ(endpoint_.take_output(id).rfind("HTTP/1.0 413", 0), 0U);
  EXPECT_TRUE(fake_.offer.empty());
}

TEST_F(WhepEndpoint, OtherPathsStillGetTheMetrics) {
  const std::uint64_t id = endpoint_.attach_connection();
  feed(endpoint_, id, "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_NE(endpoint_.take_output(id).find("m 1"), std::string::npos);
}

}  // namespace
}  // namespace predrop::server
