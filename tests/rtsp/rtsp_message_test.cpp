// RTSP 1.0 message parsing and building (rtsp/include/predrop/rtsp/rtsp_message.hpp).
#include "predrop/rtsp/rtsp_message.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

namespace predrop::rtsp {
namespace {

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(PREDROP_RTSP_FIXTURES) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A flattened view of one parser event, so runs with different splits can be compared.
struct Event {
  RtspParseEvent kind;
  std::string method;
  std::string url;
  std::uint32_t cseq = 0;
  std::string body;
  int status = 0;
  bool fatal = false;
  bool operator==(const Event&) const = default;
  friend void PrintTo(const Event& e, std::ostream* os) {
    *os << "{" << static_cast<int>(e.kind) << " " << e.method << " " << e.url << " cseq=" << e.cseq
        << " body=" << e.body.size() << " status=" << e.status << (e.fatal ? " fatal" : "") << "}";
  }
};

// Feeds `input` in chunks of `chunk` bytes (0 = all at once) and drains every event.
std::vector<Event> run(std::string_view input, std::size_t chunk, RtspParserLimits limits = {}) {
  RtspRequestParser p(limits);
  std::vector<Event> out;
  if (chunk == 0) chunk = input.size() ? input.size() : 1;
  for (std::size_t at = 0; at < input.size(); at += chunk) {
    for (auto ev = p.feed(input.substr(at, chunk)); ev != RtspParseEvent::kNeedMore;
         ev = p.next()) {
      Event e{ev};
      if (ev == RtspParseEvent::kMessage) {
        const auto& r = p.request();
        e.method = r.method_name;
        e.url = r.url;
        e.cseq = r.cseq;
        e.body = r.body;
      } else if (ev == RtspParseEvent::kInterleaved) {
        e.cseq = p.interleaved().channel;
        e.body.assign(p.interleaved().payload.begin(), p.interleaved().payload.end());
      } else {
        e.status = p.error().status;
        e.fatal = p.error().fatal;
        e.cseq = p.error().cseq.value_or(0);
      }
      out.push_back(e);
      if (ev == RtspParseEvent::kError && p.error().fatal) return out;
    }
  }
  return out;
}

TEST(RtspRequestParser, ParsesFfmpegUdpSessionVerbatim) {
  const auto input = read_fixture("ffmpeg51_udp_session.txt");
  RtspRequestParser p;
  std::vector<RtspRequest> requests;
  for (auto ev = p.feed(input); ev != RtspParseEvent::kNeedMore; ev = p.next()) {
    ASSERT_EQ(ev, RtspParseEvent::kMessage) << p.error().message;
    requests.push_back(p.take_request());
  }
  ASSERT_EQ(requests.size(), 9u);
  const RtspMethod expected[] = {
      RtspMethod::kOptions,      RtspMethod::kDescribe,     RtspMethod::kSetup,
      RtspMethod::kPlay,         RtspMethod::kGetParameter, RtspMethod::kGetParameter,
      RtspMethod::kGetParameter, RtspMethod::kGetParameter, RtspMethod::kTeardown};
  for (std::size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].method, expected[i]) << i;
    EXPECT_EQ(requests[i].cseq, i + 1);
    EXPECT_EQ(requests[i].headers.get("User-Agent"), "Lavf59.27.100");
    EXPECT_TRUE(requests[i].body.empty());
  }
  EXPECT_EQ(requests[0].url, "rtsp://127.0.0.1:18554/x");
  EXPECT_EQ(requests[1].headers.get("accept"), "application/sdp");
  EXPECT_EQ(requests[2].url, "rtsp://127.0.0.1:18554/x/trackID=0");
  EXPECT_EQ(requests[2].headers.get("Transport"), "RTP/AVP/UDP;unicast;client_port=5094-5095");
  EXPECT_FALSE(requests[2].headers.contains("Session"));
  EXPECT_EQ(requests[3].url, "rtsp://127.0.0.1:18554/x/");
  EXPECT_EQ(requests[3].headers.get("Range"), "npt=0.000-");
  EXPECT_EQ(requests[3].headers.get("SESSION"), "12345678");
  EXPECT_EQ(requests[8].headers.get("Session"), "12345678");
  EXPECT_EQ(p.buffered(), 0u);
}

