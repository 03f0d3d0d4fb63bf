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
  /// The header line, without newline.
  static const char* header();
  /// One row, without newline.
  static std::string format(const BlockTrace& t);

 private:
  explicit BlockTraceCsv(std::FILE* f) : file_(f) {}
  std::FILE* file_;
};

}  // namespace predrop::server
