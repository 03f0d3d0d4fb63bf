// MediaFile::open: demux once with FFmpeg and hand each stream's samples to its packetizer
// (a VideoPacketizer per video codec: h264_, h265_, vp8_, vp9_, av1_packetizer; aac_ and
// opus_packetizer),
// then order the frames and cut the blocks
// (block_cutter), rank importance (importance) and lay the result out (emit). Runs once per
// file, off the packet path, so it may allocate freely; the result is immutable and shared.
#include "predrop/media/media_file.hpp"

#include <algorithm>
#include <cassert>
#include <limits>
#include <numeric>
#include <utility>

#include "aac_packetizer.hpp"
#include "av_util.hpp"
#include "bitstream.hpp"
#include "block_cutter.hpp"
#include "importance.hpp"
#include "opus_packetizer.hpp"
#include "predrop/media/mpa.hpp"
#include "predrop/media/pcm.hpp"
#include "staging.hpp"
#include "video_packetizer.hpp"

namespace predrop::media {

using detail::Bytes;
using detail::StagedFrame;
using detail::StagedPacket;

std::string StreamInfo::media() const {
  return kind == MediaKind::kVideo ? "video" : "audio";
}

std::string StreamInfo::sdp_attributes() const {
  const std::string pt = std::to_string(payload_type);
  std::string out = "a=rtpmap:" + pt + " " + encoding + "\r\n";
  if (!fmtp.empty()) out += "a=fmtp:" + pt + " " + fmtp + "\r\n";
  return out;
}

std::optional<std::uint32_t> MediaFile::display_index_for_rtp(std::uint32_t rtp_timestamp) const {
  // Presentation order is timestamp order (files shorter than 2^32 / 90 kHz = 13 h do not wrap).
  auto it = std::lower_bound(
      display_order_.begin(), display_order_.end(), rtp_timestamp,
      [&](std::uint32_t frame, std::uint32_t ts) { return frames_[frame].rtp_timestamp < ts; });
  if (it == display_order_.end() || frames_[*it].rtp_timestamp != rtp_timestamp) {
    return std::nullopt;
  }
  return static_cast<std::uint32_t>(it - display_order_.begin());
}

std::optional<std::uint32_t> MediaFile::block_for_display(std::uint32_t display_index) const {
  if (display_index >= display_order_.size()) return std::nullopt;
  return frames_[display_order_[display_index]].block;
}

namespace {
constexpr std::size_t kMaxWarningTexts = 16;

// The audio codecs served: their codec_of() is an audio Codec.
bool supported_audio(AVCodecID id) {
  const auto codec = detail::codec_of(id);
  return codec && !is_video(*codec);
}
}  // namespace

class MediaFileBuilder {
 public:
  MediaFileBuilder(std::string path, const PacketizeOptions& options)
      : path_(std::move(path)),
        options_(options),
        sink_(file_.arena_, staged_packets_),
        aac_(options.max_payload, warner()),
        opus_(options.max_payload, warner()) {}

  core::Result<std::shared_ptr<const MediaFile>> build();

 private:
  void warn(std::string text) {
    ++file_.warning_count_;
    if (file_.warnings_.size() < kMaxWarningTexts) file_.warnings_.push_back(std::move(text));
  }
  detail::Warn warner() {
    return [this](std::string text) { warn(std::move(text)); };
  }
  core::Status check_options() const;
  core::Status select_streams();
  void read_packets();
  void add_video(const AVPacket& packet);
  void add_audio(const AVPacket& packet);
  void add_pcm(const AVPacket& packet, std::int64_t pts);
  bool add_mpa(Bytes frame);
  std::optional<std::int64_t> packet_pts(const AVPacket& packet, int track);
  StagedFrame start_frame(std::int64_t pts, const AVPacket& packet, const AVStream* st,
                          std::uint32_t clock, std::uint8_t stream);
  void finish_frame(StagedFrame& f);
  std::uint32_t rtp_timestamp(std::int64_t pts, AVRational tb, std::uint32_t clock) const;
  void finish_stream_info();
  void emit();

