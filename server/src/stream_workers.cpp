#include "predrop/server/stream_workers.hpp"

#include <chrono>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "predrop/core/log.hpp"

namespace predrop::server {

// A job for a worker's loop: a connection to adopt, or a function to run with its server.
struct WorkerTask {
  net::DetachedTcpSocket socket;
  std::function<void(StreamServer&, net::EventLoop&)> fn;
};

struct StreamWorkers::Worker {
  std::uint32_t index = 0;
  StreamServerOptions options;
  std::thread thread;
  std::uint16_t rtp_port = 0;

  std::mutex mutex;
  std::deque<WorkerTask> tasks;
  // Set while the worker's loop runs and takes tasks; reset under the mutex before the handle
  // goes, so that post() never wakes a destroyed handle.
  net::AsyncWake* wake = nullptr;

  // Queues `task` and wakes the loop; false (the task left with the caller) if not running.
  bool post(WorkerTask& task) {
    std::lock_guard lock(mutex);
    if (wake == nullptr) return false;
    tasks.push_back(std::move(task));
    wake->send();
    return true;
  }

  // On the worker's thread: runs what was posted since the last wake-up.
  void drain(StreamServer& server, net::EventLoop& loop) {
    std::deque<WorkerTask> batch;
    {
      std::lock_guard lock(mutex);
      batch.swap(tasks);
    }
    for (WorkerTask& t : batch) {
      if (t.socket.valid()) {
        const std::string peer = t.socket.peer_address().to_string();
        auto c = net::TcpConnection::adopt(loop, std::move(t.socket));
        if (c) {
          server.adopt_connection(std::move(c.value()));
        } else {
          core::log(core::LogLevel::kWarn, "server", "worker %u: connection from %s lost: %s",
                    index, peer.c_str(), c.error().message.c_str());
        }
      }
      if (t.fn) server.callback_guard().run(CallbackKind::kTimer, [&] { t.fn(server, loop); });
    }
  }

