#include "predrop/media/video_decoder.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <utility>

extern "C" {
#include <libavutil/opt.h>
}

#include "bitstream.hpp"
#include "h264_decoder_core.hpp"

namespace predrop::media {

// ---------------------------------------------------------------------------------------------
// YuvFrame

YuvFrame::YuvFrame(int width, int height, std::uint8_t y, std::uint8_t u, std::uint8_t v)
    : width_(width), height_(height) {
  const std::size_t luma = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
  const std::size_t chroma =
      static_cast<std::size_t>((width + 1) / 2) * static_cast<std::size_t>((height + 1) / 2);
  pixels_.assign(luma + 2 * chroma, 0);
  std::fill_n(pixels_.begin(), luma, y);
  std::fill_n(pixels_.begin() + static_cast<std::ptrdiff_t>(luma), chroma, u);
  std::fill_n(pixels_.begin() + static_cast<std::ptrdiff_t>(luma + chroma), chroma, v);
}

void YuvFrame::assign(const FrameView& view) {
  width_ = view.width;
  height_ = view.height;
  pts_ = view.pts;
  corrupt_ = view.corrupt;
  std::size_t total = 0;
  for (int p = 0; p < 3; ++p) {
    total += static_cast<std::size_t>(view.plane_width(p)) *
             static_cast<std::size_t>(view.plane_height(p));
  }
  pixels_.resize(total);  // keeps capacity, so same-size frames never reallocate
  std::uint8_t* out = pixels_.data();
  for (int p = 0; p < 3; ++p) {
    const auto w = static_cast<std::size_t>(view.plane_width(p));
    for (int row = 0; row < view.plane_height(p); ++row) {
      std::memcpy(out, view.data[p] + static_cast<std::ptrdiff_t>(row) * view.stride[p], w);
      out += w;
    }
  }
}

FrameView YuvFrame::view() const {
  FrameView v;
  v.width = width_;
  v.height = height_;
  v.pts = pts_;
  v.corrupt = corrupt_;
  if (width_ == 0) return v;
  const std::uint8_t* base = pixels_.data();
  std::size_t offset = 0;
  for (int p = 0; p < 3; ++p) {
    v.data[p] = base + offset;
    v.stride[p] = v.plane_width(p);
    offset +=
        static_cast<std::size_t>(v.plane_width(p)) * static_cast<std::size_t>(v.plane_height(p));
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// H264DecoderCore

namespace detail {

core::Result<H264DecoderCore> H264DecoderCore::open(const AVCodecParameters* par,
                                                    std::span<const std::uint8_t> annexb_extra,
                                                    Codec wanted) {
  ensure_libav_initialized();
  AVCodecID id = AV_CODEC_ID_H264;
  if (par) {
    id = par->codec_id;
  } else if (wanted == Codec::kH265) {
    id = AV_CODEC_ID_HEVC;
  } else if (wanted == Codec::kVp8) {
    id = AV_CODEC_ID_VP8;
  } else if (wanted == Codec::kVp9) {
    id = AV_CODEC_ID_VP9;
  } else if (wanted == Codec::kAv1) {
    id = AV_CODEC_ID_AV1;
  }
  // AV1: libdav1d, else libaom; FFmpeg's own "av1" decoder only drives hardware decoders. The
  // reference and the received stream take the same one, so their pictures compare bit for bit.
  const AVCodec* codec = nullptr;
  if (id == AV_CODEC_ID_AV1) {
    codec = avcodec_find_decoder_by_name("libdav1d");
    if (!codec) codec = avcodec_find_decoder_by_name("libaom-av1");
  }
  if (!codec) codec = avcodec_find_decoder(id);
  if (!codec) {
    return core::make_error(std::string("FFmpeg has no decoder for ") + avcodec_get_name(id));
  }
  H264DecoderCore core;
  core.context_.reset(avcodec_alloc_context3(codec));
  core.packet_.reset(av_packet_alloc());
  core.frame_.reset(av_frame_alloc());
  if (!core.context_ || !core.packet_ || !core.frame_) {
    return core::make_error("out of memory creating the H.264 decoder");
  }
  AVCodecContext* c = core.context_.get();
  if (par) {
    if (int err = avcodec_parameters_to_context(c, par); err < 0) {
      return core::make_error("bad H.264 parameters: " + av_error_text(err));
    }
  } else if (!annexb_extra.empty()) {
    c->extradata =
        static_cast<std::uint8_t*>(av_mallocz(annexb_extra.size() + AV_INPUT_BUFFER_PADDING_SIZE));
    if (!c->extradata) return core::make_error("out of memory creating the H.264 decoder");
    std::memcpy(c->extradata, annexb_extra.data(), annexb_extra.size());
    c->extradata_size = static_cast<int>(annexb_extra.size());
  }
  // Loss must never stop decoding: conceal (guess motion vectors, deblock), output every picture
  // including damaged ones and those before the first keyframe, and never abort on errors.
  c->thread_count = 1;  // bit-exact and without frame-thread delay
  c->error_concealment = FF_EC_GUESS_MVS | FF_EC_DEBLOCK;
  c->flags |= AV_CODEC_FLAG_OUTPUT_CORRUPT;
  c->flags2 |= AV_CODEC_FLAG2_SHOW_ALL;
  c->err_recognition = AV_EF_IGNORE_ERR;
  if (int err = avcodec_open2(c, codec, nullptr); err < 0) {
    return core::make_error("cannot open the H.264 decoder: " + av_error_text(err));
  }
  core.input_.reserve(std::size_t{1} << 18);
  return core;
}

bool H264DecoderCore::send(std::span<const std::uint8_t> data, std::int64_t pts) {
  ++stats_.access_units;
  // libavcodec reads up to AV_INPUT_BUFFER_PADDING_SIZE bytes past the end, which must be 0.
  input_.resize(data.size() + AV_INPUT_BUFFER_PADDING_SIZE);
  std::memcpy(input_.data(), data.data(), data.size());
  std::memset(input_.data() + data.size(), 0, AV_INPUT_BUFFER_PADDING_SIZE);
  AVPacket* p = packet_.get();
  av_packet_unref(p);
  p->data = input_.data();
  p->size = static_cast<int>(data.size());
  p->pts = pts;
  p->dts = AV_NOPTS_VALUE;
  int err = avcodec_send_packet(context_.get(), p);
  if (err == AVERROR(EAGAIN)) {
    // Cannot happen with the drain-after-every-send pattern, but stay correct if it does.
    receive([](const FrameView&) {});
    err = avcodec_send_packet(context_.get(), p);
  }
  av_packet_unref(p);
  if (err < 0) {
    ++stats_.rejected;
    return false;
  }
  return true;
}

void H264DecoderCore::send_eof() {
  avcodec_send_packet(context_.get(), nullptr);
}

bool H264DecoderCore::to_view(FrameView& view) {
  const AVFrame* f = frame_.get();
  if (f->width <= 0 || f->height <= 0) return false;
  view.width = f->width;
  view.height = f->height;
  view.pts = f->pts != AV_NOPTS_VALUE ? f->pts : f->best_effort_timestamp;
  view.corrupt = (f->flags & AV_FRAME_FLAG_CORRUPT) || f->decode_error_flags != 0;
  const auto format = static_cast<AVPixelFormat>(f->format);
  if (format == AV_PIX_FMT_YUV420P || format == AV_PIX_FMT_YUVJ420P) {
    // Same memory layout (J only differs in the signalled range); no conversion needed.
    for (int p = 0; p < 3; ++p) {
      view.data[p] = f->data[p];
      view.stride[p] = f->linesize[p];
    }
    return true;
  }
  // High 4:2:2 / 4:4:4 / 10-bit streams: convert to 8-bit 4:2:0 with a cached scaler.
  sws_.reset(sws_getCachedContext(sws_.release(), f->width, f->height, format, f->width, f->height,
                                  AV_PIX_FMT_YUV420P, SWS_BICUBIC, nullptr, nullptr, nullptr));
  if (!sws_) return false;
  if (!converted_ || converted_->width != f->width || converted_->height != f->height) {
    converted_.reset(av_frame_alloc());
    if (!converted_) return false;
    converted_->format = AV_PIX_FMT_YUV420P;
    converted_->width = f->width;
    converted_->height = f->height;
    if (av_frame_get_buffer(converted_.get(), 0) < 0) {
      converted_.reset();
      return false;
    }
  }
  sws_scale(sws_.get(), f->data, f->linesize, 0, f->height, converted_->data, converted_->linesize);
  for (int p = 0; p < 3; ++p) {
    view.data[p] = converted_->data[p];
    view.stride[p] = converted_->linesize[p];
  }
  return true;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// VideoDecoder

struct VideoDecoder::Impl {
  detail::H264DecoderCore core;
  Callback on_frame;
};

VideoDecoder::VideoDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VideoDecoder::~VideoDecoder() = default;

core::Result<std::unique_ptr<VideoDecoder>> VideoDecoder::create(
    Callback on_frame, const VideoDecoderOptions& options) {
  auto core = detail::H264DecoderCore::open(nullptr, options.parameter_sets, options.codec);
  if (!core) return core.error();
  auto impl = std::unique_ptr<Impl>(new Impl{std::move(core).value(), std::move(on_frame)});
  return std::unique_ptr<VideoDecoder>(new VideoDecoder(std::move(impl)));
}

void VideoDecoder::decode(std::span<const std::uint8_t> access_unit, std::int64_t pts) {
  if (!access_unit.empty()) impl_->core.send(access_unit, pts);
  impl_->core.receive(impl_->on_frame);
}

void VideoDecoder::flush() {
  impl_->core.send_eof();
  impl_->core.receive(impl_->on_frame);
  impl_->core.reset();
}

const DecoderStats& VideoDecoder::stats() const {
  return impl_->core.stats();
}

// ---------------------------------------------------------------------------------------------
// ReferenceDecoder

struct ReferenceDecoder::Impl {
  std::string path;
  ReferenceOptions options;
  detail::InputFormatPtr format;
  int stream = -1;
  AVRational time_base{1, 1};
  std::int64_t origin = 0;
  std::vector<std::int64_t> sorted_pts;  // display order, stream time base
  std::optional<detail::H264DecoderCore> core;
  detail::PacketPtr packet;
  bool eof = false;
  // Decoded window: frames [first, first + cache.size()).
  std::size_t first = 0;
  std::deque<YuvFrame> cache;
  std::vector<YuvFrame> spare;  // recycled storage for the window
  std::size_t next_index = 0;   // display index the next decoded frame fills
  YuvFrame last;                // last decoded frame, to stand in for frames never output

  core::Status restart();
  core::Status decode_more();
  void store(const FrameView& view);
  void push_copy(const FrameView& view, std::size_t index);
};

core::Status ReferenceDecoder::Impl::restart() {
  format.reset();
  core.reset();
  auto opened = detail::open_input(path);
  if (!opened) return opened.error();
  format = std::move(opened).value();
  auto decoder = detail::H264DecoderCore::open(format->streams[stream]->codecpar, {});
  if (!decoder) return decoder.error();
  core.emplace(std::move(decoder).value());
  eof = false;
  for (auto& f : cache) {
    spare.push_back(std::move(f));
  }
  cache.clear();
  first = 0;
  next_index = 0;
  return core::Ok{};
}

void ReferenceDecoder::Impl::push_copy(const FrameView& view, std::size_t index) {
  if (cache.empty()) first = index;
  if (!spare.empty()) {
    cache.push_back(std::move(spare.back()));
    spare.pop_back();
  } else {
    cache.emplace_back();
  }
  cache.back().assign(view);
  if (options.max_cached_frames > 0 && cache.size() > options.max_cached_frames) {
    spare.push_back(std::move(cache.front()));
    cache.pop_front();
    ++first;
  }
}

void ReferenceDecoder::Impl::store(const FrameView& view) {
  // The display index comes from the frame's pts, so frames the decoder skipped leave a hole
  // that is filled with the previous picture, as a player would show it.
  const std::int64_t pts = view.pts;
  auto it = std::lower_bound(sorted_pts.begin(), sorted_pts.end(), pts);
  if (it == sorted_pts.end() || *it != pts) return;  // not a timestamp of this stream
  const auto index = static_cast<std::size_t>(it - sorted_pts.begin());
  if (index < next_index) return;  // duplicate pts
  FrameView stamped = view;
  while (next_index < index && !last.empty()) {
    FrameView repeat = last.view();
    repeat.pts =
        detail::to_us(sorted_pts[next_index], time_base) - detail::to_us(origin, time_base);
    push_copy(repeat, next_index++);
  }
  next_index = index;
  stamped.pts = detail::to_us(pts, time_base) - detail::to_us(origin, time_base);
  push_copy(stamped, next_index++);
  last.assign(stamped);
}

core::Status ReferenceDecoder::Impl::decode_more() {
  auto sink = [this](const FrameView& v) { store(v); };
  if (eof) return core::make_error("end of stream");
  for (;;) {
    const int err = av_read_frame(format.get(), packet.get());
    if (err < 0) {
      // End of file or an unreadable tail: drain what the decoder holds and stop.
      core->send_eof();
      core->receive(sink);
      eof = true;
      return core::Ok{};
    }
    if (packet->stream_index != stream) {
      av_packet_unref(packet.get());
      continue;
    }
    const std::int64_t pts = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
    core->send(std::span<const std::uint8_t>(packet->data, static_cast<std::size_t>(packet->size)),
               pts);
    av_packet_unref(packet.get());
    const std::size_t before = next_index;
    core->receive(sink);
    if (next_index != before) return core::Ok{};
  }
}

ReferenceDecoder::ReferenceDecoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ReferenceDecoder::~ReferenceDecoder() = default;

core::Result<std::unique_ptr<ReferenceDecoder>> ReferenceDecoder::open(
    const std::string& path, const ReferenceOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  impl->packet.reset(av_packet_alloc());
  if (!impl->packet) return core::make_error("out of memory");
  {
    // Index pass: every video pts, for display indices that match MediaFile's.
    auto opened = detail::open_input(path);
    if (!opened) return opened.error();
    detail::InputFormatPtr format = std::move(opened).value();
    const auto choice = detail::find_video_stream(format.get());
    if (choice.index < 0) {
      return core::make_error(
          "'" + path + "': " +
          (choice.unsupported.empty() ? std::string("no video stream") : choice.unsupported));
    }
    impl->stream = choice.index;
    const AVStream* st = format->streams[choice.index];
    impl->time_base = st->time_base;
    impl->origin = detail::stream_origin(st);
    std::int64_t last = AV_NOPTS_VALUE;
    while (av_read_frame(format.get(), impl->packet.get()) >= 0) {
      if (impl->packet->stream_index == choice.index) {
        std::int64_t pts =
            impl->packet->pts != AV_NOPTS_VALUE ? impl->packet->pts : impl->packet->dts;
        // Same rule as MediaFile: a missing timestamp continues from the previous one.
        if (pts == AV_NOPTS_VALUE && last != AV_NOPTS_VALUE) {
          pts = last + std::max<std::int64_t>(1, impl->packet->duration);
        }
        if (pts != AV_NOPTS_VALUE) impl->sorted_pts.push_back(pts);
        last = pts;
      }
      av_packet_unref(impl->packet.get());
    }
    std::sort(impl->sorted_pts.begin(), impl->sorted_pts.end());
    impl->sorted_pts.erase(std::unique(impl->sorted_pts.begin(), impl->sorted_pts.end()),
                           impl->sorted_pts.end());
    if (impl->sorted_pts.empty()) return core::make_error("'" + path + "': no video frames");
  }
  if (auto ok = impl->restart(); !ok) return ok.error();
  return std::unique_ptr<ReferenceDecoder>(new ReferenceDecoder(std::move(impl)));
}

std::size_t ReferenceDecoder::frame_count() const {
  return impl_->sorted_pts.size();
}

std::int64_t ReferenceDecoder::pts_us(std::size_t index) const {
  return detail::to_us(impl_->sorted_pts.at(index), impl_->time_base) -
         detail::to_us(impl_->origin, impl_->time_base);
}

core::Result<FrameView> ReferenceDecoder::frame(std::size_t index) {
  Impl& d = *impl_;
  if (index >= d.sorted_pts.size()) {
    return core::make_error("reference frame " + std::to_string(index) + " out of range (" +
                            std::to_string(d.sorted_pts.size()) + " frames)");
  }
  if (!d.cache.empty() && index < d.first) {
    if (auto ok = d.restart(); !ok) return ok.error();
  }
  while (d.next_index <= index && !d.eof) {
    if (auto ok = d.decode_more(); !ok) return ok.error();
  }
  if (d.next_index <= index) {
    // The decoder ended early (damaged tail): repeat the last picture, as a player would.
    if (d.last.empty()) {
      return core::make_error("reference frame " + std::to_string(index) + " could not be decoded");
    }
    while (d.next_index <= index) {
      FrameView repeat = d.last.view();
      repeat.pts = pts_us(d.next_index);
      d.push_copy(repeat, d.next_index++);
    }
  }
  if (index < d.first) {
    return core::make_error("reference frame " + std::to_string(index) + " fell out of the cache");
  }
  return d.cache[index - d.first].view();
}

}  // namespace predrop::media
