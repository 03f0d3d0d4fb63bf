// A live BlockSource fed with a publisher's RTP (see live_source.hpp).
#include "predrop/media/live_source.hpp"

#include <algorithm>
#include <array>
#include <numeric>

#include "bitstream.hpp"
#include "h264_packetizer.hpp"
#include "importance.hpp"
#include "live_audio.hpp"
#include "predrop/media/h264_depacketizer.hpp"
#include "reorder_window.hpp"
#include "staging.hpp"

namespace predrop::media {

namespace {
// A picture's packets at most: its bytes in FU-A fragments, one more per NAL unit, and the
// parameter sets the packetizer puts before a key frame.
std::size_t packet_estimate(std::size_t bytes, std::size_t max_payload) {
  return bytes / (max_payload - 2) + 16;
}
}  // namespace

struct LiveSource::Entry {
  SourceBlock view;
  std::vector<RtpPacket> packets;
  std::vector<std::uint8_t> importance;
  std::vector<std::uint8_t> arena;
  bool key = false;
};

// The writer thread's state: depacketizer, packetizer and the block in progress.
struct LiveSource::Writer {
  struct Picture {
    std::int64_t pts_us = 0;
    std::uint32_t rtp = 0;  // relative to the origin
    std::uint32_t first_staged = 0;
    std::uint32_t staged_count = 0;
    std::uint32_t bytes = 0;
    FrameType type = FrameType::kUnknown;
    bool reference = true;
  };
  struct Pending {
    std::vector<std::uint8_t> arena;
    std::vector<detail::StagedPacket> staged;
    std::vector<Picture> pictures;
    std::int64_t start_us = 0;
    std::int64_t max_pts_us = 0;
    std::uint64_t first_arrival_us = 0;
    bool key = false;
    void clear() {
      arena.clear();
      staged.clear();
      pictures.clear();
      key = false;
    }
  };

  Writer(LiveSource& owner, const LiveVideoSpec& video)
      : source(owner),
        clock_rate(video.clock_rate == 0 ? 90000 : video.clock_rate),
        depacketizer([this](const AccessUnit& au) { on_access_unit(au); }),
        packetizer(owner.options_.max_payload, [this](const std::string&) { ++malformed; }) {
    packetizer.configure(video.parameter_sets);
  }

  void on_access_unit(const AccessUnit& au);
  void on_audio(std::uint32_t timestamp, bool marker, std::span<const std::uint8_t> payload);
  // Publishes the block in progress; the next one starts at `next_start_us`. Audio at or after
  // it is carried into the next block unless `last`.
  void cut(std::int64_t next_start_us, bool last = false);
  void forget_audio_timeline() {
    if (audio) audio->forget_timeline();
  }
  // Audio packets held for the block in progress.
  std::size_t pending_sounds() const { return audio ? audio->pending() : 0; }
  std::int64_t to_us(std::int64_t ticks) const {
    return ticks * 1'000'000 / static_cast<std::int64_t>(clock_rate);
  }

