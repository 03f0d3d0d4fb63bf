#pragma once
// The sessions of every worker of one process (StreamWorkers): which worker holds a session id,
// and the process-wide limits (server.max_sessions, server.max_sessions_per_address) checked
// and counted in one place, so that the limits stay global however the connections spread.
//
// Threading: any thread; one mutex. It is used on SETUP, TEARDOWN, expiry and for a request
// naming a session its worker does not hold, never on the packet path.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace predrop::server {

/// Session id -> worker, with global session counts.
class SessionDirectory {
 public:
  /// What try_add() decided.
  enum class Admit {
    kAdded,        ///< Counted; the caller now holds the session.
    kFull,         ///< max_total sessions exist already.
    kAddressFull,  ///< `owner_ip` holds max_per_address sessions already.
  };
  /// Where a session lives.
  struct Owner {
    std::uint32_t worker = 0;
    std::string owner_ip;  ///< Empty for push sessions.
  };

  /// Adds `id` held by `worker`, set up from `owner_ip` (empty: a push session, counted in the
  /// total only), unless a limit is reached (0 = no limit).
  Admit try_add(const std::string& id, std::uint32_t worker, const std::string& owner_ip,
                std::size_t max_total, std::size_t max_per_address);
  /// Forgets `id` (no-op if unknown).
  void remove(const std::string& id);
  /// The worker holding `id` and its owner's address, if any worker does.
  std::optional<Owner> find(std::string_view id) const;
  /// Sessions held by all workers.
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Owner> sessions_;
  std::unordered_map<std::string, std::size_t> per_ip_;
};

}  // namespace predrop::server
