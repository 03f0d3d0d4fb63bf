#pragma once
// The per-block CSV trace (one row per stage and session, written when its report arrives or is
// declared missing): what a reviewer plots R, L and PSNR from.
//
// Rows are buffered in memory and written by flush(): the program calls it from a 1 s timer, on
// SIGTERM and at exit, and write() calls it itself once the buffer holds kFlushBytes, so the loop
// thread never blocks on the disk per row. A failed write (disk full, I/O error) loses the rows
// it carried; it is counted, logged once, and exported as predrop_trace_write_errors_total.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "predrop/core/result.hpp"
#include "predrop/server/stream_session.hpp"

namespace predrop::server {

/// Counters of a trace file.
struct TraceStats {
  std::uint64_t rows = 0;          ///< Rows handed to write().
  std::uint64_t rows_written = 0;  ///< Rows the OS accepted.
  std::uint64_t rows_lost = 0;     ///< Rows of failed writes.
  std::uint64_t write_errors = 0;  ///< Failed flushes (the header's included).
  std::uint64_t flushes = 0;       ///< flush() calls that had something to write.
};

/// Appends BlockTrace rows to a CSV file.
class BlockTraceCsv {
 public:
  /// write() flushes by itself once this much is buffered.
  static constexpr std::size_t kFlushBytes = std::size_t{256} * 1024;

  /// Opens (truncates) `path` and writes the header line. Fails only if the file cannot be
  /// opened; a failed header write is counted like any other.
  static core::Result<std::unique_ptr<BlockTraceCsv>> open(const std::string& path);
  /// Flushes what is buffered.
  ~BlockTraceCsv();
  BlockTraceCsv(const BlockTraceCsv&) = delete;
  BlockTraceCsv& operator=(const BlockTraceCsv&) = delete;

  /// Buffers one row.
  void write(const BlockTrace& t);
  /// Writes what is buffered to the file and hands it to the OS.
  void flush();
  /// Flushes, closes the file and opens `path` again for appending (after a log rotation moved
  /// it); a new file gets the header line. Keeps the old file on failure.
  core::Status reopen();
  /// Bytes buffered and not yet written.
  std::size_t buffered_bytes() const { return buffer_.size(); }
  const TraceStats& stats() const { return stats_; }
  const std::string& path() const { return path_; }
  /// The header line, without newline.
  static const char* header();
  /// One row, without newline.
  static std::string format(const BlockTrace& t);

 private:
  BlockTraceCsv(std::FILE* f, std::string path);
  void failed(int error);

  std::FILE* file_;
  std::string path_;
  std::string buffer_;
  std::uint64_t buffered_rows_ = 0;
  TraceStats stats_;
};

}  // namespace predrop::server