TEST(RtspRequestParser, ParsesFfmpegTcpSetupAndFfplayTwoTracks) {
  auto events = run(read_fixture("ffmpeg51_tcp_setup.txt"), 0);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2].method, "SETUP");
  const auto two = read_fixture("ffplay51_two_tracks.txt");
  RtspRequestParser p;
  std::vector<RtspRequest> requests;
  for (auto ev = p.feed(two); ev == RtspParseEvent::kMessage; ev = p.next()) {
    requests.push_back(p.take_request());
  }
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_EQ(requests[3].url, "rtsp://127.0.0.1:18559/x/trackID=1");
  EXPECT_EQ(requests[3].headers.get("Session"), "12345678");
  EXPECT_EQ(requests[4].method, RtspMethod::kPlay);
}

TEST(RtspRequestParser, EverySplitGivesTheSameEvents) {
  const auto input =
      read_fixture("ffmpeg51_udp_session.txt") +
      std::string(
          "$\x01\x00\x03"
          "abc",
          7) +
      "SET_PARAMETER rtsp://h/x RTSP/1.0\r\nCSeq: 10\r\nContent-Length: 5\r\n\r\nhello";
  const auto whole = run(input, 0);
  ASSERT_EQ(whole.size(), 11u);
  EXPECT_EQ(whole[9].kind, RtspParseEvent::kInterleaved);
  EXPECT_EQ(whole[9].cseq, 1u);  // channel
  EXPECT_EQ(whole[9].body, "abc");
  EXPECT_EQ(whole[10].body, "hello");
  for (std::size_t chunk = 1; chunk <= 64; ++chunk) {
    EXPECT_EQ(run(input, chunk), whole) << "chunk " << chunk;
  }
}

TEST(RtspRequestParser, AcceptsBareLineFeedsAndLeadingBlankLines) {
  const auto events =
      run("\r\n\nOPTIONS * RTSP/1.0\nCSeq: 7\n\n\r\nPLAY rtsp://a/b RTSP/1.0\r\n"
          "CSeq: 8\n\r\n",
          0);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].url, "*");
  EXPECT_EQ(events[0].cseq, 7u);
  EXPECT_EQ(events[1].method, "PLAY");
  EXPECT_EQ(events[1].cseq, 8u);
}

