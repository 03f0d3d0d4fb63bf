// Per-packet cost of the egress chain and of the machine's own limits, with Google Benchmark.
//
//   machine limits:  SrtpProtect        libsrtp protect alone (through the thin net::SrtpSession
//                                       wrapper), per suite and payload size
//                    Sendmmsg           raw sendmmsg(2) of same-size datagrams, batches of 32,
//                                       to a loopback sink socket that is never read
//                    ProtectThenSend    the two in series, hand-written: protect into a slab,
//                                       sendmmsg every 32 (the "series" machine limit)
//   our chain:       ChainCompute       discard plan + RTP header with the stage extension +
//                                       payload copy + protect, no send
//                    Transmitter        chain::StageTransmitter: the same plus sendmmsg
//
// Items/s is packets/s of one thread. The sink socket is never read: loopback delivery runs in
// the sender's system call up to the sink's queue, then the kernel drops (the same for every row).
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "predrop/chain/stage_transmitter.hpp"
#include "predrop/core/discard_planner.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/net/udp_endpoint.hpp"
#include "predrop/wire/rtp.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace {

using namespace predrop;

constexpr std::size_t kBatch = 32;

wire::SrtpSuite suite_of(std::int64_t i) {
  return i == 0 ? wire::SrtpSuite::AesCm128HmacSha1_80 : wire::SrtpSuite::AeadAes128Gcm;
}

// A sink: a bound UDP socket on 127.0.0.1 with a small receive buffer, never read.
struct Sink {
  int fd = -1;
  net::SocketAddress address;
  Sink() {
    fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    const int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    address = net::SocketAddress::loopback_v4(ntohs(a.sin_port));
  }
  ~Sink() { ::close(fd); }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;
};

net::SrtpLibraryGuard& srtp_library() {
  static net::SrtpLibraryGuard guard;
  return guard;
}

// Benchmark argument "crypto": 0 = OpenSSL under libsrtp (predrop's default), 1 = the crypto
// libsrtp was built with (NSS on Debian). Sessions keep the crypto they were made with.
struct CryptoChoice {
  explicit CryptoChoice(std::int64_t arg) {
    net::set_srtp_crypto(arg == 0 ? net::SrtpCrypto::OpenSsl : net::SrtpCrypto::Libsrtp);
  }
  ~CryptoChoice() { net::set_srtp_crypto(net::SrtpCrypto::OpenSsl); }
  CryptoChoice(const CryptoChoice&) = delete;
  CryptoChoice& operator=(const CryptoChoice&) = delete;
  static std::string label() { return std::string(net::to_string(net::srtp_crypto_in_use())); }
};

// A 12-byte RTP header + payload in a buffer with room for the trailer.
struct RtpBuffer {
  std::vector<std::uint8_t> bytes;
  std::size_t len;
  explicit RtpBuffer(std::size_t payload)
      : bytes(12 + payload + net::kSrtpMaxTrailer, 0x5a), len(12 + payload) {
    std::uint8_t* p = bytes.data();
    p[0] = 0x80;
    p[1] = 96;
    p[8] = 0x12;
  }
  void set_sequence(std::uint16_t s) {
    std::uint8_t* p = bytes.data();
    p[2] = static_cast<std::uint8_t>(s >> 8);
    p[3] = static_cast<std::uint8_t>(s);
  }
};

void SrtpProtect(benchmark::State& state) {
  srtp_library();
  const CryptoChoice crypto(state.range(2));
  const auto suite = suite_of(state.range(0));
  const auto payload = static_cast<std::size_t>(state.range(1));
  net::SrtpSession s(net::SrtpDirection::Outbound, suite, net::random_srtp_key(suite));
  RtpBuffer b(payload);
  std::uint16_t seq = 0;
  for (auto _ : state) {
    b.set_sequence(seq++);
    auto r = s.protect_rtp(b.bytes, b.len);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(payload));
  state.SetLabel(std::string(wire::suite_name(suite)) + " " + CryptoChoice::label());
}
BENCHMARK(SrtpProtect)
    ->ArgsProduct({{0, 1}, {160, 1200}, {0, 1}})
    ->ArgNames({"suite", "payload", "crypto"});

