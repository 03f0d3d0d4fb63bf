// libFuzzer target for RFC 2250 §3.5 MPEG audio (issue 24). The first input byte picks the mode:
// even: the rest as records (1-byte flags: bit 0 a new timestamp; 1-byte length; payload) into the
// reassembler, and the frame-length parser on every payload (must not crash; every emitted frame
// at least as long as its header says); odd: the rest as one frame, packetized at a limit from
// the next byte and reassembled back exactly.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_check.hpp"
#include "predrop/media/mpa.hpp"

namespace {

using predrop::media::MpaReassembler;

void reassemble(const std::uint8_t* data, std::size_t size) {
  MpaReassembler r([](std::uint32_t, std::span<const std::uint8_t> frame) {
    const auto expected = predrop::media::mpeg_audio_frame_bytes(frame);
    PREDROP_FUZZ_CHECK(!expected || frame.size() >= *expected);
  });
  std::uint32_t timestamp = 0;
  std::size_t i = 0;
  while (size - i >= 2) {
    const std::uint8_t flags = data[i];
    std::size_t length = data[i + 1];
    i += 2;
    if (length > size - i) length = size - i;
    if (flags & 1) timestamp += 2160;
    const std::span<const std::uint8_t> payload(data + i, length);
    (void)predrop::media::mpeg_audio_frame_bytes(payload);
    r.push(timestamp, payload);
    i += length;
  }
  r.flush();
}

void round_trip(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return;
  const std::size_t limit = 5 + data[0] * 4;
  const std::span<const std::uint8_t> frame(data + 1, size - 1);
  std::vector<std::vector<std::uint8_t>> payloads;
  const bool ok = predrop::media::packetize_mpa(
      frame, limit, [&](std::span<const std::uint8_t> head, std::span<const std::uint8_t> body) {
        std::vector<std::uint8_t> p(head.begin(), head.end());
        p.insert(p.end(), body.begin(), body.end());
        PREDROP_FUZZ_CHECK(p.size() <= limit);
        payloads.push_back(std::move(p));
      });
  PREDROP_FUZZ_CHECK(ok == (!frame.empty() && frame.size() <= 0xffff));
  std::vector<std::uint8_t> got;
  std::size_t count = 0;
  MpaReassembler r([&](std::uint32_t, std::span<const std::uint8_t> f) {
    ++count;
    got.assign(f.begin(), f.end());
  });
  for (const auto& p : payloads) {
    r.push(7, p);
  }
  r.flush();
  // A frame shorter than its own header claims is (rightly) not emitted.
  const auto expected = predrop::media::mpeg_audio_frame_bytes(frame);
  if (!ok || (expected && frame.size() < *expected)) {
    PREDROP_FUZZ_CHECK(count == 0);
    return;
  }
  PREDROP_FUZZ_CHECK(count == 1);
  PREDROP_FUZZ_CHECK(got == std::vector<std::uint8_t>(frame.begin(), frame.end()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] & 1) {
    round_trip(data + 1, size - 1);
  } else {
    reassemble(data + 1, size - 1);
  }
  return 0;
}