TEST(RtspRequestParser, UnfoldsContinuationLinesAndIgnoresHeaderCase) {
  auto r = parse_request(
      "SETUP rtsp://h/x/trackID=1 RTSP/1.0\r\ncseq:   3  \r\n"
      "Transport: RTP/AVP;unicast;\r\n\tclient_port=4000-4001\r\n\r\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->cseq, 3u);
  EXPECT_EQ(r->headers.get("TRANSPORT"), "RTP/AVP;unicast; client_port=4000-4001");
}

TEST(RtspRequestParser, UnknownMethodParsesForA501) {
  auto r = parse_request("FROB rtsp://h/x RTSP/1.0\r\nCSeq: 1\r\n\r\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->method, RtspMethod::kUnknown);
  EXPECT_EQ(r->method_name, "FROB");
}

TEST(RtspRequestParser, MissingOrBadCSeqIs400AndParsingGoesOn) {
  const auto events =
      run("OPTIONS * RTSP/1.0\r\nUser-Agent: x\r\n\r\n"
          "OPTIONS * RTSP/1.0\r\nCSeq: abc\r\n\r\n"
          "OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nCSeq: 2\r\n\r\n"
          "OPTIONS * RTSP/1.0\r\nCSeq: 4\r\n\r\n",
          0);
  ASSERT_EQ(events.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(events[i].kind, RtspParseEvent::kError);
    EXPECT_EQ(events[i].status, 400);
    EXPECT_FALSE(events[i].fatal);
  }
  EXPECT_EQ(events[3].kind, RtspParseEvent::kMessage);
  EXPECT_EQ(events[3].cseq, 4u);
}

TEST(RtspRequestParser, OtherVersionsAre505WithCSeqEcho) {
  for (const char* version : {"RTSP/2.0", "HTTP/1.1", "RTSP/1.1"}) {
    RtspRequestParser p;
    const auto ev =
        p.feed(std::string("OPTIONS * ") + version + "\r\nCSeq: 9\r\nContent-Length: 2\r\n\r\nxy");
    ASSERT_EQ(ev, RtspParseEvent::kError) << version;
    EXPECT_EQ(p.error().status, 505);
    EXPECT_EQ(p.error().cseq, 9u);
    EXPECT_FALSE(p.error().fatal);
    EXPECT_EQ(p.buffered(), 0u) << "the body of the refused request is skipped";
  }
  RtspRequestParser p;
  ASSERT_EQ(p.feed("OPTIONS * RTSP-1.0\r\nCSeq: 9\r\n\r\n"), RtspParseEvent::kError);
  EXPECT_EQ(p.error().status, 400);
}

TEST(RtspRequestParser, MalformedRequestLinesAndHeadersAre400) {
  for (const char* bad :
       {"OPTIONS\r\nCSeq: 1\r\n\r\n", "OPTIONS * RTSP/1.0 extra\r\nCSeq: 1\r\n\r\n",
        "OPT(IONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n",
        "OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nNoColonHere\r\n\r\n",
        "OPTIONS * RTSP/1.0\r\n continued\r\nCSeq: 1\r\n\r\n",
        "OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nX: a\rb\r\n\r\n",
        // A control character on a folded line is one in the value (fuzz_rtsp's finding).
        "OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nSession: 1\r\n 2\x16\r\n\r\n",
        "OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nBad Name: v\r\n\r\n"}) {
    RtspRequestParser p;
    EXPECT_EQ(p.feed(bad), RtspParseEvent::kError) << bad;
    EXPECT_EQ(p.error().status, 400) << bad;
    EXPECT_FALSE(p.error().fatal) << bad;
    EXPECT_FALSE(p.error().message.empty());
  }
}

TEST(RtspRequestParser, OversizeHeaderBlockIsFatal431) {
  RtspParserLimits limits;
  std::string big = "DESCRIBE rtsp://h/x RTSP/1.0\r\nCSeq: 1\r\nX-Pad: " +
                    std::string(limits.max_header_bytes, 'a') + "\r\n\r\n";
  for (std::size_t chunk : {std::size_t{0}, std::size_t{100}, std::size_t{1}}) {
    const auto events = run(big, chunk);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].status, 431);
    EXPECT_TRUE(events[0].fatal);
  }
  // A stream of bytes that never ends a line is refused once it passes the limit.
  RtspRequestParser p;
  RtspParseEvent ev = RtspParseEvent::kNeedMore;
  for (int i = 0; i < 100 && ev == RtspParseEvent::kNeedMore; ++i)
    ev = p.feed(std::string(100, 'G'));
  EXPECT_EQ(ev, RtspParseEvent::kError);
  EXPECT_EQ(p.error().status, 431);
  EXPECT_EQ(p.feed("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n"), RtspParseEvent::kError)
      << "fatal errors are sticky";
  EXPECT_EQ(p.next(), RtspParseEvent::kError);
}

TEST(RtspRequestParser, TooManyHeadersIsFatal431) {
  std::string req = "OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n";
  for (int i = 0; i < 70; ++i)
    req += "X-" + std::to_string(i) + ": v\r\n";
  RtspRequestParser p;
  EXPECT_EQ(p.feed(req + "\r\n"), RtspParseEvent::kError);
  EXPECT_EQ(p.error().status, 431);
  EXPECT_TRUE(p.error().fatal);
}

TEST(RtspRequestParser, BodyLimitsAndBadContentLength) {
  {
    RtspRequestParser p;
    EXPECT_EQ(p.feed("ANNOUNCE rtsp://h/x RTSP/1.0\r\nCSeq: 1\r\nContent-Length: 65537\r\n\r\n"),
              RtspParseEvent::kError);
    EXPECT_EQ(p.error().status, 413);
    EXPECT_TRUE(p.error().fatal);
  }
  for (const char* cl : {"-1", "1e3", "", "12 3", "99999999999999999999999"}) {
    RtspRequestParser p;
    EXPECT_EQ(
        p.feed(std::string("ANNOUNCE * RTSP/1.0\r\nCSeq: 1\r\nContent-Length: ") + cl + "\r\n\r\n"),
        RtspParseEvent::kError)
        << cl;
    EXPECT_TRUE(p.error().fatal) << cl;
  }
  RtspRequestParser p;
  EXPECT_EQ(
      p.feed("ANNOUNCE * RTSP/1.0\r\nCSeq: 1\r\nContent-Length: 3\r\ncontent-length: 4\r\n\r\n"),
      RtspParseEvent::kError);
  EXPECT_TRUE(p.error().fatal);
}

