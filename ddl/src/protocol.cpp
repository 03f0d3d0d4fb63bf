#include "predrop/ddl/protocol.hpp"

#include <algorithm>
#include <cstring>

#include "predrop/core/byte_io.hpp"
#include "predrop/net/os_random.hpp"

namespace predrop::ddl {

namespace {

using core::ByteReader;
using core::ByteWriter;
using core::make_error;

// RTCP common header (RFC 3550 §6.4.1): V=2, P=0, count/subtype, PT, length in words - 1.
void write_header(ByteWriter& w, std::uint8_t count, std::uint8_t type, std::size_t size) {
  w.write_u8(static_cast<std::uint8_t>(0x80 | (count & 0x1f)));
  w.write_u8(type);
  w.write_u16(static_cast<std::uint16_t>(size / 4 - 1));
}

void write_app_header(ByteWriter& w, std::uint32_t ssrc, std::string_view name,
                      std::size_t data_size) {
  write_header(w, 0, wire::kRtcpApp, 12 + data_size);
  w.write_u32(ssrc);
  w.write_bytes({reinterpret_cast<const std::uint8_t*>(name.data()), 4});
}

std::size_t padded(std::size_t n) {
  return (n + 3) & ~std::size_t{3};
}

void write_join(ByteWriter& w, std::uint32_t ssrc, const JoinRequest& j) {
  write_app_header(w, ssrc, kJoinName, kJoinDataSize);
  w.write_u8(kJoinVersion);
  w.write_u8(0);
  w.write_u16(j.rank);
  w.write_u32(j.tensor_elements);
  w.write_u64(j.model_seed);
  w.write_u64(j.job_nonce);
  w.write_u64(j.worker_nonce);
}

void write_answer(ByteWriter& w, std::uint32_t ssrc, const JoinAnswer& a) {
  const std::size_t data = kAnswerFixedSize + padded(a.reason_size);
  write_app_header(w, ssrc, kAnswerName, data);
  w.write_u8(kAnswerVersion);
  w.write_u8(static_cast<std::uint8_t>(a.status));
  w.write_u16(a.rank);
  w.write_u16(a.workers);
  w.write_u16(a.joined);
  w.write_u32(a.start_stage);
  w.write_u32(a.downlink_ssrc);
  w.write_u16(a.chunk_elements);
  w.write_u8(a.missing_fill);
  w.write_u8(static_cast<std::uint8_t>((a.egress_discard ? 1 : 0) | (a.paced ? 2 : 0)));
  w.write_u32(a.stage_deadline_ms);
  w.write_u64(a.job_nonce);
  w.write_u64(a.worker_nonce);
  w.write_u8(a.reason_size);
  w.write_zeros(3);
  w.write_bytes({reinterpret_cast<const std::uint8_t*>(a.reason_text.data()), a.reason_size});
  w.write_zeros(padded(a.reason_size) - a.reason_size);
}

void write_stage_closed(ByteWriter& w, std::uint32_t ssrc, const StageClosed& c) {
  write_app_header(w, ssrc, kStageClosedName, kStageClosedDataSize);
  w.write_u8(kStageClosedVersion);
  w.write_u8(c.reason);
  w.write_u16(c.downlink_packets);
  w.write_u32(c.stage);
  w.write_u16(c.contributors);
  w.write_u16(0);
}

core::Status check_version(std::string_view name, std::uint8_t version, std::uint8_t known) {
  if (version != known) {
    return make_error(std::string(name) + ": version " + std::to_string(version) +
                      " (this reader knows version " + std::to_string(known) + ")");
  }
  return core::Ok{};
}

core::Result<JoinRequest> parse_join(std::span<const std::uint8_t> data) {
  // The version first, so that a join of another version is named as such whatever its size.
  if (!data.empty()) {
    if (auto st = check_version(kJoinName, data[0], kJoinVersion); !st) return st.error();
  }
  if (data.size() != kJoinDataSize) {
    return make_error("PDJN: " + std::to_string(data.size()) + " data bytes, expected " +
                      std::to_string(kJoinDataSize));
  }
  ByteReader r(data);
  r.skip(2);
  JoinRequest j;
  j.rank = r.read_u16();
  j.tensor_elements = r.read_u32();
  j.model_seed = r.read_u64();
  j.job_nonce = r.read_u64();
  j.worker_nonce = r.read_u64();
  return j;
}

core::Result<JoinAnswer> parse_answer(std::span<const std::uint8_t> data) {
  if (!data.empty()) {
    if (auto st = check_version(kAnswerName, data[0], kAnswerVersion); !st) return st.error();
  }
  if (data.size() < kAnswerFixedSize) {
    return make_error("PDJA: " + std::to_string(data.size()) + " data bytes, expected at least " +
                      std::to_string(kAnswerFixedSize));
  }
  ByteReader r(data);
  r.skip(1);
  JoinAnswer a;
  const std::uint8_t status = r.read_u8();
  if (status > static_cast<std::uint8_t>(JoinStatus::kChallenge)) {
    return make_error("PDJA: unknown status " + std::to_string(status));
  }
  a.status = static_cast<JoinStatus>(status);
  a.rank = r.read_u16();
  a.workers = r.read_u16();
  a.joined = r.read_u16();
  a.start_stage = r.read_u32();
  a.downlink_ssrc = r.read_u32();
  a.chunk_elements = r.read_u16();
  a.missing_fill = r.read_u8();
  if (a.missing_fill > 1) {
    return make_error("PDJA: unknown missing-chunk fill " + std::to_string(a.missing_fill));
  }
  const std::uint8_t flags = r.read_u8();
  a.egress_discard = (flags & 1) != 0;
  a.paced = (flags & 2) != 0;
  a.stage_deadline_ms = r.read_u32();
  a.job_nonce = r.read_u64();
  a.worker_nonce = r.read_u64();
  a.reason_size = r.read_u8();
  r.skip(3);
  if (data.size() != kAnswerFixedSize + padded(a.reason_size)) {
    return make_error("PDJA: " + std::to_string(data.size()) + " data bytes do not match a " +
                      std::to_string(a.reason_size) + "-byte reason");
  }
  const auto text = r.read_bytes(a.reason_size);
  std::memcpy(a.reason_text.data(), text.data(), text.size());
  return a;
}

core::Result<StageClosed> parse_stage_closed(std::span<const std::uint8_t> data) {
  if (data.size() != kStageClosedDataSize) {
    return make_error("PDSC: " + std::to_string(data.size()) + " data bytes, expected " +
                      std::to_string(kStageClosedDataSize));
  }
  ByteReader r(data);
  if (auto st = check_version(kStageClosedName, r.read_u8(), kStageClosedVersion); !st) {
    return st.error();
  }
  StageClosed c;
  c.reason = r.read_u8();
  if (c.reason > 2) return make_error("PDSC: unknown close reason " + std::to_string(c.reason));
  c.downlink_packets = r.read_u16();
  c.stage = r.read_u32();
  c.contributors = r.read_u16();
  return c;
}

// Collects one compound's messages; the first error stops further decoding.
class Collector final : public wire::RtcpVisitor {
 public:
  explicit Collector(ControlMessage& m) : m_(m) {}

