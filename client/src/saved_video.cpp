// predrop-client --save; see saved_video.hpp.
#include "saved_video.hpp"

#include <utility>

namespace predrop::client {

core::Result<std::unique_ptr<SavedVideo>> SavedVideo::create(const std::string& path,
                                                             media::Codec codec,
                                                             const media::MediaFile& reference) {
  std::unique_ptr<SavedVideo> saved(new SavedVideo());
  if (const auto fourcc = media::ivf_fourcc(codec)) {
    media::IvfHeader header;
    header.fourcc = *fourcc;
    if (const auto v = reference.video_stream()) {
      header.width = static_cast<std::uint16_t>(reference.streams()[*v].width);
      header.height = static_cast<std::uint16_t>(reference.streams()[*v].height);
    }
    auto writer = media::IvfWriter::create(path, header);
    if (!writer) return writer.error();
    saved->ivf_ = std::move(writer.value());
    return saved;
  }
  saved->annex_b_ = std::fopen(path.c_str(), "wb");
  if (saved->annex_b_ == nullptr) return core::make_error("cannot write " + path);
  return saved;
}

SavedVideo::~SavedVideo() {
  if (annex_b_ != nullptr) std::fclose(annex_b_);
}

void SavedVideo::write(std::span<const std::uint8_t> access_unit, std::uint32_t media_timestamp) {
  if (annex_b_ != nullptr) std::fwrite(access_unit.data(), 1, access_unit.size(), annex_b_);
  if (ivf_) ivf_->write(access_unit, media_timestamp);
}

}  // namespace predrop::client
