#pragma once
// Tensor chunk payload, version 1: the payload of one RTP packet (RFC 3550 §5.1) in DDL mode.
// The RTP header and the urn:predrop:stage extension (docs/design.md §4) already carry the stage
// (= training iteration) and the packet's index among those sent, so the payload only says
// where its values belong in the tensor.
//
//   byte  0      version         u8   = 1
//   byte  1      dtype           u8   = 1: IEEE 754 binary32, little-endian
//   bytes 2-3    flags           u16  big-endian; bit 0 (0x0001) PARTIAL: an aggregate chunk
//                                     averaged over fewer than all contributors. Other bits are
//                                     reserved: senders write 0, receivers ignore them.
//   bytes 4-5    tensor id       u16  big-endian; which tensor of the stage (0 = the flat gradient)
//   bytes 6-7    count           u16  big-endian; number of values carried, >= 1
//   bytes 8-11   tensor elements u32  big-endian; total length of the tensor, >= 1
//   bytes 12-15  offset          u32  big-endian; index of the first value; offset + count <=
//                                     tensor elements
//   bytes 16-    values          count x 4 bytes, little-endian binary32
//
// The payload is exactly 16 + 4 x count bytes (RTP padding is removed before this parser).
// Header fields are big-endian like every other field on the wire; the values are little-endian
// because every host we run on is, so encoding and decoding are a memcpy (a big-endian host byte-
// swaps; see the std::endian branch in chunk.cpp). Values are 4-byte aligned within the payload.
// A parsed chunk is a view: the values are read with memcpy, never through a float pointer into
// the receive buffer.
//
// Pure functions, no allocation on success, thread-safe.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "predrop/core/result.hpp"

namespace predrop::ddl {

/// The payload version this code writes and accepts.
inline constexpr std::uint8_t kChunkVersion = 1;
/// dtype code of little-endian IEEE 754 binary32.
inline constexpr std::uint8_t kDtypeF32 = 1;
/// Bytes before the first value.
inline constexpr std::size_t kChunkHeaderSize = 16;
/// Flag: the aggregate values of this chunk are averaged over fewer than all contributors.
inline constexpr std::uint16_t kChunkFlagPartial = 0x0001;
/// Largest count the u16 field can hold.
inline constexpr std::size_t kMaxChunkElements = 65535;
/// Default values per chunk: 16 + 1024 = 1040-byte payloads, which fit a 1200-byte packet with
/// the RTP header (12), the stage extension (16) and the SRTP tag (10) to spare.
inline constexpr std::size_t kDefaultChunkElements = 256;

/// The header fields (version and dtype are implied: kChunkVersion, kDtypeF32).
struct ChunkHeader {
  std::uint16_t flags = 0;            ///< kChunkFlag* bits.
  std::uint16_t tensor_id = 0;        ///< Which tensor of the stage.
  std::uint16_t count = 0;            ///< Values carried.
  std::uint32_t tensor_elements = 0;  ///< Length of the whole tensor.
  std::uint32_t offset = 0;           ///< Index of the first value in the tensor.

  bool operator==(const ChunkHeader&) const = default;
};

/// A parsed chunk: its header and its value bytes, borrowed from the payload.
struct ChunkView {
  ChunkHeader header;
  std::span<const std::uint8_t> value_bytes;  ///< 4 * header.count bytes.

  /// Value i (< header.count), decoded by memcpy.
  float value(std::size_t i) const;
  /// Copies all values into `dest`, which must hold header.count floats.
  void copy_to(std::span<float> dest) const;
};

/// Payload size of a chunk of `count` values.
constexpr std::size_t chunk_payload_size(std::size_t count) {
  return kChunkHeaderSize + 4 * count;
}

/// Most values per chunk that fit a payload budget of `payload_bytes` (0 if not even one fits),
/// capped at kMaxChunkElements.
std::size_t max_chunk_elements(std::size_t payload_bytes);

/// Writes one chunk into `out` and returns the bytes written. `values` must hold header.count
/// (>= 1) values and offset + count must fit tensor_elements.
core::Result<std::size_t> encode_chunk(const ChunkHeader& header, std::span<const float> values,
                                       std::span<std::uint8_t> out);

/// Parses one payload; rejects truncation, trailing bytes, unknown version or dtype, a zero count
/// or tensor length, and offset + count beyond the tensor.
core::Result<ChunkView> parse_chunk(std::span<const std::uint8_t> payload);

/// One chunk's place in the tensor.
struct ChunkRange {
  std::uint32_t offset = 0;  ///< First element.
  std::uint16_t count = 0;   ///< Elements.

  bool operator==(const ChunkRange&) const = default;
};

/// How a tensor is cut into chunks: consecutive ranges of chunk_elements() values, the last one
/// possibly shorter. Chunk i starts at i * chunk_elements(). Cheap to copy; computes ranges on the
/// fly instead of storing them.
class ChunkPlan {
 public:
  ChunkPlan() = default;
  /// Number of chunks.
  std::size_t size() const { return chunks_; }
  /// Length of the tensor.
  std::uint32_t total_elements() const { return total_; }
  /// Values per chunk (all but possibly the last).
  std::uint16_t chunk_elements() const { return per_chunk_; }
  /// The range of chunk i (< size()).
  ChunkRange operator[](std::size_t i) const;
  /// The index of the chunk exactly covering [offset, offset + count), or nullopt if that range
  /// is not one of this plan's chunks.
  std::optional<std::size_t> index_of(std::uint32_t offset, std::uint16_t count) const;

  bool operator==(const ChunkPlan&) const = default;

 private:
  friend core::Result<ChunkPlan> chunk_tensor(std::size_t, std::size_t);
  std::uint32_t total_ = 0;
  std::uint16_t per_chunk_ = 0;
  std::size_t chunks_ = 0;
};

/// Plans the chunks of a tensor of `total_elements` (1 .. 2^32-1) values, `chunk_elements`
/// (1 .. kMaxChunkElements) per chunk.
core::Result<ChunkPlan> chunk_tensor(std::size_t total_elements, std::size_t chunk_elements);

}  // namespace predrop::ddl
