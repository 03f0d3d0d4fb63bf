// Whole-server egress on loopback, side by side with this machine's own limits and with ffmpeg.
//
// One run, one SRTP suite, one pacing mode:
//  1. machine limits, measured now: libsrtp protect rate (1 context, and as many contexts as
//     sessions, round robin: what the server faces), raw sendmmsg rate of same-size datagrams
//     (batches of 64), their series combination 1/(1/a + 1/b), and the two measured in series;
//  2. for each session count N: the real StreamServer (the code predrop-server runs) on this
//     thread, N RTSP sessions set up through its RTSP port with our RTSP client, their starts
//     spread over --ramp seconds, all sending to sink sockets that are never read. After
//     --warmup seconds: packets the server handed to the kernel, process CPU from /proc/self/stat,
//     late stages (a packet more than 20 ms behind its schedule) and the largest lag;
//  3. ffmpeg's RTP output of the same file (`-stream_loop -1 -i f -c copy -f rtp`, no -re), with
//     the same SRTP suite when ffmpeg has it, measured the same way (its CPU from
//     /proc/<pid>/stat; its packets from the sink sockets' drop counters).
// Prints a table (and appends CSV rows with --csv).
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "predrop/core/log.hpp"
#include "predrop/load/proc.hpp"
#include "predrop/media/media_file.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/os_random.hpp"
#include "predrop/net/srtp_session.hpp"
#include "predrop/rtsp/client_session.hpp"
#include "predrop/server/stream_server.hpp"
#include "predrop/server/stream_workers.hpp"
#include "predrop/wire/rtp.hpp"
#include "predrop/wire/sdes_key.hpp"

extern char** environ;

namespace {

using namespace predrop;

// CPU seconds of the server: the whole process when the server runs on the bench's own thread;
// with worker loops, the threads other than the bench's main one (which runs the RTSP set-up
// clients and the acceptor, and would otherwise count its set-up work against the workers).
double server_cpu_s(bool workers) {
  const int pid = ::getpid();
  if (!workers) return load::process_cpu_seconds(pid).value_or(0);
  double sum = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(dir)) {
      const int tid = std::atoi(e->d_name);
      if (tid > 0 && tid != pid) sum += load::thread_cpu_seconds(pid, tid).value_or(0);
    }
    ::closedir(dir);
  }
  return sum;
}

double thread_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// A UDP socket on 127.0.0.1:port (0 = any) with a small receive buffer, never read.
struct Sink {
  int fd = -1;
  std::uint16_t port = 0;
  explicit Sink(std::uint16_t want = 0) {
    fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    const int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(want);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      fd = -1;
      return;
    }
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Sink() {
    if (fd >= 0) ::close(fd);
  }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;
};

// Four consecutive sink ports P..P+3 (RTP/RTCP of two tracks), P even.
struct SinkSet {
  std::vector<std::unique_ptr<Sink>> sinks;
  std::uint16_t base = 0;
  explicit SinkSet(std::uint16_t from = 41000) {
    for (std::uint16_t p = from; p < 60000 && sinks.empty(); p += 4) {
      std::vector<std::unique_ptr<Sink>> s;
      for (std::uint16_t k = 0; k < 4; ++k) {
        auto sink = std::make_unique<Sink>(static_cast<std::uint16_t>(p + k));
        if (sink->fd < 0) break;
        s.push_back(std::move(sink));
      }
      if (s.size() == 4) {
        sinks = std::move(s);
        base = p;
      }
    }
  }
  std::uint64_t drops() const {
    std::uint64_t d = 0;
    for (const auto& s : sinks)
      d += load::udp_socket_drops(s->port).value_or(0);
    return d;
  }
};

struct MachineLimits {
  double protect_1 = 0;                // pkt/s, one SRTP context
  double protect_n = 0;                // pkt/s, N contexts round robin
  double sendmmsg = 0;                 // pkt/s, batches of 64
  double series = 0;                   // 1 / (1/protect_n + 1/sendmmsg)
  double series_meas = 0;              // protect (N contexts) then sendmmsg, measured
  std::size_t datagram = 0;            // bytes per datagram
  std::uint64_t protect_failures = 0;  // must stay 0, or the rates above mean nothing
};

