// predrop-client: plays a predrop stream, measures each block (reception period, PSNR against
// the reference file) and reports it to the server; prints a per-block table.
#include <CLI/CLI.hpp>

#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "predrop/client/measuring_client.hpp"
#include "predrop/core/log.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"

using namespace predrop;

namespace {
int run(int argc, char** argv) {
  CLI::App app{
      "predrop-client: plays rtsp://HOST:PORT/NAME from a predrop server, decodes it, and reports "
      "per block the reception period and the PSNR against --reference (SRTCP PDFB); an "
      "audio-only stream gets the PSNR of its PCM."};
  client::ClientOptions o;
  std::vector<std::string> impairments;
  std::string csv_path;
  std::string log_level = "info";
  app.add_option("url", o.url, "rtsp://host:port/name")->required();
  app.add_option("-r,--reference", o.reference, "Reference media file (the one the server streams)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("-n,--blocks", o.max_blocks, "Stop after this many blocks (default: stream end)");
  app.add_option("--psnr-cap", o.psnr_cap_db,
                 "PSNR of identical pictures or samples, dB (default 60)");
  app.add_flag("!--no-feedback", o.feedback, "Do not send PDFB reports (behave like a player)");
  app.add_option("--save", o.save_video,
                 "Write the received video here (H.264/H.265 Annex B; VP8, VP9, AV1 in IVF)");
  app.add_option("--csv", csv_path, "Write the per-block table as CSV here");
  app.add_option("--impair", impairments,
                 "Receive-side impairment for tests: STAGE:drop=F[,stretch=MS] (repeatable)");
  app.add_option("--end-after-idle", o.end_after_idle_ms,
                 "The stream is over after this many ms without media (default 3000)");
  std::string pause;
  app.add_option("--pause", pause,
                 "AT,SECONDS: pause the session (RTSP PAUSE) AT s after PLAY, resume it SECONDS "
                 "later where it stopped, the server's controller state kept (RFC 8867 5.8)");
  app.add_flag("--live", o.live,
               "A live stream: blocks are the server's, pictures found in the reference by "
               "content, then by RTP timestamp (planned: the reference's packets of a block's "
               "pictures, as the server's live source packetizes them)");
  // Off by default (ClientOptions' 0), as for every other embedder: on the bed's suite the alert
  // lowers loss and the queue at onsets, but makes uncoupled sessions of one bottleneck less
  // fair (bench/README.md "The default client on the suite: alerts on and off, interleaved").
  app.add_option("--alert-ms", o.alert_ms,
                 "Send an interim alert (PDAL) when a packet of the block in flight has queued "
                 "this many ms, so that the server re-plans the rest of the block (default 0: off; "
                 "80 lowers loss and queue at onsets, and makes uncoupled sessions sharing a "
                 "bottleneck less fair; docs/design.md 2.9)")
      ->check(CLI::Range(0, 10'000));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off");
  app.set_version_flag("--version", "predrop-client " PREDROP_VERSION);
  CLI11_PARSE(app, argc, argv);
  core::LogLevel level;
  if (core::parse_log_level(log_level, level)) core::set_log_level(level);
  for (const auto& text : impairments) {
    auto imp = client::parse_impairment(text);
    if (!imp) {
      std::fprintf(stderr, "predrop-client: %s\n", imp.error().message.c_str());
      return 2;
    }
    o.impairments.push_back(*imp);
  }
  if (!pause.empty()) {
    auto plan = client::parse_pause(pause);
    if (!plan) {
      std::fprintf(stderr, "predrop-client: %s\n", plan.error().message.c_str());
      return 2;
    }
    o.pause_at_ms = plan->at_ms;
    o.pause_ms = plan->length_ms;
  }
  std::FILE* csv = nullptr;
  if (!csv_path.empty()) {
    csv = std::fopen(csv_path.c_str(), "w");
    if (csv == nullptr) {
      std::fprintf(stderr, "predrop-client: cannot write %s\n", csv_path.c_str());
      return 2;
    }
    std::fprintf(csv,
                 "block,rate,reception_period_ms,psnr_db,planned,sent,discarded,received,"
                 "network_loss,queue_delay_ms,queue_max_ms,dispersion_kbps,first_reference_picture,"
                 "audio_psnr_db,latency_ms,latency_max_ms\n");
  }
  std::printf("%6s %7s %9s %9s %7s %9s %9s %7s %8s%s\n", "block", "R", "L ms", "PSNR dB", "sent",
              "discarded", "received", "lost", "queue ms", o.live ? "  ref pic latency ms" : "");
  std::fflush(stdout);
  // libsrtp's init runs its self-tests (~50-100 ms): once per process, not per session.
  net::SrtpLibraryGuard srtp_library;
  net::EventLoop loop;
  const net::MonotonicClock clock;
  int exit_code = 0;
  client::MeasuringClient c(
      loop, clock, o,
      [csv](const client::BlockResult& r) {
        const std::uint32_t discarded = r.planned > r.sent ? r.planned - r.sent : 0;
        const std::uint32_t lost = r.sent > r.received ? r.sent - r.received : 0;
        std::printf("%6u %7.3f %9.1f %9.2f %7u %9u %9u %7u %8.1f", r.stage, r.rate,
                    r.reception_period_ms, r.psnr_db, r.sent, discarded, r.received, lost,
                    r.queue_delay_ms);
        if (r.first_reference_picture >= 0) {
          std::printf(" %8lld %10.1f", static_cast<long long>(r.first_reference_picture),
                      r.latency_ms);
        }
        // The audio's score beside the video's (streams with both).
        if (std::isfinite(r.audio_psnr_db)) std::printf("  audio %6.2f dB", r.audio_psnr_db);
        std::printf("\n");
        std::fflush(stdout);
        if (csv != nullptr) {
          std::fprintf(csv, "%u,%.4f,%.3f,%.3f,%u,%u,%u,%u,%.4f,%.3f,%.3f,%.1f,%lld,", r.stage,
                       r.rate, r.reception_period_ms, r.psnr_db, r.planned, r.sent, discarded,
                       r.received, r.network_loss, r.queue_delay_ms, r.queue_max_ms,
                       r.dispersion_kbps, static_cast<long long>(r.first_reference_picture));
          // Empty when the block has no audio score beside the video's.
          if (std::isfinite(r.audio_psnr_db)) std::fprintf(csv, "%.3f", r.audio_psnr_db);
          std::fprintf(csv, ",%.1f,%.1f\n", r.latency_ms, r.latency_max_ms);
          std::fflush(csv);
        }
      },
      [&](const core::Status& st, const client::ClientSummary& s) {
        if (!st) {
          std::fprintf(stderr, "predrop-client: %s\n", st.error().message.c_str());
          exit_code = 1;
        }
        std::printf(
            "blocks %u, packets %llu, frames decoded %llu, mean PSNR %.2f dB, "
            "SRTP failures %llu\n",
            s.blocks, static_cast<unsigned long long>(s.packets),
            static_cast<unsigned long long>(s.frames_decoded), s.mean_psnr_db,
            static_cast<unsigned long long>(s.srtp_failures));
        if (s.audio_blocks != 0) {
          std::printf("audio beside the video: %u blocks, mean audio PSNR %.2f dB\n",
                      s.audio_blocks, s.mean_audio_psnr_db);
        }
        if (o.alert_ms != 0) {
          std::printf("interim alerts sent %llu\n", static_cast<unsigned long long>(s.alerts));
        }
        loop.stop();
      });
  net::SignalWatcher signals(loop, {SIGINT, SIGTERM}, [&](int) { c.stop(); });
  signals.keep_loop_alive(false);
  c.start();
  loop.run();
  if (csv != nullptr) std::fclose(csv);
  return exit_code;
}
}  // namespace

// Exceptions are for start-up and configuration (docs/design.md §5); one that still escapes is
// reported as an error exit, never std::terminate.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: fatal: %s\n", "predrop-client", e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: fatal: unknown exception\n", "predrop-client");
  }
  return 1;
}
