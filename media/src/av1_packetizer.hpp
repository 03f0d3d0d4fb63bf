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
// (§5: SHOULD NOT / MAY).
//
// Av1Packetizer serves a file's AV1 stream through MediaFile: one temporal unit per sample, the
// sequence header before every key frame (from av1C when the sample lacks it), N on a key frame's
// first packet, the marker on each unit's last (§4.2). Importance (docs/media.md "AV1") comes from
// the OBU extension header's temporal_id (§5.3.3) and from the frame headers: a unit whose frames
// all have refresh_frame_flags = 0 (§5.9.2) is a non-reference picture, disposable; packets with
// a sequence header are never discarded.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "video_packetizer.hpp"

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
/// Writes the minimal LEB128 encoding of `value` (at most 5 bytes) to `out`; returns its length.
std::size_t write_leb128(std::uint32_t value, std::uint8_t (&out)[8]);

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

/// Buffers packetize_av1 reuses from unit to unit, so that a stream allocates only while they
/// grow.
struct Av1Scratch {
  std::vector<Av1Obu> obus;
  std::vector<std::uint8_t> packet;
};
/// As above with the caller's buffers; emit(payload, sequence_header) also says whether the
/// payload carries (a part of) a sequence header OBU.
bool packetize_av1(std::span<const std::uint8_t> temporal_unit, bool new_sequence,
                   std::size_t max_payload, Av1Scratch& scratch,
                   const std::function<void(std::span<const std::uint8_t>, bool)>& emit);

/// What the frame headers need of a sequence header (AV1 spec §5.5.1).
struct Av1SequenceHeader {
  bool reduced_still_picture_header = false;
  bool decoder_model_info_present = false;
  bool equal_picture_interval = false;
  int buffer_removal_time_length = 0;
  int frame_presentation_time_length = 0;
  int operating_points = 1;
  std::uint16_t operating_point_idc[32] = {};
  bool decoder_model_present_for_op[32] = {};
  bool frame_id_numbers_present = false;
  int frame_id_length = 0;             ///< idLen of §5.9.2
  int force_screen_content_tools = 2;  ///< 2 = SELECT_SCREEN_CONTENT_TOOLS
  int force_integer_mv = 2;            ///< 2 = SELECT_INTEGER_MV
  int order_hint_bits = 0;
};
/// Parses a sequence header OBU's payload; nullopt if truncated.
std::optional<Av1SequenceHeader> parse_av1_sequence_header(std::span<const std::uint8_t> payload);

/// What the uncompressed header of a frame (header) OBU says (AV1 spec §5.9.2).
struct Av1FrameHeader {
  bool show_existing_frame = false;
  std::uint8_t frame_to_show = 0;  ///< frame_to_show_map_idx, with show_existing_frame
  int frame_type = 0;              ///< 0 KEY, 1 INTER, 2 INTRA_ONLY, 3 SWITCH
  bool show_frame = true;
  std::uint8_t refresh_frame_flags = 0xff;
};
/// Parses the start of a frame header OBU's (or frame OBU's) payload up to refresh_frame_flags,
/// given the sequence header in force and the OBU's temporal/spatial id; nullopt if truncated.
std::optional<Av1FrameHeader> parse_av1_frame_header(std::span<const std::uint8_t> payload,
                                                     const Av1SequenceHeader& sequence,
                                                     std::uint8_t temporal_id,
                                                     std::uint8_t spatial_id);

/// Packetizes the temporal units of one AV1 stream, in decode order (see the file comment).
class Av1Packetizer final : public VideoPacketizer {
 public:
  Av1Packetizer(std::size_t max_payload, Warn warn)
      : max_payload_(max_payload), warn_(std::move(warn)) {}

  /// Reads av1C (AV1-ISOBMFF §2.3.3: 4 bytes, then configOBUs with the sequence header), if any.
  void configure(Bytes extradata) override;
  std::optional<VideoPicture> add_sample(Bytes sample, bool key_flag, PayloadSink& sink) override;
  /// "AV1/90000" without fmtp (the AOMedia format's profile, level-idx and tier are optional and
  /// default to what every decoder here reads).
  void describe(StreamInfo& info) const override;

 private:
  /// Reads the unit's sequence header (if any) and frame headers into `picture`; false if no
  /// frame header could be read.
  bool read_unit(const std::vector<Av1Obu>& obus, VideoPicture& picture);

  std::size_t max_payload_;
  Warn warn_;
  std::optional<Av1SequenceHeader> sequence_;
  std::vector<std::uint8_t> sequence_obu_;  // the last sequence header OBU, with its size field
  std::vector<std::uint8_t> unit_;          // a key frame's unit with the sequence header first
  Av1Scratch scratch_;
  std::vector<Av1Obu> obus_;
  std::uint8_t ref_frame_type_[8] = {};  // RefFrameType (§7.20), for show_existing_frame
  std::size_t pictures_ = 0;
};

}  // namespace predrop::media::detail
