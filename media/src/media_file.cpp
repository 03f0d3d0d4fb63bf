// MediaFile::open: demux once, packetize (RFC 6184 / 3640 / 7587), cut into blocks, rank
// importance. Runs once per file, off the packet path, so it may allocate freely; the result is
// immutable and shared.
#include "predrop/media/media_file.hpp"

#include <algorithm>
#include <cassert>
#include <limits>
#include <numeric>
#include <utility>

#include "av_util.hpp"
#include "bitstream.hpp"

namespace predrop::media {

using detail::Bytes;

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
constexpr std::uint8_t kRtpNalStapA = 24;
constexpr std::uint8_t kRtpNalFuA = 28;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// The position of `j` in the drop order of `m` disposable frames: ascending bit-reversed j (over
// the next power of two), so that dropping the lowest ranks first thins the block out evenly
// (van der Corput order) instead of removing a run of neighbours.
std::vector<std::uint32_t> bit_reversed_ranks(std::uint32_t m) {
  unsigned bits = 0;
  while ((std::uint64_t{1} << bits) < m)
    ++bits;
  auto reverse = [bits](std::uint32_t v) {
    std::uint32_t r = 0;
    for (unsigned b = 0; b < bits; ++b)
      r |= ((v >> b) & 1u) << (bits - 1 - b);
    return r;
  };
  std::vector<std::uint32_t> order(m);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(),
            [&](std::uint32_t a, std::uint32_t b) { return reverse(a) < reverse(b); });
  std::vector<std::uint32_t> rank(m);
  for (std::uint32_t p = 0; p < m; ++p)
    rank[order[p]] = p;
  return rank;
}

}  // namespace

class MediaFileBuilder {
 public:
  MediaFileBuilder(std::string path, const PacketizeOptions& options)
      : path_(std::move(path)), options_(options) {}

  core::Result<std::shared_ptr<const MediaFile>> build();

 private:
  // A packet before the final ordering: payload already in the arena.
  struct StagedPacket {
    std::uint64_t offset = 0;
    std::uint16_t size = 0;
    bool marker = false;
    bool parameter_set = false;
  };
  // A frame before the final ordering.
  struct StagedFrame {
    Frame frame;
    std::int64_t pts = 0;  // in the stream's time base, for exact ordering
    std::int64_t send_us = 0;
    std::uint32_t first_staged = 0;
    std::uint32_t staged_count = 0;
  };

  void warn(std::string text) {
    ++file_.warning_count_;
    if (file_.warnings_.size() < kMaxWarningTexts) file_.warnings_.push_back(std::move(text));
  }
  core::Status check_options() const;
  core::Status select_streams();
  void read_packets();
  void add_video(const AVPacket& packet);
  void add_audio(const AVPacket& packet);
  void stage_payload(Bytes head, Bytes body, bool marker, bool parameter_set);
  void stage_nal(Bytes nal, bool parameter_set);
  std::uint32_t rtp_timestamp(std::int64_t pts, AVRational tb, std::uint32_t clock) const;
  void finish_stream_info();
  void order_video();
  void make_blocks();
  void assign_importance();
  void emit();

  std::string path_;
  PacketizeOptions options_;
  MediaFile file_;
  detail::InputFormatPtr format_;

  int video_index_ = -1;  // in the demuxer
  int audio_index_ = -1;
  AVRational origin_tb_{1, 1};
  std::int64_t origin_ = 0;

  // H.264 state.
  int length_size_ = 0;  // 0: Annex-B samples
  std::vector<std::vector<std::uint8_t>> sps_, pps_;
  std::vector<std::vector<std::uint8_t>> sdp_sps_, sdp_pps_;  // first ones seen, for the SDP
  std::vector<std::uint8_t> pending_nals_;  // non-VCL units of a sample without a picture
  std::vector<Bytes> nals_;
  bool warned_no_parameter_sets_ = false;
  // Audio state.
  std::vector<std::uint8_t> audio_config_;
  bool opus_marker_sent_ = false;
  std::int64_t last_pts_[2] = {AV_NOPTS_VALUE, AV_NOPTS_VALUE};

