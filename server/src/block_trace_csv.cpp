#include "predrop/server/block_trace_csv.hpp"

#include <cerrno>
#include <cstring>

namespace predrop::server {

core::Result<std::unique_ptr<BlockTraceCsv>> BlockTraceCsv::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return core::make_error("cannot write trace " + path + ": " + std::strerror(errno));
  }
  std::fprintf(f, "%s\n", header());
  std::fflush(f);
  return std::unique_ptr<BlockTraceCsv>(new BlockTraceCsv(f, path));
}

BlockTraceCsv::~BlockTraceCsv() {
  std::fclose(file_);
}

const char* BlockTraceCsv::header() {
  return "session,stage,block,rate,packets,discarded,sent,reported,reception_period_us,"
         "performance,received,announced,network_loss,queue_delay_us,decision,next_rate,reason";
}

std::string BlockTraceCsv::format(const BlockTrace& t) {
  char buf[512];
  const auto& r = t.report;
  std::snprintf(
      buf, sizeof buf,
      "%.*s,%u,%u,%.4f,%zu,%zu,%zu,%d,%.0f,%.3f,%u,%u,%.4f,%.0f,%.*s,%.4f,\"%.*s\"",
      static_cast<int>(t.session.size()), t.session.data(), t.stage, t.block, t.rate, t.packets,
      t.discarded, t.sent, t.reported ? 1 : 0, r.reception_period_us, r.performance,
      r.packets_received, r.packets_announced, r.network_loss(), r.queue_delay_us.value_or(0.0),
      static_cast<int>(core::to_string(t.decision).size()), core::to_string(t.decision).data(),
      t.next_rate, static_cast<int>(t.reason.size()), t.reason.data());
  return buf;
}

void BlockTraceCsv::write(const BlockTrace& t) {
  std::fprintf(file_, "%s\n", format(t).c_str());
  std::fflush(file_);
}

void BlockTraceCsv::flush() {
  std::fflush(file_);
}

core::Status BlockTraceCsv::reopen() {
  std::fflush(file_);
  std::FILE* f = std::fopen(path_.c_str(), "a");
  if (f == nullptr) {
    return core::make_error("cannot reopen trace " + path_ + ": " + std::strerror(errno));
  }
  std::fclose(file_);
  file_ = f;
  if (std::fseek(f, 0, SEEK_END) == 0 && std::ftell(f) == 0) {
    std::fprintf(f, "%s\n", header());
    std::fflush(f);
  }
  return core::Ok{};
}

}  // namespace predrop::server
