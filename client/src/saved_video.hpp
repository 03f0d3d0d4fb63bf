#pragma once
// Private to client/src: predrop-client --save, the received video's access units in a file as
// they left the depacketizer (before decoding): H.264/H.265 as an Annex B byte stream, VP8/VP9/AV1
// in IVF (media/ivf.hpp), so that a player or ffprobe can read what the client got.
// Threading: the client's loop thread.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>

#include "predrop/core/result.hpp"
#include "predrop/media/codec.hpp"
#include "predrop/media/ivf.hpp"
#include "predrop/media/media_file.hpp"

namespace predrop::client {

/// The file --save writes.
class SavedVideo {
 public:
  /// Creates `path`: IVF for the codecs it carries (time base 1/90000, the picture size of the
  /// reference's video), Annex B otherwise.
  static core::Result<std::unique_ptr<SavedVideo>> create(const std::string& path,
                                                          media::Codec codec,
                                                          const media::MediaFile& reference);
  ~SavedVideo();
  SavedVideo(const SavedVideo&) = delete;
  SavedVideo& operator=(const SavedVideo&) = delete;

  /// Appends one access unit; `media_timestamp` (its RTP timestamp from the video's base) is
  /// its IVF frame time.
  void write(std::span<const std::uint8_t> access_unit, std::uint32_t media_timestamp);

 private:
  SavedVideo() = default;

  std::FILE* annex_b_ = nullptr;
  std::unique_ptr<media::IvfWriter> ivf_;
};

}  // namespace predrop::client