  std::vector<StagedPacket> staged_packets_;
  std::vector<StagedFrame> video_;  // decode order
  std::vector<StagedFrame> audio_;  // read order
  // Video: decode position -> display index, display-ordered pts in µs.
  std::vector<std::uint32_t> display_of_;
  // Block cuts in primary-track positions (video if any, else audio), and block start times.
  std::vector<std::uint32_t> cuts_;
  std::vector<std::int64_t> block_start_us_;
  std::int64_t end_us_ = 0;
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
  if (!audio_.empty() && audio_config_.empty() &&
      format_->streams[audio_index_]->codecpar->codec_id == AV_CODEC_ID_AAC) {
    warn("AAC stream has neither extradata nor ADTS headers; audio dropped");
    audio_.clear();
  }
  if (video_.empty() && audio_.empty()) {
    return core::make_error("'" + path_ + "': no packet of a supported stream could be read");
  }
  finish_stream_info();
  order_video();
  make_blocks();
  assign_importance();
  emit();
  format_.reset();
  return std::shared_ptr<const MediaFile>(new MediaFile(std::move(file_)));
}

core::Status MediaFileBuilder::select_streams() {
  auto video = detail::find_h264_stream(format_.get(), path_);
  if (!video) return video.error();
  video_index_ = *video;
  for (unsigned i = 0; i < format_->nb_streams; ++i) {
    const AVCodecParameters* par = format_->streams[i]->codecpar;
    if (par->codec_type != AVMEDIA_TYPE_AUDIO) continue;
    if (par->codec_id == AV_CODEC_ID_AAC || par->codec_id == AV_CODEC_ID_OPUS) {
      audio_index_ = static_cast<int>(i);
      break;
    }
    if (audio_index_ == -1) {
      warn(std::string("audio codec ") + avcodec_get_name(par->codec_id) +
           " is not supported (AAC or Opus); stream ignored");
      audio_index_ = -2;  // warned once
    }
  }
  if (audio_index_ < 0) audio_index_ = -1;
  if (video_index_ < 0 && audio_index_ < 0) {
    return core::make_error("'" + path_ + "': no H.264 video and no AAC or Opus audio stream");
  }

  // Stream order in MediaFile: video first.
  if (video_index_ >= 0) {
    StreamInfo info;
    info.kind = MediaKind::kVideo;
    info.codec = Codec::kH264;
    info.payload_type = options_.video_payload_type;
    info.clock_rate = 90000;
    file_.video_stream_ = static_cast<std::uint8_t>(file_.streams_.size());
    file_.streams_.push_back(info);

    const AVStream* st = format_->streams[video_index_];
    origin_tb_ = st->time_base;
    origin_ = detail::stream_origin(st);
    Bytes extra(st->codecpar->extradata,
                static_cast<std::size_t>(std::max(0, st->codecpar->extradata_size)));
    if (auto avcc = detail::parse_avcc(extra)) {
      length_size_ = avcc->length_size;
      sps_ = avcc->sps;
      pps_ = avcc->pps;
    } else if (!extra.empty()) {
      std::vector<Bytes> units;
      detail::split_annexb(extra, units);
      for (Bytes u : units) {
        if (detail::nal_type(u) == detail::kNalSps) sps_.emplace_back(u.begin(), u.end());
        if (detail::nal_type(u) == detail::kNalPps) pps_.emplace_back(u.begin(), u.end());
      }
    }
    sdp_sps_ = sps_;
    sdp_pps_ = pps_;
  }
  if (audio_index_ >= 0) {
    const AVStream* st = format_->streams[audio_index_];
    const AVCodecParameters* par = st->codecpar;
    StreamInfo info;
    info.kind = MediaKind::kAudio;
    info.codec = par->codec_id == AV_CODEC_ID_AAC ? Codec::kAac : Codec::kOpus;
    info.payload_type = options_.audio_payload_type;
    info.channels = static_cast<std::uint16_t>(std::max(1, par->ch_layout.nb_channels));
    // RFC 7587 §4.1: Opus always uses a 48 kHz RTP clock; RFC 3640 uses the sampling rate.
    info.clock_rate = info.codec == Codec::kOpus
                          ? 48000
                          : static_cast<std::uint32_t>(std::max(1, par->sample_rate));
    file_.audio_stream_ = static_cast<std::uint8_t>(file_.streams_.size());
    file_.streams_.push_back(info);
    if (info.codec == Codec::kAac && par->extradata_size >= 2) {
      audio_config_.assign(par->extradata, par->extradata + par->extradata_size);
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

void MediaFileBuilder::stage_payload(Bytes head, Bytes body, bool marker, bool parameter_set) {
  StagedPacket p;
  p.offset = file_.arena_.size();
  p.size = static_cast<std::uint16_t>(head.size() + body.size());
  p.marker = marker;
  p.parameter_set = parameter_set;
  file_.arena_.insert(file_.arena_.end(), head.begin(), head.end());
  file_.arena_.insert(file_.arena_.end(), body.begin(), body.end());
  staged_packets_.push_back(p);
}

void MediaFileBuilder::stage_nal(Bytes nal, bool parameter_set) {
  const std::size_t max = options_.max_payload;
  if (nal.size() <= max) {
    // RFC 6184 §5.6: a single NAL unit packet is the NAL unit itself.
    stage_payload({}, nal, false, parameter_set);
    return;
  }
  // RFC 6184 §5.8 FU-A: FU indicator (F, NRI of the unit, type 28) and FU header (S, E, R=0,
  // the unit's type); the unit's own header byte is not repeated.
  const std::uint8_t indicator = static_cast<std::uint8_t>((nal[0] & 0xe0) | kRtpNalFuA);
  const std::uint8_t type = nal[0] & 0x1f;
  Bytes rest = nal.subspan(1);
  const std::size_t chunk = max - 2;
  bool first = true;
  while (!rest.empty()) {
    const std::size_t n = std::min(chunk, rest.size());
    const bool last = n == rest.size();
    const std::uint8_t header =
        static_cast<std::uint8_t>((first ? 0x80 : 0) | (last ? 0x40 : 0) | type);
    const std::uint8_t head[2] = {indicator, header};
    stage_payload(head, rest.first(n), false, parameter_set);
    rest = rest.subspan(n);
    first = false;
  }
}

void MediaFileBuilder::add_video(const AVPacket& packet) {
  const AVStream* st = format_->streams[video_index_];
  std::int64_t pts = packet.pts != AV_NOPTS_VALUE ? packet.pts : packet.dts;
  if (pts == AV_NOPTS_VALUE) {
    if (video_.empty() || last_pts_[0] == AV_NOPTS_VALUE) {
      warn("video packet without timestamp skipped");
      return;
    }
    pts = last_pts_[0] + std::max<std::int64_t>(1, packet.duration);
  }
  last_pts_[0] = pts;

  Bytes data(packet.data, static_cast<std::size_t>(std::max(0, packet.size)));
  nals_.clear();
  bool clean = true;
  // The sample format is the container's word, never the sample's first bytes: with avcC
  // extradata (MP4, MKV) every sample is length-prefixed, and a 4-byte prefix of a 256..511-byte
  // NAL unit (00 00 01 xx) looks exactly like an Annex B start code (issue 10, finding 2).
  // Without avcC (MPEG-TS, raw .h264) samples are Annex B. FFmpeg's h264_mp4toannexb decides the
  // same way, from extradata alone.
  if (length_size_ > 0) {
    clean = detail::split_length_prefixed(data, length_size_, nals_);
  } else {
    clean = detail::split_annexb(data, nals_);
  }
  if (!clean) warn("malformed H.264 sample at frame " + std::to_string(video_.size()));

  // Keep what RTP can carry: drop access unit delimiters and filler (RFC 6184 allows it) and
  // types 0 and 24..31, which RTP reuses for aggregation and fragmentation units.
  std::erase_if(nals_, [](Bytes n) {
    const std::uint8_t t = detail::nal_type(n);
    return t == 0 || t >= 24 || t == detail::kNalAud || t == detail::kNalFiller;
  });
  const auto first_vcl = std::find_if(nals_.begin(), nals_.end(), [](Bytes n) {
    const std::uint8_t t = detail::nal_type(n);
    return t >= detail::kNalSlice && t <= detail::kNalIdr;
  });
  if (first_vcl == nals_.end()) {
    // No picture: carry its parameter sets / SEI into the next frame rather than invent a frame
    // the decoder would never output.
    for (Bytes n : nals_) {
      const std::uint32_t size = static_cast<std::uint32_t>(n.size());
      for (int s = 3; s >= 0; --s)
        pending_nals_.push_back(static_cast<std::uint8_t>(size >> (8 * s)));
      pending_nals_.insert(pending_nals_.end(), n.begin(), n.end());
    }
    return;
  }

  // Units carried over from a picture-less sample come first.
  std::vector<Bytes> units;
  if (!pending_nals_.empty()) {
    detail::split_length_prefixed(pending_nals_, 4, units);
  }
  units.insert(units.end(), nals_.begin(), nals_.end());

  bool has_idr = false, has_sps = false, has_pps = false;
  std::vector<std::vector<std::uint8_t>> inband_sps, inband_pps;
  for (Bytes n : units) {
    const std::uint8_t t = detail::nal_type(n);
    has_idr = has_idr || t == detail::kNalIdr;
    if (t == detail::kNalSps) {
      has_sps = true;
      inband_sps.emplace_back(n.begin(), n.end());
    }
    if (t == detail::kNalPps) {
      has_pps = true;
      inband_pps.emplace_back(n.begin(), n.end());
    }
  }
  if (has_sps) sps_ = inband_sps;
  if (has_pps) pps_ = inband_pps;
  if (sdp_sps_.empty() && has_sps) sdp_sps_ = inband_sps;
  if (sdp_pps_.empty() && has_pps) sdp_pps_ = inband_pps;

  const Bytes vcl = *std::find_if(units.begin(), units.end(), [](Bytes n) {
    const std::uint8_t t = detail::nal_type(n);
    return t >= detail::kNalSlice && t <= detail::kNalIdr;
  });
  const auto slice_type = detail::parse_slice_type(vcl);
  const bool keyframe =
      has_idr || ((packet.flags & AV_PKT_FLAG_KEY) && slice_type && *slice_type == 2);

  StagedFrame f;
  f.pts = pts;
  f.frame.pts_us = detail::to_us(pts, st->time_base) - detail::to_us(origin_, origin_tb_);
  f.frame.duration_us = packet.duration > 0 ? detail::to_us(packet.duration, st->time_base) : 0;
  f.frame.rtp_timestamp = rtp_timestamp(pts, st->time_base, 90000);
  f.frame.stream = *file_.video_stream_;
  f.frame.reference = detail::nal_ref_idc(vcl) != 0;
  if (keyframe) {
    f.frame.type = FrameType::kKey;
  } else if (!slice_type) {
    f.frame.type = FrameType::kUnknown;
    f.frame.reference = true;  // be conservative about what we do not understand
  } else {
    static constexpr FrameType kBySliceType[5] = {FrameType::kPredicted, FrameType::kBidir,
                                                  FrameType::kIntra, FrameType::kPredicted,
                                                  FrameType::kIntra};
    f.frame.type = kBySliceType[*slice_type];
  }
  f.first_staged = static_cast<std::uint32_t>(staged_packets_.size());

  // Parameter sets in-band before every keyframe, so that a receiver can join at any GOP and a
  // lost SDP or a player that ignores sprop-parameter-sets still decodes.
  if (keyframe && !(has_sps && has_pps)) {
    if (sps_.empty() || pps_.empty()) {
      if (!warned_no_parameter_sets_) warn("keyframe without known SPS/PPS");
      warned_no_parameter_sets_ = true;
    }
    if (!has_sps) {
      for (const auto& s : sps_)
        stage_nal(s, true);
    }
    if (!has_pps) {
      for (const auto& p : pps_)
        stage_nal(p, true);
    }
  }
  for (Bytes n : units) {
    const std::uint8_t t = detail::nal_type(n);
    stage_nal(n, t == detail::kNalSps || t == detail::kNalPps);
  }
  pending_nals_.clear();
  f.staged_count = static_cast<std::uint32_t>(staged_packets_.size()) - f.first_staged;
  // RFC 6184 §5.1: the marker bit is set on the last packet of the access unit.
  staged_packets_.back().marker = true;
  for (std::uint32_t i = f.first_staged; i < staged_packets_.size(); ++i) {
    f.frame.bytes += staged_packets_[i].size;
  }
  video_.push_back(f);
}

void MediaFileBuilder::add_audio(const AVPacket& packet) {
  const AVStream* st = format_->streams[audio_index_];
  const StreamInfo& info = file_.streams_[*file_.audio_stream_];
  std::int64_t pts = packet.pts != AV_NOPTS_VALUE ? packet.pts : packet.dts;
  if (pts == AV_NOPTS_VALUE) {
    if (last_pts_[1] == AV_NOPTS_VALUE) {
      warn("audio packet without timestamp skipped");
      return;
    }
    pts = last_pts_[1] + std::max<std::int64_t>(1, packet.duration);
  }
  last_pts_[1] = pts;
  Bytes au(packet.data, static_cast<std::size_t>(std::max(0, packet.size)));
  if (au.empty()) return;

  StagedFrame f;
  f.pts = pts;
  f.frame.pts_us = detail::to_us(pts, st->time_base) - detail::to_us(origin_, origin_tb_);
  f.frame.duration_us = packet.duration > 0 ? detail::to_us(packet.duration, st->time_base) : 0;
  f.frame.rtp_timestamp = rtp_timestamp(pts, st->time_base, info.clock_rate);
  f.frame.stream = *file_.audio_stream_;
  f.frame.type = FrameType::kAudio;
  f.first_staged = static_cast<std::uint32_t>(staged_packets_.size());

  if (info.codec == Codec::kAac) {
    // MPEG-TS carries ADTS frames; RFC 3640 carries raw access units.
    if (auto adts = detail::parse_adts(au); adts) {
      if (adts->raw_blocks != 1 || adts->frame_size > au.size()) {
        warn("ADTS frame with several raw blocks or truncated; skipped");
        return;
      }
      if (audio_config_.empty()) {
        audio_config_ = detail::audio_specific_config(adts->object_type, adts->sample_rate_index,
                                                      adts->channel_config);
      }
      au = au.subspan(adts->header_size, adts->frame_size - adts->header_size);
    }
    // RFC 3640 §3.3.6 (AAC-hbr): AU-headers-length = 16 bits, then one AU-header of
    // AU-size(13) | AU-Index(3) = 0. The 13-bit size bounds an access unit to 8191 bytes.
    if (au.empty() || au.size() > 8191) {
      warn("AAC access unit of " + std::to_string(au.size()) + " bytes skipped");
      return;
    }
    const std::uint16_t au_header = static_cast<std::uint16_t>(au.size() << 3);
    const std::uint8_t head[4] = {0x00, 0x10, static_cast<std::uint8_t>(au_header >> 8),
                                  static_cast<std::uint8_t>(au_header & 0xff)};
    // §3.2.3: an AU larger than a packet is fragmented; every fragment repeats the AU-header
    // with the full AU size, and the marker bit is set only on the last one.
    const std::size_t chunk = options_.max_payload - sizeof head;
    Bytes rest = au;
    while (!rest.empty()) {
      const std::size_t n = std::min(chunk, rest.size());
      stage_payload(head, rest.first(n), n == rest.size(), false);
      rest = rest.subspan(n);
    }
  } else {
    // RFC 7587 §4.2: one Opus packet per RTP packet, never fragmented.
    if (au.size() > options_.max_payload) {
      warn("Opus packet of " + std::to_string(au.size()) + " bytes exceeds max_payload; skipped");
      return;
    }
    // §4.1: the marker bit marks the first packet of a talkspurt; without DTX, only the first.
    stage_payload({}, au, !opus_marker_sent_, false);
    opus_marker_sent_ = true;
  }
  f.staged_count = static_cast<std::uint32_t>(staged_packets_.size()) - f.first_staged;
  for (std::uint32_t i = f.first_staged; i < staged_packets_.size(); ++i) {
    f.frame.bytes += staged_packets_[i].size;
  }
  audio_.push_back(f);
}

void MediaFileBuilder::finish_stream_info() {
  if (file_.video_stream_) {
    StreamInfo& info = file_.streams_[*file_.video_stream_];
    const AVStream* st = format_->streams[video_index_];
    info.width = st->codecpar->width;
    info.height = st->codecpar->height;
    const AVRational rate = av_guess_frame_rate(format_.get(), const_cast<AVStream*>(st), nullptr);
    info.frame_rate = rate.num > 0 && rate.den > 0 ? av_q2d(rate) : 0.0;
    info.encoding = "H264/90000";
    // Same layout as FFmpeg's sdp.c, which ffplay and the other players are known to read.
    info.fmtp = "packetization-mode=1";
    if (!sdp_sps_.empty() && !sdp_pps_.empty()) {
      std::string sets;
      for (const auto& s : sdp_sps_)
        sets += (sets.empty() ? "" : ",") + detail::base64(s);
      for (const auto& p : sdp_pps_)
        sets += "," + detail::base64(p);
      info.fmtp += "; sprop-parameter-sets=" + sets;
      if (sdp_sps_[0].size() >= 4) {
        info.fmtp += "; profile-level-id=" + detail::hex_upper(Bytes(sdp_sps_[0]).subspan(1, 3));
      }
    }
  }
  if (file_.audio_stream_) {
    StreamInfo& info = file_.streams_[*file_.audio_stream_];
    if (info.codec == Codec::kAac) {
      info.encoding =
          "MPEG4-GENERIC/" + std::to_string(info.clock_rate) + "/" + std::to_string(info.channels);
      info.fmtp =
          "profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3; "
          "config=" +
          detail::hex_upper(audio_config_);
    } else {
      info.encoding = "opus/48000/2";  // RFC 7587 §7: always 2 channels in the rtpmap
      info.fmtp = info.channels == 2 ? "sprop-stereo=1" : "";
    }
  }
}

void MediaFileBuilder::order_video() {
  const std::size_t n = video_.size();
  std::vector<std::uint32_t> by_pts(n);
  std::iota(by_pts.begin(), by_pts.end(), 0u);
  std::stable_sort(by_pts.begin(), by_pts.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return video_[a].pts < video_[b].pts; });
  display_of_.assign(n, 0);
  for (std::uint32_t d = 0; d < n; ++d) {
    display_of_[by_pts[d]] = d;
    if (d > 0 && video_[by_pts[d]].pts == video_[by_pts[d - 1]].pts) {
      warn("two video frames share pts " + std::to_string(video_[by_pts[d]].pts));
    }
  }
  // The i-th frame in decode order is sent at the i-th presentation time: a monotonic send
  // clock with the stream's constant reordering delay removed, without trusting container DTS.
  for (std::uint32_t i = 0; i < n; ++i)
    video_[i].send_us = video_[by_pts[i]].frame.pts_us;
  std::stable_sort(audio_.begin(), audio_.end(),
                   [](const StagedFrame& a, const StagedFrame& b) { return a.pts < b.pts; });
  for (auto& a : audio_)
    a.send_us = a.frame.pts_us;
}

void MediaFileBuilder::make_blocks() {
  // The primary track decides where blocks may end: video if present, else audio.
  std::vector<StagedFrame>& primary = video_.empty() ? audio_ : video_;
  std::vector<StagedFrame>* secondary = video_.empty() ? nullptr : &audio_;
  const std::size_t n = primary.size();

  // cut_time[i]: earliest pts (µs) among primary frames [i, n); a cut before i is clean when
  // every frame before it is presented earlier than that.
  std::vector<std::int64_t> cut_time(n + 1, std::numeric_limits<std::int64_t>::max());
  for (std::size_t i = n; i-- > 0;) {
    cut_time[i] = std::min(cut_time[i + 1], primary[i].frame.pts_us);
  }
  std::vector<bool> clean(n + 1, false);
  std::int64_t prefix_max = std::numeric_limits<std::int64_t>::min();
  for (std::size_t i = 1; i < n; ++i) {
    prefix_max = std::max(prefix_max, primary[i - 1].frame.pts_us);
    clean[i] = prefix_max < cut_time[i];
  }
  end_us_ = 0;
  for (const auto* track : {&video_, &audio_}) {
    for (const auto& f : *track) {
      end_us_ = std::max(end_us_, f.frame.pts_us + std::max<std::int64_t>(f.frame.duration_us, 0));
    }
  }

  // Audio bytes with pts before a time, for byte-sized blocks.
  std::vector<std::uint64_t> audio_prefix(1, 0);
  if (secondary) {
    for (const auto& a : *secondary)
      audio_prefix.push_back(audio_prefix.back() + a.frame.bytes);
  }
  auto audio_bytes_before = [&](std::int64_t t) -> std::uint64_t {
    if (!secondary) return 0;
    auto it =
        std::lower_bound(secondary->begin(), secondary->end(), t,
                         [](const StagedFrame& a, std::int64_t v) { return a.frame.pts_us < v; });
    return audio_prefix[static_cast<std::size_t>(it - secondary->begin())];
  };

  const std::int64_t start0 = cut_time[0];
  cuts_.assign(1, 0);
  block_start_us_.assign(1, start0);
  const std::uint64_t size = options_.block.value;
  if (options_.block.unit == BlockSize::Unit::kDuration) {
    // Nominal boundaries sit on the k x d grid from the origin; each cut is the first clean
    // point at or after one, so cuts never drift (an early frame, such as an AAC priming frame
    // before the origin, just joins the first block).
    const auto d = static_cast<std::int64_t>(size);
    std::int64_t next_end = std::max(d, (floor_div(start0, d) + 1) * d);
    for (std::size_t i = 1; i < n; ++i) {
      if (!clean[i] || cut_time[i] < next_end) continue;
      cuts_.push_back(static_cast<std::uint32_t>(i));
      block_start_us_.push_back(cut_time[i]);
      next_end = (floor_div(cut_time[i], d) + 1) * d;
    }
  } else {
    std::uint64_t primary_bytes = 0;
    std::uint64_t audio_at_start = audio_bytes_before(std::numeric_limits<std::int64_t>::min());
    for (std::size_t i = 1; i < n; ++i) {
      primary_bytes += primary[i - 1].frame.bytes;
      if (!clean[i]) continue;
      const std::uint64_t audio_now = audio_bytes_before(cut_time[i]);
      if (primary_bytes + (audio_now - audio_at_start) < size) continue;
      cuts_.push_back(static_cast<std::uint32_t>(i));
      block_start_us_.push_back(cut_time[i]);
      primary_bytes = 0;
      audio_at_start = audio_now;
    }
  }
  cuts_.push_back(static_cast<std::uint32_t>(n));

  for (std::uint32_t k = 0; k + 1 < cuts_.size(); ++k) {
    for (std::uint32_t i = cuts_[k]; i < cuts_[k + 1]; ++i)
      primary[i].frame.block = k;
  }
  if (secondary) {
    for (auto& a : *secondary) {
      auto it = std::upper_bound(block_start_us_.begin(), block_start_us_.end(), a.frame.pts_us);
      a.frame.block = it == block_start_us_.begin()
                          ? 0
                          : static_cast<std::uint32_t>(it - block_start_us_.begin() - 1);
    }
  }
  end_us_ = std::max(end_us_, block_start_us_.back() + 1);
}

void MediaFileBuilder::assign_importance() {
  for (auto& a : audio_)
    a.frame.importance = kImportanceNever;
  // Reference frames: later in the GOP means fewer frames depend on it, so lower importance.
  std::uint32_t since_key = 0;
  for (auto& v : video_) {
    if (v.frame.type == FrameType::kKey) {
      v.frame.importance = kImportanceKey;
      since_key = 0;
    } else if (v.frame.reference) {
      ++since_key;
      v.frame.importance = static_cast<std::uint8_t>(std::max<std::int64_t>(
          kImportanceReferenceMin, std::int64_t{kImportanceKey} - since_key));
    }
  }
  // Disposable frames: per block, in display order, ranked in bit-reversed order.
  const std::uint32_t blocks = static_cast<std::uint32_t>(block_start_us_.size());
  std::vector<std::vector<std::uint32_t>> disposable(blocks);
  for (std::uint32_t i = 0; i < video_.size(); ++i) {
    if (!video_[i].frame.reference) disposable[video_[i].frame.block].push_back(i);
  }
  for (auto& list : disposable) {
    std::sort(list.begin(), list.end(),
              [&](std::uint32_t a, std::uint32_t b) { return display_of_[a] < display_of_[b]; });
    const auto m = static_cast<std::uint32_t>(list.size());
    const auto rank = bit_reversed_ranks(m);
    const std::uint32_t levels = kImportanceDisposableMax + 1;
    for (std::uint32_t j = 0; j < m; ++j) {
      const std::uint64_t level = m <= levels ? rank[j] : std::uint64_t{rank[j]} * levels / m;
      video_[list[j]].frame.importance = static_cast<std::uint8_t>(level);
    }
  }
}

void MediaFileBuilder::emit() {
  const std::uint32_t blocks = static_cast<std::uint32_t>(block_start_us_.size());
  file_.display_order_.assign(video_.size(), 0);
  file_.blocks_.resize(blocks);
  file_.frames_.reserve(video_.size() + audio_.size());
  file_.packets_.reserve(staged_packets_.size());
  file_.importance_.reserve(staged_packets_.size());

  // Frames of each block in send order: a stable merge by send time, video first on ties.
  std::vector<std::pair<bool, std::uint32_t>> order;  // (is_audio, index)
  std::size_t vi = 0, ai = 0;
  for (std::uint32_t k = 0; k < blocks; ++k) {
    Block& b = file_.blocks_[k];
    b.index = k;
    b.start_us = block_start_us_[k];
    b.duration_us = (k + 1 < blocks ? block_start_us_[k + 1] : end_us_) - b.start_us;
    b.first_packet = static_cast<std::uint32_t>(file_.packets_.size());
    b.first_frame = static_cast<std::uint32_t>(file_.frames_.size());

    order.clear();
    while (vi < video_.size() && video_[vi].frame.block == k)
      order.emplace_back(false, vi++);
    const std::size_t video_count = order.size();
    while (ai < audio_.size() && audio_[ai].frame.block == k)
      order.emplace_back(true, ai++);
    auto send = [&](const std::pair<bool, std::uint32_t>& e) {
      return e.first ? audio_[e.second].send_us : video_[e.second].send_us;
    };
    std::inplace_merge(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(video_count),
                       order.end(),
                       [&](const auto& a, const auto& c) { return send(a) < send(c); });

    std::uint32_t min_display = std::numeric_limits<std::uint32_t>::max();
    std::uint32_t video_frames = 0;
    std::int64_t last_offset = 0;
    const std::int64_t max_offset = std::max<std::int64_t>(0, b.duration_us - 1);
    for (const auto& [is_audio, idx] : order) {
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
      const std::int64_t offset =
          std::max(last_offset, std::clamp(s.send_us - b.start_us, std::int64_t{0}, max_offset));
      last_offset = offset;
      for (std::uint32_t i = 0; i < s.staged_count; ++i) {
        const StagedPacket& sp = staged_packets_[s.first_staged + i];
        RtpPacket p;
        p.payload_offset = sp.offset;
        p.payload_size = sp.size;
        p.send_offset_us = offset;
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
  file_.duration_us_ = end_us_;
}

core::Result<std::string> ffmpeg_reference_sdp(const std::string& path) {
  auto input = detail::open_input(path);
  if (!input) return input.error();
  const AVFormatContext* in = input->get();
  auto video = detail::find_h264_stream(in, path);
  if (!video) return video.error();
  int audio = -1;
  for (unsigned i = 0; i < in->nb_streams && audio < 0; ++i) {
    const AVCodecParameters* par = in->streams[i]->codecpar;
    if (par->codec_type == AVMEDIA_TYPE_AUDIO &&
        (par->codec_id == AV_CODEC_ID_AAC || par->codec_id == AV_CODEC_ID_OPUS)) {
      audio = static_cast<int>(i);
    }
  }
  // One RTP muxer context per stream, as the RTP muxer requires; av_sdp_create assigns the
  // dynamic payload types 96 (video) and 97 (audio).
  std::vector<detail::OutputFormatPtr> owners;
  std::vector<AVFormatContext*> contexts;
  for (int index : {*video, audio}) {
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