  LiveSource& source;
  std::uint32_t clock_rate;
  H264Depacketizer depacketizer;
  // In front of the depacketizer: a UDP path's reordering is undone before a swapped pair can
  // read as a loss (reorder_window.hpp).
  detail::ReorderWindow reorder;
  // What the reorder window releases goes to the depacketizer, with its own arrival time.
  void depacketize(const detail::ReorderWindow::Packet& p) {
    arrival_us = p.arrival_us;
    depacketizer.push(p.sequence, p.timestamp, p.marker, p.payload);
  }
  detail::H264Packetizer packetizer;
  std::vector<detail::Bytes> nals;
  // RTP timestamps unwrapped to 64 bits; the origin is the first IDR's (then timeline 0).
  bool have_timestamp = false;
  std::uint32_t last_timestamp = 0;
  std::int64_t unwrapped = 0;
  bool have_origin = false;
  std::int64_t origin = 0;
  // After a reset the next IDR is put here on the timeline (the end of the last block).
  std::int64_t resume_us = 0;
  bool need_key = true;
  std::uint64_t arrival_us = 0;  // of the packet being pushed
  std::int64_t last_end_us = 0;  // end of the last published block
  Pending pending;
  // The audio track, if the stream has one (live_audio.hpp): its timeline and its share of
  // the block in progress.
  std::optional<detail::LiveAudioTrack> audio;
  // A LATM publisher's audio is repacked into AAC-hbr first (predrop/media/latm.hpp).
  std::optional<LatmDepacketizer> latm;
  // The lead of recent pictures' timestamps over their arrivals (µs), to place audio by its
  // arrival before the sender reports come: the smallest of the last 16. A real-time publisher
  // sends pictures in decode order at their decode times, pictures shown later (P before its B
  // pictures) ahead of their display, audio at its time: the picture whose lead is least is the
  // one sent nearest its display time.
  std::array<std::int64_t, 16> leads{};
  std::size_t lead_count = 0, lead_next = 0;
  std::optional<std::int64_t> arrival_lead() const {
    if (lead_count == 0) return std::nullopt;
    return *std::min_element(leads.begin(),
                             leads.begin() + static_cast<std::ptrdiff_t>(lead_count));
  }
  std::uint64_t latm_malformed = 0;  // its stats().malformed already counted as audio_dropped
  // Counters the writer keeps (copied into stats_ at each publication).
  std::uint64_t packets = 0, access_units = 0, damaged = 0, malformed = 0, waiting = 0,
                oversized = 0, resets = 0, forced = 0, restarts = 0, audio_packets = 0,
                audio_dropped = 0;
  bool ended = false;
  // A video SR that came before the timeline's origin (ffmpeg sends one before its first
  // packet, the next only seconds later): dated once the origin is set.
  std::optional<std::pair<std::uint64_t, std::uint32_t>> early_report;
  // The capture clock by a video SR (NTP and RTP timestamp), once the origin is known.
  void date_report(std::uint64_t ntp, std::uint32_t rtp_timestamp) {
    // The SR's RTP timestamp on the timeline, unwrapped against the newest picture's as the
    // pictures' own are.
    const std::int64_t ticks =
        unwrapped + static_cast<std::int32_t>(rtp_timestamp - last_timestamp) - origin;
    std::lock_guard lock(source.mutex_);
    source.capture_ = CaptureClock{to_us(ticks), ntp};
  }
};

void LiveSource::Writer::on_access_unit(const AccessUnit& au) {
  ++access_units;
  if (au.damaged) ++damaged;
  nals.clear();
  (void)detail::split_annexb(au.data, nals);
  bool idr = false;
  bool reference = false;
  bool picture = false;
  for (detail::Bytes n : nals) {
    const std::uint8_t t = detail::nal_type(n);
    if (t == detail::kNalIdr) idr = true;
    if (t >= detail::kNalSlice && t <= detail::kNalIdr) {
      if (!picture) reference = detail::nal_ref_idc(n) != 0;
      picture = true;
    }
  }
  if (!picture) {
    // Parameter sets or SEI alone: the packetizer carries them into the next picture.
    if (have_origin && !need_key) {
      detail::PayloadSink sink(pending.arena, pending.staged);
      (void)packetizer.add_sample(au.data, false, sink);
    }
    return;
  }
  // Timestamps: unwrapped; a jump (a publisher that restarted its clock) restarts at an IDR.
  const std::int64_t delta = static_cast<std::int32_t>(au.rtp_timestamp - last_timestamp);
  unwrapped = have_timestamp ? unwrapped + delta : 0;
  last_timestamp = au.rtp_timestamp;
  have_timestamp = true;
  if (have_origin) {
    const std::int64_t pts = to_us(unwrapped - origin);
    const bool jump = !pending.pictures.empty() && (pts + kMaxJumpUs < pending.start_us ||
                                                    pts > pending.max_pts_us + kMaxJumpUs);
    if (jump) {
      ++resets;
      cut(pending.max_pts_us + 1);
      have_origin = false;
      need_key = true;
      resume_us = last_end_us;
      forget_audio_timeline();
      lead_count = 0;
      std::lock_guard lock(source.mutex_);
      source.capture_.reset();  // the old clock's SR does not date the new timestamps
    }
  }
  if (!have_origin) {
    if (!idr) {
      ++waiting;
      return;
    }
    // Rounded up to a whole tick, so that the IDR is at or after resume_us (rounded down, it
    // would start a µs early and the next IDR would miss the block duration by as much).
    const auto clock = static_cast<std::int64_t>(clock_rate);
    origin = unwrapped - (resume_us * clock + 999'999) / 1'000'000;
    have_origin = true;
    if (early_report) date_report(early_report->first, early_report->second);
    early_report.reset();
  }
  const std::int64_t pts_us = to_us(unwrapped - origin);
  if (need_key && !idr) {
    ++waiting;
    return;
  }
  const std::size_t max_packets = source.options_.max_block_packets;
  const std::size_t estimate = packet_estimate(au.data.size(), source.options_.max_payload);
  if (estimate > max_packets) {
    // Would not fit any block: it and what depends on it go.
    ++oversized;
    need_key = true;
    return;
  }
  if (!pending.pictures.empty()) {
    const std::int64_t held = pts_us - pending.start_us;
    // A cut before a reference picture shown after everything so far keeps every picture of a
    // block contiguous in display order (B pictures after it in decode order show after it).
    const bool clean = idr || (reference && pts_us > pending.max_pts_us);
    const bool full = pending.staged.size() + pending_sounds() + estimate > max_packets;
    if ((idr && (held >= source.options_.block_us || need_key)) ||
        (clean && (held >= 2 * source.options_.block_us || full))) {
      if (!idr) ++forced;
      cut(pts_us);
    } else if (full) {
      // No clean cut here and no room: the picture goes, and the stream waits for an IDR.
      ++oversized;
      need_key = true;
      return;
    }
  }
  need_key = false;
  if (pending.pictures.empty()) {
    pending.start_us = std::max(pts_us, last_end_us);
    pending.max_pts_us = pts_us;
    pending.first_arrival_us = arrival_us;
    pending.key = idr;
  }
  detail::PayloadSink sink(pending.arena, pending.staged);
  const std::uint32_t first = sink.count();
  const auto pic = packetizer.add_sample(au.data, idr, sink);
  if (!pic) return;
  Picture p;
  p.pts_us = pts_us;
  p.rtp = static_cast<std::uint32_t>(unwrapped - origin);
  p.first_staged = first;
  p.staged_count = sink.count() - first;
  for (std::uint32_t i = first; i < sink.count(); ++i) {
    p.bytes += pending.staged[i].size;
  }
  p.type = pic->type;
  p.reference = pic->reference;
  leads[lead_next] = pts_us - static_cast<std::int64_t>(arrival_us);
  lead_next = (lead_next + 1) % leads.size();
  lead_count = std::min(lead_count + 1, leads.size());
  pending.max_pts_us = std::max(pending.max_pts_us, pts_us);
  pending.pictures.push_back(p);
}

// An audio packet: placed by the audio track while the video has a block in progress.
void LiveSource::Writer::on_audio(std::uint32_t timestamp, bool marker,
                                  std::span<const std::uint8_t> payload) {
  ++audio_packets;
  if (!audio || !have_origin || need_key || pending.pictures.empty()) {
    ++audio_dropped;
    return;
  }
  detail::LiveVideoClock clock;
  clock.clock_rate = clock_rate;
  clock.last_timestamp = last_timestamp;
  clock.unwrapped = unwrapped;
  clock.origin = origin;
  clock.block_start_us = pending.start_us;
  clock.block_max_pts_us = pending.max_pts_us;
  clock.block_packets = pending.staged.size();
  if (const auto lead = arrival_lead()) {
    clock.arrival_on_timeline_us = static_cast<std::int64_t>(arrival_us) + *lead;
  }
  audio->push(timestamp, marker, payload, clock);
}

// Publishes the block in progress; the next one starts at `next_start_us`.
void LiveSource::Writer::cut(std::int64_t next_start_us, bool last) {
  if (pending.pictures.empty()) {
    pending.clear();
    if (audio) audio->clear();
    return;
  }
  auto e = std::make_shared<Entry>();
  const std::size_t n = pending.pictures.size();
  // Send (decode) order at presentation times, as a file's frames are (block_cutter.cpp).
  std::vector<std::int64_t> sorted(n);
  for (std::size_t i = 0; i < n; ++i) {
    sorted[i] = pending.pictures[i].pts_us;
  }
  std::vector<std::uint32_t> by_pts(n);
  std::iota(by_pts.begin(), by_pts.end(), 0u);
  std::stable_sort(by_pts.begin(), by_pts.end(), [&](std::uint32_t a, std::uint32_t b) {
    return pending.pictures[a].pts_us < pending.pictures[b].pts_us;
  });
  std::vector<std::uint32_t> display_of(n);
  for (std::uint32_t d = 0; d < n; ++d) {
    display_of[by_pts[d]] = d;
  }
  std::sort(sorted.begin(), sorted.end());
  const std::int64_t start = pending.start_us;
  // The end: the next block's start, else one mean picture interval after the last picture.
  std::int64_t end = next_start_us;
  if (end <= sorted.back()) {
    const std::int64_t interval =
        n > 1 ? std::max<std::int64_t>(
                    1, (sorted.back() - sorted.front()) / static_cast<std::int64_t>(n - 1))
              : 40'000;
    end = sorted.back() + interval;
  }
  const std::int64_t duration = std::max<std::int64_t>(1, end - start);

  std::vector<detail::StagedFrame> video(n);
  std::vector<detail::StagedFrame> no_audio;  // the audio track's packets are kImportanceNever
  for (std::size_t i = 0; i < n; ++i) {
    video[i].frame.type = pending.pictures[i].type;
    video[i].frame.reference = pending.pictures[i].reference;
    video[i].frame.block = 0;
  }
  detail::assign_importance(video, no_audio, display_of, 1);

  e->arena = std::move(pending.arena);
  e->packets.reserve(pending.staged.size() + pending_sounds());
  std::int64_t last_offset = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Picture& pic = pending.pictures[i];
    last_offset =
        std::max(last_offset, std::clamp(sorted[i] - start, std::int64_t{0}, duration - 1));
    const std::int64_t next =
        i + 1 < n ? std::clamp(sorted[i + 1] - start, last_offset, duration - 1) : duration;
    // Spread over the first half of the time to the next picture, as a file's are.
    const std::int64_t spread = (next - last_offset) / 2;
    for (std::uint32_t k = 0; k < pic.staged_count; ++k) {
      const detail::StagedPacket& sp = pending.staged[pic.first_staged + k];
      RtpPacket p;
      p.payload_offset = sp.offset;
      p.payload_size = sp.size;
      p.send_offset_us = last_offset + spread * k / pic.staged_count;
      p.rtp_timestamp = pic.rtp;
      p.frame = static_cast<std::uint32_t>(i);
      p.stream = 0;
      p.importance = sp.parameter_set ? kImportanceNever : video[i].frame.importance;
      p.frame_type = pic.type;
      p.marker = sp.marker;
      e->packets.push_back(p);
    }
  }
  // The block's audio after its video, merged into send order.
  if (audio) {
    audio->cut(next_start_us, last, start, duration, static_cast<std::uint32_t>(n), e->arena,
               e->packets);
  }
  std::stable_sort(
      e->packets.begin(), e->packets.end(),
      [](const RtpPacket& a, const RtpPacket& b) { return a.send_offset_us < b.send_offset_us; });
  e->importance.reserve(e->packets.size());
  for (const RtpPacket& p : e->packets) {
    e->importance.push_back(p.importance);
  }
  SourceBlock& v = e->view;
  v.start_us = static_cast<std::uint64_t>(std::max<std::int64_t>(0, start));
  v.duration_us = duration;
  v.packets = e->packets;
  v.importance = e->importance;
  v.arena = e->arena;
  v.rtp_start[0] =
      static_cast<std::uint32_t>(static_cast<std::uint64_t>(v.start_us) * clock_rate / 1'000'000);
  v.rtp_start[1] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(v.start_us) *
                                              (audio ? audio->clock_rate() : 0) / 1'000'000);
  e->key = pending.key;
  last_end_us = start + duration;
  const std::uint64_t first_arrival = pending.first_arrival_us;
  pending.arena = {};
  pending.clear();
  source.publish(std::move(e));
  // The hold is measured against this block's first picture.
  std::lock_guard lock(source.mutex_);
  const std::uint64_t hold = std::max(arrival_us, first_arrival) - first_arrival;
  source.stats_.hold_us_last = hold;
  source.stats_.hold_us_max = std::max(source.stats_.hold_us_max, hold);
  source.stats_.hold_us_sum += hold;
}