// Runs `step` (which does `per_step` packets) until `seconds` of thread CPU time have passed;
// returns packets per CPU second.
template <typename F>
double rate_of(double seconds, std::size_t per_step, F&& step) {
  const double t0 = thread_cpu_s();
  std::uint64_t n = 0;
  double t = t0;
  while (t - t0 < seconds) {
    for (int i = 0; i < 16; ++i) {
      step();
      n += per_step;
    }
    t = thread_cpu_s();
  }
  return static_cast<double>(n) / (t - t0);
}

MachineLimits measure_machine(std::optional<wire::SrtpSuite> suite, std::size_t contexts,
                              std::size_t payload, double seconds) {
  MachineLimits m;
  const std::size_t header = wire::rtp_header_size(wire::RtpExtensionIds{1, 2});
  m.datagram = header + payload + (suite ? net::srtp_rtp_tag_size(*suite) : 0);
  constexpr std::size_t kBatch = 64;
  // Packets protected per session in a row: about one frame of a 1 Mbit/s stream at 30 fps.
  constexpr std::size_t kPerSession = 4;
  const std::size_t slot = header + payload + net::kSrtpMaxTrailer;
  std::vector<std::uint8_t> slab(kBatch * slot, 0x5a);
  for (std::size_t i = 0; i < kBatch; ++i) {
    slab[i * slot] = 0x80;
    slab[i * slot + 1] = 96;
  }
  std::vector<net::SrtpSession> ctx;
  std::vector<net::SrtpSession> idle;
  std::uint16_t seq = 0;
  std::size_t next_ctx = 0;
  auto protect_one = [&](std::uint8_t* p, std::size_t c) {
    p[2] = static_cast<std::uint8_t>(seq >> 8);
    p[3] = static_cast<std::uint8_t>(seq);
    p[8] = static_cast<std::uint8_t>(c);  // distinct SSRC per context
    p[9] = static_cast<std::uint8_t>(c >> 8);
    auto r = ctx[c].protect_rtp(std::span<std::uint8_t>(p, slot), header + payload);
    if (!r) ++m.protect_failures;
    return r.length;
  };
  if (suite) {
    ctx.emplace_back(net::SrtpDirection::Outbound, *suite, net::random_srtp_key(*suite));
    m.protect_1 = rate_of(seconds, 1, [&] {
      protect_one(slab.data(), 0);
      ++seq;
    });
    ctx.clear();
    for (std::size_t i = 0; i < std::max<std::size_t>(1, contexts); ++i) {
      ctx.emplace_back(net::SrtpDirection::Outbound, *suite, net::random_srtp_key(*suite));
      // A server session also holds an inbound context for its client's SRTCP: idle here, but it
      // lives in the same crypto library tables.
      idle.emplace_back(net::SrtpDirection::Inbound, *suite, net::random_srtp_key(*suite));
    }
    // Warm every context up once (libsrtp allocates per new SSRC).
    for (std::size_t c = 0; c < ctx.size(); ++c)
      protect_one(slab.data(), c);
    ++seq;
    // As the server protects: a few packets (a frame's) of one session, then the next session.
    m.protect_n = rate_of(seconds, kPerSession, [&] {
      for (std::size_t k = 0; k < kPerSession; ++k) {
        protect_one(slab.data(), next_ctx);
        ++seq;  // one counter for all: increasing (with gaps) for every session
      }
      if (++next_ctx == ctx.size()) next_ctx = 0;
    });
  }
  Sink sink;
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  const int big = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(sink.port);
  std::vector<mmsghdr> msgs(kBatch);
  std::vector<iovec> iov(kBatch);
  for (std::size_t i = 0; i < kBatch; ++i) {
    iov[i] = iovec{slab.data() + i * slot, m.datagram};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_name = &to;
    msgs[i].msg_hdr.msg_namelen = sizeof to;
  }
  m.sendmmsg = rate_of(seconds, kBatch, [&] { ::sendmmsg(fd, msgs.data(), kBatch, MSG_DONTWAIT); });
  if (suite) {
    m.series = 1.0 / (1.0 / m.protect_n + 1.0 / m.sendmmsg);
    m.series_meas = rate_of(seconds, kBatch, [&] {
      for (std::size_t i = 0; i < kBatch; ++i) {
        iov[i].iov_len = protect_one(slab.data() + i * slot, next_ctx);
        ++seq;
        if (i % kPerSession == kPerSession - 1 && ++next_ctx == ctx.size()) next_ctx = 0;
      }
      ::sendmmsg(fd, msgs.data(), kBatch, MSG_DONTWAIT);
    });
  } else {
    m.series = m.sendmmsg;
    m.series_meas = m.sendmmsg;
  }
  ::close(fd);
  return m;
}

