// Tensor chunk payload v1: annotated hex fixtures both ways, truncation and range rejection,
// bit-exact value round trips, and chunk planning.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "predrop/ddl/chunk.hpp"

using namespace predrop::ddl;
using Bytes = std::vector<std::uint8_t>;

namespace {

// flags PARTIAL, tensor 2, 2 values at offset 4 of a 10-element tensor: {1.0f, -2.5f}.
const Bytes kFixture = {
    0x01,                    // version 1
    0x01,                    // dtype 1 = f32 little-endian
    0x00, 0x01,              // flags = 0x0001 (PARTIAL), big-endian
    0x00, 0x02,              // tensor id = 2
    0x00, 0x02,              // count = 2
    0x00, 0x00, 0x00, 0x0a,  // tensor elements = 10
    0x00, 0x00, 0x00, 0x04,  // offset = 4
    0x00, 0x00, 0x80, 0x3f,  // 1.0f  = 0x3f800000, little-endian
    0x00, 0x00, 0x20, 0xc0,  // -2.5f = 0xc0200000, little-endian
};

const ChunkHeader kFixtureHeader{kChunkFlagPartial, 2, 2, 10, 4};

}  // namespace

TEST(Chunk, EncodeMatchesAnnotatedFixture) {
  const float values[] = {1.0f, -2.5f};
  Bytes out(64, 0xee);
  auto n = encode_chunk(kFixtureHeader, values, out);
  ASSERT_TRUE(n.ok()) << n.error().message;
  ASSERT_EQ(n.value(), kFixture.size());
  EXPECT_EQ(Bytes(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n.value())), kFixture);
  EXPECT_EQ(out[n.value()], 0xee) << "wrote past the payload";
}

TEST(Chunk, ParseMatchesAnnotatedFixture) {
  auto v = parse_chunk(kFixture);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->header, kFixtureHeader);
  EXPECT_EQ(v->value(0), 1.0f);
  EXPECT_EQ(v->value(1), -2.5f);
  float dest[2];
  v->copy_to(dest);
  EXPECT_EQ(dest[0], 1.0f);
  EXPECT_EQ(dest[1], -2.5f);
  EXPECT_EQ(v->value_bytes.data(), kFixture.data() + 16) << "a view, not a copy";
}

TEST(Chunk, UnalignedPayloadParses) {
  Bytes shifted(kFixture.size() + 3);
  std::memcpy(shifted.data() + 3, kFixture.data(), kFixture.size());
  auto v = parse_chunk(std::span(shifted).subspan(3));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value(1), -2.5f);
}

TEST(Chunk, EveryTruncationIsRejected) {
  for (std::size_t n = 0; n < kFixture.size(); ++n) {
    auto v = parse_chunk(std::span(kFixture).first(n));
    EXPECT_FALSE(v.ok()) << n << " bytes";
    if (!v.ok()) {
      EXPECT_NE(v.error().message.find("truncated"), std::string::npos) << n;
    }
  }
  EXPECT_EQ(parse_chunk(std::span(kFixture).first(20)).error().message,
            "tensor chunk: truncated: 2 values need 24 bytes, got 20");
}

TEST(Chunk, TrailingBytesAreRejected) {
  Bytes b = kFixture;
  b.push_back(0);
  auto v = parse_chunk(b);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("length mismatch"), std::string::npos);
}

TEST(Chunk, BadHeaderFieldsAreRejected) {
  auto with = [](std::size_t at, std::uint8_t value) {
    Bytes b = kFixture;
    b[at] = value;
    return parse_chunk(b);
  };
  EXPECT_EQ(with(0, 2).error().message, "tensor chunk: unsupported version 2");
  EXPECT_EQ(with(1, 2).error().message, "tensor chunk: unsupported dtype 2");
  Bytes zero_count = kFixture;
  zero_count[7] = 0;
  zero_count.resize(16);
  EXPECT_EQ(parse_chunk(zero_count).error().message, "tensor chunk: count is 0");
  Bytes zero_tensor = kFixture;
  zero_tensor[11] = 0;
  EXPECT_EQ(parse_chunk(zero_tensor).error().message, "tensor chunk: tensor of 0 elements");
  // Unknown flag bits are ignored (reserved for later, same version).
  auto flags = with(2, 0x80);
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(flags->header.flags, 0x8001);
}

