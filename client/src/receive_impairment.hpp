#pragma once
// Private to client/src: the receive-side impairments of ClientOptions::impairments (tests and
// --impair): in a chosen stage, drop every k-th packet of a fraction and delay the arrival of
// the stage's second half, so that a run shows a block with loss or a stretched reception
// period without an impaired network. Deterministic, so that a test reads exact figures.
// Threading: the client's loop thread.
#include <cstdint>
#include <utility>
#include <vector>

#include "predrop/client/measuring_client.hpp"
#include "predrop/wire/rtp.hpp"

namespace predrop::client {

/// Applies the client's impairments to the received packets, in arrival order.
class ReceiveImpairment {
 public:
  explicit ReceiveImpairment(std::vector<Impairment> impairments)
      : impairments_(std::move(impairments)) {}

  /// False: the packet is dropped. Otherwise `arrival` (µs) may be delayed.
  bool apply(const wire::RtpPacketView& v, std::uint64_t& arrival);

 private:
  std::vector<Impairment> impairments_;
  std::uint64_t counter_ = 0;  // packets seen in stages with a drop fraction: the drop pattern
};

}  // namespace predrop::client
