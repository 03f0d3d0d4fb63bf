#pragma once
// The per-block CSV trace (one row per stage and session, written when its report arrives or is
// declared missing): what a reviewer plots R, L and PSNR from.
#include <cstdio>
#include <memory>
#include <string>

#include "predrop/core/result.hpp"
#include "predrop/server/stream_session.hpp"

namespace predrop::server {

/// Appends BlockTrace rows to a CSV file; flushes every row so a crash loses nothing.
class BlockTraceCsv {
 public:
  /// Opens (truncates) `path` and writes the header line.
  static core::Result<std::unique_ptr<BlockTraceCsv>> open(const std::string& path);
  ~BlockTraceCsv();
  BlockTraceCsv(const BlockTraceCsv&) = delete;
  BlockTraceCsv& operator=(const BlockTraceCsv&) = delete;

  /// Writes one row.
  void write(const BlockTrace& t);
  /// Hands everything written so far to the OS.
  void flush();
  /// Closes the file and opens `path` again for appending (after a log rotation moved it);
  /// a new file gets the header line. Keeps the old file on failure.
  core::Status reopen();
  /// The header line, without newline.
  static const char* header();
  /// One row, without newline.
  static std::string format(const BlockTrace& t);

 private:
  BlockTraceCsv(std::FILE* f, std::string path) : file_(f), path_(std::move(path)) {}
  std::FILE* file_;
  std::string path_;
};

}  // namespace predrop::server