// The same with `contexts` sessions used round robin, as a server with that many clients does.
void SrtpProtectContexts(benchmark::State& state) {
  srtp_library();
  const CryptoChoice crypto(state.range(2));
  const auto suite = suite_of(state.range(0));
  const auto contexts = static_cast<std::size_t>(state.range(1));
  std::vector<net::SrtpSession> s;
  for (std::size_t i = 0; i < contexts; ++i)
    s.emplace_back(net::SrtpDirection::Outbound, suite, net::random_srtp_key(suite));
  RtpBuffer b(1200);
  std::uint16_t seq = 0;
  std::size_t next = 0;
  for (auto _ : state) {
    b.set_sequence(seq);
    auto r = s[next].protect_rtp(b.bytes, b.len);
    benchmark::DoNotOptimize(r);
    if (++next == contexts) {
      next = 0;
      ++seq;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(wire::suite_name(suite)) + " " + CryptoChoice::label());
}
BENCHMARK(SrtpProtectContexts)
    ->ArgsProduct({{0, 1}, {1, 10, 100, 300, 1000}, {0, 1}})
    ->ArgNames({"suite", "contexts", "crypto"});

int sender_socket() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  const int big = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  return fd;
}

// Raw sendmmsg of `batch` datagrams of `bytes` each per call.
void Sendmmsg(benchmark::State& state) {
  const std::size_t size = static_cast<std::size_t>(state.range(0));
  const std::size_t batch = static_cast<std::size_t>(state.range(1));
  Sink sink;
  const int fd = sender_socket();
  std::vector<std::uint8_t> data(batch * size, 0x33);
  std::vector<mmsghdr> msgs(batch);
  std::vector<iovec> iov(batch);
  sockaddr_storage to{};
  const socklen_t to_len = sink.address.to_sockaddr(to);
  for (std::size_t i = 0; i < batch; ++i) {
    iov[i] = iovec{data.data() + i * size, size};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_name = &to;
    msgs[i].msg_hdr.msg_namelen = to_len;
  }
  std::int64_t sent = 0;
  for (auto _ : state) {
    const int r = ::sendmmsg(fd, msgs.data(), static_cast<unsigned>(batch), MSG_DONTWAIT);
    if (r > 0) sent += r;
  }
  ::close(fd);
  state.SetItemsProcessed(sent);
}
// 1242 / 1248 bytes: a 1200-byte payload behind the server's 32-byte header (stage and
// abs-send-time extensions) plus the AES-CM-80 (10) or GCM (16) tag.
BENCHMARK(Sendmmsg)
    ->ArgsProduct({{200, 1242, 1248}, {32}})
    ->ArgsProduct({{1242}, {1, 4, 8, 64}})
    ->ArgNames({"bytes", "batch"});

// UDP GSO: one sendmsg with UDP_SEGMENT carrying `segments` datagrams of 1242 bytes.
void GsoSend(benchmark::State& state) {
  const std::size_t segments = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t kSize = 1242;
  net::EventLoop loop;
  Sink sink;
  net::UdpOptions uo;
  uo.send_buffer_bytes = 4 << 20;
  auto socket = net::UdpEndpoint::open(loop, net::SocketAddress::loopback_v4(0), uo, {});
  std::vector<std::uint8_t> data(segments * kSize, 0x33);
  std::int64_t sent = 0;
  for (auto _ : state) {
    sent += static_cast<std::int64_t>((*socket)->send_segments(data, kSize, sink.address));
  }
  state.SetItemsProcessed(sent);
  state.SetLabel((*socket)->gso_available() ? "gso" : "fell back to sendmmsg");
  socket.value()->close();
  (void)loop.close();
}
BENCHMARK(GsoSend)->Arg(4)->Arg(16)->Arg(32)->ArgName("segments");

