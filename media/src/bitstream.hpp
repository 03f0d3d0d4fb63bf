#pragma once
// Pure parsers over byte spans for the packetizer (no FFmpeg): H.264 NAL unit splitting (ISO/IEC
// 14496-10 Annex B byte streams and ISO/IEC 14496-15 length-prefixed samples), the avcC record
// (14496-15 §5.3.3.1), the slice type (14496-10 §7.3.3), ADTS headers (ISO/IEC 13818-7 §6.2) and
// the AudioSpecificConfig (14496-3 §1.6.2.1), plus base64 / hex for SDP. Every read checks the
// length first; malformed input yields std::nullopt or a `false` result, never a crash.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace predrop::media::detail {

using Bytes = std::span<const std::uint8_t>;

/// H.264 NAL unit types used here (14496-10 Table 7-1).
enum NalType : std::uint8_t {
  kNalSlice = 1,
  kNalIdr = 5,
  kNalSei = 6,
  kNalSps = 7,
  kNalPps = 8,
  kNalAud = 9,
  kNalFiller = 12,
};

inline std::uint8_t nal_type(Bytes nal) {
  return nal.empty() ? 0 : nal[0] & 0x1f;
}
inline std::uint8_t nal_ref_idc(Bytes nal) {
  return nal.empty() ? 0 : (nal[0] >> 5) & 0x3;
}

/// Appends the NAL units of an Annex-B byte stream to `out` (without start codes or trailing
/// zero bytes). Bytes before the first start code are ignored; returns false if there were any.
bool split_annexb(Bytes data, std::vector<Bytes>& out);

/// Appends the NAL units of a length-prefixed sample (`length_size` 1, 2 or 4) to `out`. Returns
/// false if a length runs past the end (the units before it are kept).
bool split_length_prefixed(Bytes data, int length_size, std::vector<Bytes>& out);

/// An avcC decoder configuration record.
struct AvcConfig {
  int length_size = 4;
  std::vector<std::vector<std::uint8_t>> sps;
  std::vector<std::vector<std::uint8_t>> pps;
};
/// Parses avcC; std::nullopt if it is not one (Annex-B extradata starts with a start code).
std::optional<AvcConfig> parse_avcc(Bytes data);

/// slice_type % 5 of a slice NAL unit (0 P, 1 B, 2 I, 3 SP, 4 SI), or std::nullopt.
std::optional<int> parse_slice_type(Bytes nal);

/// A parsed ADTS header.
struct AdtsHeader {
  std::size_t header_size = 7;  ///< 7, or 9 with CRC.
  std::size_t frame_size = 0;   ///< Header included.
  int object_type = 2;          ///< MPEG-4 audio object type (profile + 1); 2 = AAC-LC.
  int sample_rate_index = 0;
  int channel_config = 0;
  int raw_blocks = 1;  ///< number_of_raw_data_blocks_in_frame + 1.
};
/// Parses an ADTS header at the start of `data`, or std::nullopt.
std::optional<AdtsHeader> parse_adts(Bytes data);

/// The 2-byte AudioSpecificConfig for an object type, sample-rate index and channel config.
std::vector<std::uint8_t> audio_specific_config(int object_type, int sample_rate_index,
                                                int channel_config);

/// Standard base64 with padding (RFC 4648 §4).
std::string base64(Bytes data);
/// Upper-case hex, two digits per byte.
std::string hex_upper(Bytes data);

}  // namespace predrop::media::detail
