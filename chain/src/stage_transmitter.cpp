#include "predrop/chain/stage_transmitter.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <utility>

namespace predrop::chain {

namespace {

// The shared batch of the SendBatchScope open on this thread (nullptr: none).
thread_local SendBatch* t_scope = nullptr;

void store_u16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

void store_u32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// SendBatch

SendBatch::SendBatch(net::UdpEndpoint& socket, std::size_t slot_size, std::size_t capacity)
    : socket_(socket),
      slot_size_(slot_size),
      capacity_(std::clamp<std::size_t>(capacity, 1, net::UdpEndpoint::kMaxSendBatch)),
      slab_(std::make_unique<std::uint8_t[]>(capacity_ * slot_size_)) {
  datagrams_.reserve(capacity_);
  owners_.reserve(capacity_);
}

SendBatch::~SendBatch() {
  flush();
}

void SendBatch::push(std::size_t len, const net::SocketAddress* to, StageTransmitter* owner) {
  datagrams_.push_back(net::OutDatagram{next_slot(), len, to});
  owners_.push_back(owner);
  if (datagrams_.size() == capacity_) flush();
}

void SendBatch::flush() {
  if (datagrams_.empty()) return;
  ++flushes_;
  // send_batch reports only how many went out; when the socket queue fills it drops the tail,
  // so the first `taken` datagrams are the ones sent. (A datagram refused for its own reason,
  // which never happens with the server's fixed destinations, would shift the credit by one
  // between owners; the totals stay right.)
  const std::size_t taken = socket_.send_batch(datagrams_);
  for (std::size_t i = 0; i < owners_.size(); ++i) {
    StageTransmitter* o = owners_[i];
    if (i < taken) {
      ++o->stats_.packets_sent;
    } else {
      ++o->stats_.send_drops;
    }
    --o->in_shared_;
  }
  datagrams_.clear();
  owners_.clear();
}

SendBatchScope::SendBatchScope(SendBatch& batch) : previous_(t_scope) {
  t_scope = &batch;
}

SendBatchScope::~SendBatchScope() {
  if (t_scope != nullptr) t_scope->flush();
  t_scope = previous_;
}

// ---------------------------------------------------------------------------------------------
// StageTransmitter

struct StageTransmitter::Rtx {
  Rtx(const RetransmitConfig& c, std::size_t max_payload, std::size_t slot)
      : config(c),
        ring(c.slots, max_payload),
        budget(c.fraction, c.burst_bytes),
        next_sequence(c.initial_sequence),
        slot_size(slot),
        slab(std::make_unique<std::uint8_t[]>(kBatch * slot)) {}
  RetransmitConfig config;
  SentPacketRing ring;
  RetransmitBudget budget;
  std::uint16_t next_sequence;
  std::size_t slot_size;  // a packet slot: the header, the 2-byte OSN, the payload, the SRTP tag
  std::unique_ptr<std::uint8_t[]> slab;
  RetransmitStats stats;
};

StageTransmitter::StageTransmitter(net::UdpEndpoint& socket, TransmitterConfig config,
                                   std::optional<net::SrtpSession> srtp,
                                   core::DiscardPlanner planner)
    : socket_(socket),
      config_(std::move(config)),
      srtp_(std::move(srtp)),
      planner_(planner),
      counters_(config_.tracks.size()),
      templates_(config_.tracks.size()),
      header_size_(wire::rtp_header_size(config_.extension_ids)),
      slot_size_(header_size_ + config_.max_payload_size + net::kSrtpMaxTrailer) {
  batch_.reserve(kBatch);
  picture_ids_.reserve(counters_.size());
  for (std::size_t i = 0; i < counters_.size(); ++i) {
    counters_[i].next_sequence = config_.tracks[i].initial_sequence;
    picture_ids_.emplace_back(config_.tracks[i].picture_id);
  }
  // Offsets of the per-packet extension fields, as wire::RtpHeaderLayout documents the layout that
  // wire::write_rtp_header() produces; build_templates() checks the element bytes against them.
  const wire::RtpExtensionIds& ids = config_.extension_ids;
  std::size_t next = wire::kRtpFixedHeaderSize + 4;
  if (ids.stage != 0) {
    stage_offset_ = next + 1;
    next += 1 + wire::kStageExtensionSize;
  }
  if (ids.abs_send_time != 0) {
    abs_offset_ = next + 1;
    next += 1 + wire::kAbsSendTimeSize;
  }
  if (ids.transport_sequence != 0) transport_offset_ = next + 1;
  build_templates();
}

void StageTransmitter::enable_retransmission(const RetransmitConfig& config) {
  if (rtx_) return;
  rtx_ = std::make_unique<Rtx>(config, config_.max_payload_size, slot_size_ + 2);
}

const RetransmitStats& StageTransmitter::retransmit_stats() const {
  static const RetransmitStats none;
  return rtx_ ? rtx_->stats : none;
}

std::size_t StageTransmitter::retransmit(std::span<const std::uint16_t> sequences,
                                         std::uint64_t now_us) {
  if (!rtx_ || sequences.empty()) return 0;
  Rtx& r = *rtx_;
  // Whatever is still in the private batch goes first (slot indexes below are batch_'s).
  flush();
  const std::size_t track = r.config.track;
  if (track >= config_.tracks.size()) return 0;
  const TrackConfig& tcfg = config_.tracks[track];
  // No stage element: a retransmission belongs to no stage's announced count.
  wire::RtpExtensions ext;
  ext.ids = wire::RtpExtensionIds{0, config_.extension_ids.abs_send_time,
                                  config_.extension_ids.transport_sequence};
  ext.abs_send_time = wire::abs_send_time_from_us(now_us);
  std::size_t sent = 0;
  for (const std::uint16_t seq : sequences) {
    ++r.stats.requested;
    SentRtpPacket* e = r.ring.find(seq);
    if (e == nullptr) {
      ++r.stats.unknown;  // never sent (pre-discarded), too old, or never ours
      continue;
    }
    if (e->resent >= r.config.max_per_packet) {
      ++r.stats.repeated;
      continue;
    }
    const std::span<const std::uint8_t> payload = r.ring.payload(*e);
    wire::RtpHeader h;
    h.marker = e->marker;
    h.payload_type = r.config.payload_type;
    h.sequence = r.next_sequence;
    h.timestamp = e->timestamp;
    h.ssrc = r.config.ssrc;
    ext.transport_sequence = next_transport_sequence_;
    std::uint8_t* slot = r.slab.get() + batch_.size() * r.slot_size;
    const std::span<std::uint8_t> buf(slot, r.slot_size);
    const auto header = wire::write_rtp_header(buf, h, ext);
    if (!header || *header + 2 + payload.size() + net::kSrtpMaxTrailer > r.slot_size) {
      ++stats_.oversize;
      continue;
    }
    // RFC 4588 §4: the original sequence number, then the original payload.
    std::size_t len = *header;
    store_u16(slot + len, seq);
    if (!payload.empty()) std::memcpy(slot + len + 2, payload.data(), payload.size());
    len += 2 + payload.size();
    // The credit counts RTP bytes before SRTP, as on_sent() does.
    if (!r.budget.take(len)) {
      ++r.stats.capped;
      continue;
    }
    if (srtp_) {
      const net::SrtpResult pr = srtp_->protect_rtp(buf, len);
      if (!pr) {
        ++stats_.protect_errors;
        continue;
      }
      len = pr.length;
    }
    if (config_.extension_ids.transport_sequence != 0) {
      // Numbered like every packet that goes (the browser's feedback stays gap-free), logged as
      // a retransmission: it is in no stage's count, so the meter leaves it out.
      if (send_log_ != nullptr) {
        SentPacket sp{now_us, plan_.stage, 0, 0,
                      static_cast<std::uint16_t>(
                          std::min<std::size_t>(len + core::kLinkOverheadBytes, 0xffff))};
        sp.retransmission = true;
        send_log_->record(next_transport_sequence_, sp);
      }
      ++next_transport_sequence_;
    }
    ++r.next_sequence;
    ++e->resent;
    ++r.stats.sent;
    r.stats.bytes += len;
    r.stats.octets += 2 + payload.size();
    ++sent;
    batch_tracks_[batch_.size()] = static_cast<std::uint8_t>(track);
    batch_.push_back(net::OutDatagram{slot, len, &tcfg.destination});
    if (batch_.size() == kBatch) flush();
  }
  flush();
  return sent;
}

StageTransmitter::~StageTransmitter() {
  // Queued datagrams point at our destinations and credit our counters: send them now.
  if (in_shared_ > 0 && shared_ != nullptr) shared_->flush();
}

void StageTransmitter::prefetch_object() const {
  const auto* self = reinterpret_cast<const char*>(this);
  for (std::size_t offset = 0; offset < sizeof(*this); offset += 64) {
    __builtin_prefetch(self + offset);
  }
}

void StageTransmitter::prefetch_targets(std::size_t next_index) const {
  __builtin_prefetch(config_.tracks.data());
  __builtin_prefetch(counters_.data());
  __builtin_prefetch(templates_.data());
  if (next_index < drop_.size()) __builtin_prefetch(drop_.data() + next_index);
  if (srtp_) srtp_->prefetch();
}

void StageTransmitter::build_templates() {
  templates_ok_ = header_size_ <= std::tuple_size_v<std::array<std::uint8_t, 32>>;
  wire::RtpExtensions ext;
  ext.ids = config_.extension_ids;
  ext.stage.stage_id = plan_.stage;
  ext.stage.count = static_cast<std::uint16_t>(std::min<std::size_t>(plan_.to_send, 0xffff));
  for (std::size_t i = 0; i < templates_.size() && templates_ok_; ++i) {
    wire::RtpHeader h;
    h.payload_type = config_.tracks[i].payload_type;
    h.ssrc = config_.tracks[i].ssrc;
    auto n = wire::write_rtp_header(templates_[i], h, ext);
    templates_ok_ = n && *n == header_size_;
    const wire::RtpExtensionIds& ids = config_.extension_ids;
    if (templates_ok_ && stage_offset_ != 0) {
      templates_ok_ =
          templates_[i][stage_offset_ - 1] == (ids.stage << 4 | (wire::kStageExtensionSize - 1));
    }
    if (templates_ok_ && abs_offset_ != 0) {
      templates_ok_ =
          templates_[i][abs_offset_ - 1] == (ids.abs_send_time << 4 | (wire::kAbsSendTimeSize - 1));
    }
    if (templates_ok_ && transport_offset_ != 0) {
      templates_ok_ = templates_[i][transport_offset_ - 1] ==
                      (ids.transport_sequence << 4 | (wire::kTransportSequenceSize - 1));
    }
  }
}

StagePlan StageTransmitter::begin_stage(std::uint32_t stage, double rate,
                                        std::span<const std::uint8_t> importance) {
  flush();
  if (drop_.size() < importance.size()) drop_.resize(importance.size());
  const std::span<std::uint8_t> mask(drop_.data(), importance.size());
  // The pre-discard decision for the whole stage, made once at its start (docs/design.md §3).
  const std::size_t discarded = planner_.plan(rate, importance, mask);
  plan_ = StagePlan{stage, rate, importance.size(), discarded, importance.size() - discarded};
  // The stage extension's count is 16 bits; larger stages are a configuration error upstream,
  // and the announced count saturates rather than wrapping.
  sent_in_stage_ = 0;
  stage_late_ = false;
  ++stats_.stages;
  stats_.packets_planned += importance.size();
  stats_.packets_discarded += discarded;
  // Stage id and count are fixed for the stage: written once here, not per packet.
  build_templates();
  return plan_;
}

StagePlan StageTransmitter::replan_rest(double rate, std::span<const std::uint8_t> rest,
                                        std::size_t from) {
  if (from > plan_.packets || rest.size() != plan_.packets - from) return plan_;
  const std::span<std::uint8_t> mask(drop_.data() + from, rest.size());
  const auto before = static_cast<std::size_t>(std::count(mask.begin(), mask.end(), 1));
  const std::size_t discarded = planner_.plan(rate, rest, mask);
  plan_.discarded = plan_.discarded - before + discarded;
  plan_.to_send = plan_.packets - plan_.discarded;
  stats_.packets_discarded = stats_.packets_discarded - before + discarded;
  // Queued datagrams of this stage were written with the old count: they keep it.
  build_templates();
  return plan_;
}

std::size_t StageTransmitter::send(std::span<const OutgoingPacket> packets, std::size_t first,
                                   std::uint64_t now_us) {
  SendBatch* shared = t_scope;
  if (shared != nullptr &&
      (sink_ != nullptr || &shared->socket() != &socket_ || slot_size_ > shared->slot_size())) {
    shared = nullptr;
  }
  if (shared == nullptr && !slab_) slab_ = std::make_unique<std::uint8_t[]>(kBatch * slot_size_);
  const std::uint64_t sent_before = stats_.packets_sent;
  std::size_t queued = 0;
  const std::uint32_t abs_send_time = wire::abs_send_time_from_us(now_us);
  wire::RtpExtensions ext;
  ext.ids = config_.extension_ids;
  ext.stage.stage_id = plan_.stage;
  ext.stage.count = static_cast<std::uint16_t>(std::min<std::size_t>(plan_.to_send, 0xffff));
  ext.abs_send_time = abs_send_time;
  for (std::size_t k = 0; k < packets.size(); ++k) {
    const std::size_t index = first + k;
    if (index < plan_.packets && drop_[index]) continue;
    const OutgoingPacket& p = packets[k];
    if (p.payload.size() > config_.max_payload_size || p.track >= counters_.size()) {
      ++stats_.oversize;
      continue;
    }
    TrackCounters& tc = counters_[p.track];
    const TrackConfig& track = config_.tracks[p.track];
    const std::uint32_t timestamp = p.timestamp + track.timestamp_offset;
    const auto stage_index =
        static_cast<std::uint16_t>(std::min<std::size_t>(sent_in_stage_, 0xffff));
    std::uint8_t* slot =
        shared != nullptr ? shared->next_slot() : slab_.get() + batch_.size() * slot_size_;
    const std::span<std::uint8_t> buf(slot, slot_size_);
    std::size_t len = 0;
    if (templates_ok_) {
      // Copy the stage's header and patch the per-packet fields in place.
      std::memcpy(slot, templates_[p.track].data(), header_size_);
      slot[1] = static_cast<std::uint8_t>((p.marker ? 0x80 : 0) | track.payload_type);
      store_u16(slot + 2, tc.next_sequence);
      store_u32(slot + 4, timestamp);
      if (stage_offset_ != 0) store_u16(slot + stage_offset_ + 4, stage_index);
      if (abs_offset_ != 0) {
        slot[abs_offset_] = static_cast<std::uint8_t>(abs_send_time >> 16);
        slot[abs_offset_ + 1] = static_cast<std::uint8_t>(abs_send_time >> 8);
        slot[abs_offset_ + 2] = static_cast<std::uint8_t>(abs_send_time);
      }
      if (transport_offset_ != 0) store_u16(slot + transport_offset_, next_transport_sequence_);
      if (!p.payload.empty()) std::memcpy(slot + header_size_, p.payload.data(), p.payload.size());
      len = header_size_ + p.payload.size();
    } else {
      wire::RtpHeader h;
      h.marker = p.marker;
      h.payload_type = track.payload_type;
      h.sequence = tc.next_sequence;
      h.timestamp = timestamp;
      h.ssrc = track.ssrc;
      ext.stage.index = stage_index;
      ext.transport_sequence = next_transport_sequence_;
      auto written = wire::write_rtp_packet(buf, h, ext, p.payload);
      if (!written) {
        ++stats_.oversize;
        continue;
      }
      len = *written;
    }
    // The payload as it goes, before SRTP: PictureIDs renumbered over what is sent, and kept so
    // for a NACK (a packet that fails protection is overwritten by the next under its number).
    const std::span<std::uint8_t> sent_payload(slot + len - p.payload.size(), p.payload.size());
    (void)picture_ids_[p.track].rewrite(sent_payload);
    const bool keep = rtx_ && p.track == rtx_->config.track;
    if (keep) rtx_->ring.record(tc.next_sequence, p.marker, timestamp, sent_payload);
    if (srtp_) {
      const net::SrtpResult r = srtp_->protect_rtp(buf, len);
      if (!r) {
        ++stats_.protect_errors;
        continue;
      }
      len = r.length;
    }
    if (config_.extension_ids.transport_sequence != 0) {
      // Numbered only once it is sure to go (protected): a browser reads a gap as a loss.
      if (send_log_ != nullptr) {
        send_log_->record(next_transport_sequence_,
                          SentPacket{now_us, plan_.stage, stage_index, ext.stage.count,
                                     static_cast<std::uint16_t>(std::min<std::size_t>(
                                         len + core::kLinkOverheadBytes, 0xffff))});
      }
      ++next_transport_sequence_;
    }
    // Kept for a NACK (above) under the number it went with; the credit grows with what is sent.
    if (keep) rtx_->budget.on_sent(header_size_ + p.payload.size());
    ++tc.next_sequence;
    ++sent_in_stage_;
    ++tc.packets;
    tc.octets += p.payload.size();
    tc.last_timestamp = timestamp;
    if (p.due_us > now_us) {
      stats_.max_lead_us = std::max(stats_.max_lead_us, p.due_us - now_us);
    } else if (p.due_us != 0 && now_us > p.due_us) {
      const std::uint64_t lag = now_us - p.due_us;
      stats_.max_lag_us = std::max(stats_.max_lag_us, lag);
      if (lag > config_.late_after_us) {
        ++stats_.late_packets;
        if (!stage_late_) ++stats_.late_stages;
        stage_late_ = true;
      }
    }
    if (shared != nullptr) {
      ++in_shared_;
      shared_ = shared;
      ++queued;
      shared->push(len, &track.destination, this);
    } else {
      batch_tracks_[batch_.size()] = p.track;
      batch_.push_back(net::OutDatagram{slot, len, &track.destination});
      if (batch_.size() == kBatch) flush();
    }
  }
  if (shared != nullptr) return queued;
  flush();
  return static_cast<std::size_t>(stats_.packets_sent - sent_before);
}

void StageTransmitter::flush() {
  if (batch_.empty()) return;
  const std::size_t taken =
      sink_ != nullptr
          ? std::min(batch_.size(),
                     sink_->send_batch(batch_, std::span(batch_tracks_.data(), batch_.size())))
          : socket_.send_batch(batch_);
  stats_.packets_sent += taken;
  stats_.send_drops += batch_.size() - taken;
  batch_.clear();
}

void StageTransmitter::set_sink(PacketSink* sink) {
  flush();
  sink_ = sink;
}

}  // namespace predrop::chain
