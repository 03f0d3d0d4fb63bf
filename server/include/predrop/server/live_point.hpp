#pragma once
// Where a published stream is: a stream of the configuration whose source is "publish"
// (docs/live.md). At most one publisher holds it at a time; what it sends becomes a
// media::LiveSource that viewers' sessions read (captured at their SETUP, so that a viewer keeps
// reading the source it joined until that source ends). A second publisher is refused, or, with
// `replace`, takes the point over: the first one's source ends (its viewers get an RTCP BYE) and
// its connection is closed at its next packet. A pulled stream (live_pull.hpp) has the same
// point, claimed by its puller instead of a publisher.
//
// Threading: shared by every worker of the process (the publisher's connection is on one of
// them, viewers on any): every member is safe to call from any thread.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "predrop/media/live_source.hpp"
#include "predrop/server/pull_backoff.hpp"

namespace predrop::server {

/// How a pulled stream is pulled (docs/live.md "Pull").
struct PullSettings {
  std::string url;      ///< rtsp://host:port/path of the upstream (host: an IP literal).
  bool always = false;  ///< Pull from start-up on; else from the first viewer on (on-demand).
  /// On-demand: the pull stops this long after the last viewer left.
  std::uint64_t linger_us = 10'000'000;
  /// Playing, but no RTP for this long: the upstream is taken for gone.
  std::uint64_t stall_us = 5'000'000;
  /// An RTSP request (or the TCP connect) unanswered this long fails the attempt.
  std::uint64_t request_timeout_ms = 5000;
  BackoffOptions backoff;
};

/// How a published stream is configured.
struct LivePointSettings {
  /// The publish secret (publishers send it as `?secret=` in the URL); empty for a pulled one.
  std::string secret;
  /// A second publisher replaces the first (else it is refused with 455).
  bool replace = false;
  /// How the source cuts and keeps its blocks.
  media::LiveSourceOptions source;
  /// Set for a pulled stream: nobody may publish it (ANNOUNCE gets 405).
  std::optional<PullSettings> pull;
  /// Edges that serve this stream (docs/edge.md): a viewer's DESCRIBE is answered 302 with
  /// the next of these URLs in turn; a request with kRelayHeader (an edge pulling) is served.
  std::vector<std::string> edges;
};

/// The request header by which a relay (an edge's pull) asks to be served, not redirected.
inline constexpr const char* kRelayHeader = "X-Predrop-Relay";

/// A published stream's point of publication (see the file comment).
class LivePoint {
 public:
  explicit LivePoint(LivePointSettings settings) : settings_(std::move(settings)) {}

  const LivePointSettings& settings() const { return settings_; }

  /// The source viewers join now, or nullptr while nobody publishes.
  std::shared_ptr<const media::LiveSource> current() const {
    std::lock_guard lock(mutex_);
    return source_;
  }

  enum class Claim : std::uint8_t { kClaimed, kBusy, kReplaced };
  /// Publisher `token` (from next_token()) starts publishing `source`. kBusy leaves the point
  /// as it is; kReplaced ended the previous publisher's source at `now_us`.
  Claim claim(std::uint64_t token, std::shared_ptr<media::LiveSource> source,
              std::uint64_t now_us) {
    std::shared_ptr<media::LiveSource> old;
    {
      std::lock_guard lock(mutex_);
      if (source_ && !settings_.replace) return Claim::kBusy;
      old = std::move(source_);
      source_ = std::move(source);
      owner_.store(token, std::memory_order_release);
    }
    if (!old) return Claim::kClaimed;
    old->end(now_us);  // its viewers end with a BYE
    return Claim::kReplaced;
  }

  /// Publisher `token` is gone: if it still holds the point, its source ends at `now_us` and
  /// the point is free.
  void release(std::uint64_t token, std::uint64_t now_us) {
    std::shared_ptr<media::LiveSource> old;
    {
      std::lock_guard lock(mutex_);
      if (owner_.load(std::memory_order_relaxed) != token) return;
      old = std::move(source_);
      owner_.store(0, std::memory_order_release);
    }
    if (old) old->end(now_us);
  }

  /// References to the current source besides the point's own: each viewer's session holds
  /// one from its SETUP to its end, and the writer (a puller) its own. Approximate while other
  /// threads take or drop one; a pull polls it to know whether anyone watches.
  long references() const {
    std::lock_guard lock(mutex_);
    return source_ ? source_.use_count() - 1 : 0;
  }

  /// The edge the next redirected viewer goes to (round robin); "" without edges.
  std::string next_edge() {
    if (settings_.edges.empty()) return {};
    const std::uint64_t n = next_edge_.fetch_add(1, std::memory_order_relaxed);
    return settings_.edges[n % settings_.edges.size()];
  }

  /// Whether publisher `token` still holds the point (lock-free: asked per packet).
  bool owns(std::uint64_t token) const { return owner_.load(std::memory_order_acquire) == token; }

  /// A token no other publisher of the process has (never 0).
  static std::uint64_t next_token() {
    static std::atomic<std::uint64_t> tokens{0};
    return tokens.fetch_add(1, std::memory_order_relaxed) + 1;
  }

 private:
  LivePointSettings settings_;
  mutable std::mutex mutex_;
  std::shared_ptr<media::LiveSource> source_;
  std::atomic<std::uint64_t> owner_{0};
  std::atomic<std::uint64_t> next_edge_{0};
};

}  // namespace predrop::server
