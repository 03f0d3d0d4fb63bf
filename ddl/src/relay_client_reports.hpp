#pragma once
// The relay client's closed stages waiting for their report (relay_client.hpp): a stage's
// measurement (L, counts, queueing delay) is kept when it closes, and its report goes once, when
// the host gives its P, which an external trainer does only after its optimiser step. Plain data;
// the client sends.
#include <array>
#include <cstddef>
#include <cstdint>

#include "predrop/core/reception_meter.hpp"
#include "predrop/core/result.hpp"

namespace predrop::ddl {

/// The last kWindow closed stages' measurements.
class ClientReports {
 public:
  static constexpr std::size_t kWindow = 16;

  /// Keeps the measurement of a closed stage (m.stage), replacing the one kWindow stages older.
  void keep(const core::StageMeasurement& m);
  /// The measurement of `stage` for its report, once: an error for a stage not among the last
  /// kWindow closed, or taken already.
  core::Result<core::StageMeasurement> take(std::uint32_t stage);

 private:
  struct Entry {
    bool used = false;
    bool taken = false;
    core::StageMeasurement m;
  };
  std::array<Entry, kWindow> ring_{};
};

}  // namespace predrop::ddl