  std::string path_;
  PacketizeOptions options_;
  MediaFile file_;
  detail::InputFormatPtr format_;
  std::vector<StagedPacket> staged_packets_;
  detail::PayloadSink sink_;
  std::unique_ptr<detail::VideoPacketizer> video_packetizer_;
  detail::AacPacketizer aac_;
  detail::OpusPacketizer opus_;
  PcmFormat pcm_;
  bool pcm_little_endian_ = false;
  std::vector<std::uint8_t> pcm_scratch_;  // one packet's samples in network order

  int video_index_ = -1;  // in the demuxer
  int audio_index_ = -1;
  AVRational origin_tb_{1, 1};
  std::int64_t origin_ = 0;
  std::int64_t last_pts_[2] = {AV_NOPTS_VALUE, AV_NOPTS_VALUE};

  std::vector<StagedFrame> video_;         // decode order
  std::vector<StagedFrame> audio_;         // read order
  std::vector<std::uint32_t> display_of_;  // video: decode position -> display index
  detail::BlockCuts cuts_;
};

core::Result<std::shared_ptr<const MediaFile>> MediaFile::open(const std::string& path,
                                                               const PacketizeOptions& options) {
  return MediaFileBuilder(path, options).build();
}

core::Status MediaFileBuilder::check_options() const {
  if (options_.max_payload < 64 || options_.max_payload > 65000) {
    return core::make_error("max_payload must be within 64..65000 bytes, got " +
                            std::to_string(options_.max_payload));
  }
  if (options_.block.value == 0) return core::make_error("block size must be positive");
  if (options_.block.unit == BlockSize::Unit::kDuration &&
      options_.block.value > std::uint64_t{std::numeric_limits<std::int64_t>::max() / 4}) {
    return core::make_error("block duration is too large");
  }
  return core::Ok{};
}

core::Result<std::shared_ptr<const MediaFile>> MediaFileBuilder::build() {
  file_.options_ = options_;
  if (auto ok = check_options(); !ok) return ok.error();
  auto format = detail::open_input(path_);
  if (!format) return format.error();
  format_ = std::move(format).value();
  if (auto ok = select_streams(); !ok) return ok.error();

  // Payloads plus a few header bytes per packet; one reservation avoids regrowth for most files.
  const std::int64_t size = format_->pb ? avio_size(format_->pb) : -1;
  if (size > 0) file_.arena_.reserve(static_cast<std::size_t>(size + size / 16));

  read_packets();
  if (video_.empty() && audio_.empty()) {
    return core::make_error("'" + path_ + "': no packet of a supported stream could be read");
  }
  if (!audio_.empty() && aac_.config().empty() &&
      format_->streams[audio_index_]->codecpar->codec_id == AV_CODEC_ID_AAC) {
    warn("AAC stream has neither extradata nor ADTS headers; audio dropped");
    audio_.clear();
  }
  if (video_.empty() && audio_.empty()) {
    return core::make_error("'" + path_ + "': no packet of a supported stream could be read");
  }
  finish_stream_info();
  display_of_ = detail::order_frames(video_, audio_, warner());
  cuts_ = detail::cut_blocks(video_, audio_, options_.block);
  detail::assign_importance(video_, audio_, display_of_,
                            static_cast<std::uint32_t>(cuts_.start_us.size()));
  emit();
  format_.reset();
  return std::shared_ptr<const MediaFile>(new MediaFile(std::move(file_)));
}

core::Status MediaFileBuilder::select_streams() {
  const auto video = detail::find_video_stream(format_.get());
  video_index_ = video.index;
  if (video.index < 0 && !video.unsupported.empty()) {
    file_.skipped_.push_back(video.unsupported + "; video not served");
  }
  for (unsigned i = 0; i < format_->nb_streams; ++i) {
    const AVCodecParameters* par = format_->streams[i]->codecpar;
    if (par->codec_type != AVMEDIA_TYPE_AUDIO) continue;
    if (supported_audio(par->codec_id)) {
      audio_index_ = static_cast<int>(i);
      break;
    }
    if (audio_index_ == -1) {
      const std::string text = std::string("audio codec ") + avcodec_get_name(par->codec_id) +
                               " is not supported (AAC, Opus, MP3, PCM s16/s24); stream ignored";
      warn(text);
      file_.skipped_.push_back(text);
      audio_index_ = -2;  // warned once
    }
  }
  if (audio_index_ < 0) audio_index_ = -1;
  if (video_index_ < 0 && audio_index_ < 0) {
    // A file whose only usable content is video of another codec keeps its clear error.
    if (!video.unsupported.empty()) {
      return core::make_error("'" + path_ + "': " + video.unsupported);
    }
    return core::make_error(
        "'" + path_ +
        "': no H.264, H.265, VP8, VP9 or AV1 video and no AAC, Opus, MP3 or PCM audio "
        "stream");
  }

  // Stream order in MediaFile: video first.
  if (video_index_ >= 0) {
    StreamInfo info;
    info.kind = MediaKind::kVideo;
    info.codec = video.codec;
    info.payload_type = options_.video_payload_type;
    info.clock_rate = 90000;
    file_.video_stream_ = static_cast<std::uint8_t>(file_.streams_.size());
    file_.streams_.push_back(info);

    const AVStream* st = format_->streams[video_index_];
    origin_tb_ = st->time_base;
    origin_ = detail::stream_origin(st);
    video_packetizer_ = detail::make_video_packetizer(video.codec, options_.max_payload, warner());
    video_packetizer_->configure(
        Bytes(st->codecpar->extradata,
              static_cast<std::size_t>(std::max(0, st->codecpar->extradata_size))));
  }
  if (audio_index_ >= 0) {
    const AVStream* st = format_->streams[audio_index_];
    const AVCodecParameters* par = st->codecpar;
    StreamInfo info;
    info.kind = MediaKind::kAudio;
    info.codec = *detail::codec_of(par->codec_id);
    info.payload_type = options_.audio_payload_type;
    info.channels = static_cast<std::uint16_t>(std::max(1, par->ch_layout.nb_channels));
    // RFC 7587 §4.1: Opus always uses a 48 kHz RTP clock; RFC 3640 and RFC 3551 §4.5.11 (L16,
    // L24 by RFC 3190 §4) use the sampling rate.
    // RFC 3551 §4.5.13 (MPA): 90 kHz whatever the sampling rate, on the static type 14.
    info.clock_rate = info.codec == Codec::kOpus ? 48000
                      : info.codec == Codec::kMp3
                          ? 90000
                          : static_cast<std::uint32_t>(std::max(1, par->sample_rate));
    if (info.codec == Codec::kMp3) info.payload_type = kMpaPayloadType;
    file_.audio_stream_ = static_cast<std::uint8_t>(file_.streams_.size());
    file_.streams_.push_back(info);
    if (is_pcm(info.codec)) {
      pcm_.sample_bytes = info.codec == Codec::kL16 ? 2 : 3;
      pcm_.channels = info.channels;
      pcm_.sample_rate = info.clock_rate;
      pcm_little_endian_ =
          par->codec_id == AV_CODEC_ID_PCM_S16LE || par->codec_id == AV_CODEC_ID_PCM_S24LE;
      if (pcm_frames_per_packet(pcm_, options_.max_payload) == 0) {
        return core::make_error("'" + path_ + "': one PCM sample frame exceeds max_payload");
      }
    }
    if (info.codec == Codec::kAac && par->extradata_size >= 2) {
      aac_.configure(Bytes(par->extradata, static_cast<std::size_t>(par->extradata_size)));
    }
    if (video_index_ < 0) {
      origin_tb_ = st->time_base;
      origin_ = detail::stream_origin(st);
    }
  }
  return core::Ok{};
}

std::uint32_t MediaFileBuilder::rtp_timestamp(std::int64_t pts, AVRational tb,
                                              std::uint32_t clock) const {
  const AVRational rtp_tb{1, static_cast<int>(clock)};
  // Modulo 2^32 (RFC 3550 §5.1): an audio priming frame before the origin wraps, and the
  // session's random offset is added modulo 2^32 anyway.
  const std::int64_t ts = av_rescale_q(pts, tb, rtp_tb) - av_rescale_q(origin_, origin_tb_, rtp_tb);
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(ts));
}

