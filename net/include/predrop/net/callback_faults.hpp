#pragma once
// The event-loop boundary: no exception escapes a libuv callback. Every callback that net/ runs
// on behalf of its owner (timer, signal, wake-up, TCP connect/accept/data/close, UDP receive) is
// called inside one try/catch per kind. A caught exception is counted here, logged (the first few
// per kind, then every 1000th), and contained: a timer, signal or wake-up simply returns, a UDP
// batch is dropped, and a TCP connection whose data or connect handler threw is closed (its close
// handler is told why), so only the offending peer pays and the process goes on.
//
// Threading: counters are process-wide relaxed atomics, readable from any thread (metrics).
#include <cstdint>

namespace predrop::net {

/// The callback kinds the boundary distinguishes.
enum class CallbackKind : std::uint8_t {
  kTimer,
  kSignal,
  kAsync,
  kTcpConnect,
  kTcpAccept,
  kTcpData,
  kTcpClose,
  kUdpReceive,
  kCount,  ///< Number of kinds, not a kind.
};

/// Stable lower-case name of a kind ("timer", "tcp_data", ...), for logs and metric labels.
const char* to_string(CallbackKind kind);

/// Exceptions caught at the boundary for one kind since the process started.
std::uint64_t callback_faults(CallbackKind kind);

/// Exceptions caught at the boundary, all kinds.
std::uint64_t callback_faults_total();

}  // namespace predrop::net
