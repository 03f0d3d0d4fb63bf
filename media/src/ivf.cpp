#include "predrop/media/ivf.hpp"

#include <memory>

namespace predrop::media {

namespace {

template <std::size_t N>
void put_le(std::array<std::uint8_t, N>& out, std::size_t at, std::uint64_t value,
            std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) {
    out[at + i] = static_cast<std::uint8_t>(value >> (8 * i));
  }
}

}  // namespace

std::optional<std::array<char, 4>> ivf_fourcc(Codec codec) {
  switch (codec) {
    case Codec::kVp8:
      return std::array<char, 4>{'V', 'P', '8', '0'};
    case Codec::kVp9:
      return std::array<char, 4>{'V', 'P', '9', '0'};
    case Codec::kAv1:
      return std::array<char, 4>{'A', 'V', '0', '1'};
    default:
      return std::nullopt;
  }
}

std::array<std::uint8_t, 32> ivf_file_header(const IvfHeader& header) {
  std::array<std::uint8_t, 32> out{};
  out[0] = 'D';
  out[1] = 'K';
  out[2] = 'I';
  out[3] = 'F';
  put_le(out, 4, 0, 2);   // version
  put_le(out, 6, 32, 2);  // header size
  for (std::size_t i = 0; i < 4; ++i) {
    out[8 + i] = static_cast<std::uint8_t>(header.fourcc[i]);
  }
  put_le(out, 12, header.width, 2);
  put_le(out, 14, header.height, 2);
  put_le(out, 16, header.rate, 4);
  put_le(out, 20, header.scale, 4);
  put_le(out, 24, header.frames, 4);
  return out;  // bytes 28-31 unused, zero
}

std::array<std::uint8_t, 12> ivf_frame_header(std::uint32_t size, std::uint64_t timestamp) {
  std::array<std::uint8_t, 12> out{};
  put_le(out, 0, size, 4);
  put_le(out, 4, timestamp, 8);
  return out;
}

core::Result<std::unique_ptr<IvfWriter>> IvfWriter::create(const std::string& path,
                                                           const IvfHeader& header) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return core::make_error("cannot write " + path);
  const auto bytes = ivf_file_header(header);
  if (std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) {
    std::fclose(file);
    return core::make_error("cannot write " + path);
  }
  return std::unique_ptr<IvfWriter>(new IvfWriter(file, header));
}

IvfWriter::~IvfWriter() {
  close();
}

void IvfWriter::write(std::span<const std::uint8_t> frame, std::uint64_t timestamp) {
  if (file_ == nullptr) return;
  const auto head = ivf_frame_header(static_cast<std::uint32_t>(frame.size()), timestamp);
  std::fwrite(head.data(), 1, head.size(), file_);
  std::fwrite(frame.data(), 1, frame.size(), file_);
  ++header_.frames;
}

void IvfWriter::close() {
  if (file_ == nullptr) return;
  // The frame count is known only now: rewrite the header in place.
  const auto bytes = ivf_file_header(header_);
  if (std::fseek(file_, 0, SEEK_SET) == 0) std::fwrite(bytes.data(), 1, bytes.size(), file_);
  std::fclose(file_);
  file_ = nullptr;
}

}  // namespace predrop::media
