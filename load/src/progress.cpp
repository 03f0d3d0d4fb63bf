// predrop-load's live progress line (predrop/load/progress.hpp).
#include "predrop/load/progress.hpp"

#include <unistd.h>

#include <string>

namespace predrop::load {

ProgressLine::ProgressLine(std::FILE* out) : out_(out) {
  tty_ = out_ != nullptr && ::isatty(::fileno(out_)) != 0;
}

void ProgressLine::show(const ProgressSample& s, std::uint64_t now_us) {
  if (out_ == nullptr || (!tty_ && now_us - last_print_us_ < 5'000'000)) return;
  last_print_us_ = now_us;
  const std::string cpu =
      s.server_cpu_pct >= 0 ? std::to_string(static_cast<int>(s.server_cpu_pct)) + "%" : "n/a";
  std::fprintf(out_,
               "%s[%6.1fs %-5s] sessions %4zu/%u (+%zu setting up) | rx %7.0f pkt/s %6.1f "
               "Mbit/s | L p50 %6.1f p99 %6.1f ms | reports %llu | server CPU %s | refused "
               "453:%llu 503:%llu | errors %llu%s",
               tty_ ? "\r" : "", s.t_s, s.phase, s.playing, s.clients,
               s.live > s.playing ? s.live - s.playing : 0, s.rx_pkt_per_s, s.rx_mbit_per_s,
               s.l_p50_ms, s.l_p99_ms, static_cast<unsigned long long>(s.reports), cpu.c_str(),
               static_cast<unsigned long long>(s.refused_453),
               static_cast<unsigned long long>(s.refused_503),
               static_cast<unsigned long long>(s.errors), tty_ ? "\033[K" : "\n");
  std::fflush(out_);
}

void ProgressLine::finish() {
  if (out_ != nullptr && tty_) std::fputc('\n', out_);
}

}  // namespace predrop::load
