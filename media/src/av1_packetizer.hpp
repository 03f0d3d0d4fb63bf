#pragma once
// Private to media/src: AV1 into RTP payloads per the AOMedia "RTP Payload Format For AV1" (v1.0,
// §4.4-§5): a temporal unit (OBUs in the low-overhead bitstream format, each with its size field,
// AV1 spec §5.3) becomes payloads that start with the aggregation header
//
//    0 1 2 3 4 5 6 7
//   +-+-+-+-+-+-+-+-+
//   |Z|Y| W |N|-|-|-|
//   +-+-+-+-+-+-+-+-+
//
// Z: the first OBU element continues a fragment from the previous packet; Y: the last one
// continues in the next; W: 0 = every element has a LEB128 length, 1..3 = that many elements,
// the last without a length; N: first packet of a coded video sequence. We write W = 0 (every
// element length-prefixed). Each OBU element is the OBU with obu_has_size_field cleared and its
// obu_size removed (§4.4: SHOULD); temporal delimiters, tile lists and padding are not sent
// (§5: SHOULD NOT / MAY). Not yet wired into MediaFile (docs/media.md "AV1").
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace predrop::media::detail {

/// AV1 OBU types (AV1 spec §6.2.2, Table "obu_type").
enum Av1ObuType : std::uint8_t {
  kAv1SequenceHeader = 1,
  kAv1TemporalDelimiter = 2,
  kAv1FrameHeader = 3,
  kAv1TileGroup = 4,
  kAv1Metadata = 5,
  kAv1Frame = 6,
  kAv1RedundantFrameHeader = 7,
  kAv1TileList = 8,
  kAv1Padding = 15,
};

/// One OBU of a temporal unit (views into it).
struct Av1Obu {
  std::uint8_t type = 0;
  bool has_extension = false;
  /// From the extension header (§5.3.3), 0 without one.
  std::uint8_t temporal_id = 0;
  std::uint8_t spatial_id = 0;
  /// obu_header (1 byte) plus obu_extension_header (1 byte) when present.
  std::span<const std::uint8_t> header;
  std::span<const std::uint8_t> payload;
};

/// Reads an unsigned LEB128 (AV1 spec §4.10.5: at most 8 bytes, value < 2^32); returns the value
/// and the bytes read, or std::nullopt.
std::optional<std::pair<std::uint32_t, std::size_t>> read_leb128(std::span<const std::uint8_t> in);
/// Appends the minimal LEB128 encoding of `value`.
void write_leb128(std::uint32_t value, std::vector<std::uint8_t>& out);

/// Splits a temporal unit (low-overhead format: every OBU with obu_has_size_field = 1, except
/// that the last may omit it) into OBUs. Returns false on a forbidden bit, a truncated header or
/// a size past the end; the OBUs before it are kept in `out`.
bool split_av1_obus(std::span<const std::uint8_t> temporal_unit, std::vector<Av1Obu>& out);

/// Packetizes one temporal unit into payloads of at most `max_payload` (>= 8) bytes; calls
/// emit(payload) for each, in order. `new_sequence` sets N on the first packet (a key frame with
/// its sequence header). Returns false (emitting nothing) if the unit does not parse.
bool packetize_av1(std::span<const std::uint8_t> temporal_unit, bool new_sequence,
                   std::size_t max_payload,
                   const std::function<void(std::span<const std::uint8_t>)>& emit);

}  // namespace predrop::media::detail