TEST(Chunk, OffsetPlusCountBeyondTensorIsRejected) {
  Bytes b = kFixture;
  b[15] = 9;  // offset 9 + count 2 > 10
  EXPECT_EQ(parse_chunk(b).error().message,
            "tensor chunk: offset 9 + count 2 beyond the tensor's 10 elements");
  b[15] = 8;  // offset 8 + 2 = 10: the last two elements, fine
  EXPECT_TRUE(parse_chunk(b).ok());
  // 32-bit wrap must not sneak through: offset 0xffffffff + 2 in a 0xffffffff tensor.
  for (std::size_t i = 8; i < 16; ++i)
    b[i] = 0xff;
  EXPECT_FALSE(parse_chunk(b).ok());
}

TEST(Chunk, EncodeRejectsBadArguments) {
  const float two[] = {1.0f, 2.0f};
  Bytes out(64);
  EXPECT_FALSE(encode_chunk({0, 0, 0, 10, 0}, {}, out).ok());   // count 0
  EXPECT_FALSE(encode_chunk({0, 0, 3, 10, 0}, two, out).ok());  // count != values
  EXPECT_FALSE(encode_chunk({0, 0, 2, 10, 9}, two, out).ok());  // beyond tensor
  EXPECT_FALSE(encode_chunk({0, 0, 2, 10, 0}, two, std::span(out).first(23)).ok());  // small
  EXPECT_TRUE(encode_chunk({0, 0, 2, 10, 0}, two, std::span(out).first(24)).ok());
}

TEST(Chunk, ValuesRoundTripBitExactIncludingSpecials) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               std::numeric_limits<float>::denorm_min(),
                               -std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::infinity(),
                               std::bit_cast<float>(0x7fc00123u),  // NaN with payload
                               1e-30f,
                               3.14159265f};
  for (int i = 0; i < 300; ++i)
    values.push_back(static_cast<float>(i) * 0.37f - 50.0f);
  const ChunkHeader h{0, 0, static_cast<std::uint16_t>(values.size()), 100000, 777};
  Bytes out(chunk_payload_size(values.size()));
  ASSERT_TRUE(encode_chunk(h, values, out).ok());
  auto v = parse_chunk(out);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->header, h);
  std::vector<float> back(values.size());
  v->copy_to(back);
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(back[i]), std::bit_cast<std::uint32_t>(values[i])) << i;
    EXPECT_EQ(std::bit_cast<std::uint32_t>(v->value(i)), std::bit_cast<std::uint32_t>(values[i]));
  }
}

TEST(ChunkPlan, RangesAndLookup) {
  auto p = chunk_tensor(10, 4);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[0], (ChunkRange{0, 4}));
  EXPECT_EQ((*p)[1], (ChunkRange{4, 4}));
  EXPECT_EQ((*p)[2], (ChunkRange{8, 2}));
  EXPECT_EQ(p->index_of(4, 4), 1u);
  EXPECT_EQ(p->index_of(8, 2), 2u);
  EXPECT_FALSE(p->index_of(8, 4).has_value());   // the last chunk is short
  EXPECT_FALSE(p->index_of(2, 4).has_value());   // misaligned
  EXPECT_FALSE(p->index_of(12, 4).has_value());  // beyond
  auto exact = chunk_tensor(8, 4);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->size(), 2u);
  // The default MLP's gradient in default chunks.
  auto mlp = chunk_tensor(101770, kDefaultChunkElements);
  ASSERT_TRUE(mlp.ok());
  EXPECT_EQ(mlp->size(), 398u);
  EXPECT_EQ((*mlp)[397], (ChunkRange{397 * 256, 101770 - 397 * 256}));
}

TEST(ChunkPlan, InvalidSizesAreRejected) {
  EXPECT_FALSE(chunk_tensor(0, 4).ok());
  EXPECT_FALSE(chunk_tensor(10, 0).ok());
  EXPECT_FALSE(chunk_tensor(10, 65536).ok());
  EXPECT_FALSE(chunk_tensor(std::size_t{1} << 32, 256).ok());
  EXPECT_TRUE(chunk_tensor(0xffffffffu, 65535).ok());
}

TEST(ChunkPlan, MaxChunkElements) {
  EXPECT_EQ(max_chunk_elements(1040), 256u);
  EXPECT_EQ(max_chunk_elements(1043), 256u);
  EXPECT_EQ(max_chunk_elements(19), 0u);
  EXPECT_EQ(max_chunk_elements(20), 1u);
  EXPECT_EQ(max_chunk_elements(1u << 20), kMaxChunkElements);
  EXPECT_EQ(chunk_payload_size(kDefaultChunkElements), 1040u);
}