TEST(RtspRequestParser, BodyArrivesInPieces) {
  RtspRequestParser p;
  EXPECT_EQ(p.feed("SET_PARAMETER rtsp://h/x RTSP/1.0\r\nCSeq: 2\r\nContent-Length: 10\r\n\r\n01"),
            RtspParseEvent::kNeedMore);
  EXPECT_EQ(p.feed("2345"), RtspParseEvent::kNeedMore);
  ASSERT_EQ(p.feed("6789OPTIONS"), RtspParseEvent::kMessage);
  EXPECT_EQ(p.request().body, "0123456789");
  EXPECT_EQ(p.next(), RtspParseEvent::kNeedMore);
  EXPECT_EQ(p.buffered(), 7u);
}

TEST(RtspRequestParser, InterleavedFramesAreSurfaced) {
  RtspRequestParser p;
  const std::uint8_t frame[] = {'$', 1, 0, 4, 0x80, 0xc9, 0x00, 0x01, '$', 0, 0, 0};
  EXPECT_EQ(p.feed(std::span(frame, 3)), RtspParseEvent::kNeedMore);
  ASSERT_EQ(p.feed(std::span(frame + 3, 9)), RtspParseEvent::kInterleaved);
  EXPECT_EQ(p.interleaved().channel, 1);
  EXPECT_EQ(p.interleaved().payload, (std::vector<std::uint8_t>{0x80, 0xc9, 0x00, 0x01}));
  ASSERT_EQ(p.next(), RtspParseEvent::kInterleaved);
  EXPECT_EQ(p.interleaved().channel, 0);
  EXPECT_TRUE(p.interleaved().payload.empty());
  EXPECT_EQ(p.next(), RtspParseEvent::kNeedMore);
}

TEST(RtspRequestParser, AnOverlongFrameIsSkippedNotWaitedFor) {
  // A "$" header announcing more than max_interleaved_bytes would swallow the requests after it;
  // it is counted and skipped to the next "$" or request line.
  RtspParserLimits limits;
  limits.max_interleaved_bytes = 100;
  RtspRequestParser p(limits);
  const std::string bytes = std::string("$\x01\xff\xff", 4) + "junk\r\nmore junk\n" +
                            "OPTIONS rtsp://h/x RTSP/1.0\r\nCSeq: 3\r\n\r\n" +
                            std::string("$\x01\x00\x02ok", 6);
  ASSERT_EQ(p.feed(bytes), RtspParseEvent::kMessage);
  EXPECT_EQ(p.request().cseq, 3u);
  ASSERT_EQ(p.next(), RtspParseEvent::kInterleaved);
  EXPECT_EQ(p.interleaved().payload, (std::vector<std::uint8_t>{'o', 'k'}));
  EXPECT_EQ(p.next(), RtspParseEvent::kNeedMore);
  EXPECT_EQ(p.interleaved_counters().bad_length, 1u);
  EXPECT_EQ(p.interleaved_counters().skipped_bytes, 4u + 16u);
  // Byte by byte, across the resynchronisation, the same result.
  RtspRequestParser q(limits);
  int messages = 0;
  int frames = 0;
  for (char ch : bytes) {
    for (auto ev = q.feed(std::string_view(&ch, 1)); ev != RtspParseEvent::kNeedMore;
         ev = q.next()) {
      messages += ev == RtspParseEvent::kMessage ? 1 : 0;
      frames += ev == RtspParseEvent::kInterleaved ? 1 : 0;
      EXPECT_NE(ev, RtspParseEvent::kError);
    }
  }
  EXPECT_EQ(messages, 1);
  EXPECT_EQ(frames, 1);
  EXPECT_EQ(q.interleaved_counters().bad_length, 1u);
  // A frame begun and not finished is visible (a truncated tail if the connection ends now).
  EXPECT_FALSE(q.in_interleaved_frame());
  (void)q.feed(
      std::string_view("$\x01\x00\x10"
                       "ab",
                       6));
  EXPECT_TRUE(q.in_interleaved_frame());
}

