#include "predrop/core/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace predrop::core {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kTrace:
      return "trace";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info ";
    case LogLevel::kWarn:
      return "warn ";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off  ";
  }
  return "?";
}
}  // namespace

bool parse_log_level(std::string_view name, LogLevel& out) {
  if (name == "trace") {
    out = LogLevel::kTrace;
  } else if (name == "debug") {
    out = LogLevel::kDebug;
  } else if (name == "info") {
    out = LogLevel::kInfo;
  } else if (name == "warn" || name == "warning") {
    out = LogLevel::kWarn;
  } else if (name == "error" || name == "critical") {
    out = LogLevel::kError;
  } else if (name == "off") {
    out = LogLevel::kOff;
  } else {
    return false;
  }
  return true;
}

void set_log_level(LogLevel level) {
  g_level = static_cast<int>(level);
}

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed) &&
         level != LogLevel::kOff;
}

void log(LogLevel level, const char* component, const char* format, ...) {
  if (!log_enabled(level)) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char line[1024];
  int n = std::snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %s [%s] ",
                        tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                        tm.tm_sec, static_cast<int>(ms.count()), level_name(level), component);
  va_list args;
  va_start(args, format);
  if (n > 0 && static_cast<std::size_t>(n) < sizeof line) {
    std::vsnprintf(line + n, sizeof line - static_cast<std::size_t>(n), format, args);
  }
  va_end(args);
  std::fprintf(stderr, "%s\n", line);
}

}  // namespace predrop::core