void MediaFileBuilder::read_packets() {
  detail::PacketPtr packet(av_packet_alloc());
  if (!packet) {
    warn("out of memory");
    return;
  }
  int err = 0;
  while ((err = av_read_frame(format_.get(), packet.get())) >= 0) {
    if (packet->stream_index == video_index_ && video_index_ >= 0) {
      add_video(*packet);
    } else if (packet->stream_index == audio_index_ && audio_index_ >= 0) {
      add_audio(*packet);
    }
    av_packet_unref(packet.get());
  }
  if (err != AVERROR_EOF) {
    warn("stopped reading after " + std::to_string(video_.size() + audio_.size()) +
         " frames: " + detail::av_error_text(err));
  }
  // A container that states its frame count (MP4) reveals a truncated file that simply ends.
  for (auto [index, count] :
       {std::pair{video_index_, video_.size()}, std::pair{audio_index_, audio_.size()}}) {
    if (index < 0) continue;
    const std::int64_t stated = format_->streams[index]->nb_frames;
    if (stated > 0 && static_cast<std::int64_t>(count) < stated) {
      warn("file ends early: " + std::to_string(count) + " of " + std::to_string(stated) +
           " frames of stream " + std::to_string(index) + " read");
    }
  }
}

std::optional<std::int64_t> MediaFileBuilder::packet_pts(const AVPacket& packet, int track) {
  std::int64_t pts = packet.pts != AV_NOPTS_VALUE ? packet.pts : packet.dts;
  if (pts == AV_NOPTS_VALUE) {
    const bool no_previous = last_pts_[track] == AV_NOPTS_VALUE || (track == 0 && video_.empty());
    if (no_previous) {
      warn(std::string(track == 0 ? "video" : "audio") + " packet without timestamp skipped");
      return std::nullopt;
    }
    pts = last_pts_[track] + std::max<std::int64_t>(1, packet.duration);
  }
  last_pts_[track] = pts;
  return pts;
}