  // The thread: its own loop and server, until a stop task ends the loop.
  void run(const OnBlock& on_block, std::promise<std::uint16_t>& started) {
    bool reported = false;
    try {
      net::EventLoop loop;
      {
        StreamServer server(loop, options, on_block);
        server.start();
        net::AsyncWake waker(loop, [this, &server, &loop] { drain(server, loop); });
        {
          std::lock_guard lock(mutex);
          wake = &waker;
        }
        started.set_value(server.rtp_port());
        reported = true;
        try {
          loop.run();  // every callback is guarded; this is the last net under them
        } catch (...) {
          core::log(core::LogLevel::kError, "server", "worker %u: loop ended by an exception",
                    index);
        }
        {
          std::lock_guard lock(mutex);
          wake = nullptr;
          tasks.clear();  // sockets not adopted are closed; waiting run_on() calls return
        }
        server.stop();
      }
      if (auto st = loop.close(); !st) {
        core::log(core::LogLevel::kWarn, "server", "worker %u: loop close: %s", index,
                  st.error().message.c_str());
      }
    } catch (...) {
      if (!reported) {
        started.set_exception(std::current_exception());
      } else {
        core::log(core::LogLevel::kError, "server", "worker %u ended by an exception", index);
      }
    }
  }
};

StreamWorkers::StreamWorkers(net::EventLoop& acceptor_loop, StreamServerOptions options,
                             std::size_t workers, OnBlock on_block)
    : loop_(acceptor_loop),
      options_(std::move(options)),
      on_block_(std::move(on_block)),
      directory_(std::make_shared<SessionDirectory>()) {
  const std::size_t n = std::max<std::size_t>(1, workers);
  for (std::size_t k = 0; k < n; ++k) {
    auto w = std::make_unique<Worker>();
    w->index = static_cast<std::uint32_t>(k);
    w->options = options_;
    w->options.listen = false;
    w->options.directory = directory_;
    w->options.worker = w->index;
    w->options.worker_count = static_cast<std::uint32_t>(n);
    if (options_.rtp_port != 0) {
      w->options.rtp_port = static_cast<std::uint16_t>(options_.rtp_port + 2 * k);
    }
    // Connections are split (the acceptor spreads them evenly); sessions are limited globally
    // through the directory.
    w->options.max_connections = (options_.max_connections + n - 1) / n;
    if (k != 0) w->options.pushes.clear();  // every push target goes to worker 0
    workers_.push_back(std::move(w));
  }
}

StreamWorkers::~StreamWorkers() {
  stop();
}

void StreamWorkers::start() {
  if (options_.rtp_port != 0 && options_.rtp_port + 2 * workers_.size() - 1 > std::size_t{65535}) {
    throw std::runtime_error("RTP port base " + std::to_string(options_.rtp_port) + " leaves no " +
                             "room for " + std::to_string(workers_.size()) + " port pairs");
  }
  for (auto& w : workers_) {
    std::promise<std::uint16_t> started;
    auto ready = started.get_future();
    Worker* raw = w.get();
    // The promise moves into the thread: it must outlive set_value() there, not this scope.
    w->thread =
        std::thread([raw, this, p = std::move(started)]() mutable { raw->run(on_block_, p); });
    try {
      w->rtp_port = ready.get();
    } catch (const std::exception& e) {
      w->thread.join();
      stop_workers();
      throw std::runtime_error("worker " + std::to_string(w->index) + ": " + e.what());
    }
  }
  auto listener = net::TcpListener::listen(
      loop_, options_.rtsp_listen, [this](std::unique_ptr<net::TcpConnection> c) {
        guard_.run(CallbackKind::kRtsp, [&] { on_connection(std::move(c)); });
      });
  if (!listener) {
    stop_workers();
    throw std::runtime_error("RTSP listen on " + options_.rtsp_listen.to_string() + ": " +
                             listener.error().message);
  }
  listener_ = std::move(listener.value());
}

void StreamWorkers::on_connection(std::unique_ptr<net::TcpConnection> tcp) {
  auto socket = tcp->detach();
  if (!socket) {
    ++handoff_failures_;
    core::log(core::LogLevel::kWarn, "server", "connection from %s lost: %s",
              tcp->peer_address().to_string().c_str(), socket.error().message.c_str());
    return;
  }
  WorkerTask task{std::move(socket.value()), {}};
  // Round robin; a worker that is stopping is skipped.
  for (std::size_t tries = 0; tries < workers_.size(); ++tries) {
    Worker& w = *workers_[next_worker_];
    next_worker_ = (next_worker_ + 1) % workers_.size();
    if (w.post(task)) {
      ++handed_off_;
      return;
    }
  }
  ++handoff_failures_;  // no worker runs: the socket closes with the task
}

void StreamWorkers::stop_workers() {
  for (auto& w : workers_) {
    WorkerTask stop{{}, [](StreamServer& server, net::EventLoop& loop) {
                      // Sends the RTCP BYEs while the loop still runs, then ends it.
                      server.stop();
                      loop.stop();
                    }};
    (void)w->post(stop);
  }
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

void StreamWorkers::stop() {
  listener_.reset();
  stop_workers();
}

const net::SocketAddress& StreamWorkers::rtsp_address() const {
  return listener_ ? listener_->local_address() : options_.rtsp_listen;
}

std::uint16_t StreamWorkers::rtp_port(std::size_t worker) const {
  return workers_.at(worker)->rtp_port;
}

bool StreamWorkers::run_on(std::size_t worker, const std::function<void(StreamServer&)>& fn) const {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  WorkerTask task{{}, [fn, done](StreamServer& server, net::EventLoop&) {
                    fn(server);
                    done->set_value();
                  }};
  if (!workers_.at(worker)->post(task)) return false;
  // Ready when run, or when the task is dropped unrun (a throw, or the worker stopping): then
  // get() throws broken_promise. Never waits on a clock.
  try {
    finished.get();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::size_t StreamWorkers::worker_of(std::uint64_t number) const {
  return number == 0 ? 0 : static_cast<std::size_t>((number - 1) % workers_.size());
}

std::optional<std::vector<BlockRecord>> StreamWorkers::session_history(std::uint64_t number) const {
  std::optional<std::vector<BlockRecord>> out;
  if (number == 0) return out;
  (void)run_on(worker_of(number), [&](StreamServer& s) { out = s.session_history(number); });
  return out;
}

WhepOutcome StreamWorkers::whep_offer(std::string_view stream, std::string_view offer,
                                      const net::SocketAddress& peer,
                                      std::string_view candidate_ip) {
  WhepOutcome out{503, {}, {}, "no worker answered"};
  if (workers_.empty()) return out;
  const std::size_t k = next_worker_;
  next_worker_ = (next_worker_ + 1) % workers_.size();
  (void)run_on(k, [&](StreamServer& s) { out = s.whep_offer(stream, offer, peer, candidate_ip); });
  return out;
}

bool StreamWorkers::whep_delete(std::string_view session) const {
  const auto owner = directory_->find(session);
  bool ended = false;
  if (!owner) return false;
  (void)run_on(owner->worker, [&](StreamServer& s) { ended = s.whep_delete(session); });
  return ended;
}

bool StreamWorkers::whep_quality(std::string_view session, const PageQuality& report) const {
  const auto owner = directory_->find(session);
  bool known = false;
  if (!owner) return false;
  (void)run_on(owner->worker, [&](StreamServer& s) { known = s.whep_quality(session, report); });
  return known;
}

bool StreamWorkers::end_session(std::uint64_t number) const {
  bool ended = false;
  if (number == 0) return false;
  (void)run_on(worker_of(number), [&](StreamServer& s) { ended = s.end_session(number); });
  return ended;
}

bool StreamWorkers::set_session_control(const SessionControl& control) const {
  bool all = true;
  for (std::size_t k = 0; k < workers_.size(); ++k) {
    all = run_on(k, [&](StreamServer& s) { s.set_session_control(control); }) && all;
  }
  return all;
}

std::vector<ServerSnapshot> StreamWorkers::snapshots(std::uint64_t timeout_ms) const {
  std::vector<std::shared_ptr<std::promise<ServerSnapshot>>> promises;
  std::vector<std::future<ServerSnapshot>> futures;
  for (const auto& w : workers_) {
    auto p = std::make_shared<std::promise<ServerSnapshot>>();
    WorkerTask task{
        {}, [p](StreamServer& server, net::EventLoop&) { p->set_value(snapshot_of(server)); }};
    futures.push_back(p->get_future());
    if (!w->post(task)) futures.pop_back();
  }
  std::vector<ServerSnapshot> out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (auto& f : futures) {
    // A worker that does not answer in time is left out rather than holding /metrics; the
    // result it produces later goes to its promise, which the task owns.
    if (f.wait_until(deadline) != std::future_status::ready) continue;
    try {
      out.push_back(f.get());
    } catch (const std::exception&) {
    }
  }
  return out;
}

}  // namespace predrop::server