TEST(RtspRequestParser, ManyOverlongFramesDoNotGrowTheStack) {
  RtspParserLimits limits;
  limits.max_interleaved_bytes = 10;
  RtspRequestParser p(limits);
  std::string bytes;
  for (int i = 0; i < 50000; ++i) {
    bytes += std::string("$\x00\xff\xff", 4);
  }
  bytes += "OPTIONS rtsp://h/x RTSP/1.0\r\nCSeq: 1\r\n\r\n";
  ASSERT_EQ(p.feed(bytes), RtspParseEvent::kMessage);
  EXPECT_EQ(p.interleaved_counters().bad_length, 50000u);
}

TEST(RtspRequestParser, BufferLimitStopsAPeerThatNeverDrains) {
  RtspParserLimits limits;
  limits.max_buffered_bytes = 1000;
  RtspRequestParser p(limits);
  EXPECT_EQ(p.feed(std::string(999, '\n')), RtspParseEvent::kNeedMore);
  EXPECT_EQ(p.feed("OPTIONS"), RtspParseEvent::kNeedMore) << "blank lines were consumed";
  EXPECT_EQ(p.feed(std::string(1000, 'x')), RtspParseEvent::kError);
  EXPECT_EQ(p.error().status, 413);
}

TEST(RtspRequest, SerializeThenParseRoundTrips) {
  auto req = make_request(RtspMethod::kSetup, "rtsp://h:8554/x/trackID=0", 42);
  req.headers.add("Transport", "RTP/AVP;unicast;client_port=5000-5001");
  req.body = "abc";
  const auto text = serialize(req);
  EXPECT_EQ(text,
            "SETUP rtsp://h:8554/x/trackID=0 RTSP/1.0\r\nCSeq: 42\r\n"
            "Transport: RTP/AVP;unicast;client_port=5000-5001\r\nContent-Length: 3\r\n\r\nabc");
  auto back = parse_request(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->method, RtspMethod::kSetup);
  EXPECT_EQ(back->cseq, 42u);
  EXPECT_EQ(back->body, "abc");
  EXPECT_FALSE(parse_request(text + "x").ok()) << "trailing bytes";
  EXPECT_FALSE(parse_request(text.substr(0, 20)).ok()) << "incomplete";
}

TEST(RtspResponse, BuildsTheRepliesAServerSends) {
  auto options = make_response(200, 1);
  options.headers.add("Public", std::string(kPublicMethods));
  EXPECT_EQ(serialize(options),
            "RTSP/1.0 200 OK\r\nCSeq: 1\r\n"
            "Public: OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN, GET_PARAMETER\r\n\r\n");

  auto describe = make_response(200, 2);
  describe.headers.add("Content-Base", "rtsp://h/x/");
  describe.set_body("application/sdp", "v=0\r\n");
  describe.headers.add("Content-Length", "999");  // ignored: the body decides
  EXPECT_EQ(serialize(describe),
            "RTSP/1.0 200 OK\r\nCSeq: 2\r\nContent-Base: rtsp://h/x/\r\n"
            "Content-Type: application/sdp\r\nContent-Length: 5\r\n\r\nv=0\r\n");

  auto setup = make_response(200, 3);
  setup.set_session("A1B2C3D4", 60);
  setup.headers.add("Transport", "RTP/AVP;unicast;client_port=5000-5001;server_port=6000-6001");
  EXPECT_EQ(serialize(setup),
            "RTSP/1.0 200 OK\r\nCSeq: 3\r\nSession: A1B2C3D4;timeout=60\r\n"
            "Transport: RTP/AVP;unicast;client_port=5000-5001;server_port=6000-6001\r\n\r\n");

  EXPECT_EQ(serialize(make_response(461, 4)),
            "RTSP/1.0 461 Unsupported transport\r\nCSeq: 4\r\n\r\n");
  EXPECT_EQ(serialize(make_response(400, std::nullopt)), "RTSP/1.0 400 Bad Request\r\n\r\n");
  EXPECT_EQ(reason_phrase(505), "RTSP Version not supported");
  EXPECT_EQ(reason_phrase(454), "Session Not Found");
  EXPECT_EQ(reason_phrase(299), "Unknown");
}