StagedFrame MediaFileBuilder::start_frame(std::int64_t pts, const AVPacket& packet,
                                          const AVStream* st, std::uint32_t clock,
                                          std::uint8_t stream) {
  StagedFrame f;
  f.pts = pts;
  f.frame.pts_us = detail::to_us(pts, st->time_base) - detail::to_us(origin_, origin_tb_);
  f.frame.duration_us = packet.duration > 0 ? detail::to_us(packet.duration, st->time_base) : 0;
  f.frame.rtp_timestamp = rtp_timestamp(pts, st->time_base, clock);
  f.frame.stream = stream;
  f.first_staged = sink_.count();
  return f;
}

void MediaFileBuilder::finish_frame(StagedFrame& f) {
  f.staged_count = sink_.count() - f.first_staged;
  for (std::uint32_t i = f.first_staged; i < staged_packets_.size(); ++i) {
    f.frame.bytes += staged_packets_[i].size;
  }
}

void MediaFileBuilder::add_video(const AVPacket& packet) {
  const auto pts = packet_pts(packet, 0);
  if (!pts) return;
  const AVStream* st = format_->streams[video_index_];
  StagedFrame f = start_frame(*pts, packet, st, 90000, *file_.video_stream_);
  const Bytes sample(packet.data, static_cast<std::size_t>(std::max(0, packet.size)));
  const auto picture =
      video_packetizer_->add_sample(sample, (packet.flags & AV_PKT_FLAG_KEY) != 0, sink_);
  if (!picture) return;  // no picture: its units go with the next one
  f.frame.type = picture->type;
  f.frame.reference = picture->reference;
  f.frame.temporal_id = picture->temporal_id;
  finish_frame(f);
  video_.push_back(f);
}

void MediaFileBuilder::add_audio(const AVPacket& packet) {
  const auto pts = packet_pts(packet, 1);
  if (!pts) return;
  const AVStream* st = format_->streams[audio_index_];
  const StreamInfo& info = file_.streams_[*file_.audio_stream_];
  const Bytes au(packet.data, static_cast<std::size_t>(std::max(0, packet.size)));
  if (au.empty()) return;
  if (is_pcm(info.codec)) return add_pcm(packet, *pts);
  StagedFrame f = start_frame(*pts, packet, st, info.clock_rate, *file_.audio_stream_);
  f.frame.type = FrameType::kAudio;
  const bool staged = info.codec == Codec::kAac   ? aac_.add(au, sink_)
                      : info.codec == Codec::kMp3 ? add_mpa(au)
                                                  : opus_.add(au, sink_);
  if (!staged) return;
  finish_frame(f);
  audio_.push_back(f);
}

