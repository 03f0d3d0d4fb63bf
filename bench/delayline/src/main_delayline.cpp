// predrop-delayline: propagation delay for the test bed without netem (bench/README.md
// "Propagation delay"). iptables rules in the router namespace send each delay class's packets to
// its own NFQUEUE queue (`-j NFQUEUE --queue-num N`); this process holds each packet's verdict
// until arrival + the class's delay, then accepts it. Within a class the order is kept (one FIFO
// per queue, batch verdicts); nothing is dropped unless a queue holds more than --maxlen packets
// (counted, printed at exit). Started with real-time priority (chrt -f) by bed.sh so that other
// work on the machine does not delay the verdicts.
//
//   predrop-delayline --queue 1=50ms --queue 2=50ms [--maxlen 16384] [--stats FILE] [--ready FILE]
//
// SIGINT/SIGTERM: every held packet is accepted at once, the statistics are written, exit 0.
#include <poll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "nfqueue.hpp"
#include "predrop/delayline/delay_schedule.hpp"

namespace dl = predrop::delayline;

namespace {

std::uint64_t monotonic_us() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000u;
}

/// Per-queue counters for the statistics written at exit.
struct QueueStats {
  std::uint64_t packets = 0;
  std::uint64_t refused = 0;        // ring full: dropped
  std::uint64_t late_over_1ms = 0;  // batches released more than 1 ms after their deadline
  std::uint64_t worst_late_us = 0;
};

/// Arms the timer file descriptor for an absolute monotonic deadline (0 disarms).
void arm(int tfd, std::uint64_t deadline_us) {
  itimerspec its{};
  if (deadline_us != 0) {
    its.it_value.tv_sec = static_cast<time_t>(deadline_us / 1'000'000u);
    its.it_value.tv_nsec = static_cast<long>((deadline_us % 1'000'000u) * 1000u);
  }
  timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, nullptr);
}

}  // namespace

static int run(int argc, char** argv) {
  CLI::App app{"predrop-delayline: per-class propagation delay through NFQUEUE verdicts"};
  std::vector<std::string> specs;
  std::uint32_t maxlen = 16384;
  std::string stats_path;
  std::string ready_path;
  app.add_option("--queue", specs,
                 "NUM=DELAY: hold packets of NFQUEUE queue NUM for DELAY "
                 "(ms, or with a unit: 50ms, 2500us, 0.1s); repeatable")
      ->required();
  app.add_option("--maxlen", maxlen, "Packets held per queue at most (kernel and here)");
  app.add_option("--stats", stats_path, "Write per-queue statistics here at exit");
  app.add_option("--ready", ready_path, "Create this file once every queue is bound");
  CLI11_PARSE(app, argc, argv);

  std::vector<dl::QueueClass> classes;
  std::vector<std::uint16_t> nums;
  for (const auto& s : specs) {
    auto c = dl::parse_queue_class(s);
    if (!c) {
      std::fprintf(stderr, "predrop-delayline: %s\n", c.error().message.c_str());
      return 2;
    }
    classes.push_back(*c);
    nums.push_back(c->queue_num);
  }
  dl::DelaySchedule schedule(classes, maxlen);
  std::vector<QueueStats> stats(classes.size());

  // Page faults on the verdict path would be jitter; lock what we have and will map.
  mlockall(MCL_CURRENT | MCL_FUTURE);

  std::unique_ptr<dl::NfQueues> queues;
  std::vector<std::uint32_t> to_drop;  // refused ids, dropped after the read (queue, id)
  std::vector<std::size_t> to_drop_queue;
  to_drop.reserve(1024);
  to_drop_queue.reserve(1024);
  auto opened = dl::NfQueues::open(nums, maxlen, [&](std::size_t q, std::uint32_t id) {
    ++stats[q].packets;
    if (!schedule.hold(q, id, monotonic_us())) {
      ++stats[q].refused;
      to_drop.push_back(id);
      to_drop_queue.push_back(q);
    }
  });
  if (!opened) {
    std::fprintf(stderr, "predrop-delayline: %s\n", opened.error().message.c_str());
    return 1;
  }
  queues = std::move(opened.value());

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  const int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  const int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (sfd < 0 || tfd < 0) {
    std::perror("predrop-delayline: signalfd/timerfd");
    return 1;
  }
  if (!ready_path.empty()) std::ofstream(ready_path) << "ready\n";

  int status = 0;
  auto release = [&](const dl::DueBatch& b) {
    auto& st = stats[b.queue];
    st.worst_late_us = std::max(st.worst_late_us, b.worst_late_us);
    if (b.worst_late_us > 1000) ++st.late_over_1ms;
    if (auto s = queues->accept_up_to(b.queue, b.last_id); !s) {
      std::fprintf(stderr, "predrop-delayline: %s\n", s.error().message.c_str());
      status = 1;
    }
  };
  bool running = true;
  while (running) {
    pollfd fds[3] = {{queues->fd(), POLLIN, 0}, {tfd, POLLIN, 0}, {sfd, POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      std::perror("predrop-delayline: poll");
      status = 1;
      break;
    }
    if (fds[0].revents & POLLIN) {
      if (auto s = queues->read_pending(); !s) {
        std::fprintf(stderr, "predrop-delayline: %s\n", s.error().message.c_str());
      }
      for (std::size_t i = 0; i < to_drop.size(); ++i) {
        (void)queues->drop(to_drop_queue[i], to_drop[i]);
      }
      to_drop.clear();
      to_drop_queue.clear();
    }
    if (fds[1].revents & POLLIN) {
      std::uint64_t expirations = 0;
      (void)!read(tfd, &expirations, sizeof expirations);
    }
    if (fds[2].revents & POLLIN) running = false;
    schedule.release_due(monotonic_us(), release);
    const auto next = schedule.next_deadline_us();
    arm(tfd, next.value_or(0));
  }
  schedule.release_all(release);

  FILE* out = stats_path.empty() ? stderr : std::fopen(stats_path.c_str(), "w");
  if (out != nullptr) {
    std::fprintf(out,
                 "queue delay_us packets refused held_max late_batches_over_1ms worst_late_us\n");
    for (std::size_t q = 0; q < classes.size(); ++q) {
      std::fprintf(out, "%u %llu %llu %llu %zu %llu %llu\n", classes[q].queue_num,
                   static_cast<unsigned long long>(classes[q].delay_us),
                   static_cast<unsigned long long>(stats[q].packets),
                   static_cast<unsigned long long>(stats[q].refused), schedule.held_max(q),
                   static_cast<unsigned long long>(stats[q].late_over_1ms),
                   static_cast<unsigned long long>(stats[q].worst_late_us));
    }
    if (out != stderr) std::fclose(out);
  }
  close(tfd);
  close(sfd);
  return status;
}

int main(int argc, char** argv) {
  // Exceptions only at start-up (CLI11, allocation); the loop itself reports errors as values.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "predrop-delayline: %s\n", e.what());
    return 1;
  }
}
