// libFuzzer target: MediaFile::open on mutated media files (issue 10, "MediaFile::open on mutated
// files"). The input is written to a file in /dev/shm (FFmpeg's demuxers read paths) and opened
// with a small payload limit so that every packetizer path (FU-A, AAC fragments) is reached.
// Whatever the bytes, open() must return an error or a MediaFile whose tables are consistent:
// every payload inside the arena and within max_payload, blocks and frames tiling the packet
// sequence in order.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "predrop/media/media_file.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_media_file: invariant broken: %s\n", what);
    std::abort();
  }
}

const std::string& scratch_path() {
  static const std::string path =
      "/dev/shm/predrop-fuzz-media-" + std::to_string(static_cast<long>(getpid()));
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = scratch_path();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);

  predrop::media::PacketizeOptions po;
  po.max_payload = 200;
  po.block = {predrop::media::BlockSize::Unit::kDuration, 200'000};
  auto opened = predrop::media::MediaFile::open(path, po);
  if (!opened.ok()) return 0;
  const predrop::media::MediaFile& m = *opened.value();
  const auto arena = m.arena();
  const auto packets = m.packets();
  for (const auto& p : packets) {
    check(p.payload_offset + p.payload_size <= arena.size(), "payload inside the arena");
    check(p.payload_size <= po.max_payload, "payload within max_payload");
    check(p.stream < m.streams().size(), "packet stream exists");
    check(p.frame < m.frames().size(), "packet frame exists");
  }
  std::uint32_t next_packet = 0;
  std::uint32_t next_frame = 0;
  for (const auto& b : m.blocks()) {
    check(b.first_packet == next_packet, "blocks tile the packets");
    check(b.first_frame == next_frame, "blocks tile the frames");
    next_packet += b.packet_count;
    next_frame += b.frame_count;
  }
  check(next_packet == packets.size(), "blocks cover every packet");
  check(next_frame == m.frames().size(), "blocks cover every frame");
  return 0;
}