  void on_receiver_report(const wire::ReceiverReport& rr) override {
    if (!has_rr_) {
      m_.sender_ssrc = rr.ssrc;
      has_rr_ = true;
    }
  }
  void on_sender_report(const wire::SenderReport& sr) override {
    if (!has_rr_) {
      m_.sender_ssrc = sr.ssrc;
      has_rr_ = true;
    }
  }
  void on_pdfb(std::uint32_t /*reporter*/, const wire::PdfbFeedback& fb) override {
    if (m_.feedback) return fail("two PDFB reports in one control compound");
    m_.feedback = fb;
  }
  void on_bye(std::uint32_t /*ssrc*/) override { m_.bye = true; }
  void on_app(std::uint8_t subtype, std::uint32_t /*ssrc*/, std::string_view name,
              std::span<const std::uint8_t> data) override {
    if (!error_.empty()) return;
    if (subtype != 0) {
      ++m_.unknown_app;
      return;
    }
    if (name == kJoinName) {
      if (m_.join) return fail("two PDJN in one control compound");
      auto j = parse_join(data);
      if (!j) return fail(j.error().message);
      m_.join = *j;
    } else if (name == kAnswerName) {
      if (m_.answer) return fail("two PDJA in one control compound");
      auto a = parse_answer(data);
      if (!a) return fail(a.error().message);
      m_.answer = *a;
    } else if (name == kStageClosedName) {
      if (m_.stage_closed) return fail("two PDSC in one control compound");
      auto c = parse_stage_closed(data);
      if (!c) return fail(c.error().message);
      m_.stage_closed = *c;
    } else {
      ++m_.unknown_app;
    }
  }

  const std::string& error() const { return error_; }

 private:
  void fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }

  ControlMessage& m_;
  bool has_rr_ = false;
  std::string error_;
};

}  // namespace

std::string_view to_string(JoinStatus status) {
  switch (status) {
    case JoinStatus::kWaiting:
      return "waiting";
    case JoinStatus::kStart:
      return "start";
    case JoinStatus::kRefused:
      return "refused";
    case JoinStatus::kRemoved:
      return "removed";
    case JoinStatus::kChallenge:
      return "challenge";
  }
  return "?";
}

void JoinAnswer::set_reason(std::string_view text) {
  reason_size = static_cast<std::uint8_t>(std::min<std::size_t>(text.size(), reason_text.size()));
  reason_text.fill(0);
  std::memcpy(reason_text.data(), text.data(), reason_size);
}

