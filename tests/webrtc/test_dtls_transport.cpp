// Two DTLS endpoints in one process, joined by memory: the handshake completes, both derive the
// same SRTP keys crosswise (and libsrtp sessions made from them interoperate); a fingerprint that
// is not the peer's is refused by the side that checks it.
#include "predrop/webrtc/dtls_transport.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <deque>
#include <vector>

#include "predrop/net/srtp_session.hpp"

namespace predrop::webrtc {
namespace {

using Queue = std::deque<std::vector<std::uint8_t>>;

struct Pair {
  std::shared_ptr<const DtlsCertificate> server_cert = DtlsCertificate::generate().value();
  std::shared_ptr<const DtlsCertificate> client_cert = DtlsCertificate::generate().value();
  Queue to_client;
  Queue to_server;
  std::unique_ptr<DtlsTransport> server;
  std::unique_ptr<DtlsTransport> client;

  Pair(const std::string& server_expects, const std::string& client_expects) {
    auto s = DtlsTransport::create(server_cert, DtlsRole::Server, server_expects,
                                   [this](auto d) { to_client.emplace_back(d.begin(), d.end()); });
    auto c = DtlsTransport::create(client_cert, DtlsRole::Client, client_expects,
                                   [this](auto d) { to_server.emplace_back(d.begin(), d.end()); });
    server = std::move(s.value());
    client = std::move(c.value());
  }

