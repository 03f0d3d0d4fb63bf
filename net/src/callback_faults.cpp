#include "predrop/net/callback_faults.hpp"

#include <array>
#include <atomic>
#include <cstddef>

#include "callback_guard.hpp"
#include "predrop/core/log.hpp"

namespace predrop::net {

namespace {
constexpr std::size_t kKinds = static_cast<std::size_t>(CallbackKind::kCount);
std::array<std::atomic<std::uint64_t>, kKinds> g_faults{};
// Enough to see what went wrong without letting a peer that triggers it on every packet flood
// the log.
constexpr std::uint64_t kLoggedInFull = 10;
constexpr std::uint64_t kThenEvery = 1000;
}  // namespace

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
    case CallbackKind::kCount:
      break;
  }
  return "unknown";
}

std::uint64_t callback_faults(CallbackKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < kKinds ? g_faults[i].load(std::memory_order_relaxed) : 0;
}

std::uint64_t callback_faults_total() {
  std::uint64_t total = 0;
  for (const auto& f : g_faults) {
    total += f.load(std::memory_order_relaxed);
  }
  return total;
}

namespace detail {

void note_callback_fault(CallbackKind kind, const char* what) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  if (i >= kKinds) {
    return;
  }
  const std::uint64_t n = g_faults[i].fetch_add(1, std::memory_order_relaxed) + 1;
  if (n <= kLoggedInFull || n % kThenEvery == 0) {
    core::log(core::LogLevel::kError, "net",
              "exception in a %s callback caught at the event-loop boundary (%llu so far): %s",
              to_string(kind), static_cast<unsigned long long>(n), what);
  }
}

}  // namespace detail
}  // namespace predrop::net
