// Fuzzes the DDL relay (ddl::DdlRelay) as a whole: its join, control and stage handling, driven
// through DdlRelay::inject_datagram() (the UDP callback's own path and exception boundary) with
// sequences of datagrams from several fake workers, and steps of FakeClock time judged with
// DdlRelay::poll(). Structure-aware: the input is a script; the datagrams are valid enough to get
// past SRTP/SRTCP, the parsers and the join handshake (the fuzzer knows the job key and, through
// job_nonce(), the job's nonce), so the mutations reach admission, stage collection, deadline
// closes, reports, removals and evictions.
//
// Input:
//   header (4 bytes): u8 flags: bits 0-1 workers - 1, bit 2 paced, bit 3 adaptive deadline
//                     (else a fixed 50 ms), bit 4 AES-GCM (else plain RTP), bit 5 policy "basic"
//                     (else "fixed"), bit 6 missing_fill own, bit 7 worker egress discard;
//                     u8 chunk elements (1 + b % 64); u16 max tensor elements
//                     (1 + v % (64 x chunk elements)).
//   then records until the input ends: u8 op | u8 peer | op bytes (reads past the end give 0):
//     0 join      u8 rank (0xFF any) | u16 tensor (0xFFFF: 2^32 - 1) | u8 seed | u8 nonce mode
//                 (0 right, 1 none, 2 another job's) | u8 SSRC (odd: another SSRC)
//     1 chunks    i8 stage delta | u8 first chunk | u8 n (1..8) | u8 announced (0: the plan's)
//                 | u8 mode (0 as planned, 1 misaligned, 2 other tensor length, 3 NaN) | u8 value
//     2 stage     u8 value: every chunk of the peer's next stage, as planned
//     3 report    u8 stage back | u32 L | u16 received | u16 announced | u64 P bits | u8 flags
//     4 bye
//     5 raw       u8 length | bytes: injected as they are
//     6 advance   u16 ms (% 2500): FakeClock moves, then poll()
//     7 tamper    u8 position: a valid chunk with one byte flipped
//     8 stop      relay.stop(); later records still arrive (and must be ignored)
//   Peers 0..5 are 127.0.0.2..7 port 9, each with its own SSRC; peer 6 is peer 0's address with
//   another SSRC. The relay's answers go to those ports, where nothing listens.
// Properties: no crash and no sanitizer report; no exception reaches a callback boundary
// (callback_errors == 0: every refusal is a value, nothing the peers send can make the relay
// throw); the counters stay consistent with what was sent; the loop closes cleanly.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "fake_clock.hpp"
#include "fuzz_check.hpp"
#include "predrop/core/log.hpp"
#include "predrop/ddl/chunk.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/ddl/relay.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"
#include "relay_datagrams.hpp"