// PCM: the demuxer's packets (WAV: about 4 KiB) are cut into RTP packets of whole sample frames,
// each its own frame with the timestamp of its first sample (RFC 3551 §4.5.11: the clock counts
// sample frames), swapped to network order here, once.
void MediaFileBuilder::add_pcm(const AVPacket& packet, std::int64_t pts) {
  const AVStream* st = format_->streams[audio_index_];
  pcm_scratch_.clear();
  pcm_to_network_order(Bytes(packet.data, static_cast<std::size_t>(packet.size)), pcm_.sample_bytes,
                       pcm_little_endian_, pcm_scratch_);
  if (pcm_scratch_.size() % pcm_.frame_bytes() != 0) {
    warn("PCM packet of " + std::to_string(packet.size) + " bytes ends inside a sample frame");
  }
  const std::int64_t rate = pcm_.sample_rate;
  const std::uint32_t per_packet =
      static_cast<std::uint32_t>(pcm_frames_per_packet(pcm_, options_.max_payload));
  const StagedFrame first = start_frame(pts, packet, st, pcm_.sample_rate, *file_.audio_stream_);
  packetize_pcm(pcm_scratch_, pcm_.frame_bytes(), per_packet, [&](Bytes body, std::size_t at) {
    const auto frames = static_cast<std::int64_t>(body.size() / pcm_.frame_bytes());
    const auto offset = static_cast<std::int64_t>(at);
    StagedFrame f = first;
    f.pts = pts + av_rescale_q(offset, AVRational{1, static_cast<int>(rate)}, st->time_base);
    f.frame.pts_us = first.frame.pts_us + offset * 1'000'000 / rate;
    f.frame.duration_us = frames * 1'000'000 / rate;
    f.frame.rtp_timestamp = first.frame.rtp_timestamp + static_cast<std::uint32_t>(offset);
    f.frame.type = FrameType::kAudio;
    f.first_staged = sink_.count();
    sink_.add({}, body, false, false);
    finish_frame(f);
    audio_.push_back(f);
  });
}

// MP3: one frame per packet, fragmented only above max_payload (RFC 2250 §3.5, mpa.hpp); the
// marker bit is never set, as FFmpeg's muxer sends it.
bool MediaFileBuilder::add_mpa(Bytes frame) {
  const bool ok = packetize_mpa(frame, options_.max_payload, [&](Bytes head, Bytes body) {
    sink_.add(head, body, false, false);
  });
  if (!ok) warn("MP3 frame of " + std::to_string(frame.size()) + " bytes skipped");
  return ok;
}

void MediaFileBuilder::finish_stream_info() {
  if (file_.video_stream_) {
    StreamInfo& info = file_.streams_[*file_.video_stream_];
    const AVStream* st = format_->streams[video_index_];
    info.width = st->codecpar->width;
    info.height = st->codecpar->height;
    const AVRational rate = av_guess_frame_rate(format_.get(), const_cast<AVStream*>(st), nullptr);
    info.frame_rate = rate.num > 0 && rate.den > 0 ? av_q2d(rate) : 0.0;
    video_packetizer_->describe(info);
  }
  if (file_.audio_stream_) {
    StreamInfo& info = file_.streams_[*file_.audio_stream_];
    if (info.codec == Codec::kAac) {
      info.encoding =
          "MPEG4-GENERIC/" + std::to_string(info.clock_rate) + "/" + std::to_string(info.channels);
      info.fmtp = aac_hbr_fmtp(aac_.config());
    } else if (info.codec == Codec::kMp3) {
      // FFmpeg announces the static type 14 without an rtpmap; we add "MPA/90000" (RFC 3551
      // Table 4's name, as live555 and GStreamer write it), which no receiver minds.
      info.encoding = "MPA/90000";
    } else if (is_pcm(info.codec)) {
      // FFmpeg's sdp.c layout; it uses the static payload types 10/11 (RFC 3551 Table 4) for
      // 44.1 kHz stereo/mono L16 and writes no rtpmap for them; we always announce the
      // configured dynamic type with an rtpmap, which every RTP receiver reads.
      info.encoding = std::string(codec_name(info.codec)) + "/" + std::to_string(info.clock_rate) +
                      "/" + std::to_string(info.channels);
    } else {
      info.encoding = "opus/48000/2";  // RFC 7587 §7: always 2 channels in the rtpmap
      info.fmtp = info.channels == 2 ? "sprop-stereo=1" : "";
    }
  }
}

