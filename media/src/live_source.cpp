// A live BlockSource fed with a publisher's RTP (see live_source.hpp).
#include "predrop/media/live_source.hpp"

#include <algorithm>
#include <array>
#include <numeric>

#include "bitstream.hpp"
#include "h264_packetizer.hpp"
#include "importance.hpp"
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
  // An audio packet's payload as it came (in the arena) and its place on the timeline.
  struct Sound {
    std::int64_t t_us = 0;
    std::uint32_t rtp = 0;  // relative to the audio's origin (timeline 0)
    std::uint32_t offset = 0;
    std::uint16_t size = 0;
    bool marker = false;
  };
  struct Pending {
    std::vector<std::uint8_t> arena;
    std::vector<detail::StagedPacket> staged;
    std::vector<Picture> pictures;
    std::vector<Sound> sounds;
    std::int64_t start_us = 0;
    std::int64_t max_pts_us = 0;
    std::uint64_t first_arrival_us = 0;
    bool key = false;
    void clear() {
      arena.clear();
      staged.clear();
      pictures.clear();
      sounds.clear();
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
  void forget_audio_timeline() { audio_synced = false; }
  void add_sound(std::int64_t rel, bool marker, std::span<const std::uint8_t> head,
                 std::span<const std::uint8_t> body);
  bool split_aac(std::int64_t rel, bool marker, std::span<const std::uint8_t> payload);
  static constexpr std::int64_t kAacFrameSamples = 1024;
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
  // Audio: its clock, the last sender report of each stream (NTP 32.32, RTP), and its RTP
  // timestamps unwrapped, with the tick that is timeline 0 (audio_origin).
  std::uint32_t audio_clock = 0;  // 0: no audio track
  LiveAudioSpec audio_spec;
  std::vector<std::span<const std::uint8_t>> aus;  // scratch of split_aac()
  std::vector<std::uint8_t> head, body;
  struct Report {
    std::uint64_t ntp = 0;
    std::uint32_t rtp = 0;
  };
  std::array<std::optional<Report>, 2> reports{};
  bool audio_synced = false;
  std::uint32_t audio_last = 0;
  std::int64_t audio_unwrapped = 0;
  std::int64_t audio_origin = 0;
  std::vector<std::uint8_t> carry;  // audio bytes carried over a cut
  // Counters the writer keeps (copied into stats_ at each publication).
  std::uint64_t packets = 0, access_units = 0, damaged = 0, malformed = 0, waiting = 0,
                oversized = 0, resets = 0, forced = 0, restarts = 0, audio_packets = 0,
                audio_dropped = 0;
  bool ended = false;
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
    const bool full = pending.staged.size() + pending.sounds.size() + estimate > max_packets;
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
  pending.max_pts_us = std::max(pending.max_pts_us, pts_us);
  pending.pictures.push_back(p);
}

// An audio packet onto the timeline. The first one after the tracks are synchronised fixes
// where the audio's RTP clock is on the video's (through both sender reports); the rest follow
// their own timestamps, so the audio keeps the publisher's exact spacing.
void LiveSource::Writer::on_audio(std::uint32_t timestamp, bool marker,
                                  std::span<const std::uint8_t> payload) {
  ++audio_packets;
  const bool room =
      pending.staged.size() + pending.sounds.size() + 8 <= source.options_.max_block_packets;
  if (audio_clock == 0 || payload.empty() || payload.size() > 65535 || !have_origin || need_key ||
      pending.pictures.empty() || !room) {
    ++audio_dropped;
    return;
  }
  const auto audio_delta = static_cast<std::int32_t>(timestamp - audio_last);
  if (audio_synced && audio_delta != 0) {
    // A jump of the audio clock alone (the publisher restarted it): synchronise again.
    const std::int64_t step = std::int64_t{audio_delta} * 1'000'000 / audio_clock;
    if (step > kMaxJumpUs || step < -kMaxJumpUs) audio_synced = false;
  }
  if (!audio_synced) {
    if (!reports[0] || !reports[1]) {
      ++audio_dropped;
      return;
    }
    // NTP of this packet by the audio's report, then the video tick of that NTP by the video's.
    const auto ntp_us = [](std::uint64_t ntp) {
      return static_cast<std::int64_t>((ntp >> 32) * 1'000'000 +
                                       (((ntp & 0xffffffffULL) * 1'000'000) >> 32));
    };
    const std::int64_t since_audio_report_us =
        std::int64_t{static_cast<std::int32_t>(timestamp - reports[1]->rtp)} * 1'000'000 /
        audio_clock;
    const std::int64_t after_video_report_us =
        ntp_us(reports[1]->ntp) - ntp_us(reports[0]->ntp) + since_audio_report_us;
    const auto video_rtp = static_cast<std::uint32_t>(
        reports[0]->rtp +
        static_cast<std::uint32_t>(after_video_report_us * static_cast<std::int64_t>(clock_rate) /
                                   1'000'000));
    const std::int64_t ticks =
        unwrapped + static_cast<std::int32_t>(video_rtp - last_timestamp) - origin;
    const std::int64_t t_us = to_us(ticks);
    if (t_us + kMaxJumpUs < pending.start_us || t_us > pending.max_pts_us + kMaxJumpUs) {
      ++audio_dropped;  // reports that do not fit the video: wait for newer ones
      return;
    }
    audio_unwrapped = 0;
    audio_origin = -t_us * static_cast<std::int64_t>(audio_clock) / 1'000'000;
    audio_last = timestamp;
    audio_synced = true;
  } else {
    audio_unwrapped += audio_delta;
    audio_last = timestamp;
  }
  const std::int64_t rel = audio_unwrapped - audio_origin;
  if (payload.size() <= source.options_.max_payload) {
    add_sound(rel, marker, payload, {});
    return;
  }
  // Too large for the server's packets (FFmpeg puts up to 5 AAC frames in one): split between
  // its access units.
  if (!split_aac(rel, marker, payload)) ++audio_dropped;
}

void LiveSource::Writer::add_sound(std::int64_t rel, bool marker,
                                   std::span<const std::uint8_t> head,
                                   std::span<const std::uint8_t> body) {
  if (pending.staged.size() + pending.sounds.size() >= source.options_.max_block_packets) {
    ++audio_dropped;  // the block's packet bound holds whatever the publisher sends
    return;
  }
  Sound snd;
  snd.t_us = rel * 1'000'000 / static_cast<std::int64_t>(audio_clock);
  snd.rtp = static_cast<std::uint32_t>(rel);
  snd.offset = static_cast<std::uint32_t>(pending.arena.size());
  snd.size = static_cast<std::uint16_t>(head.size() + body.size());
  snd.marker = marker;
  pending.arena.insert(pending.arena.end(), head.begin(), head.end());
  pending.arena.insert(pending.arena.end(), body.begin(), body.end());
  pending.sounds.push_back(snd);
}

// RFC 3640 §3.2: AU-headers-length (bits), the AU headers (AU-size, then AU-Index for the first
// and AU-Index-delta for the rest), padding to a byte, the access units back to back. Parts of
// whole AUs each fit max_payload; non-zero index deltas (interleaving) are refused.
bool LiveSource::Writer::split_aac(std::int64_t rel, bool marker,
                                   std::span<const std::uint8_t> payload) {
  if (audio_spec.codec != Codec::kAac || payload.size() < 2) return false;
  const int size_bits = audio_spec.size_length;
  const int first_bits = size_bits + audio_spec.index_length;
  const int next_bits = size_bits + audio_spec.index_delta_length;
  if (size_bits <= 0 || size_bits > 16 || first_bits > 24 || next_bits > 24) return false;
  const std::size_t header_bits = (std::size_t{payload[0]} << 8) | payload[1];
  const std::size_t header_bytes = (header_bits + 7) / 8;
  if (2 + header_bytes > payload.size()) return false;
  const auto bit = [&](std::size_t pos) { return (payload[2 + pos / 8] >> (7 - pos % 8)) & 1U; };
  const auto field = [&](std::size_t pos, int width) {
    std::uint32_t v = 0;
    for (int i = 0; i < width; ++i) {
      v = (v << 1) | bit(pos + static_cast<std::size_t>(i));
    }
    return v;
  };
  aus.clear();
  std::size_t pos = 0;
  std::size_t data = 2 + header_bytes;
  while (pos < header_bits) {
    const int width = aus.empty() ? first_bits : next_bits;
    if (pos + static_cast<std::size_t>(width) > header_bits) return false;
    const std::uint32_t size = field(pos, size_bits);
    if (field(pos + static_cast<std::size_t>(size_bits), width - size_bits) != 0) return false;
    if (size == 0 || data + size > payload.size()) return false;
    aus.push_back(payload.subspan(data, size));
    data += size;
    pos += static_cast<std::size_t>(width);
  }
  // Groups of whole AUs, each with its own headers (the first AU's header is the widest).
  const std::size_t head_room = 2 + (static_cast<std::size_t>(first_bits) + 7) / 8;
  std::size_t i = 0;
  while (i < aus.size()) {
    std::size_t bytes = aus[i].size();
    std::size_t end = i + 1;
    std::size_t bits = static_cast<std::size_t>(first_bits);
    while (end < aus.size() &&
           2 + (bits + static_cast<std::size_t>(next_bits) + 7) / 8 + bytes + aus[end].size() <=
               source.options_.max_payload) {
      bits += static_cast<std::size_t>(next_bits);
      bytes += aus[end].size();
      ++end;
    }
    if (head_room + aus[i].size() > source.options_.max_payload) return false;
    // The headers: sizes, zero indexes.
    head.assign(2 + (bits + 7) / 8, 0);
    head[0] = static_cast<std::uint8_t>(bits >> 8);
    head[1] = static_cast<std::uint8_t>(bits);
    std::size_t at = 0;
    for (std::size_t k = i; k < end; ++k) {
      const int width = k == i ? first_bits : next_bits;
      for (int b = 0; b < size_bits; ++b) {
        if (((aus[k].size() >> (size_bits - 1 - b)) & 1U) != 0) {
          head[2 + (at + static_cast<std::size_t>(b)) / 8] |=
              static_cast<std::uint8_t>(0x80U >> ((at + static_cast<std::size_t>(b)) % 8));
        }
      }
      at += static_cast<std::size_t>(width);
    }
    body.clear();
    for (std::size_t k = i; k < end; ++k) {
      body.insert(body.end(), aus[k].begin(), aus[k].end());
    }
    add_sound(rel + static_cast<std::int64_t>(i) * kAacFrameSamples, marker && end == aus.size(),
              head, body);
    i = end;
  }
  return true;
}

// Publishes the block in progress; the next one starts at `next_start_us`.
void LiveSource::Writer::cut(std::int64_t next_start_us, bool last) {
  if (pending.pictures.empty()) {
    pending.clear();
    return;
  }
  // In timestamp order (a late packet after one carried over a cut goes before it).
  std::stable_sort(pending.sounds.begin(), pending.sounds.end(),
                   [](const Sound& a, const Sound& b) { return a.t_us < b.t_us; });
  // Audio ahead of the cut (sent before the key frame that cuts) belongs to the next block.
  carry.clear();
  std::vector<Sound> later;
  if (!last) {
    std::vector<Sound> kept;
    for (const Sound& snd : pending.sounds) {
      if (snd.t_us < next_start_us) {
        kept.push_back(snd);
        continue;
      }
      Sound moved = snd;
      moved.offset = static_cast<std::uint32_t>(carry.size());
      carry.insert(carry.end(), pending.arena.begin() + snd.offset,
                   pending.arena.begin() + snd.offset + snd.size);
      later.push_back(moved);
    }
    pending.sounds = std::move(kept);
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
  std::vector<detail::StagedFrame> audio(pending.sounds.size());
  for (std::size_t i = 0; i < n; ++i) {
    video[i].frame.type = pending.pictures[i].type;
    video[i].frame.reference = pending.pictures[i].reference;
    video[i].frame.block = 0;
  }
  detail::assign_importance(video, audio, display_of, 1);

  e->arena = std::move(pending.arena);
  e->packets.reserve(pending.staged.size() + pending.sounds.size());
  e->importance.reserve(pending.staged.size() + pending.sounds.size());
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
  // Audio at its own time (a file's audio frames are sent at theirs too), never discarded
  // (assign_importance gives audio kImportanceNever, as for a file); merged into send order.
  std::int64_t audio_offset = 0;
  for (std::size_t j = 0; j < pending.sounds.size(); ++j) {
    const Sound& snd = pending.sounds[j];
    RtpPacket p;
    p.payload_offset = snd.offset;
    p.payload_size = snd.size;
    // Never before the one ahead of it: the merge into send order keeps audio in its order.
    audio_offset =
        std::max(audio_offset, std::clamp(snd.t_us - start, std::int64_t{0}, duration - 1));
    p.send_offset_us = audio_offset;
    p.rtp_timestamp = snd.rtp;
    p.frame = static_cast<std::uint32_t>(n + j);
    p.stream = 1;
    p.importance = audio[j].frame.importance;
    p.frame_type = FrameType::kAudio;
    p.marker = snd.marker;
    e->packets.push_back(p);
  }
  std::stable_sort(
      e->packets.begin(), e->packets.end(),
      [](const RtpPacket& a, const RtpPacket& b) { return a.send_offset_us < b.send_offset_us; });
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
  v.rtp_start[1] =
      static_cast<std::uint32_t>(static_cast<std::uint64_t>(v.start_us) * audio_clock / 1'000'000);
  e->key = pending.key;
  last_end_us = start + duration;
  const std::uint64_t first_arrival = pending.first_arrival_us;
  pending.arena = {};
  pending.clear();
  pending.arena.assign(carry.begin(), carry.end());
  pending.sounds = std::move(later);
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
    writer_->audio_clock = audio->clock_rate;
    writer_->audio_spec = *audio;
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

void LiveSource::push_audio(std::uint16_t /*sequence*/, std::uint32_t timestamp, bool marker,
                            std::span<const std::uint8_t> payload, std::uint64_t arrival_us) {
  std::lock_guard write(write_mutex_);
  Writer& w = *writer_;
  if (w.ended) return;
  w.arrival_us = arrival_us;
  w.on_audio(timestamp, marker, payload);
}

void LiveSource::sender_report(std::size_t stream, std::uint64_t ntp, std::uint32_t rtp_timestamp) {
  std::lock_guard write(write_mutex_);
  Writer& w = *writer_;
  if (stream >= 2 || w.ended) return;
  w.reports[stream] = Writer::Report{ntp, rtp_timestamp};
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
  w.reports[0].reset();  // the new RTP stream has its own timestamps and reports
  w.reports[1].reset();
  w.forget_audio_timeline();
  w.have_timestamp = false;
  w.have_origin = false;
  w.need_key = true;
  w.resume_us = w.last_end_us;
  std::lock_guard lock(mutex_);
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
  stats_.audio_dropped = w.audio_dropped;
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