struct ServerRun {
  std::size_t sessions = 0;
  std::size_t playing = 0;
  double seconds = 0;
  double packets = 0;       // handed to the kernel in the window
  double sink_packets = 0;  // counted at the sinks
  double cpu_s = 0;
  std::uint64_t late_stages = 0;
  std::uint64_t stages = 0;
  std::uint64_t late_packets = 0;
  std::uint64_t max_lag_us = 0;
  std::uint64_t send_drops = 0;
  std::uint64_t setup_errors = 0;
  std::string first_error;
};

struct Totals {
  std::uint64_t sent = 0, late_stages = 0, late_packets = 0, stages = 0, drops = 0;
};

// Summed over every worker's sessions (one snapshot per worker, taken on its own thread).
Totals totals(const std::vector<server::ServerSnapshot>& snaps) {
  Totals t;
  for (const auto& snap : snaps) {
    for (const auto& s : snap.session_rows) {
      const auto& tx = s.transmitter;
      t.sent += tx.packets_sent;
      t.late_stages += tx.late_stages;
      t.late_packets += tx.late_packets;
      t.stages += tx.stages;
      t.drops += tx.send_drops;
    }
  }
  return t;
}

std::uint64_t max_lag(const std::vector<server::ServerSnapshot>& snaps) {
  std::uint64_t m = 0;
  for (const auto& snap : snaps) {
    for (const auto& s : snap.session_rows)
      m = std::max(m, s.transmitter.max_lag_us);
  }
  return m;
}

struct Options {
  std::string media;
  std::vector<std::size_t> sessions{100};
  std::string suite = "AES_CM_128_HMAC_SHA1_80";
  std::string pacing = "paced";
  double seconds = 10;
  double warmup = 3;
  double ramp = 1;
  double rate = 0;
  std::size_t payload = 1200;
  double machine_seconds = 1;
  std::string ffmpeg = "ffmpeg";
  bool skip_ffmpeg = false;
  std::string csv;
  std::string srtp_crypto = "openssl";
  std::uint32_t pacing_quantum_ms = 5;  // blocks.pacing_quantum_ms, the server's default
  std::size_t sink_sets = 8;
  bool gso = false;
  // 0: the StreamServer on the bench's own thread (as before issue 14 item 3); N >= 1:
  // StreamWorkers with N worker threads (what predrop-server runs), the bench's thread accepting.
  std::size_t workers = 0;
};

std::optional<wire::SrtpSuite> parse_suite(const std::string& s) {
  if (s == "none") return std::nullopt;
  auto suite = wire::suite_from_name(s);
  if (!suite) throw std::runtime_error("unknown suite " + s);
  return *suite;
}

