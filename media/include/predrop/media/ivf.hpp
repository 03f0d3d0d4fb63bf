#pragma once
// IVF, the container libvpx and libaom write (and FFmpeg's ivf demuxer reads): a 32-byte file
// header, then each frame as a 12-byte header (size, 64-bit time stamp) and its bytes, all
// little-endian. The measuring client saves VP8/VP9/AV1 access units in it (--save) so that they
// decode with the ffmpeg CLI; the headers are pure functions, IvfWriter writes a file.
#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "predrop/core/result.hpp"
#include "predrop/media/codec.hpp"

namespace predrop::media {

/// The IVF four-character code of a codec ("VP80", "VP90", "AV01"), or nullopt when IVF cannot
/// carry it (H.264/H.265 are saved as Annex B instead).
std::optional<std::array<char, 4>> ivf_fourcc(Codec codec);

/// IVF file header fields (time base = scale / rate seconds: 1/90000 for RTP time stamps).
struct IvfHeader {
  std::array<char, 4> fourcc{};
  std::uint16_t width = 0;
  std::uint16_t height = 0;
  std::uint32_t rate = 90000;
  std::uint32_t scale = 1;
  std::uint32_t frames = 0;
};

/// The 32-byte file header: "DKIF", version 0, header size 32, fourcc, width, height, rate,
/// scale, frame count, 4 unused bytes.
std::array<std::uint8_t, 32> ivf_file_header(const IvfHeader& header);

/// The 12-byte frame header: the frame's size in bytes, then its time stamp.
std::array<std::uint8_t, 12> ivf_frame_header(std::uint32_t size, std::uint64_t timestamp);

/// Writes an IVF file frame by frame; the frame count in the header is set on close.
class IvfWriter {
 public:
  /// Creates `path` and writes the header (frame count 0 until close()).
  static core::Result<std::unique_ptr<IvfWriter>> create(const std::string& path,
                                                         const IvfHeader& header);
  ~IvfWriter();
  IvfWriter(const IvfWriter&) = delete;
  IvfWriter& operator=(const IvfWriter&) = delete;
  IvfWriter(IvfWriter&&) = delete;
  IvfWriter& operator=(IvfWriter&&) = delete;

  /// Appends one frame (an access unit: a VP8 frame, a VP9 superframe, an AV1 temporal unit).
  void write(std::span<const std::uint8_t> frame, std::uint64_t timestamp);
  /// Rewrites the header's frame count and closes the file (also done by the destructor).
  void close();

 private:
  IvfWriter(std::FILE* file, const IvfHeader& header) : file_(file), header_(header) {}
  std::FILE* file_;
  IvfHeader header_;
};

}  // namespace predrop::media