core::Result<std::size_t> write_control(std::span<std::uint8_t> out, const ControlMessage& m) {
  wire::ReceiverReport rr;
  rr.ssrc = m.sender_ssrc;
  auto n = wire::write_receiver_report(out, rr);
  if (!n) return n.error();
  std::size_t used = *n;
  if (m.feedback) {
    auto f = wire::write_pdfb(out.subspan(used), m.sender_ssrc, *m.feedback);
    if (!f) return f.error();
    used += *f;
  }
  ByteWriter w(out.subspan(used));
  if (m.join) write_join(w, m.sender_ssrc, *m.join);
  if (m.answer) write_answer(w, m.sender_ssrc, *m.answer);
  if (m.stage_closed) write_stage_closed(w, m.sender_ssrc, *m.stage_closed);
  if (!w.ok()) return make_error("DDL control compound does not fit the buffer");
  used += w.position();
  if (m.bye) {
    auto b = wire::write_bye(out.subspan(used), m.sender_ssrc);
    if (!b) return b.error();
    used += *b;
  }
  return used;
}

core::Result<ControlMessage> parse_control(std::span<const std::uint8_t> compound) {
  ControlMessage m;
  Collector c(m);
  if (auto st = wire::parse_rtcp_compound(compound, c); !st) return st.error();
  if (!c.error().empty()) return make_error(c.error());
  return m;
}

core::Result<std::size_t> encode_control(std::span<std::uint8_t> out, const ControlMessage& m,
                                         net::SrtpSession* srtp) {
  if (out.size() <= net::kSrtpMaxTrailer) return make_error("DDL control buffer too small");
  auto n = write_control(out.first(out.size() - net::kSrtpMaxTrailer), m);
  if (!n || srtp == nullptr) return n;
  const net::SrtpResult r = srtp->protect_rtcp(out, *n);
  if (!r) return make_error("SRTCP protect: " + std::string(net::to_string(r.error)));
  return r.length;
}

core::Result<ControlMessage> decode_control(std::span<std::uint8_t> buffer, std::size_t len,
                                            net::SrtpSession* srtp) {
  if (srtp != nullptr) {
    const net::SrtpResult r = srtp->unprotect_rtcp(buffer, len);
    if (!r) return make_error("SRTCP: " + std::string(net::to_string(r.error)));
    len = r.length;
  }
  return parse_control(std::span<const std::uint8_t>(buffer.data(), len));
}

core::Result<JobKey> parse_job_key(std::string_view text,
                                   std::optional<wire::SrtpSuite> default_suite) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  while (!text.empty() && text.front() == ' ') {
    text.remove_prefix(1);
  }
  JobKey k;
  if (text == "none") return k;
  if (text.starts_with("a=crypto:") || text.starts_with("crypto:")) {
    auto attr = wire::parse_crypto_attribute(text);
    if (!attr) return make_error("job key: " + attr.error().message);
    k.suite = attr->suite;
    k.key = attr->key;
    return k;
  }
  if (!default_suite) {
    return make_error(
        "job key: a bare base64 key needs an SRTP suite; give the whole "
        "\"a=crypto:1 <SUITE> inline:<key>\" line");
  }
  k.suite = *default_suite;
  const std::size_t want = wire::key_salt_size(*default_suite);
  auto n = wire::base64_decode(text, std::span<std::uint8_t>(k.key.bytes));
  if (!n) return make_error("job key: not valid base64 (" + n.error().message + ")");
  if (*n != want) {
    return make_error("job key: " + std::to_string(*n) + " bytes, but " +
                      std::string(wire::suite_name(*default_suite)) + " needs " +
                      std::to_string(want) + " (master key || salt)");
  }
  k.key.size = want;
  return k;
}

std::string format_job_key(const JobKey& key) {
  if (!key.suite) return "none";
  return wire::format_crypto_attribute(1, *key.suite, key.key);
}

JobKey generate_job_key(std::optional<wire::SrtpSuite> suite) {
  JobKey k;
  k.suite = suite;
  if (suite) k.key = net::random_srtp_key(*suite);
  return k;
}

std::uint32_t generate_ssrc() {
  std::uint32_t v = 0;
  while (v == 0) {
    v = net::random_u32();
  }
  return v;
}

DeadlineConfig stage_deadline_config(std::uint32_t ms) {
  if (ms == 0) {
    DeadlineConfig c;
    c.min_deadline_us = kAdaptiveDeadlineFloorUs;
    return c;
  }
  return DeadlineConfig::fixed(std::uint64_t{ms} * 1000);
}

std::uint64_t generate_nonce() {
  std::uint64_t v = 0;
  while (v == 0) {
    v = net::random_u64();
  }
  return v;
}

}  // namespace predrop::ddl
