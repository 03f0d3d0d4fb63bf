#include "predrop/server/block_trace_csv.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>

#include "predrop/core/log.hpp"

namespace predrop::server {

core::Result<std::unique_ptr<BlockTraceCsv>> BlockTraceCsv::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return core::make_error("cannot write trace " + path + ": " + std::strerror(errno));
  }
  std::unique_ptr<BlockTraceCsv> t(new BlockTraceCsv(f, path));
  t->buffer_.append(header()).append("\n");
  t->flush();
  return t;
}

BlockTraceCsv::BlockTraceCsv(std::FILE* f, std::string path) : file_(f), path_(std::move(path)) {
  // Our own buffer decides when the disk is touched; stdio's would only split the writes.
  std::setvbuf(file_, nullptr, _IONBF, 0);
  buffer_.reserve(kFlushBytes + 1024);
}

BlockTraceCsv::~BlockTraceCsv() {
  flush();
  std::fclose(file_);
}

const char* BlockTraceCsv::header() {
  return "session,stage,block,rate,packets,discarded,sent,reported,reception_period_us,"
         "performance,received,announced,network_loss,queue_delay_us,decision,next_rate,reason,"
         "capacity_kbps";
}

std::string BlockTraceCsv::format(const BlockTrace& t) {
  char buf[512];
  const auto& r = t.report;
  // The policy's capacity estimate in kbit/s (bytes/µs x 8000); empty for policies without one.
  char capacity[32] = "";
  if (std::isfinite(t.capacity_estimate)) {
    std::snprintf(capacity, sizeof capacity, "%.1f", t.capacity_estimate * 8000.0);
  }
  std::snprintf(
      buf, sizeof buf,
      "%.*s,%u,%u,%.4f,%zu,%zu,%zu,%d,%.0f,%.3f,%u,%u,%.4f,%.0f,%.*s,%.4f,\"%.*s\",%s",
      static_cast<int>(t.session.size()), t.session.data(), t.stage, t.block, t.rate, t.packets,
      t.discarded, t.sent, t.reported ? 1 : 0, r.reception_period_us, r.performance,
      r.packets_received, r.packets_announced, r.network_loss(), r.queue_delay_us.value_or(0.0),
      static_cast<int>(core::to_string(t.decision).size()), core::to_string(t.decision).data(),
      t.next_rate, static_cast<int>(t.reason.size()), t.reason.data(), capacity);
  return buf;
}

void BlockTraceCsv::write(const BlockTrace& t) {
  buffer_.append(format(t)).append("\n");
  ++buffered_rows_;
  ++stats_.rows;
  if (buffer_.size() >= kFlushBytes) flush();
}

void BlockTraceCsv::flush() {
  if (buffer_.empty()) return;
  ++stats_.flushes;
  errno = 0;
  const std::size_t n = std::fwrite(buffer_.data(), 1, buffer_.size(), file_);
  if (n != buffer_.size() || std::fflush(file_) != 0) {
    failed(errno);
    std::clearerr(file_);
  } else {
    stats_.rows_written += buffered_rows_;
  }
  // Dropped on failure too: a full disk must not make the buffer grow without bound.
  buffer_.clear();
  buffered_rows_ = 0;
}

void BlockTraceCsv::failed(int error) {
  ++stats_.write_errors;
  stats_.rows_lost += buffered_rows_;
  if (stats_.write_errors == 1) {
    core::log(core::LogLevel::kWarn, "trace",
              "writing %s failed: %s; %llu rows lost. Further failures are only counted "
              "(predrop_trace_write_errors_total)",
              path_.c_str(), error != 0 ? std::strerror(error) : "short write",
              static_cast<unsigned long long>(buffered_rows_));
  }
}

core::Status BlockTraceCsv::reopen() {
  flush();
  std::FILE* f = std::fopen(path_.c_str(), "a");
  if (f == nullptr) {
    return core::make_error("cannot reopen trace " + path_ + ": " + std::strerror(errno));
  }
  std::fclose(file_);
  file_ = f;
  std::setvbuf(file_, nullptr, _IONBF, 0);
  if (std::fseek(f, 0, SEEK_END) == 0 && std::ftell(f) == 0) {
    buffer_.append(header()).append("\n");
    flush();
  }
  return core::Ok{};
}

}  // namespace predrop::server