  // Delivers queued datagrams until both sides are quiet; returns the datagrams moved.
  int pump() {
    int moved = 0;
    client->start();
    server->start();
    while (!to_client.empty() || !to_server.empty()) {
      while (!to_server.empty()) {
        server->on_datagram(to_server.front());
        to_server.pop_front();
        ++moved;
      }
      while (!to_client.empty()) {
        client->on_datagram(to_client.front());
        to_client.pop_front();
        ++moved;
      }
    }
    return moved;
  }
};

TEST(DtlsCertificate, FingerprintIsSha256AsSdpWritesIt) {
  const auto cert = DtlsCertificate::generate();
  ASSERT_TRUE(cert.ok()) << cert.error().message;
  const std::string& fp = cert.value()->fingerprint_sha256();
  EXPECT_EQ(fp.size(), 32U * 3 - 1);
  EXPECT_EQ(fp[2], ':');
  EXPECT_NE(fp, DtlsCertificate::generate().value()->fingerprint_sha256());
}

TEST(DtlsTransport, HandshakeOverMemoryDerivesMatchingKeysCrosswise) {
  Pair r("", "");
  // SDP hex is case-insensitive: the server is given the client's fingerprint in lower case.
  std::string lower = r.client_cert->fingerprint_sha256();
  for (char& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  r.server = DtlsTransport::create(r.server_cert, DtlsRole::Server, lower, [&r](auto d) {
               r.to_client.emplace_back(d.begin(), d.end());
             }).value();
  r.client =
      DtlsTransport::create(r.client_cert, DtlsRole::Client, r.server_cert->fingerprint_sha256(),
                            [&r](auto d) { r.to_server.emplace_back(d.begin(), d.end()); })
          .value();
  EXPECT_GT(r.pump(), 2);
  ASSERT_EQ(r.server->state(), DtlsState::Connected) << r.server->failure();
  ASSERT_EQ(r.client->state(), DtlsState::Connected) << r.client->failure();
  const auto& sk = *r.server->keys();
  const auto& ck = *r.client->keys();
  EXPECT_EQ(sk.local, ck.remote);
  EXPECT_EQ(sk.remote, ck.local);
  EXPECT_NE(sk.local, sk.remote);
  EXPECT_EQ(sk.local.size, 30U);
  EXPECT_FALSE(r.server->retransmit_in_us().has_value());

  // The keys work in the project's libsrtp sessions: server protects, client unprotects.
  net::SrtpSession out(net::SrtpDirection::Outbound, sk.suite, sk.local);
  net::SrtpSession in(net::SrtpDirection::Inbound, ck.suite, ck.remote);
  std::vector<std::uint8_t> pkt(12 + 20 + net::kSrtpMaxTrailer, 0xAB);
  pkt[0] = 0x80;
  pkt[1] = 96;
  const auto prot = out.protect_rtp(pkt, 32);
  ASSERT_TRUE(prot.ok());
  const auto unprot = in.unprotect_rtp(pkt, prot.length);
  ASSERT_TRUE(unprot.ok()) << net::to_string(unprot.error);
  EXPECT_EQ(unprot.length, 32U);
}

TEST(DtlsTransport, ServerRefusesAClientWhoseCertificateIsNotTheAnnouncedOne) {
  Pair r("", "");
  const auto stranger = DtlsCertificate::generate().value();
  r.server = DtlsTransport::create(r.server_cert, DtlsRole::Server, stranger->fingerprint_sha256(),
                                   [&r](auto d) { r.to_client.emplace_back(d.begin(), d.end()); })
                 .value();
  r.client =
      DtlsTransport::create(r.client_cert, DtlsRole::Client, r.server_cert->fingerprint_sha256(),
                            [&r](auto d) { r.to_server.emplace_back(d.begin(), d.end()); })
          .value();
  r.pump();
  EXPECT_EQ(r.server->state(), DtlsState::Failed);
  EXPECT_TRUE(r.server->fingerprint_mismatch());
  EXPECT_FALSE(r.server->keys().has_value());
  EXPECT_NE(r.client->state(), DtlsState::Connected);
}

TEST(DtlsTransport, ClientRefusesAServerWithTheWrongFingerprint) {
  Pair r("", "");
  r.server =
      DtlsTransport::create(r.server_cert, DtlsRole::Server, r.client_cert->fingerprint_sha256(),
                            [&r](auto d) { r.to_client.emplace_back(d.begin(), d.end()); })
          .value();
  r.client = DtlsTransport::create(r.client_cert, DtlsRole::Client, "00:11:22", [&r](auto d) {
               r.to_server.emplace_back(d.begin(), d.end());
             }).value();
  r.pump();
  EXPECT_EQ(r.client->state(), DtlsState::Failed);
  EXPECT_TRUE(r.client->fingerprint_mismatch());
  EXPECT_NE(r.server->state(), DtlsState::Connected);
}

TEST(DtlsTransport, AssociationsSharingOneContextCheckTheirOwnPeers) {
  // A server makes one context per certificate and every association shares it: each still
  // checks its own peer's fingerprint and derives its own keys.
  const auto server_cert = DtlsCertificate::generate().value();
  const auto context = DtlsContext::create(server_cert);
  ASSERT_TRUE(context.ok()) << context.error().message;
  EXPECT_EQ(&context.value()->certificate(), server_cert.get());
  Pair good("", "");
  Pair stranger("", "");
  const auto someone_else = DtlsCertificate::generate().value();
  good.server = DtlsTransport::create(
                    context.value(), DtlsRole::Server, good.client_cert->fingerprint_sha256(),
                    [&good](auto d) { good.to_client.emplace_back(d.begin(), d.end()); })
                    .value();
  stranger.server =
      DtlsTransport::create(
          context.value(), DtlsRole::Server, someone_else->fingerprint_sha256(),
          [&stranger](auto d) { stranger.to_client.emplace_back(d.begin(), d.end()); })
          .value();
  for (Pair* p : {&good, &stranger}) {
    p->client =
        DtlsTransport::create(p->client_cert, DtlsRole::Client, server_cert->fingerprint_sha256(),
                              [p](auto d) { p->to_server.emplace_back(d.begin(), d.end()); })
            .value();
  }
  // Interleaved as on a worker: the stranger's handshake fails, the good one's completes.
  stranger.pump();
  good.pump();
  EXPECT_EQ(stranger.server->state(), DtlsState::Failed);
  EXPECT_TRUE(stranger.server->fingerprint_mismatch());
  ASSERT_EQ(good.server->state(), DtlsState::Connected) << good.server->failure();
  ASSERT_EQ(good.client->state(), DtlsState::Connected) << good.client->failure();
  EXPECT_FALSE(good.server->fingerprint_mismatch());
  EXPECT_EQ(good.server->keys()->local, good.client->keys()->remote);
  // A second good association on the same context gets keys of its own.
  Pair again("", "");
  again.server = DtlsTransport::create(
                     context.value(), DtlsRole::Server, again.client_cert->fingerprint_sha256(),
                     [&again](auto d) { again.to_client.emplace_back(d.begin(), d.end()); })
                     .value();
  again.client =
      DtlsTransport::create(again.client_cert, DtlsRole::Client, server_cert->fingerprint_sha256(),
                            [&again](auto d) { again.to_server.emplace_back(d.begin(), d.end()); })
          .value();
  again.pump();
  ASSERT_EQ(again.server->state(), DtlsState::Connected) << again.server->failure();
  EXPECT_NE(again.server->keys()->local, good.server->keys()->local);
  EXPECT_FALSE(DtlsContext::create(nullptr).ok());
}

TEST(DtlsTransport, GarbageFailsTheHandshakeWithoutThrowing) {
  Pair r("", "");
  const std::vector<std::uint8_t> junk(64, 0x16);
  r.server->on_datagram(junk);
  EXPECT_NE(r.server->state(), DtlsState::Connected);
  r.server->on_timer();  // No timer runs on a server that never answered: nothing to resend.
}

TEST(DtlsTransport, ClientArmsARetransmissionTimerAfterItsHello) {
  Pair r("", "");
  r.client->start();
  EXPECT_EQ(r.to_server.size(), 1U);
  const auto t = r.client->retransmit_in_us();
  ASSERT_TRUE(t.has_value());
  EXPECT_LE(*t, 1'000'000U);  // OpenSSL's first DTLS timeout is 1 s (RFC 6347 §4.2.4.1).
}

}  // namespace
}  // namespace predrop::webrtc
