#include "predrop/server/callback_guard.hpp"

#include <bit>

#include "predrop/core/log.hpp"

namespace predrop::server {

std::string_view to_string(CallbackKind kind) {
  switch (kind) {
    case CallbackKind::kRtsp:
      return "rtsp";
    case CallbackKind::kRtcp:
      return "rtcp";
    case CallbackKind::kTimer:
      return "timer";
    case CallbackKind::kMetrics:
      return "metrics";
  }
  return "unknown";
}

void CallbackGuard::caught(CallbackKind kind, const char* what) noexcept {
  const std::uint64_t n = ++counts_[static_cast<std::size_t>(kind)];
  // A bug that throws on every packet must not flood the log: the first few, then every power
  // of two, each with the running count.
  if (n > 8 && !std::has_single_bit(n)) return;
  try {
    const std::string_view k = to_string(kind);
    core::log(core::LogLevel::kError, "server",
              "exception in a %.*s callback (%llu so far): %s; only its connection or session "
              "is closed",
              static_cast<int>(k.size()), k.data(), static_cast<unsigned long long>(n), what);
  } catch (...) {
    // Logging itself failed (out of memory): the count is kept all the same.
  }
}

}  // namespace predrop::server
