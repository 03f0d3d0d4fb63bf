#include "predrop/net/callback_guard.hpp"

#include <bit>

#include "predrop/core/log.hpp"

namespace predrop::net {

const char* to_string(CallbackKind kind) {
  switch (kind) {
    case CallbackKind::kTimer:
      return "timer";
    case CallbackKind::kSignal:
      return "signal";
    case CallbackKind::kAsync:
      return "async";
    case CallbackKind::kTcpConnect:
      return "tcp_connect";
    case CallbackKind::kTcpAccept:
      return "tcp_accept";
    case CallbackKind::kTcpData:
      return "tcp_data";
    case CallbackKind::kTcpClose:
      return "tcp_close";
    case CallbackKind::kUdpReceive:
      return "udp_receive";
    case CallbackKind::kRtsp:
      return "rtsp";
    case CallbackKind::kRtcp:
      return "rtcp";
    case CallbackKind::kMetrics:
      return "metrics";
    case CallbackKind::kCall:
      return "call";
    case CallbackKind::kCount:
      break;
  }
  return "unknown";
}

std::uint64_t CallbackGuard::count(CallbackKind kind) const {
  const auto i = static_cast<std::size_t>(kind);
  return i < kCallbackKinds ? counts_[i].load(std::memory_order_relaxed) : 0;
}

std::uint64_t CallbackGuard::total() const {
  std::uint64_t n = 0;
  for (const auto& c : counts_) {
    n += c.load(std::memory_order_relaxed);
  }
  return n;
}

void CallbackGuard::note(CallbackKind kind, const char* what) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  if (i >= kCallbackKinds) return;
  const std::uint64_t n = counts_[i].fetch_add(1, std::memory_order_relaxed) + 1;
  // A bug that throws on every packet must not flood the log: the first few, then every power
  // of two, each with the running count.
  if (n > 8 && !std::has_single_bit(n)) return;
  try {
    core::log(core::LogLevel::kError, component_,
              "exception in a %s callback, caught at its boundary (%llu so far): %s",
              to_string(kind), static_cast<unsigned long long>(n), what);
  } catch (...) {  // NOLINT(bugprone-empty-catch): logging must not throw out of the boundary
  }
}

CallbackGuard& loop_guard() {
  static CallbackGuard guard("net");
  return guard;
}

}  // namespace predrop::net
