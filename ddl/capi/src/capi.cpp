// The C ABI (predrop_ddl.h): one GradientPeer on its own thread and loop per handle. Calls from
// other threads hand their work over under the handle's mutex and wake the loop (net::AsyncWake);
// the loop thread runs the peer and calls the stage callback. Nothing from C++ crosses the ABI:
// every entry point catches and turns an exception into an error return.
#include "predrop/ddl/capi/predrop_ddl.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "predrop/config/config.hpp"
#include "predrop/ddl/capi/gradient_peer.hpp"
#include "predrop/net/clock.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"

namespace {

using predrop::core::Result;
namespace ddl = predrop::ddl;
namespace net = predrop::net;

void copy_text(const std::string& text, char* out, std::size_t size) {
  if (out == nullptr || size == 0) return;
  const std::size_t n = std::min(text.size(), size - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

Result<net::SocketAddress> resolve(const char* text, bool allow_port_zero) {
  auto ep = predrop::config::parse_endpoint(text, allow_port_zero);
  if (!ep) return ep.error();
  if (ep->host == "localhost") return net::SocketAddress::loopback_v4(ep->port);
  return net::SocketAddress::from_ip(ep->host, ep->port);
}

// libsrtp is initialised once per process and stays so (a ctypes library is never unloaded).
void init_srtp_once() {
  static const net::SrtpLibraryGuard guard;
}

}  // namespace

struct predrop_ddl_peer {
  // Set at open, read-only afterwards.
  ddl::capi::GradientPeerOptions options;
  predrop_ddl_stage_callback on_stage = nullptr;
  void* user = nullptr;

  // Shared between the caller's threads and the loop thread, under `mutex`.
  mutable std::mutex mutex;
  std::condition_variable changed;
  bool started = false;
  bool ended = false;  // the peer failed or was closed
  std::string error;
  predrop_ddl_job job{};
  bool stage_open = false;  // a stage was submitted and its callback has not run yet
  std::uint32_t next_stage = 0;
  bool submit_pending = false;
  std::vector<float> staged;
  float* average_out = nullptr;
  std::uint64_t submit_us = 0;  // when the open stage was submitted
  std::deque<std::pair<std::uint32_t, double>> reports;
  bool close_requested = false;
  net::AsyncWake* wake = nullptr;  // valid while the loop thread runs

  std::thread thread;

  // Loop thread only.
  std::vector<float> submitting;
  float* average_now = nullptr;

  void run() noexcept {
    try {
      run_loop();
    } catch (const std::exception& e) {
      end_with(std::string("internal error in the peer thread: ") + e.what());
    } catch (...) {
      end_with("internal error in the peer thread");
    }
    const std::lock_guard lock(mutex);
    wake = nullptr;
    ended = true;
    changed.notify_all();
  }

  void run_loop() {
    net::EventLoop loop;
    const net::MonotonicClock clock;
    ddl::capi::GradientPeer peer(
        loop, clock, options, [this](const ddl::capi::GradientJob& j) { on_start(j); },
        [this](const ddl::capi::GradientStage& s, std::span<const float> avg) {
          on_stage_closed(s, avg);
        },
        [this](const predrop::core::Status& st) {
          end_with(st ? std::string("closed") : st.error().message);
        });
    bool quit = false;
    net::AsyncWake async(loop, [&] { drain(loop, peer, quit); });
    {
      const std::lock_guard lock(mutex);
      wake = &async;
      if (close_requested) async.send();  // close() came before the loop could hear it
    }
    if (auto st = peer.start(); !st) end_with(st.error().message);
    // Until close(): a failed peer keeps answering calls with its reason.
    while (!quit) {
      loop.run();
    }
    {
      const std::lock_guard lock(mutex);
      wake = nullptr;
    }
    (void)loop.close();
  }

  // Loop thread: takes the queued calls.
  void drain(net::EventLoop& loop, ddl::capi::GradientPeer& peer, bool& quit) {
    bool submit = false;
    bool close = false;
    std::deque<std::pair<std::uint32_t, double>> todo;
    {
      const std::lock_guard lock(mutex);
      if (submit_pending) {
        submitting.swap(staged);
        average_now = average_out;
        submit_pending = false;
        submit = true;
      }
      todo.swap(reports);
      close = close_requested;
    }
    for (const auto& [stage, p] : todo) {
      if (auto st = peer.report(stage, p); !st) record_error(st.error().message);
    }
    if (submit && !peer.done()) {
      auto s = peer.submit(submitting);
      if (!s) fail_stage(s.error().message);
    } else if (submit) {
      fail_stage(current_error());
    }
    if (close) {
      peer.close();
      quit = true;
      loop.stop();
    }
  }

  void on_start(const ddl::capi::GradientJob& j) {
    const std::lock_guard lock(mutex);
    started = true;
    job.rank = j.rank;
    job.workers = j.workers;
    job.start_stage = j.start_stage;
    job.chunk_elements = j.chunk_elements;
    job.chunks = j.chunks;
    job.fill_own = j.fill_own ? 1 : 0;
    job.stage_deadline_ms = j.stage_deadline_ms;
    next_stage = j.start_stage;
    changed.notify_all();
  }

  void on_stage_closed(const ddl::capi::GradientStage& s, std::span<const float> avg) {
    if (average_now != nullptr) std::copy(avg.begin(), avg.end(), average_now);
    average_now = nullptr;
    predrop_ddl_stage_info info{};
    info.stage = s.stage;
    info.status = 0;
    info.error = "";
    info.received = s.received;
    info.announced = s.announced;
    info.lost = s.lost;
    info.filled = s.filled;
    info.partial = s.partial;
    info.contributors = s.contributors;
    info.chunks = job.chunks;
    info.close_reason = s.close_reason;
    info.deadline_us = s.deadline_us;
    info.reception_period_us = s.reception_period_us;
    info.stage_us = s.stage_us;
    info.begin_us = s.begin_us;
    info.uplink_sent_us = s.uplink_sent_us;
    info.pdsc_us = s.pdsc_us;
    info.first_chunk_us = s.first_chunk_us;
    info.last_chunk_us = s.last_chunk_us;
    info.closed_us = s.closed_us;
    {
      const std::lock_guard lock(mutex);
      stage_open = false;
      next_stage = s.stage + 1;
      info.submit_us = submit_us;
    }
    if (on_stage != nullptr) on_stage(user, &info);
  }

  // The open stage (if any) fails with `why`; its callback runs once.
  void fail_stage(const std::string& why) {
    std::uint32_t stage = 0;
    {
      const std::lock_guard lock(mutex);
      if (!stage_open) return;
      stage_open = false;
      stage = next_stage;
    }
    average_now = nullptr;
    predrop_ddl_stage_info info{};
    info.stage = stage;
    info.status = -1;
    info.error = why.c_str();
    info.chunks = job.chunks;
    if (on_stage != nullptr) on_stage(user, &info);
  }

  void record_error(const std::string& why) {
    const std::lock_guard lock(mutex);
    error = why;
  }

  std::string current_error() const {
    const std::lock_guard lock(mutex);
    return error;
  }

  void end_with(const std::string& why) {
    {
      const std::lock_guard lock(mutex);
      if (!ended) error = why;
      ended = true;
      changed.notify_all();
    }
    fail_stage(current_error());
  }
};

extern "C" {

predrop_ddl_peer* predrop_ddl_open(const predrop_ddl_options* o, char* error, size_t error_size) {
  try {
    if (o == nullptr || o->abi_version != PREDROP_DDL_ABI_VERSION) {
      copy_text("predrop_ddl_open: options of another ABI version (this library has " +
                    std::to_string(PREDROP_DDL_ABI_VERSION) + ")",
                error, error_size);
      return nullptr;
    }
    if (o->relay == nullptr) {
      copy_text("predrop_ddl_open: no relay address", error, error_size);
      return nullptr;
    }
    ddl::capi::GradientPeerOptions po;
    auto relay = resolve(o->relay, false);
    if (!relay) {
      copy_text(std::string("relay address ") + o->relay + ": " + relay.error().message, error,
                error_size);
      return nullptr;
    }
    po.relay = *relay;
    po.bind = relay->is_v4() ? net::SocketAddress::any_v4(0) : net::SocketAddress::loopback_v6(0);
    if (o->bind != nullptr && *o->bind != '\0') {
      auto b = resolve(o->bind, true);
      if (!b) {
        copy_text(std::string("bind address ") + o->bind + ": " + b.error().message, error,
                  error_size);
        return nullptr;
      }
      po.bind = *b;
    }
    const char* key_text = o->key;
    if (key_text == nullptr) key_text = std::getenv(ddl::kKeyEnvironment);
    if (key_text == nullptr || *key_text == '\0') {
      copy_text(std::string("no job key: pass one or set ") + ddl::kKeyEnvironment +
                    " (the relay prints it at start)",
                error, error_size);
      return nullptr;
    }
    auto key = ddl::parse_job_key(key_text, std::nullopt);
    if (!key) {
      copy_text(key.error().message, error, error_size);
      return nullptr;
    }
    po.key = *key;
    if (o->rank >= 0xFFFF) {
      copy_text("rank " + std::to_string(o->rank) + " is out of range", error, error_size);
      return nullptr;
    }
    po.rank = o->rank < 0 ? ddl::kAnyRank : static_cast<std::uint16_t>(o->rank);
    po.model_seed = o->model_seed;
    if (o->tensor_elements == 0) {
      copy_text("the gradient has no elements", error, error_size);
      return nullptr;
    }
    po.tensor_elements = o->tensor_elements;
    if (o->join_timeout_ms != 0) po.join_timeout_ms = o->join_timeout_ms;
    if (o->start_timeout_ms != 0) po.start_timeout_ms = o->start_timeout_ms;
    if (o->relay_silence_ms != 0) po.relay_silence_ms = o->relay_silence_ms;
    po.stages = o->stages;
    po.idle_close_ms = o->idle_close_ms;
    // For A/B measurements only (docs/ddl-torch.md "Where a stage's time goes").
    if (const char* g = std::getenv("PREDROP_DDL_NO_GSO"); g != nullptr && *g == '1') {
      po.gso = false;
    }
    init_srtp_once();

    auto* p = new predrop_ddl_peer;
    p->options = po;
    p->on_stage = o->on_stage;
    p->user = o->user;
    p->staged.resize(po.tensor_elements);
    p->submitting.resize(po.tensor_elements);
    p->thread = std::thread([p] { p->run(); });
    std::unique_lock lock(p->mutex);
    p->changed.wait(lock, [p] { return p->started || p->ended; });
    if (!p->started) {
      copy_text(p->error, error, error_size);
      lock.unlock();
      predrop_ddl_close(p);
      return nullptr;
    }
    return p;
  } catch (const std::exception& e) {
    copy_text(std::string("predrop_ddl_open: ") + e.what(), error, error_size);
    return nullptr;
  }
}

int predrop_ddl_job_info(const predrop_ddl_peer* peer, predrop_ddl_job* job) {
  if (peer == nullptr || job == nullptr) return -1;
  const std::lock_guard lock(peer->mutex);
  *job = peer->job;
  return 0;
}

int predrop_ddl_submit(predrop_ddl_peer* peer, const float* gradient, float* average,
                       size_t elements, uint32_t* stage) {
  if (peer == nullptr) return -1;
  try {
    const std::lock_guard lock(peer->mutex);
    if (peer->ended) return -1;
    if (gradient == nullptr || average == nullptr || elements != peer->options.tensor_elements) {
      peer->error = "predrop_ddl_submit: " + std::to_string(elements) +
                    " elements, the job's gradient has " +
                    std::to_string(peer->options.tensor_elements);
      return -1;
    }
    if (peer->stage_open || peer->submit_pending) {
      peer->error = "predrop_ddl_submit: stage " + std::to_string(peer->next_stage) +
                    " is still open (submit once per stage, after its callback)";
      return -1;
    }
    if (peer->wake == nullptr) {
      peer->error = "predrop_ddl_submit: the peer's thread is not running";
      return -1;
    }
    peer->submit_us = net::monotonic_now_us();
    std::copy(gradient, gradient + elements, peer->staged.begin());
    peer->average_out = average;
    peer->submit_pending = true;
    peer->stage_open = true;
    if (stage != nullptr) *stage = peer->next_stage;
    peer->wake->send();
    return 0;
  } catch (...) {
    return -1;
  }
}

int predrop_ddl_report(predrop_ddl_peer* peer, uint32_t stage, double performance) {
  if (peer == nullptr) return -1;
  try {
    const std::lock_guard lock(peer->mutex);
    if (peer->ended || peer->wake == nullptr) return -1;
    peer->reports.emplace_back(stage, performance);
    peer->wake->send();
    return 0;
  } catch (...) {
    return -1;
  }
}

void predrop_ddl_error(const predrop_ddl_peer* peer, char* out, size_t out_size) {
  if (peer == nullptr) {
    copy_text("no peer", out, out_size);
    return;
  }
  try {
    const std::lock_guard lock(peer->mutex);
    copy_text(peer->error, out, out_size);
  } catch (...) {
    copy_text("", out, out_size);
  }
}

void predrop_ddl_close(predrop_ddl_peer* peer) {
  if (peer == nullptr) return;
  try {
    {
      const std::lock_guard lock(peer->mutex);
      peer->close_requested = true;
      if (peer->wake != nullptr) peer->wake->send();
    }
    if (peer->thread.joinable()) peer->thread.join();
  } catch (...) {
    // Nothing to report to: the handle goes away either way.
  }
  delete peer;
}

}  // extern "C"
