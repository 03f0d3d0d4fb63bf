#pragma once
// The JSON control API (docs/control-api.md, docs/control-api.openapi.yaml) served beside
// /metrics on server.metrics_listen under /api/v1/:
//
//   GET    /api/v1/streams                 the streams offered, with their live session count
//   GET    /api/v1/sessions                every started session: client, transport, policy, R,
//                                          last L and P, bytes, loss, queue, since when
//   GET    /api/v1/sessions/N              one of them (N: the public session number)
//   GET    /api/v1/sessions/N/history      its last blocks (BlockHistory::kCapacity at most)
//   DELETE /api/v1/sessions/N              ends it (RTCP BYE, then as a TEARDOWN)       [token]
//   POST   /api/v1/reload                  re-reads the configuration file              [token]
//
// What changes something needs `Authorization: Bearer <server.api_token>`; without a token in
// the configuration the API is read-only (403). A wrong or missing token gets 401.
//
// This unit is the routing and the JSON only: pure, given what to read and do as functions
// (ControlBackend), so that it is tested without sockets; main.cpp wires it to the workers.
// Errors: every request gets a status and a JSON body; nothing a client sends throws.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/server/block_history.hpp"
#include "predrop/server/metrics_endpoint.hpp"
#include "predrop/server/metrics_text.hpp"

namespace predrop::server {

/// A stream as the API lists it.
struct StreamInfo {
  std::string name;
  std::string path;  ///< The file it plays (empty for other sources).
};

/// What the API reads and does. Any function may be empty: that part answers 503/501.
struct ControlBackend {
  std::vector<StreamInfo> streams;
  /// Every worker's snapshot (metrics_text.hpp), taken on the worker threads.
  std::function<std::vector<ServerSnapshot>()> snapshots;
  /// Session N's history; nullopt if no worker holds it.
  std::function<std::optional<std::vector<BlockRecord>>(std::uint64_t)> history;
  /// Ends session N; false if no worker holds it.
  std::function<bool(std::uint64_t)> end_session;
  /// Re-reads the configuration; the message says what changed or why not.
  std::function<core::Result<std::string>()> reload;
  /// Wall-clock time now in µs since the Unix epoch (for "since"); empty: not shown.
  std::function<std::uint64_t()> wall_now_us;
  /// server.api_token; empty: the API is read-only.
  std::string token;
};

/// Answers one request. Nothing in `request` makes it throw; a backend function may.
HttpReply handle_control(const HttpRequest& request, const ControlBackend& backend);

}  // namespace predrop::server
