// Fuzzes parse_rtp() and checks, for every packet it accepts, that re-serializing what it found
// with write_rtp_packet() parses back to the same values, and that RtpHeaderLayout::patch() on a
// template gives exactly the bytes write_rtp_header() gives.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_check.hpp"
#include "predrop/wire/rtp.hpp"

namespace {
using predrop::wire::RtpExtensionIds;

// The seeds (and the unit fixtures) use stage id 5 and abs-send-time id 3; 7 is the
// transport-wide sequence number's (a WebRTC peer's).
constexpr RtpExtensionIds kIds{.stage = 5, .abs_send_time = 3, .transport_sequence = 7};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace predrop::wire;
  const std::span<const std::uint8_t> in(data, size);

  // Ids outside the one-byte range exercise two-byte blocks; only "does not crash" here.
  (void)parse_rtp(in, {.stage = 200, .abs_send_time = 15});

  auto v = parse_rtp(in, kIds);
  if (!v) return 0;

  // The parts tile the packet.
  PREDROP_FUZZ_CHECK(v->header_size + v->payload.size() + v->padding_size == size);
  PREDROP_FUZZ_CHECK(v->payload.empty() || v->payload.data() == data + v->header_size);
  PREDROP_FUZZ_CHECK(v->csrcs.size() == std::size_t{v->csrc_count} * 4);
  PREDROP_FUZZ_CHECK(v->header.payload_type <= 127);

  // Round trip through our own layout.
  RtpExtensions ext;
  ext.ids.stage = v->stage ? kIds.stage : 0;
  ext.ids.abs_send_time = v->abs_send_time ? kIds.abs_send_time : 0;
  ext.stage = v->stage.value_or(StageExtension{});
  ext.abs_send_time = v->abs_send_time.value_or(0);
  ext.ids.transport_sequence = v->transport_sequence ? kIds.transport_sequence : 0;
  ext.transport_sequence = v->transport_sequence.value_or(0);
  std::vector<std::uint8_t> out(size + 64);
  auto n = write_rtp_packet(out, v->header, ext, v->payload);
  PREDROP_FUZZ_CHECK(n);
  PREDROP_FUZZ_CHECK(*n == rtp_header_size(ext.ids) + v->payload.size());
  auto w = parse_rtp(std::span(out.data(), *n), kIds);
  PREDROP_FUZZ_CHECK(w);
  PREDROP_FUZZ_CHECK(w->header == v->header);
  PREDROP_FUZZ_CHECK(w->stage == v->stage);
  PREDROP_FUZZ_CHECK(w->abs_send_time == v->abs_send_time);
  PREDROP_FUZZ_CHECK(w->transport_sequence == v->transport_sequence);
  PREDROP_FUZZ_CHECK(std::ranges::equal(w->payload, v->payload));

  // Patching a zeroed template of the same layout yields the same bytes.
  auto layout = RtpHeaderLayout::create(ext.ids);
  PREDROP_FUZZ_CHECK(layout);
  std::vector<std::uint8_t> patched(*n);
  // (patch() leaves the transport-wide number alone: the template carries it.)
  RtpExtensions blank{ext.ids, {}, 0};
  blank.transport_sequence = ext.transport_sequence;
  auto t = write_rtp_packet(patched, RtpHeader{}, blank, v->payload);
  PREDROP_FUZZ_CHECK(t && *t == *n);
  PREDROP_FUZZ_CHECK(layout->patch(patched, v->header, ext.stage, ext.abs_send_time));
  PREDROP_FUZZ_CHECK(std::equal(patched.begin(), patched.end(), out.begin()));

  // abs-send-time arithmetic stays in range and is antisymmetric away from the ±32 s seam.
  if (v->abs_send_time && v->stage) {
    const std::uint32_t a = *v->abs_send_time;
    const std::uint32_t b = v->stage->stage_id & 0xFFFFFF;
    const std::int64_t d = abs_send_time_delta_us(a, b);
    PREDROP_FUZZ_CHECK(d >= -32'000'000 && d < 32'000'000);
    if (((a - b) & 0xFFFFFF) != 0x800000) PREDROP_FUZZ_CHECK(abs_send_time_delta_us(b, a) == -d);
    PREDROP_FUZZ_CHECK(abs_send_time_from_us(abs_send_time_to_us(a)) == a);
  }
  return 0;
}
