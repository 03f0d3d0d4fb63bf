// predrop-load's CSV files (predrop/load/csv_output.hpp).
#include "predrop/load/csv_output.hpp"

namespace predrop::load {

IntervalCsv::~IntervalCsv() {
  if (file_ != nullptr) std::fclose(file_);
}

core::Status IntervalCsv::open(const std::string& path) {
  if (file_ != nullptr) std::fclose(file_);
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) return core::make_error("cannot write " + path);
  std::fprintf(file_,
               "t_s,phase,playing,live,rx_pkt_per_s,l_p50_ms,l_p99_ms,server_cpu_pct,reports,"
               "refused_453,refused_503,errors\n");
  return core::Ok{};
}

void IntervalCsv::write(const ProgressSample& s) {
  if (file_ == nullptr) return;
  std::fprintf(
      file_, "%.2f,%s,%zu,%zu,%.0f,%.3f,%.3f,%.1f,%llu,%llu,%llu,%llu\n", s.t_s, s.phase, s.playing,
      s.live, s.rx_pkt_per_s, s.l_p50_ms, s.l_p99_ms, s.server_cpu_pct,
      static_cast<unsigned long long>(s.reports), static_cast<unsigned long long>(s.refused_453),
      static_cast<unsigned long long>(s.refused_503), static_cast<unsigned long long>(s.errors));
}

core::Status append_summary_csv(const std::string& path, const LoadSummary& s) {
  std::FILE* f = std::fopen(path.c_str(), "a+");
  if (f == nullptr) return core::make_error("cannot write " + path);
  std::fseek(f, 0, SEEK_END);
  if (std::ftell(f) == 0) {
    std::fprintf(f,
                 "label,hold_s,joins,sessions_after_ramp,sessions_mean,sessions_max,pkt_per_s,"
                 "mbit_per_s,server_cpu_pct,server_us_per_pkt,l_p50_ms,l_p99_ms,loss_p99_pct,"
                 "report_delay_p50_ms,report_delay_p99_ms,feedback_rtt_p50_ms,feedback_rtt_p99_ms,"
                 "blocks,reports,refused_453,refused_503,errors,srtp_failures\n");
  }
  const std::uint64_t errors = total_errors(s);
  std::fprintf(
      f,
      "%s,%.1f,%llu,%llu,%.1f,%llu,%.0f,%.2f,%.1f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.1f,%.1f,"
      "%llu,%llu,%llu,%llu,%llu,%llu\n",
      s.label.c_str(), s.hold_s, static_cast<unsigned long long>(s.joins),
      static_cast<unsigned long long>(s.playing_after_ramp), s.sessions_mean,
      static_cast<unsigned long long>(s.sessions_max), s.packets_per_s, s.mbit_per_s,
      s.server_cpu_pct, s.server_us_per_packet, s.l_ms.p50, s.l_ms.p99, s.loss_pct.p99,
      s.report_delay_ms.p50, s.report_delay_ms.p99, s.feedback_rtt_ms.p50, s.feedback_rtt_ms.p99,
      static_cast<unsigned long long>(s.blocks), static_cast<unsigned long long>(s.reports),
      static_cast<unsigned long long>(s.refused_453),
      static_cast<unsigned long long>(s.refused_503), static_cast<unsigned long long>(errors),
      static_cast<unsigned long long>(s.srtp_failures));
  std::fclose(f);
  return core::Ok{};
}

}  // namespace predrop::load
