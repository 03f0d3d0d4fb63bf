#pragma once
// A session's recent blocks as the control API shows them (GET /api/v1/sessions/N/history):
// one record per block when its report came or was declared missing (the same moment as a row
// of the block trace), in a fixed ring of the last kCapacity blocks. It lives in the session's
// entry on its worker's thread and goes with the session; pushing allocates nothing.
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "predrop/core/rate_controller.hpp"
#include "predrop/server/stream_session.hpp"

namespace predrop::server {

/// One block as sent and reported (a copy of the BlockTrace fields the API shows).
struct BlockRecord {
  std::uint32_t stage = 0;
  std::uint32_t block = 0;
  double rate = 0.0;  ///< R used for the block.
  std::uint32_t packets = 0;
  std::uint32_t discarded = 0;
  std::uint32_t sent = 0;
  bool reported = false;             ///< False: the report never came.
  double reception_period_us = 0.0;  ///< L.
  double performance = 0.0;          ///< P (PSNR dB for the measuring client).
  std::uint32_t packets_received = 0;
  double network_loss = 0.0;  ///< Fraction of the announced packets lost.
  double queue_delay_us = std::numeric_limits<double>::quiet_NaN();  ///< NaN: not measured.
  core::DecisionKind decision = core::DecisionKind::kKeep;
  double next_rate = 0.0;
  double capacity_estimate = std::numeric_limits<double>::quiet_NaN();  ///< bytes/µs; NaN: none.

  static BlockRecord from(const BlockTrace& t);
};

/// The last kCapacity records of one session, oldest first.
class BlockHistory {
 public:
  static constexpr std::size_t kCapacity = 64;

  void push(const BlockRecord& r) {
    ring_[next_ % kCapacity] = r;
    ++next_;
  }
  /// Records pushed so far (also those the ring no longer holds).
  std::uint64_t total() const { return next_; }
  /// What the ring holds, oldest first.
  std::vector<BlockRecord> records() const;
  /// The newest record; nullptr if none yet.
  const BlockRecord* last() const { return next_ == 0 ? nullptr : &ring_[(next_ - 1) % kCapacity]; }

 private:
  std::array<BlockRecord, kCapacity> ring_{};
  std::uint64_t next_ = 0;
};

}  // namespace predrop::server
