// Tensor chunk payload v1 (layout in chunk.hpp).
#include "predrop/ddl/chunk.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

namespace predrop::ddl {
namespace {

static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559,
              "the chunk format carries IEEE 754 binary32 values");
static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
              "mixed-endian hosts are not supported");

constexpr bool kLittleHost = std::endian::native == std::endian::little;

void put16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}
void put32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}
std::uint16_t get16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(std::uint16_t{p[0]} << 8 | p[1]);
}
std::uint32_t get32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 |
         std::uint32_t{p[3]};
}

// One float from 4 little-endian bytes, through memcpy (no aliasing of the receive buffer).
float load_le(const std::uint8_t* p) {
  std::uint32_t bits;
  if constexpr (kLittleHost) {
    std::memcpy(&bits, p, 4);
  } else {
    bits = std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
           std::uint32_t{p[3]} << 24;
  }
  return std::bit_cast<float>(bits);
}

core::Error fail(const std::string& what) {
  return core::make_error("tensor chunk: " + what);
}

}  // namespace

float ChunkView::value(std::size_t i) const {
  assert(i < header.count);
  return load_le(value_bytes.data() + 4 * i);
}

void ChunkView::copy_to(std::span<float> dest) const {
  assert(dest.size() == header.count && value_bytes.size() == 4 * dest.size());
  if constexpr (kLittleHost) {
    std::memcpy(dest.data(), value_bytes.data(), value_bytes.size());
  } else {
    for (std::size_t i = 0; i < dest.size(); ++i) {
      dest[i] = load_le(value_bytes.data() + 4 * i);
    }
  }
}

std::size_t max_chunk_elements(std::size_t payload_bytes) {
  if (payload_bytes < chunk_payload_size(1)) return 0;
  return std::min((payload_bytes - kChunkHeaderSize) / 4, kMaxChunkElements);
}

core::Result<std::size_t> encode_chunk(const ChunkHeader& header, std::span<const float> values,
                                       std::span<std::uint8_t> out) {
  if (header.count == 0) return fail("count is 0");
  if (values.size() != header.count) {
    return fail("count " + std::to_string(header.count) + " but " + std::to_string(values.size()) +
                " values given");
  }
  if (std::uint64_t{header.offset} + header.count > header.tensor_elements) {
    return fail("offset " + std::to_string(header.offset) + " + count " +
                std::to_string(header.count) + " beyond the tensor's " +
                std::to_string(header.tensor_elements) + " elements");
  }
  const std::size_t size = chunk_payload_size(header.count);
  if (out.size() < size) {
    return fail("buffer of " + std::to_string(out.size()) + " bytes, need " + std::to_string(size));
  }
  std::uint8_t* p = out.data();
  p[0] = kChunkVersion;
  p[1] = kDtypeF32;
  put16(p + 2, header.flags);
  put16(p + 4, header.tensor_id);
  put16(p + 6, header.count);
  put32(p + 8, header.tensor_elements);
  put32(p + 12, header.offset);
  if constexpr (kLittleHost) {
    std::memcpy(p + kChunkHeaderSize, values.data(), 4 * values.size());
  } else {
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto bits = std::bit_cast<std::uint32_t>(values[i]);
      std::uint8_t* q = p + kChunkHeaderSize + 4 * i;
      q[0] = static_cast<std::uint8_t>(bits);
      q[1] = static_cast<std::uint8_t>(bits >> 8);
      q[2] = static_cast<std::uint8_t>(bits >> 16);
      q[3] = static_cast<std::uint8_t>(bits >> 24);
    }
  }
  return size;
}

core::Result<ChunkView> parse_chunk(std::span<const std::uint8_t> payload) {
  if (payload.size() < kChunkHeaderSize) {
    return fail("truncated header: " + std::to_string(payload.size()) + " bytes, need " +
                std::to_string(kChunkHeaderSize));
  }
  const std::uint8_t* p = payload.data();
  if (p[0] != kChunkVersion) return fail("unsupported version " + std::to_string(p[0]));
  if (p[1] != kDtypeF32) return fail("unsupported dtype " + std::to_string(p[1]));
  ChunkView v;
  v.header.flags = get16(p + 2);
  v.header.tensor_id = get16(p + 4);
  v.header.count = get16(p + 6);
  v.header.tensor_elements = get32(p + 8);
  v.header.offset = get32(p + 12);
  if (v.header.count == 0) return fail("count is 0");
  const std::size_t want = chunk_payload_size(v.header.count);
  if (payload.size() < want) {
    return fail("truncated: " + std::to_string(v.header.count) + " values need " +
                std::to_string(want) + " bytes, got " + std::to_string(payload.size()));
  }
  if (payload.size() > want) {
    return fail("length mismatch: " + std::to_string(v.header.count) + " values need " +
                std::to_string(want) + " bytes, got " + std::to_string(payload.size()));
  }
  if (v.header.tensor_elements == 0) return fail("tensor of 0 elements");
  if (std::uint64_t{v.header.offset} + v.header.count > v.header.tensor_elements) {
    return fail("offset " + std::to_string(v.header.offset) + " + count " +
                std::to_string(v.header.count) + " beyond the tensor's " +
                std::to_string(v.header.tensor_elements) + " elements");
  }
  v.value_bytes = payload.subspan(kChunkHeaderSize);
  return v;
}

ChunkRange ChunkPlan::operator[](std::size_t i) const {
  assert(i < chunks_);
  const std::uint64_t offset = std::uint64_t{per_chunk_} * i;
  const std::uint64_t count = std::min<std::uint64_t>(per_chunk_, total_ - offset);
  return {static_cast<std::uint32_t>(offset), static_cast<std::uint16_t>(count)};
}

std::optional<std::size_t> ChunkPlan::index_of(std::uint32_t offset, std::uint16_t count) const {
  if (per_chunk_ == 0 || offset % per_chunk_ != 0) return std::nullopt;
  const std::size_t i = offset / per_chunk_;
  if (i >= chunks_ || (*this)[i].count != count) return std::nullopt;
  return i;
}

core::Result<ChunkPlan> chunk_tensor(std::size_t total_elements, std::size_t chunk_elements) {
  if (total_elements == 0 || total_elements > UINT32_MAX) {
    return fail("tensor length " + std::to_string(total_elements) + " not in 1 .. 2^32-1");
  }
  if (chunk_elements == 0 || chunk_elements > kMaxChunkElements) {
    return fail("chunk length " + std::to_string(chunk_elements) + " not in 1 .. 65535");
  }
  ChunkPlan plan;
  plan.total_ = static_cast<std::uint32_t>(total_elements);
  plan.per_chunk_ = static_cast<std::uint16_t>(chunk_elements);
  plan.chunks_ = (total_elements + chunk_elements - 1) / chunk_elements;
  return plan;
}

}  // namespace predrop::ddl
