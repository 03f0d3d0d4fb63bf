// The light client's sampled SRTP verification (load::VerifySampler) with real libsrtp: a stream
// whose sequence number wraps before its first sampled packet still verifies, because the first
// packet of every SSRC is verified; plain every-N-th sampling fails on such a stream for good
// (libsrtp takes a new stream's rollover counter as 0).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "predrop/load/verify_sampler.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::load {
namespace {

TEST(VerifySampler, TakesTheFirstOfEachSsrcThenEveryNth) {
  VerifySampler s(4);
  EXPECT_TRUE(s.take(1));   // datagram 0: first of SSRC 1, and the 0th
  EXPECT_TRUE(s.take(2));   // datagram 1: first of SSRC 2
  EXPECT_FALSE(s.take(1));  // 2
  EXPECT_FALSE(s.take(2));  // 3
  EXPECT_TRUE(s.take(1));   // 4
  EXPECT_FALSE(s.take(2));  // 5
  EXPECT_TRUE(s.take(3));   // 6: first of SSRC 3
  VerifySampler all(1);
  for (int i = 0; i < 5; ++i)
    EXPECT_TRUE(all.take(7));
}

// Two streams sending in turn, B twice as often as A; B starts 6 packets before its sequence
// number wraps, so with every 16th datagram sampled (datagrams 0, 16, 32, ...) B's first sampled
// packet (datagram 16, B's 11th) comes after the wrap.
struct Counts {
  int verified = 0;
  int failed = 0;
};

template <class Sample>
Counts run(Sample&& sample) {
  const auto suite = wire::SrtpSuite::AeadAes128Gcm;
  const auto key = net::random_srtp_key(suite);
  net::SrtpSession tx(net::SrtpDirection::Outbound, suite, key.span());
  net::SrtpSession rx(net::SrtpDirection::Inbound, suite, key.span());
  std::uint16_t seq_a = 1000;
  std::uint16_t seq_b = 65530;
  Counts c;
  for (int i = 0; i < 400; ++i) {
    const bool b = i % 3 != 0;  // B sends twice as often as A
    std::vector<std::uint8_t> p(12 + 100 + net::kSrtpMaxTrailer, 0x33);
    const std::uint16_t seq = b ? seq_b++ : seq_a++;
    const std::uint32_t ssrc = b ? 0xBBBB : 0xAAAA;
    p[0] = 0x80;
    p[1] = 96;
    p[2] = static_cast<std::uint8_t>(seq >> 8);
    p[3] = static_cast<std::uint8_t>(seq);
    p[8] = static_cast<std::uint8_t>(ssrc >> 24);
    p[9] = static_cast<std::uint8_t>(ssrc >> 16);
    p[10] = static_cast<std::uint8_t>(ssrc >> 8);
    p[11] = static_cast<std::uint8_t>(ssrc);
    const auto r = tx.protect_rtp(p, 112);
    EXPECT_TRUE(r.ok());
    if (!sample(ssrc)) continue;
    ++c.verified;
    if (!rx.unprotect_rtp(p, r.length).ok()) ++c.failed;
  }
  return c;
}

TEST(VerifySampler, AStreamThatWrapsBeforeItsFirstSampleStillVerifies) {
  std::uint64_t n = 0;
  const Counts naive = run([&n](std::uint32_t) { return n++ % 16 == 0; });
  EXPECT_GT(naive.failed, 10) << "plain sampling fails on B for good: the case this is for";
  VerifySampler sampler(16);
  const Counts ours = run([&sampler](std::uint32_t ssrc) { return sampler.take(ssrc); });
  EXPECT_GT(ours.verified, 20);
  EXPECT_EQ(ours.failed, 0);
}

}  // namespace
}  // namespace predrop::load