LiveSource::LiveSource(const LiveVideoSpec& video, const LiveSourceOptions& options,
                       const std::optional<LiveAudioSpec>& audio)
    : options_(options) {
  options_.max_payload = std::clamp<std::size_t>(options_.max_payload, 64, 65000);
  options_.block_us = std::max<std::int64_t>(options_.block_us, 1000);
  options_.ring_blocks = std::max<std::size_t>(options_.ring_blocks, 2);
  options_.max_block_packets = std::max<std::size_t>(options_.max_block_packets, 64);
  writer_ = std::make_unique<Writer>(*this, video);
  StreamInfo info;
  info.kind = MediaKind::kVideo;
  info.codec = Codec::kH264;
  info.payload_type = options_.payload_type;
  info.clock_rate = writer_->clock_rate;
  info.encoding = "H264/" + std::to_string(info.clock_rate);
  info.fmtp = "packetization-mode=1";
  // The parameter sets as announced (the packetizer read them out of the Annex B bytes).
  const auto& sps = writer_->packetizer.sdp_sps();
  const auto& pps = writer_->packetizer.sdp_pps();
  if (!sps.empty() && !pps.empty()) {
    std::string sets;
    for (const auto& s : sps) {
      sets += (sets.empty() ? "" : ",") + detail::base64(s);
    }
    for (const auto& p : pps) {
      sets += "," + detail::base64(p);
    }
    info.fmtp += "; sprop-parameter-sets=" + sets;
    if (sps[0].size() >= 4) {
      info.fmtp += "; profile-level-id=" + detail::hex_upper(detail::Bytes(sps[0]).subspan(1, 3));
    }
  } else if (!video.profile_level_id.empty()) {
    info.fmtp += "; profile-level-id=" + video.profile_level_id;
  }
  streams_.push_back(std::move(info));
  if (audio && audio->clock_rate > 0) {
    StreamInfo a;
    a.kind = MediaKind::kAudio;
    a.codec = audio->codec;
    a.payload_type = options_.audio_payload_type;
    a.clock_rate = audio->clock_rate;
    a.channels = audio->channels;
    a.encoding = audio->encoding;
    a.fmtp = audio->fmtp;
    streams_.push_back(std::move(a));
    writer_->audio.emplace(*audio, options_.max_payload, options_.max_block_packets);
    if (audio->latm) writer_->latm.emplace(*audio->latm);
  }
}