void ProtectThenSend(benchmark::State& state) {
  srtp_library();
  const auto suite = suite_of(state.range(0));
  const auto payload = static_cast<std::size_t>(state.range(1));
  net::SrtpSession s(net::SrtpDirection::Outbound, suite, net::random_srtp_key(suite));
  Sink sink;
  const int fd = sender_socket();
  const std::size_t header = wire::rtp_header_size(wire::RtpExtensionIds{1, 2});
  const std::size_t slot = header + payload + net::kSrtpMaxTrailer;
  std::vector<std::uint8_t> slab(kBatch * slot, 0x5a);
  std::array<mmsghdr, kBatch> msgs{};
  std::array<iovec, kBatch> iov{};
  sockaddr_storage to{};
  const socklen_t to_len = sink.address.to_sockaddr(to);
  std::uint16_t seq = 0;
  std::int64_t sent = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < kBatch; ++i) {
      std::uint8_t* p = slab.data() + i * slot;
      p[0] = 0x80;
      p[1] = 96;
      p[2] = static_cast<std::uint8_t>(seq >> 8);
      p[3] = static_cast<std::uint8_t>(seq);
      ++seq;
      auto r = s.protect_rtp(std::span<std::uint8_t>(p, slot), header + payload);
      iov[i] = iovec{p, r.length};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &to;
      msgs[i].msg_hdr.msg_namelen = to_len;
    }
    const int r = ::sendmmsg(fd, msgs.data(), kBatch, MSG_DONTWAIT);
    if (r > 0) sent += r;
  }
  ::close(fd);
  state.SetItemsProcessed(sent);
  state.SetLabel(std::string(wire::suite_name(suite)));
}
BENCHMARK(ProtectThenSend)->ArgsProduct({{0, 1}, {1200}})->ArgNames({"suite", "payload"});

// Importance pattern of a typical block: parameter sets and audio never dropped (255), a mix of
// reference (2) and disposable (0) video packets.
std::vector<std::uint8_t> block_importance(std::size_t n) {
  std::vector<std::uint8_t> imp(n);
  for (std::size_t i = 0; i < n; ++i) {
    imp[i] = i % 16 == 0 ? core::kNeverDrop : (i % 3 == 0 ? 0 : 2);
  }
  return imp;
}

void ChainCompute(benchmark::State& state) {
  srtp_library();
  const auto suite = suite_of(state.range(0));
  const double rate = static_cast<double>(state.range(1)) / 100.0;
  constexpr std::size_t kStage = 512;
  constexpr std::size_t kPayload = 1200;
  net::SrtpSession s(net::SrtpDirection::Outbound, suite, net::random_srtp_key(suite));
  core::DiscardPlanner planner(core::DiscardPolicy::kPriority);
  const auto importance = block_importance(kStage);
  std::vector<std::uint8_t> drop(kStage);
  std::vector<std::uint8_t> payload(kPayload, 0x42);
  const wire::RtpExtensionIds ids{1, 2};
  std::vector<std::uint8_t> slot(wire::rtp_header_size(ids) + kPayload + net::kSrtpMaxTrailer);
  std::int64_t sent = 0;
  std::uint16_t seq = 0;
  std::uint32_t stage = 0;
  for (auto _ : state) {
    planner.plan(rate, importance, drop);
    wire::RtpExtensions ext;
    ext.ids = ids;
    ext.stage.stage_id = stage++;
    for (std::size_t i = 0; i < kStage; ++i) {
      if (drop[i]) continue;
      wire::RtpHeader h;
      h.payload_type = 96;
      h.sequence = seq++;
      h.timestamp = static_cast<std::uint32_t>(i * 3000);
      h.ssrc = 0x1234;
      ext.stage.index = static_cast<std::uint16_t>(i);
      auto n = wire::write_rtp_packet(slot, h, ext, payload);
      auto r = s.protect_rtp(slot, *n);
      benchmark::DoNotOptimize(r);
      ++sent;
    }
  }
  state.SetItemsProcessed(sent);
  state.SetLabel(std::string(wire::suite_name(suite)));
}
BENCHMARK(ChainCompute)->ArgsProduct({{0, 1}, {0, 10}})->ArgNames({"suite", "R%"});