namespace {

using namespace predrop;

// Reads the script; past the end every read gives 0.
class Script {
 public:
  explicit Script(std::span<const std::uint8_t> d) : d_(d) {}
  bool done() const { return pos_ >= d_.size(); }
  std::uint8_t u8() { return pos_ < d_.size() ? d_[pos_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>((u8() << 8) | u8()); }
  std::uint32_t u32() { return (std::uint32_t{u16()} << 16) | u16(); }
  std::uint64_t u64() { return (std::uint64_t{u32()} << 32) | u32(); }
  std::span<const std::uint8_t> bytes(std::size_t n) {
    n = std::min(n, d_.size() - std::min(pos_, d_.size()));
    auto s = d_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  std::span<const std::uint8_t> d_;
  std::size_t pos_ = 0;
};

constexpr std::size_t kPeers = 7;

struct Peer {
  net::SocketAddress address;
  std::uint32_t ssrc = 0;
  std::uint64_t worker_nonce = 0;
  std::uint32_t tensor = 0;  // of its last join
  std::uint32_t stage = 0;   // its next stage
  std::uint16_t sequence = 0;
  std::optional<net::SrtpSession> out;
};

struct Counts {
  std::uint64_t joins = 0, chunks = 0, raw = 0;
};

// What one run sends, and the relay it sends it to.
class Run {
 public:
  Run(Script& in) : in_(in) {
    const std::uint8_t flags = in.u8();
    const std::uint16_t chunk = static_cast<std::uint16_t>(1 + in.u8() % 64);
    const std::uint32_t max_tensor = 1 + in.u16() % (64u * chunk);
    ddl::DdlRelayOptions o;
    o.listen = net::SocketAddress::loopback_v4(0);
    o.workers = 1 + (flags & 3);
    o.paced = (flags & 4) != 0;
    if ((flags & 8) == 0) o.stage_deadline_ms = 50;
    key_ = ddl::generate_job_key(
        (flags & 16) != 0 ? std::optional<wire::SrtpSuite>(wire::SrtpSuite::AeadAes128Gcm)
                          : std::nullopt);
    o.key = key_;
    o.policy.policy = (flags & 32) != 0 ? "basic" : "fixed";
    o.missing_fill = (flags & 64) != 0 ? ddl::MissingPolicy::kOwn : ddl::MissingPolicy::kZero;
    o.worker_egress_discard = (flags & 128) != 0;
    o.chunk_elements = chunk;
    o.max_tensor_elements = max_tensor;
    o.socket_buffer_bytes = 0;
    chunk_ = chunk;
    max_tensor_ = max_tensor;
    relay_ = std::make_unique<ddl::DdlRelay>(loop_, clock_, o, nullptr);
    PREDROP_FUZZ_CHECK(relay_->start().ok());
    for (std::size_t i = 0; i < kPeers; ++i) {
      Peer& p = peers_[i];
      const std::size_t host = i == kPeers - 1 ? 0 : i;  // the last shares peer 0's address
      p.address = net::SocketAddress::v4({127, 0, 0, static_cast<std::uint8_t>(2 + host)}, 9);
      p.ssrc = 0x10000 + static_cast<std::uint32_t>(i);
      p.worker_nonce = 1 + i;
      if (key_.suite) p.out.emplace(net::SrtpDirection::Outbound, *key_.suite, key_.key);
    }
  }

  ~Run() {
    relay_->stop("fuzz input over");
    relay_.reset();
    PREDROP_FUZZ_CHECK(loop_.close().ok());
  }

  void step() {
    const std::uint8_t op = in_.u8() % 9;
    Peer& p = peers_[in_.u8() % kPeers];
    switch (op) {
      case 0:
        join(p);
        break;
      case 1:
        chunks(p);
        break;
      case 2:
        full_stage(p);
        break;
      case 3:
        report(p);
        break;
      case 4: {
        ddl::ControlMessage m;
        m.sender_ssrc = p.ssrc;
        m.bye = true;
        send(p, test::control_datagram(m, srtcp(p)));
        break;
      }
      case 5: {
        const auto raw = in_.bytes(in_.u8());
        ++sent_.raw;
        relay_->inject_datagram(raw, p.address);
        break;
      }
      case 6:
        clock_.advance_ms(in_.u16() % 2500);
        relay_->poll();
        break;
      case 7:
        tamper(p);
        break;
      case 8:
        relay_->stop("fuzz stop");
        break;
    }
    check();
  }

  // At the end: long enough for every time-out, then the last checks.
  void finish() {
    clock_.advance_ms(120'000);
    relay_->poll();
    check();
    if (std::getenv("PREDROP_FUZZ_VERBOSE") != nullptr) {  // for writing seeds
      const ddl::DdlRelayStats& s = relay_->stats();
      std::fprintf(
          stderr,
          "joined %llu refused %llu challenges %llu left %llu evicted %llu stages %llu "
          "chunks %llu (late %llu, rejected %llu) reports %llu missing %llu ssrc "
          "mismatches %llu srtp failures %llu\n",
          static_cast<unsigned long long>(s.joined), static_cast<unsigned long long>(s.refused),
          static_cast<unsigned long long>(s.challenges), static_cast<unsigned long long>(s.left),
          static_cast<unsigned long long>(s.evicted), static_cast<unsigned long long>(s.stages),
          static_cast<unsigned long long>(s.chunks_received),
          static_cast<unsigned long long>(s.chunks_late),
          static_cast<unsigned long long>(s.chunks_rejected),
          static_cast<unsigned long long>(s.reports),
          static_cast<unsigned long long>(s.reports_missing),
          static_cast<unsigned long long>(s.ssrc_mismatches),
          static_cast<unsigned long long>(s.srtp_failures));
    }
  }

 private:
  net::SrtpSession* srtcp(Peer& p) { return p.out ? &*p.out : nullptr; }

  void send(const Peer& p, const std::vector<std::uint8_t>& d) {
    if (!d.empty()) relay_->inject_datagram(d, p.address);
  }

  void join(Peer& p) {
    ddl::JoinRequest j;
    const std::uint8_t rank = in_.u8();
    j.rank = rank == 0xFF ? ddl::kAnyRank : rank % 8;
    const std::uint16_t t = in_.u16();
    j.tensor_elements = t == 0xFFFF ? 0xFFFFFFFFu : t % (2 * max_tensor_ + 1);
    const std::uint8_t seed = in_.u8();
    j.model_seed = seed % 4 == 0 ? seed : 7;
    const std::uint8_t nonce = in_.u8() % 3;
    j.job_nonce = nonce == 0 ? relay_->job_nonce() : nonce == 1 ? 0 : relay_->job_nonce() ^ 1;
    j.worker_nonce = p.worker_nonce;
    const bool other_ssrc = (in_.u8() & 1) != 0;
    p.tensor = j.tensor_elements;
    ddl::ControlMessage m;
    m.sender_ssrc = other_ssrc ? p.ssrc ^ 0x80000000u : p.ssrc;
    m.join = j;
    ++sent_.joins;
    send(p, test::control_datagram(m, srtcp(p)));
  }

  // One planned chunk `c` of the peer's tensor in stage `stage`.
  std::vector<std::uint8_t> chunk(Peer& p, std::uint32_t stage, std::uint32_t c,
                                  std::uint16_t index, std::uint16_t announced, std::uint8_t mode,
                                  float value) {
    const std::uint32_t tensor = tensor_of(p);
    std::uint32_t offset = std::min<std::uint32_t>(c * chunk_, tensor - 1);
    std::uint32_t count = std::min<std::uint32_t>(chunk_, tensor - offset);
    std::uint32_t elements = tensor;
    if (mode == 1 && offset + count < tensor) ++offset;
    if (mode == 2) elements = tensor + 1;
    std::vector<float> values(count, mode == 3 ? std::numeric_limits<float>::quiet_NaN() : value);
    ++sent_.chunks;
    return test::chunk_datagram(p.ssrc, p.sequence++, {stage, index, announced}, elements, offset,
                                values, p.out ? &*p.out : nullptr);
  }

  // The tensor a peer sends chunks of: its join's, capped so that a stage stays a few hundred
  // datagrams at most (a refused huge join still sends chunks, of a tensor the job does not have).
  std::uint32_t tensor_of(const Peer& p) const {
    return std::clamp<std::uint32_t>(p.tensor, 1, 2 * max_tensor_ + 1);
  }

  std::uint32_t planned_chunks(const Peer& p) const { return (tensor_of(p) + chunk_ - 1) / chunk_; }

  void chunks(Peer& p) {
    const auto delta = static_cast<std::int8_t>(in_.u8());
    const std::uint32_t stage = p.stage + static_cast<std::uint32_t>(std::int32_t{delta});
    const std::uint8_t first = in_.u8();
    const std::uint8_t n = 1 + in_.u8() % 8;
    const std::uint8_t announced = in_.u8();
    const std::uint8_t mode = in_.u8() % 4;
    const float value = static_cast<float>(static_cast<std::int8_t>(in_.u8())) / 16.0f;
    const std::uint32_t plan = planned_chunks(p);
    for (std::uint8_t k = 0; k < n; ++k) {
      const std::uint32_t c = (first + k) % plan;
      send(p, chunk(p, stage, c, static_cast<std::uint16_t>(c),
                    announced == 0 ? static_cast<std::uint16_t>(plan) : announced, mode, value));
    }
  }

  void full_stage(Peer& p) {
    const float value = static_cast<float>(static_cast<std::int8_t>(in_.u8())) / 16.0f;
    const std::uint32_t plan = planned_chunks(p);
    for (std::uint32_t c = 0; c < plan; ++c) {
      send(p, chunk(p, p.stage, c, static_cast<std::uint16_t>(c), static_cast<std::uint16_t>(plan),
                    0, value));
    }
    ++p.stage;
  }

  void report(Peer& p) {
    wire::PdfbFeedback fb;
    fb.metric = wire::PdfbMetric::kLossDelta;
    fb.stage_id = p.stage - 1 - in_.u8() % 4;
    fb.reception_period_us = in_.u32();
    fb.packets_received = in_.u16();
    fb.packets_announced = in_.u16();
    const std::uint64_t bits = in_.u64();
    std::memcpy(&fb.performance, &bits, sizeof bits);
    const std::uint8_t flags = in_.u8();
    fb.performance_valid = (flags & 1) != 0 && std::isfinite(fb.performance);
    if (!fb.performance_valid) fb.performance = 0.0;
    fb.queue_delay_valid = (flags & 2) != 0;
    fb.queue_delay_growth_us = static_cast<std::int32_t>(flags) * 1000;
    fb.media_ssrc = p.ssrc;
    ddl::ControlMessage m;
    m.sender_ssrc = p.ssrc;
    m.feedback = fb;
    send(p, test::control_datagram(m, srtcp(p)));
  }

  void tamper(Peer& p) {
    auto d = chunk(p, p.stage, 0, 0, static_cast<std::uint16_t>(planned_chunks(p)), 0, 1.0f);
    if (d.empty()) return;
    d[in_.u8() % d.size()] ^= 0x5a;
    send(p, d);
  }

  void check() {
    const ddl::DdlRelayStats& s = relay_->stats();
    PREDROP_FUZZ_CHECK(s.callback_errors == 0);
    PREDROP_FUZZ_CHECK(s.joined + s.refused + s.challenges <= sent_.joins + sent_.raw);
    PREDROP_FUZZ_CHECK(s.left + s.evicted <= s.joined);
    PREDROP_FUZZ_CHECK(s.chunks_received <= sent_.chunks + sent_.raw);
  }

  Script& in_;
  net::EventLoop loop_;
  test::FakeClock clock_;
  ddl::JobKey key_;
  std::uint16_t chunk_ = 1;
  std::uint32_t max_tensor_ = 1;
  std::unique_ptr<ddl::DdlRelay> relay_;
  Peer peers_[kPeers];
  Counts sent_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static net::SrtpLibraryGuard srtp;  // libsrtp initialised once for the process
  static const bool quiet = [] {
    // Refusals and evictions log warnings; only errors (a callback boundary's) stay visible.
    core::set_log_level(core::LogLevel::kError);
    return true;
  }();
  (void)quiet;
  Script in(std::span<const std::uint8_t>(data, size));
  Run run(in);
  for (int records = 0; !in.done() && records < 4096; ++records)
    run.step();
  run.finish();
  return 0;
}
