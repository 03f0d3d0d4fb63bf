// libFuzzer target: the publish path (docs/live.md) on hostile input. An ANNOUNCE body
// (detail::read_announce), a URL (url_secret, secret_matches, url_control), then a script of
// publisher frames: raw bytes through detail::read_rtp, or RTP fields chosen by the input (so
// that valid-looking H.264 payloads with jumping timestamps and sequence gaps are easy to reach)
// into a media::LiveSource with a small block bound, and end() at any point. After each step,
// every block the source holds keeps its contract: at most max_block_packets() packets, one
// importance per packet, payloads inside the block's arena, send offsets inside the block, start
// times non-decreasing, nothing after kEnded.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "fuzz_check.hpp"
#include "fuzz_reader.hpp"
#include "live_publish.hpp"
#include "predrop/media/live_source.hpp"

namespace {

void check(const predrop::media::LiveSource& src) {
  using predrop::media::BlockState;
  std::uint64_t last_start = 0;
  const std::uint64_t published = src.stats().blocks;
  for (std::uint64_t s = src.join_sequence() > 8 ? src.join_sequence() - 8 : 0; s < published;
       ++s) {
    predrop::media::SourceBlock b;
    if (src.read(s, b) != BlockState::kReady) continue;
    PREDROP_FUZZ_CHECK(b.sequence == s);
    PREDROP_FUZZ_CHECK(b.packets.size() <= src.max_block_packets());
    PREDROP_FUZZ_CHECK(b.importance.size() == b.packets.size());
    PREDROP_FUZZ_CHECK(b.duration_us > 0);
    PREDROP_FUZZ_CHECK(b.start_us >= last_start);
    last_start = b.start_us;
    for (const auto& p : b.packets) {
      PREDROP_FUZZ_CHECK(p.payload_offset + p.payload_size <= b.arena.size());
      PREDROP_FUZZ_CHECK(p.send_offset_us >= 0 && p.send_offset_us < b.duration_us);
      PREDROP_FUZZ_CHECK(p.payload_size <= src.options().max_payload);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace detail = predrop::server::detail;
  predrop::fuzz::Reader in{data, size};
  const std::string_view sdp = in.bytes(in.u16() % 2048);
  auto announced = detail::read_announce(sdp);
  const std::string_view url = in.bytes(in.u8());
  if (auto secret = detail::url_secret(url)) {
    (void)detail::secret_matches(*secret, "0123456789abcdef");
  }
  (void)detail::url_control(url);

  predrop::media::LiveSourceOptions o;
  o.max_payload = 200 + in.u8();
  o.max_block_packets = 64 + in.u8();
  o.block_us = 1000 + std::int64_t{in.u16()} * 100;
  o.ring_blocks = 2 + in.u8() % 4;
  predrop::media::LiveSource src(announced ? announced->video : predrop::media::LiveVideoSpec{}, o);
  std::uint64_t now = 0;
  std::uint16_t seq = 0;
  std::uint32_t ts = 0;
  while (!in.empty()) {
    const std::uint8_t kind = in.u8();
    now += std::uint64_t{in.u8()} * 1000;
    if (kind % 8 == 7) {
      src.end(now);
    } else if (kind % 2 == 0) {
      const std::string_view raw = in.bytes(in.u16() % 1600);
      const auto bytes = std::span(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size());
      if (auto rtp = detail::read_rtp(bytes)) {
        src.push_video(rtp->sequence, rtp->timestamp, rtp->marker, rtp->payload, now);
      }
    } else {
      seq = static_cast<std::uint16_t>(seq + 1 + (kind & 0x10 ? in.u8() : 0));
      if (kind & 0x20) ts += std::uint32_t{in.u16()} * ((kind & 0x40) ? 1000u : 1u);
      const std::string_view raw = in.bytes(in.u16() % 1600);
      src.push_video(seq, ts, (kind & 0x80) != 0,
                     std::span(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size()), now);
    }
    check(src);
  }
  src.end(now);
  check(src);
  predrop::media::SourceBlock b;
  PREDROP_FUZZ_CHECK(src.read(src.stats().blocks, b) == predrop::media::BlockState::kEnded);
  return 0;
}