ServerRun run_server(const Options& o, std::shared_ptr<const media::MediaFile> media,
                     std::size_t sessions, std::vector<SinkSet>& sink_sets) {
  net::EventLoop loop;
  server::StreamServerOptions so;
  so.rtsp_listen = net::SocketAddress::loopback_v4(0);
  so.bind_ip = "127.0.0.1";
  so.streams.push_back({"bench", media});
  so.srtp = parse_suite(o.suite);
  so.policy.policy = "fixed";
  so.player_rate = o.rate;
  so.paced = o.pacing == "paced";
  so.pacing_quantum_us = o.pacing_quantum_ms * 1000;
  so.loop = true;
  so.max_sessions = sessions + 16;
  so.max_connections = sessions + 16;
  so.session_timeout_s = 3600;
  so.max_payload_size = o.payload;
  so.gso = o.gso;
  so.block_attribute = "duration_us=1000000;payload=" + std::to_string(o.payload);
  std::unique_ptr<server::StreamServer> single;
  std::unique_ptr<server::StreamWorkers> pool;
  if (o.workers == 0) {
    single = std::make_unique<server::StreamServer>(loop, so);
    single->start();
  } else {
    pool = std::make_unique<server::StreamWorkers>(loop, so, o.workers);
    pool->start();
  }
  const net::SocketAddress rtsp_address = single ? single->rtsp_address() : pool->rtsp_address();
  // An overloaded worker answers only between two pacing runs, which may take seconds while it
  // catches up: wait long, and call the row invalid if a worker still did not answer (its
  // sessions would be missing from the totals).
  bool snapshots_complete = true;
  auto snapshots = [&] {
    if (single) return std::vector<server::ServerSnapshot>{server::snapshot_of(*single)};
    auto snaps = pool->snapshots(120'000);
    if (snaps.size() != pool->worker_count()) snapshots_complete = false;
    return snaps;
  };
  auto stop_server = [&] {
    if (single) single->stop();
    if (pool) pool->stop();
  };
  const std::string url = "rtsp://127.0.0.1:" + std::to_string(rtsp_address.port()) + "/bench";

  ServerRun run;
  run.sessions = sessions;
  std::vector<std::unique_ptr<rtsp::ClientSession>> clients(sessions);
  // Set up session i: DESCRIBE (for the key), SETUP every track to the sink ports, PLAY, then
  // hang up without TEARDOWN (sessions outlive their RTSP connection).
  auto start_client = [&](std::size_t i) {
    rtsp::ClientSessionOptions co;
    co.url = url;
    co.server = rtsp_address;
    co.keepalive = false;
    rtsp::ClientSession::Handlers h;
    // Sessions spread over the sink sets: round robin, as the workers take connections, so
    // that with W workers dividing the set count no two workers share a sink socket (real
    // clients do not share one either; a shared one makes the workers contend in the kernel).
    const std::uint16_t base = sink_sets[i % sink_sets.size()].base;
    h.client_ports = [base](const rtsp::SessionTrack& t) -> core::Result<rtsp::PortPair> {
      const auto port = static_cast<std::uint16_t>(base + 2 * (t.index % 2));
      return rtsp::PortPair{port, static_cast<std::uint16_t>(port + 1)};
    };
    h.on_playing = [&run, &clients, i] {
      ++run.playing;
      clients[i]->close();
    };
    h.on_failed = [&run](const rtsp::SessionError& e) {
      if (run.first_error.empty()) run.first_error = e.message();
      ++run.setup_errors;
    };
    clients[i] = std::make_unique<rtsp::ClientSession>(loop, co, std::move(h));
    clients[i]->start();
  };
  // Spread the starts over the ramp so that sessions' frames do not all fall due on one tick.
  std::size_t started = 0;
  const std::uint64_t ramp_ms = static_cast<std::uint64_t>(o.ramp * 1000);
  const std::uint64_t t_start = net::monotonic_now_us();
  net::Timer starter(loop, [&] {
    const std::uint64_t elapsed_ms = (net::monotonic_now_us() - t_start) / 1000;
    const std::size_t due =
        ramp_ms == 0 ? sessions
                     : std::min<std::size_t>(sessions, (elapsed_ms + 1) * sessions / ramp_ms);
    while (started < due)
      start_client(started++);
    if (started == sessions) starter.stop();
  });
  starter.start(1, 1);

  Totals t0;
  double cpu0 = 0;
  double wall0 = 0;
  std::uint64_t sink0 = 0;
  net::Timer window_start(loop, [&] {
    t0 = totals(snapshots());
    cpu0 = server_cpu_s(o.workers > 0);
    wall0 = static_cast<double>(net::monotonic_now_us()) / 1e6;
    sink0 = 0;
    for (const auto& sinks : sink_sets)
      sink0 += sinks.drops();
  });
  net::Timer window_end(loop, [&] {
    const auto snaps = snapshots();
    const Totals t1 = totals(snaps);
    run.cpu_s = server_cpu_s(o.workers > 0) - cpu0;
    run.seconds = static_cast<double>(net::monotonic_now_us()) / 1e6 - wall0;
    run.packets = static_cast<double>(t1.sent - t0.sent);
    std::uint64_t sink1 = 0;
    for (const auto& sinks : sink_sets)
      sink1 += sinks.drops();
    run.sink_packets = static_cast<double>(sink1 - sink0);
    run.late_stages = t1.late_stages - t0.late_stages;
    run.late_packets = t1.late_packets - t0.late_packets;
    run.stages = t1.stages - t0.stages;
    run.send_drops = t1.drops - t0.drops;
    run.max_lag_us = max_lag(snaps);
    if (!snapshots_complete) {
      run.first_error = "a worker did not answer its snapshot: row invalid";
      ++run.setup_errors;
    }
    stop_server();
    starter.stop();
    for (auto& c : clients)
      if (c) c->close();
    loop.stop();
  });
  // The window opens --warmup seconds after every session is playing (or failed): a set-up still
  // running would compete with the pacing being measured. At most 60 s after the ramp.
  const std::uint64_t ramp_end_ms = static_cast<std::uint64_t>(o.ramp * 1000);
  net::Timer ready(loop, [&] {
    const std::uint64_t elapsed_ms = (net::monotonic_now_us() - t_start) / 1000;
    if ((run.playing + run.setup_errors < sessions || elapsed_ms < ramp_end_ms) &&
        elapsed_ms < ramp_end_ms + 60'000) {
      return;
    }
    ready.stop();
    const auto warm_ms = static_cast<std::uint64_t>(o.warmup * 1000);
    window_start.start(warm_ms);
    window_end.start(warm_ms + static_cast<std::uint64_t>(o.seconds * 1000));
  });
  ready.start(100, 100);
  loop.run();
  ready.stop();
  clients.clear();
  window_start.stop();
  window_end.stop();
  (void)loop.close();
  return run;
}

struct PeerRun {
  std::string name;
  double seconds = 0, packets = 0, cpu_s = 0;
  bool ok = false;
};

PeerRun run_ffmpeg(const Options& o, bool srtp, SinkSet& sinks, std::size_t tracks) {
  PeerRun run;
  run.name = srtp ? "ffmpeg -f rtp, SRTP AES_CM_128_HMAC_SHA1_80" : "ffmpeg -f rtp, plain RTP";
  std::vector<std::string> args = {o.ffmpeg,       "-nostdin", "-hide_banner", "-loglevel", "error",
                                   "-stream_loop", "-1",       "-i",           o.media};
  const std::string key =
      wire::base64_encode(net::random_srtp_key(wire::SrtpSuite::AesCm128HmacSha1_80).span());
  for (std::size_t t = 0; t < tracks; ++t) {
    const std::string port = std::to_string(sinks.base + 2 * (t % 2));
    for (const std::string& a : {std::string("-map"), "0:" + std::to_string(t), std::string("-c"),
                                 std::string("copy"), std::string("-f"), std::string("rtp"),
                                 std::string("-pkt_size"), std::to_string(o.payload + 12)}) {
      args.push_back(a);
    }
    if (srtp) {
      for (const std::string& a :
           {std::string("-srtp_out_suite"), std::string("AES_CM_128_HMAC_SHA1_80"),
            std::string("-srtp_out_params"), key})
        args.push_back(a);
      args.push_back("srtp://127.0.0.1:" + port);
    } else {
      args.push_back("rtp://127.0.0.1:" + port);
    }
  }
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // The rtp muxer prints its SDP on stdout.
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  const int spawned =
      ::posix_spawnp(&pid, o.ffmpeg.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return run;
  std::this_thread::sleep_for(std::chrono::duration<double>(std::min(o.warmup, 2.0)));
  const auto cpu0 = load::process_cpu_seconds(pid);
  const std::uint64_t sink0 = sinks.drops();
  const auto w0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  const auto cpu1 = load::process_cpu_seconds(pid);
  const std::uint64_t sink1 = sinks.drops();
  const auto w1 = std::chrono::steady_clock::now();
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!cpu0 || !cpu1) return run;
  run.seconds = std::chrono::duration<double>(w1 - w0).count();
  run.cpu_s = *cpu1 - *cpu0;
  run.packets = static_cast<double>(sink1 - sink0);
  run.ok = true;
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "predrop egress benchmark: whole-server packets/s per core vs machine limits "
      "and ffmpeg (see bench/perf/README.md)"};
  Options o;
  app.add_option("--media", o.media, "Media file to stream")->required()->check(CLI::ExistingFile);
  app.add_option("--sessions", o.sessions, "Session counts to run (repeatable)");
  app.add_option("--suite", o.suite, "AES_CM_128_HMAC_SHA1_80, AEAD_AES_128_GCM or none");
  app.add_option("--pacing", o.pacing, "paced or burst");
  app.add_option("--seconds", o.seconds, "Measurement window per run");
  app.add_option("--warmup", o.warmup, "Seconds after the ramp before measuring");
  app.add_option("--ramp", o.ramp, "Seconds over which the sessions start");
  app.add_option("--rate", o.rate, "Pre-discard rate R of every session");
  app.add_option("--payload", o.payload, "Largest RTP payload (bytes)");
  app.add_option("--machine-seconds", o.machine_seconds, "CPU seconds per machine-limit figure");
  app.add_option("--ffmpeg", o.ffmpeg, "ffmpeg binary");
  app.add_flag("--skip-ffmpeg", o.skip_ffmpeg, "Do not run the ffmpeg peer");
  app.add_flag("--gso", o.gso,
               "Server RTP socket with UDP GSO (StreamServerOptions::gso, the server's default); "
               "without it the bench measures plain sendmmsg");
  app.add_option("--workers", o.workers,
                 "0: the server on the bench's thread (default, as before); N >= 1: "
                 "StreamWorkers with N worker threads, as predrop-server runs it");
  app.add_option("--csv", o.csv, "Append CSV rows here");
  app.add_option("--sink-sets", o.sink_sets,
                 "Sets of 4 sink sockets the sessions are spread over, round robin (default 8)")
      ->check(CLI::Range(1, 256));
  app.add_option("--pacing-quantum-ms", o.pacing_quantum_ms,
                 "The pacer's quantum (blocks.pacing_quantum_ms; default 5, as shipped; 0 = each "
                 "packet at its own time)")
      ->check(CLI::Range(0, 50));
  app.add_option("--srtp-crypto", o.srtp_crypto,
                 "What libsrtp's ciphers run on, for the server and the machine limits alike: "
                 "openssl (predrop's default) or libsrtp (its own build: NSS on Debian)")
      ->check(CLI::IsMember({"openssl", "libsrtp"}));
  CLI11_PARSE(app, argc, argv);
  core::set_log_level(core::LogLevel::kWarn);
  if (o.pacing != "paced" && o.pacing != "burst") {
    std::fprintf(stderr, "--pacing must be paced or burst\n");
    return 2;
  }
  net::set_srtp_crypto(*net::parse_srtp_crypto(o.srtp_crypto));
  net::SrtpLibraryGuard srtp_library;
  std::printf("SRTP crypto: %s%s%s\n",
              std::string(net::to_string(net::srtp_crypto_in_use())).c_str(),
              net::srtp_crypto_fallback_reason().empty() ? "" : " (OpenSSL refused: ",
              net::srtp_crypto_fallback_reason().empty()
                  ? ""
                  : (net::srtp_crypto_fallback_reason() + ")").c_str());
  media::PacketizeOptions po;
  po.block = {media::BlockSize::Unit::kDuration, 1'000'000};
  po.max_payload = o.payload;
  auto media = media::MediaFile::open(o.media, po);
  if (!media) {
    std::fprintf(stderr, "%s\n", media.error().message.c_str());
    return 1;
  }
  const auto suite = parse_suite(o.suite);
  std::uint64_t payload_bytes = 0;
  for (const auto& p : (*media)->packets())
    payload_bytes += p.payload_size;
  const double file_mbit =
      static_cast<double>(payload_bytes) * 8 / static_cast<double>((*media)->duration_us());
  // Mean datagram size as sent: payload + the 32-byte header + the SRTP tag.
  const double mean_datagram =
      static_cast<double>(payload_bytes) / static_cast<double>((*media)->packets().size()) +
      static_cast<double>(wire::rtp_header_size(wire::RtpExtensionIds{1, 2})) +
      static_cast<double>(suite ? net::srtp_rtp_tag_size(*suite) : 0);
  std::printf("media %s: %.2f Mbit/s of payload, %zu packets in %.1f s, %zu tracks\n",
              o.media.c_str(), file_mbit, (*media)->packets().size(),
              static_cast<double>((*media)->duration_us()) / 1e6, (*media)->streams().size());

  // libsrtp's cost per packet grows with the number of live contexts (NSS backend), so the
  // machine limit is measured with as many contexts as the run has sessions.
  auto print_limits = [&](const MachineLimits& m, std::size_t contexts) {
    std::printf("\nmachine limits (one core, %zu-byte datagrams, suite %s):\n", m.datagram,
                o.suite.c_str());
    std::printf("  libsrtp protect, 1 context            %10.0f pkt/s\n", m.protect_1);
    std::printf("  libsrtp protect, %4zu sessions (r.r.)  %10.0f pkt/s  (+%zu idle inbound)\n",
                contexts, m.protect_n, contexts);
    std::printf("  sendmmsg, batches of 64               %10.0f pkt/s\n", m.sendmmsg);
    std::printf("  series 1/(1/protect_N + 1/sendmmsg)   %10.0f pkt/s\n", m.series);
    std::printf("  protect_N then sendmmsg, measured     %10.0f pkt/s\n", m.series_meas);
    if (m.protect_failures > 0) {
      std::printf("  (%llu protect calls FAILED: figures invalid)\n",
                  static_cast<unsigned long long>(m.protect_failures));
    }
  };
  std::vector<SinkSet> sink_sets;
  for (std::size_t k = 0; k < std::max<std::size_t>(1, o.sink_sets); ++k) {
    sink_sets.emplace_back(k == 0 ? 41000 : sink_sets.back().base + 4);
    if (sink_sets.back().sinks.empty()) {
      std::fprintf(stderr, "no free sink ports\n");
      return 1;
    }
  }
  SinkSet& sinks = sink_sets.front();  // the ffmpeg peer's
  if (sinks.sinks.empty()) {
    std::fprintf(stderr, "no free sink ports\n");
    return 1;
  }
  std::FILE* csv = o.csv.empty() ? nullptr : std::fopen(o.csv.c_str(), "a");
  auto header = [] {
    std::printf("\n%-34s %8s %9s %9s %6s %11s %8s %9s %9s %9s\n", "sender", "sessions", "Mbit/s",
                "pkt/s", "CPU", "pkt/s/core", "%series", "late", "max lag", "drops");
  };
  MachineLimits m;
  for (std::size_t n : o.sessions) {
    m = measure_machine(suite, n, o.payload, o.machine_seconds);
    print_limits(m, n);
    header();
    ServerRun r = run_server(o, *media, n, sink_sets);
    const double pps = r.packets / r.seconds;
    const double per_core = r.cpu_s > 0 ? r.packets / r.cpu_s : 0;
    const double mbit = pps * mean_datagram * 8 / 1e6;
    char name[64];
    // The row's settings, also the CSV's mode column: pacing, gso, q<quantum ms>, w<workers>,
    // and the SRTP crypto.
    const std::string mode =
        o.pacing + (o.gso ? "+gso" : "") +
        (o.pacing == "paced" ? "+q" + std::to_string(o.pacing_quantum_ms) : "") +
        (o.workers == 0 ? "" : "+w" + std::to_string(o.workers)) + "+" + o.srtp_crypto;
    std::snprintf(name, sizeof name, "predrop %s", mode.c_str());
    std::printf("%-34s %8zu %9.1f %9.0f %5.0f%% %11.0f %7.0f%% %4llu/%-4llu %7.1fms %9llu\n", name,
                r.playing, mbit, pps, 100 * r.cpu_s / r.seconds, per_core,
                100 * per_core / m.series, static_cast<unsigned long long>(r.late_stages),
                static_cast<unsigned long long>(r.stages), static_cast<double>(r.max_lag_us) / 1000,
                static_cast<unsigned long long>(r.send_drops));
    if (r.setup_errors > 0) {
      std::printf("  (%llu sessions failed to set up; first: %s)\n",
                  static_cast<unsigned long long>(r.setup_errors), r.first_error.c_str());
    }
    if (std::abs(r.sink_packets - r.packets) > 0.02 * r.packets + 100) {
      std::printf("  (sinks counted %.0f packets, the server %.0f)\n", r.sink_packets, r.packets);
    }
    std::fflush(stdout);
    if (csv != nullptr) {
      std::fprintf(csv,
                   "predrop,%s,%s,%zu,%.3f,%.0f,%.3f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%llu,%llu,%llu,"
                   "%llu\n",
                   o.suite.c_str(), mode.c_str(), r.playing, r.seconds, pps, r.cpu_s, per_core,
                   m.protect_1, m.protect_n, m.sendmmsg, m.series, m.series_meas,
                   static_cast<unsigned long long>(r.late_stages),
                   static_cast<unsigned long long>(r.stages),
                   static_cast<unsigned long long>(r.max_lag_us),
                   static_cast<unsigned long long>(r.send_drops));
    }
  }
  if (!o.skip_ffmpeg && suite != wire::SrtpSuite::AeadAes128Gcm) {
    m = measure_machine(suite, 1, o.payload, o.machine_seconds);
    print_limits(m, 1);
    header();
    PeerRun p = run_ffmpeg(o, suite.has_value(), sinks, (*media)->streams().size());
    if (p.ok) {
      const double pps = p.packets / p.seconds;
      const double per_core = p.cpu_s > 0 ? p.packets / p.cpu_s : 0;
      std::printf("%-34s %8d %9.1f %9.0f %5.0f%% %11.0f %7.0f%% %9s %9s %9s\n",
                  suite ? "ffmpeg -f rtp (SRTP AES-CM-80)" : "ffmpeg -f rtp (plain)", 1,
                  pps * mean_datagram * 8 / 1e6, pps, 100 * p.cpu_s / p.seconds, per_core,
                  100 * per_core / m.series, "-", "-", "-");
      if (csv != nullptr) {
        std::fprintf(csv, "ffmpeg,%s,none,1,%.3f,%.0f,%.3f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,,,,\n",
                     o.suite.c_str(), p.seconds, pps, p.cpu_s, per_core, m.protect_1, m.protect_n,
                     m.sendmmsg, m.series, m.series_meas);
      }
    } else {
      std::printf("ffmpeg peer: could not run %s\n", o.ffmpeg.c_str());
    }
  } else if (suite == wire::SrtpSuite::AeadAes128Gcm) {
    std::printf("%-34s (ffmpeg has no AES-GCM SRTP)\n", "ffmpeg");
  }
  if (csv != nullptr) std::fclose(csv);
  return 0;
}
