#pragma once
// What the RTP payload-format tests of VP8 and VP9 share: a packetizer's payloads collected
// whole, and the round trip of random frames through packetizer and depacketizer.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

#include "bitstream.hpp"  // media/src: Bytes
#include "predrop/media/depacketizer.hpp"

namespace predrop::media::test {

using Payload = std::vector<std::uint8_t>;

/// The payloads a packetizer hands to emit(head, body); `packetize(emit)` runs it.
template <typename Packetize>
std::vector<Payload> collect_payloads(Packetize packetize) {
  std::vector<Payload> out;
  packetize([&](detail::Bytes head, detail::Bytes body) {
    Payload p(head.begin(), head.end());
    p.insert(p.end(), body.begin(), body.end());
    out.push_back(std::move(p));
  });
  return out;
}

/// At each payload limit, 40 random frames (1 to 300 bytes, one in four up to 20000) come back
/// from a `Depacketizer` byte for byte and undamaged; `packetize(frame, index, max_payload)`
/// returns a frame's payloads, each checked against the limit.
template <typename Depacketizer, typename Packetize>
void expect_random_frames_round_trip(std::uint32_t seed, std::initializer_list<std::size_t> limits,
                                     Packetize packetize) {
  std::mt19937 rng(seed);
  std::uint16_t sequence = 0;
  for (std::size_t max_payload : limits) {
    std::vector<Payload> sent;
    std::vector<Payload> got;
    Depacketizer d([&](const AccessUnit& a) {
      EXPECT_FALSE(a.damaged);
      got.emplace_back(a.data.begin(), a.data.end());
    });
    for (int f = 0; f < 40; ++f) {
      Payload frame(1 + (rng() % 4 == 0 ? rng() % 20000 : rng() % 300));
      for (auto& b : frame) {
        b = static_cast<std::uint8_t>(rng());
      }
      sent.push_back(frame);
      const std::vector<Payload> payloads = packetize(frame, f, max_payload);
      for (std::size_t i = 0; i < payloads.size(); ++i) {
        ASSERT_LE(payloads[i].size(), max_payload);
        d.push(sequence++, static_cast<std::uint32_t>(f * 3000), i + 1 == payloads.size(),
               payloads[i]);
      }
    }
    EXPECT_EQ(got, sent) << "max_payload " << max_payload;
  }
}

}  // namespace predrop::media::test