void MediaFileBuilder::emit() {
  const std::uint32_t blocks = static_cast<std::uint32_t>(cuts_.start_us.size());
  file_.display_order_.assign(video_.size(), 0);
  file_.blocks_.resize(blocks);
  file_.frames_.reserve(video_.size() + audio_.size());
  file_.packets_.reserve(staged_packets_.size());
  file_.importance_.reserve(staged_packets_.size());

  // Frames of each block in send order: a stable merge by send time, video first on ties.
  std::vector<std::pair<bool, std::uint32_t>> order;  // (is_audio, index)
  std::vector<std::int64_t> frame_offsets;            // send time of order[i] in its block
  std::size_t vi = 0, ai = 0;
  for (std::uint32_t k = 0; k < blocks; ++k) {
    Block& b = file_.blocks_[k];
    b.index = k;
    b.start_us = cuts_.start_us[k];
    b.duration_us = (k + 1 < blocks ? cuts_.start_us[k + 1] : cuts_.end_us) - b.start_us;
    b.first_packet = static_cast<std::uint32_t>(file_.packets_.size());
    b.first_frame = static_cast<std::uint32_t>(file_.frames_.size());

    order.clear();
    while (vi < video_.size() && video_[vi].frame.block == k) {
      order.emplace_back(false, vi++);
    }
    const std::size_t video_count = order.size();
    while (ai < audio_.size() && audio_[ai].frame.block == k) {
      order.emplace_back(true, ai++);
    }
    auto send = [&](const std::pair<bool, std::uint32_t>& e) {
      return e.first ? audio_[e.second].send_us : video_[e.second].send_us;
    };
    std::inplace_merge(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(video_count),
                       order.end(),
                       [&](const auto& a, const auto& c) { return send(a) < send(c); });

    std::uint32_t min_display = std::numeric_limits<std::uint32_t>::max();
    std::uint32_t video_frames = 0;
    // Each frame's send time, clamped into the block and non-decreasing.
    frame_offsets.clear();
    std::int64_t last_offset = 0;
    const std::int64_t max_offset = std::max<std::int64_t>(0, b.duration_us - 1);
    for (const auto& e : order) {
      last_offset =
          std::max(last_offset, std::clamp(send(e) - b.start_us, std::int64_t{0}, max_offset));
      frame_offsets.push_back(last_offset);
    }
    for (std::size_t f = 0; f < order.size(); ++f) {
      const auto [is_audio, idx] = order[f];
      StagedFrame& s = is_audio ? audio_[idx] : video_[idx];
      Frame frame = s.frame;
      const auto frame_index = static_cast<std::uint32_t>(file_.frames_.size());
      frame.first_packet = static_cast<std::uint32_t>(file_.packets_.size());
      frame.packet_count = s.staged_count;
      if (!is_audio) {
        frame.display_index = static_cast<std::int32_t>(display_of_[idx]);
        file_.display_order_[display_of_[idx]] = frame_index;
        min_display = std::min(min_display, display_of_[idx]);
        ++video_frames;
      }
      // A frame's packets are spread over the first half of the time until the next frame is
      // due (the block's end for its last one) instead of leaving in one burst: a 150-packet
      // frame sent at once overflows a player's default socket buffer and a bottleneck's queue
      // long before the average rate does. Still non-decreasing and inside the block.
      const std::int64_t offset = frame_offsets[f];
      const std::int64_t next = f + 1 < order.size() ? frame_offsets[f + 1] : max_offset + 1;
      const std::int64_t spread = (next - offset) / 2;
      for (std::uint32_t i = 0; i < s.staged_count; ++i) {
        const StagedPacket& sp = staged_packets_[s.first_staged + i];
        RtpPacket p;
        p.payload_offset = sp.offset;
        p.payload_size = sp.size;
        p.send_offset_us = offset + spread * i / s.staged_count;
        p.rtp_timestamp = frame.rtp_timestamp;
        p.frame = frame_index;
        p.stream = frame.stream;
        p.importance = sp.parameter_set ? kImportanceNever : frame.importance;
        p.frame_type = frame.type;
        p.marker = sp.marker;
        file_.packets_.push_back(p);
        file_.importance_.push_back(p.importance);
      }
      b.bytes += frame.bytes;
      file_.frames_.push_back(frame);
    }
    b.packet_count = static_cast<std::uint32_t>(file_.packets_.size()) - b.first_packet;
    b.frame_count = static_cast<std::uint32_t>(file_.frames_.size()) - b.first_frame;
    b.first_display = video_frames > 0 ? min_display : 0;
    b.display_count = video_frames;
  }
  // Blocks with no video get the display position where they sit, for a consistent range.
  std::uint32_t next_display = 0;
  for (Block& b : file_.blocks_) {
    if (b.display_count == 0) b.first_display = next_display;
    next_display = b.first_display + b.display_count;
  }
  file_.duration_us_ = cuts_.end_us;
}