// The real transmitters, as the server's pacing tick drives them: `sessions` sessions, each with
// a stage of 512 packets handed over in frame-sized chunks of 4 packets, round robin (one chunk
// per session per tick). shared = 1 opens a SendBatchScope around each tick, so the sessions
// share sendmmsg batches of 64; shared = 0 is one sendmmsg per chunk.
void Transmitter(benchmark::State& state) {
  srtp_library();
  const auto suite = suite_of(state.range(0));
  const double rate = static_cast<double>(state.range(1)) / 100.0;
  const auto sessions = static_cast<std::size_t>(state.range(2));
  const bool shared = state.range(3) != 0;
  constexpr std::size_t kStage = 512;
  constexpr std::size_t kChunk = 4;
  constexpr std::size_t kPayload = 1200;
  net::EventLoop loop;
  Sink sink;
  net::UdpOptions uo;
  uo.send_buffer_bytes = 4 << 20;
  auto socket = net::UdpEndpoint::open(loop, net::SocketAddress::loopback_v4(0), uo, {});
  chain::TransmitterConfig tc;
  tc.max_payload_size = kPayload;
  tc.tracks.push_back(chain::TrackConfig{0x1234, 96, 0, 0, sink.address, {}});
  std::vector<std::unique_ptr<chain::StageTransmitter>> tx;
  for (std::size_t i = 0; i < sessions; ++i) {
    tx.push_back(std::make_unique<chain::StageTransmitter>(
        **socket, tc,
        net::SrtpSession(net::SrtpDirection::Outbound, suite, net::random_srtp_key(suite)),
        core::DiscardPlanner(core::DiscardPolicy::kPriority)));
  }
  chain::SendBatch batch(**socket,
                         wire::rtp_header_size(tc.extension_ids) + kPayload + net::kSrtpMaxTrailer);
  const auto importance = block_importance(kStage);
  std::vector<std::uint8_t> payload(kPayload, 0x42);
  std::vector<chain::OutgoingPacket> packets(kStage);
  for (std::size_t i = 0; i < kStage; ++i) {
    packets[i] = chain::OutgoingPacket{0, i % kChunk == kChunk - 1,
                                       static_cast<std::uint32_t>(i / kChunk * 3000),
                                       std::span<const std::uint8_t>(payload)};
  }
  std::uint32_t stage = 0;
  std::uint64_t now = 1'000'000;
  for (auto _ : state) {
    for (auto& t : tx)
      t->begin_stage(stage, rate, importance);
    ++stage;
    for (std::size_t first = 0; first < kStage; first += kChunk) {
      std::optional<chain::SendBatchScope> scope;
      if (shared) scope.emplace(batch);
      for (auto& t : tx)
        t->send(std::span(packets).subspan(first, kChunk), first, now);
      now += 100;
    }
  }
  std::uint64_t sent = 0;
  std::uint64_t drops = 0;
  for (auto& t : tx) {
    sent += t->stats().packets_sent;
    drops += t->stats().send_drops;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(sent));
  state.counters["drops"] = static_cast<double>(drops);
  state.SetLabel(std::string(wire::suite_name(suite)));
  tx.clear();
  socket.value()->close();
  (void)loop.close();
}
BENCHMARK(Transmitter)
    ->ArgsProduct({{0, 1}, {0, 10}, {1}, {0}})
    ->ArgsProduct({{0, 1}, {0}, {64}, {0, 1}})
    ->ArgNames({"suite", "R%", "sessions", "shared"});

}  // namespace

BENCHMARK_MAIN();
