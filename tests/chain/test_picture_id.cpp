// PictureIDs renumbered over the pictures sent (chain/picture_id.hpp): a browser takes a VP8/VP9
// picture without temporal-layer fields as referencing PictureID - 1, so a pre-discarded picture
// must leave no gap, while the packets of one picture keep one number.
#include "predrop/chain/picture_id.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace predrop::chain {
namespace {

// A VP8 payload descriptor with X = 1, I = 1, M = 1 and `id`, then one payload byte.
std::vector<std::uint8_t> vp8(std::uint16_t id, bool start = true) {
  return {static_cast<std::uint8_t>(start ? 0x90 : 0x80), 0x80,
          static_cast<std::uint8_t>(0x80 | (id >> 8)), static_cast<std::uint8_t>(id), 0x55};
}
// A VP9 descriptor with I = 1, M = 1 and `id`, then one payload byte.
std::vector<std::uint8_t> vp9(std::uint16_t id) {
  return {0x8c, static_cast<std::uint8_t>(0x80 | (id >> 8)), static_cast<std::uint8_t>(id), 0x55};
}
std::uint16_t id_at(const std::vector<std::uint8_t>& p, std::size_t at) {
  return static_cast<std::uint16_t>(((p[at] & 0x7f) << 8) | p[at + 1]);
}

TEST(PictureIdRenumber, DiscardedPicturesLeaveNoGapAndAPicturesPacketsShareOneNumber) {
  PictureIdRenumber r(PictureIdField::kVp8);
  // Source pictures 100..107; 101, 103 and 104 pre-discarded (the 0-2-1-2 pattern's layer 2 and
  // one layer-1 picture); 102 and 106 are two packets each.
  const std::vector<std::uint16_t> sent_pictures{100, 102, 102, 105, 106, 106, 107};
  std::vector<std::uint16_t> out;
  for (std::size_t i = 0; i < sent_pictures.size(); ++i) {
    const bool start = i == 0 || sent_pictures[i] != sent_pictures[i - 1];
    auto p = vp8(sent_pictures[i], start);
    EXPECT_GE(r.rewrite(p), 0);
    EXPECT_EQ(p[0], start ? 0x90 : 0x80);  // the rest of the descriptor untouched
    EXPECT_EQ(p[1], 0x80);
    EXPECT_EQ(p[2] & 0x80, 0x80);  // still the 15-bit form
    EXPECT_EQ(p[4], 0x55);
    out.push_back(id_at(p, 2));
  }
  // The first keeps its number (with nothing discarded the output is the input).
  EXPECT_EQ(out, (std::vector<std::uint16_t>{100, 101, 101, 102, 103, 103, 104}));
}

TEST(PictureIdRenumber, NothingDiscardedChangesNothingAndTheNumbersWrapAt15Bits) {
  PictureIdRenumber r(PictureIdField::kVp9);
  for (std::uint16_t k = 0; k < 6; ++k) {
    const auto source = static_cast<std::uint16_t>((0x7ffd + k) & 0x7fff);
    auto p = vp9(source);
    EXPECT_EQ(r.rewrite(p), source);
    EXPECT_EQ(id_at(p, 1), source);
    EXPECT_EQ(p[0], 0x8c);
    EXPECT_EQ(p[3], 0x55);
  }
  // Then 5 source numbers go unsent: the next sent picture follows the last one sent.
  auto p = vp9(static_cast<std::uint16_t>((0x7ffd + 11) & 0x7fff));
  EXPECT_EQ(r.rewrite(p), 3);
}

TEST(PictureIdRenumber, PayloadsWithoutA15BitPictureIdAreLeftAlone) {
  PictureIdRenumber vp8r(PictureIdField::kVp8);
  std::vector<std::uint8_t> no_x{0x10, 0x80, 0x81, 0x02, 0x55};  // X = 0
  std::vector<std::uint8_t> no_i{0x90, 0x40, 0x81, 0x02, 0x55};  // I = 0 (L only)
  std::vector<std::uint8_t> short_id{0x90, 0x80, 0x05, 0x55};    // M = 0: 7-bit PictureID
  std::vector<std::uint8_t> truncated{0x90, 0x80, 0x81};
  for (auto* p : {&no_x, &no_i, &short_id, &truncated}) {
    const auto before = *p;
    EXPECT_EQ(vp8r.rewrite(*p), -1);
    EXPECT_EQ(*p, before);
  }
  PictureIdRenumber none;
  auto p = vp8(7);
  EXPECT_EQ(none.rewrite(p), -1);
  EXPECT_EQ(p, vp8(7));
  EXPECT_EQ(picture_id_offset(PictureIdField::kVp8, vp8(7)), 2U);
  EXPECT_EQ(picture_id_offset(PictureIdField::kVp9, vp9(7)), 1U);
}

}  // namespace
}  // namespace predrop::chain