LiveSource::~LiveSource() = default;

void LiveSource::push_video(std::uint16_t sequence, std::uint32_t timestamp, bool marker,
                            std::span<const std::uint8_t> payload, std::uint64_t arrival_us) {
  std::lock_guard write(write_mutex_);
  Writer& w = *writer_;
  if (w.ended) return;
  ++w.packets;
  w.reorder.push(detail::ReorderWindow::Packet{sequence, timestamp, marker, payload, arrival_us},
                 [&w](const detail::ReorderWindow::Packet& p) { w.depacketize(p); });
}

void LiveSource::push_audio(std::uint16_t sequence, std::uint32_t timestamp, bool marker,
                            std::span<const std::uint8_t> payload, std::uint64_t arrival_us) {
  std::lock_guard write(write_mutex_);
  Writer& w = *writer_;
  if (w.ended) return;
  w.arrival_us = arrival_us;
  if (w.latm) {
    // One AAC-hbr payload per completed LATM element; a fragment waits, a bad packet is dropped.
    const auto aac = w.latm->push(sequence, timestamp, marker, payload);
    // Counted per element (a packet, unless fragmented) and per drop.
    if (aac.empty()) {
      const std::uint64_t bad = w.latm->stats().malformed - w.latm_malformed;
      w.latm_malformed = w.latm->stats().malformed;
      w.audio_packets += bad;
      w.audio_dropped += bad;
      return;
    }
    w.on_audio(timestamp, true, aac);
    return;
  }
  w.on_audio(timestamp, marker, payload);
}