TEST(RtspResponse, DateIsRfc1123) {
  auto r = make_response(200, 1);
  // RFC 2616 §3.3.1's example instant: 784111777 s after the epoch.
  r.set_date(std::chrono::system_clock::time_point(std::chrono::seconds(784111777)));
  EXPECT_EQ(r.headers.get("Date"), "Sun, 06 Nov 1994 08:49:37 GMT");
}

TEST(RtspResponse, SerializeCannotBeSplitByHostileValues) {
  auto r = make_response(200, 1);
  r.headers.add("X-Url", "rtsp://h/x\r\nSet-Cookie: evil");
  const auto text = serialize(r);
  EXPECT_EQ(text.find("\r\nSet-Cookie"), std::string::npos);
  auto back = parse_response(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->headers.size(), 2u);
}

TEST(RtspResponseParser, ParsesFfmpegResponses) {
  RtspResponseParser p;
  std::vector<RtspResponse> responses;
  const auto text = read_fixture("ffmpeg51_listen_responses.txt");
  for (std::size_t i = 0; i < text.size(); ++i) {  // one byte at a time
    for (auto ev = p.feed(text.substr(i, 1)); ev != RtspParseEvent::kNeedMore; ev = p.next()) {
      ASSERT_EQ(ev, RtspParseEvent::kMessage) << p.error().message;
      responses.push_back(p.take_response());
    }
  }
  ASSERT_EQ(responses.size(), 3u);
  EXPECT_EQ(responses[0].status, 200);
  EXPECT_EQ(responses[0].reason, "OK");
  EXPECT_EQ(responses[0].cseq(), 1u);
  EXPECT_EQ(responses[0].headers.get("Public"), "ANNOUNCE, PAUSE, SETUP, TEARDOWN, RECORD");
  EXPECT_EQ(responses[2].headers.get("Session"), "880867021");
  EXPECT_EQ(responses[2].headers.get("transport"),
            "RTP/AVP/UDP;unicast;mode=receive;source=127.0.0.1;client_port=40000-40001;"
            "server_port=5000-5001");
}

TEST(RtspResponseParser, BodiesReasonsAndServerRequests) {
  RtspResponseParser p;
  auto ev = p.feed(
      "RTSP/1.0 200 OK\r\nCSeq: 2\r\nContent-Type: application/sdp\r\nContent-Length: 4\r\n\r\n"
      "v=0\n"
      "SET_PARAMETER rtsp://h/x RTSP/1.0\r\nCSeq: 1\r\n\r\n"
      "RTSP/1.0 454 Session Not Found\r\nCSeq: 3\r\n\r\n"
      "RTSP/1.0 200\r\nCSeq: 4\r\n\r\n");
  ASSERT_EQ(ev, RtspParseEvent::kMessage);
  EXPECT_EQ(p.response().body, "v=0\n");
  ASSERT_EQ(p.next(), RtspParseEvent::kError);
  EXPECT_FALSE(p.error().fatal);
  ASSERT_EQ(p.next(), RtspParseEvent::kMessage);
  EXPECT_EQ(p.response().status, 454);
  EXPECT_EQ(p.response().reason, "Session Not Found");
  ASSERT_EQ(p.next(), RtspParseEvent::kMessage);
  EXPECT_EQ(p.response().reason, "");
  EXPECT_EQ(p.next(), RtspParseEvent::kNeedMore);

  for (const char* bad :
       {"RTSP/1.0 20 OK\r\n\r\n", "RTSP/1.0 abc OK\r\n\r\n", "RTSP/1.0 700 Odd\r\n\r\n",
        "RTSP/2.0 200 OK\r\n\r\n", "garbage\r\n\r\n"}) {
    EXPECT_FALSE(parse_response(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace predrop::rtsp
