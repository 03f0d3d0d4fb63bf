// AV1 RTP packetization (see av1_packetizer.hpp).
#include "av1_packetizer.hpp"

#include <algorithm>

namespace predrop::media::detail {

std::optional<std::pair<std::uint32_t, std::size_t>> read_leb128(std::span<const std::uint8_t> in) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < 8 && i < in.size(); ++i) {
    value |= std::uint64_t{in[i] & 0x7fu} << (7 * i);
    if ((in[i] & 0x80) == 0) {
      if (value > 0xffffffffu) return std::nullopt;
      return std::pair{static_cast<std::uint32_t>(value), i + 1};
    }
  }
  return std::nullopt;
}

void write_leb128(std::uint32_t value, std::vector<std::uint8_t>& out) {
  do {
    std::uint8_t byte = value & 0x7f;
    value >>= 7;
    if (value != 0) byte |= 0x80;
    out.push_back(byte);
  } while (value != 0);
}

bool split_av1_obus(std::span<const std::uint8_t> tu, std::vector<Av1Obu>& out) {
  std::size_t i = 0;
  while (i < tu.size()) {
    // obu_header (§5.3.2): forbidden(1) type(4) extension_flag(1) has_size_field(1) reserved(1).
    const std::uint8_t h = tu[i];
    if (h & 0x80) return false;
    Av1Obu obu;
    obu.type = (h >> 3) & 0x0f;
    obu.has_extension = (h & 0x04) != 0;
    const bool has_size = (h & 0x02) != 0;
    const std::size_t header_size = obu.has_extension ? 2 : 1;
    if (tu.size() - i < header_size) return false;
    obu.header = tu.subspan(i, header_size);
    if (obu.has_extension) {
      // obu_extension_header (§5.3.3): temporal_id(3) spatial_id(2) reserved(3).
      obu.temporal_id = tu[i + 1] >> 5;
      obu.spatial_id = (tu[i + 1] >> 3) & 3;
    }
    i += header_size;
    std::size_t size = tu.size() - i;
    if (has_size) {
      const auto leb = read_leb128(tu.subspan(i));
      if (!leb || leb->first > tu.size() - i - leb->second) return false;
      i += leb->second;
      size = leb->first;
    }
    obu.payload = tu.subspan(i, size);
    i += size;
    out.push_back(obu);
  }
  return true;
}

bool packetize_av1(std::span<const std::uint8_t> tu, bool new_sequence, std::size_t max_payload,
                   const std::function<void(std::span<const std::uint8_t>)>& emit) {
  std::vector<Av1Obu> obus;
  if (max_payload < 8 || !split_av1_obus(tu, obus)) return false;
  // The OBU elements: header with obu_has_size_field cleared, then the payload.
  std::vector<std::vector<std::uint8_t>> elements;
  for (const Av1Obu& obu : obus) {
    if (obu.type == kAv1TemporalDelimiter || obu.type == kAv1TileList || obu.type == kAv1Padding) {
      continue;
    }
    std::vector<std::uint8_t> e(obu.header.begin(), obu.header.end());
    e[0] &= static_cast<std::uint8_t>(~0x02u);
    e.insert(e.end(), obu.payload.begin(), obu.payload.end());
    elements.push_back(std::move(e));
  }
  std::vector<std::uint8_t> packet;
  bool first_packet = true;
  bool continues = false;  // the next packet starts with the rest of an element (Z)
  auto start = [&] {
    packet.assign(1, 0);
    if (continues) packet[0] |= 0x80;
    if (first_packet && new_sequence) packet[0] |= 0x08;
    first_packet = false;
  };
  auto finish = [&](bool fragment_follows) {
    if (fragment_follows) packet[0] |= 0x40;
    emit(packet);
    continues = fragment_follows;
  };
  start();
  for (const auto& element : elements) {
    std::span<const std::uint8_t> rest(element);
    while (!rest.empty()) {
      // Room for a length (at most 3 bytes below 2^21) and at least one byte of data.
      std::vector<std::uint8_t> length;
      write_leb128(static_cast<std::uint32_t>(rest.size()), length);
      const std::size_t room = max_payload - packet.size();
      if (length.size() + rest.size() <= room) {
        packet.insert(packet.end(), length.begin(), length.end());
        packet.insert(packet.end(), rest.begin(), rest.end());
        break;
      }
      if (room < 4 + 1) {  // too little for a useful fragment: close this packet
        finish(false);
        start();
        continue;
      }
      // A fragment filling the packet: the largest `take` whose length fits beside it (a
      // payload is far below 2^21, so 3 length bytes always do).
      std::size_t take = 0;
      for (std::size_t bytes = 1; bytes <= 3; ++bytes) {
        length.clear();
        write_leb128(static_cast<std::uint32_t>(room - bytes), length);
        if (length.size() <= bytes) {
          take = room - bytes;
          break;
        }
      }
      packet.insert(packet.end(), length.begin(), length.end());
      packet.insert(packet.end(), rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(take));
      rest = rest.subspan(take);
      finish(true);
      start();
    }
  }
  if (packet.size() > 1) finish(false);
  return true;
}

}  // namespace predrop::media::detail