void LiveSource::sender_report(std::size_t stream, std::uint64_t ntp, std::uint32_t rtp_timestamp) {
  std::lock_guard write(write_mutex_);
  Writer& w = *writer_;
  if (w.ended) return;
  if (stream == 0) {
    // The capture clock (glass-to-glass latency, docs/live.md "Glass-to-glass latency").
    if (w.have_origin && w.have_timestamp) {
      w.date_report(ntp, rtp_timestamp);
    } else {
      w.early_report = std::make_pair(ntp, rtp_timestamp);
    }
  }
  if (!w.audio) return;  // otherwise the reports put audio on the video's timeline
  w.audio->sender_report(stream, ntp, rtp_timestamp);
}

std::optional<std::uint64_t> LiveSource::capture_ntp(std::int64_t media_us) const {
  std::lock_guard lock(mutex_);
  if (!capture_) return std::nullopt;
  // NTP 32.32 seconds: whole seconds and the µs rest apart (µs * 2^32 overflows 64 bits past
  // 35 minutes), signed around the SR's instant.
  const std::int64_t delta_us = media_us - capture_->timeline_us;
  const std::int64_t seconds = delta_us / 1'000'000;
  const std::int64_t rest_us = delta_us % 1'000'000;
  const auto delta_ntp =
      static_cast<std::uint64_t>(seconds) * (std::uint64_t{1} << 32) +
      static_cast<std::uint64_t>((rest_us * (std::int64_t{1} << 32)) / 1'000'000);
  return capture_->ntp + delta_ntp;
}

