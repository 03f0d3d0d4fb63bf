#pragma once
// Minimal structured logging to stderr: "2026-11-30T02:10:01.123Z info  [server] message".
// Used at start-up, per session and per block; never per packet (STYLE.md "Data path").
#include <cstdarg>
#include <string_view>

namespace predrop::core {

/// Severity, lowest first.
enum class LogLevel : int { kTrace, kDebug, kInfo, kWarn, kError, kOff };

/// Parses "trace", "debug", "info", "warn", "error", "off" (also "critical" = error).
bool parse_log_level(std::string_view name, LogLevel& out);
/// Sets the process-wide threshold (default info).
void set_log_level(LogLevel level);
/// True if messages at `level` are printed.
bool log_enabled(LogLevel level);
/// printf-style message with a component tag.
void log(LogLevel level, const char* component, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace predrop::core