core::Result<std::string> ffmpeg_reference_sdp(const std::string& path) {
  auto input = detail::open_input(path);
  if (!input) return input.error();
  const AVFormatContext* in = input->get();
  const auto choice = detail::find_video_stream(in);
  if (choice.index < 0 && !choice.unsupported.empty()) {
    return core::make_error("'" + path + "': " + choice.unsupported);
  }
  const int video = choice.index;
  int audio = -1;
  for (unsigned i = 0; i < in->nb_streams && audio < 0; ++i) {
    const AVCodecParameters* par = in->streams[i]->codecpar;
    if (par->codec_type == AVMEDIA_TYPE_AUDIO && supported_audio(par->codec_id)) {
      audio = static_cast<int>(i);
    }
  }
  // One RTP muxer context per stream, as the RTP muxer requires; av_sdp_create assigns the
  // dynamic payload types 96 (video) and 97 (audio).
  std::vector<detail::OutputFormatPtr> owners;
  std::vector<AVFormatContext*> contexts;
  for (int index : {video, audio}) {
    if (index < 0) continue;
    AVFormatContext* raw = nullptr;
    if (int err = avformat_alloc_output_context2(&raw, nullptr, "rtp", nullptr); err < 0) {
      return core::make_error("cannot create an RTP muxer: " + detail::av_error_text(err));
    }
    owners.emplace_back(raw);
    AVStream* st = avformat_new_stream(raw, nullptr);
    if (!st) return core::make_error("cannot create an RTP muxer stream");
    if (int err = avcodec_parameters_copy(st->codecpar, in->streams[index]->codecpar); err < 0) {
      return core::make_error("cannot copy codec parameters: " + detail::av_error_text(err));
    }
    // Little-endian PCM goes out in network order, as `ffmpeg -c:a pcm_s16be -f rtp` sends it.
    if (st->codecpar->codec_id == AV_CODEC_ID_PCM_S16LE) {
      st->codecpar->codec_id = AV_CODEC_ID_PCM_S16BE;
    } else if (st->codecpar->codec_id == AV_CODEC_ID_PCM_S24LE) {
      st->codecpar->codec_id = AV_CODEC_ID_PCM_S24BE;
    }
    contexts.push_back(raw);
  }
  if (contexts.empty()) return core::make_error("'" + path + "': no stream to describe");
  std::string sdp(16384, '\0');
  if (int err = av_sdp_create(contexts.data(), static_cast<int>(contexts.size()), sdp.data(),
                              static_cast<int>(sdp.size()));
      err < 0) {
    return core::make_error("av_sdp_create failed: " + detail::av_error_text(err));
  }
  sdp.resize(std::min(sdp.find('\0'), sdp.size()));
  return sdp;
}

}  // namespace predrop::media