void LiveSource::end(std::uint64_t now_us) {
  std::lock_guard write(write_mutex_);
  Writer& w = *writer_;
  if (w.ended) return;
  w.reorder.flush([&w](const detail::ReorderWindow::Packet& p) { w.depacketize(p); });
  w.arrival_us = now_us;
  w.depacketizer.flush();
  w.cut(w.pending.max_pts_us + 1, true);
  w.ended = true;
  std::lock_guard lock(mutex_);
  sync_counters();
  ended_ = true;
  stats_.ended = true;
}

void LiveSource::restart(std::uint64_t now_us) {
  std::lock_guard write(write_mutex_);
  Writer& w = *writer_;
  if (w.ended) return;
  ++w.restarts;
  w.reorder.reset();  // the old stream's held packets go with its last picture
  w.arrival_us = now_us;
  w.depacketizer.reset();  // the old stream's last picture is incomplete: it goes
  w.cut(w.pending.max_pts_us + 1, true);
  if (w.audio) w.audio->forget_reports();  // the new RTP stream has its own timestamps and reports
  w.forget_audio_timeline();
  if (w.latm) w.latm->reset();
  w.lead_count = 0;  // the new stream's timeline: its pictures' leads
  w.have_timestamp = false;
  w.have_origin = false;
  w.early_report.reset();
  w.need_key = true;
  w.resume_us = w.last_end_us;
  std::lock_guard lock(mutex_);
  capture_.reset();
  sync_counters();
}

void LiveSource::sync_counters() {
  const Writer& w = *writer_;
  stats_.packets = w.packets;
  stats_.access_units = w.access_units;
  stats_.damaged_units = w.damaged;
  stats_.malformed = w.malformed + w.depacketizer.stats().malformed;
  stats_.waiting_for_key = w.waiting;
  stats_.oversized = w.oversized;
  stats_.timestamp_resets = w.resets;
  stats_.forced_cuts = w.forced;
  stats_.restarts = w.restarts;
  stats_.reordered = w.reorder.stats().reordered;
  stats_.late_packets = w.reorder.stats().late + w.reorder.stats().duplicates;
  stats_.audio_packets = w.audio_packets;
  stats_.audio_dropped = w.audio_dropped + (w.audio ? w.audio->dropped() : 0);
  stats_.audio_by_arrival = w.audio ? w.audio->by_arrival() : 0;
  stats_.audio_report_offset_us =
      w.audio && w.audio->report_offset_us() ? *w.audio->report_offset_us() : 0;
}

void LiveSource::publish(std::shared_ptr<Entry> entry) {
  std::lock_guard lock(mutex_);
  entry->view.sequence = published_;
  entry->view.index = static_cast<std::uint32_t>(published_);
  ++published_;
  ++stats_.blocks;
  if (entry->key) ++stats_.key_blocks;
  ring_.push_back(std::move(entry));
  while (ring_.size() > options_.ring_blocks) {
    ring_.pop_front();
  }
  sync_counters();
}

LiveSourceStats LiveSource::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::uint64_t LiveSource::join_sequence() const {
  std::lock_guard lock(mutex_);
  for (auto it = ring_.rbegin(); it != ring_.rend(); ++it) {
    if ((*it)->key) return (*it)->view.sequence;
  }
  return published_;  // none yet: the next one
}

BlockState LiveSource::read(std::uint64_t sequence, SourceBlock& out) const {
  std::lock_guard lock(mutex_);
  if (sequence >= published_) return ended_ ? BlockState::kEnded : BlockState::kNotYet;
  const std::uint64_t oldest = published_ - ring_.size();
  if (sequence < oldest) return BlockState::kGone;
  const auto& e = ring_[sequence - oldest];
  out = e->view;
  out.hold = e;
  return BlockState::kReady;
}

}  // namespace predrop::media
