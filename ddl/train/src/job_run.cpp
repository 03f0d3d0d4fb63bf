#include "job_run.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "job_table.hpp"
#include "predrop/ddl/protocol.hpp"
#include "predrop/net/event_loop.hpp"
#include "predrop/net/srtp_session.hpp"

namespace predrop::ddl::train {

namespace {

int fail(const std::string& m) {
  std::fprintf(stderr, "predrop-ddl-job: %s\n", m.c_str());
  return 2;
}

void print_banner(const JobSetup& s, const DdlRelayOptions& ro,
                  const net::SocketAddress& relay_address) {
  std::printf(
      "predrop DDL job: %u workers x %u stages, relay %s, SRTP %s, policy %s, discard %s, fill "
      "%s, deadline %s, %s, worker egress discard %s\n",
      s.workers, s.worker.stages, relay_address.to_string().c_str(),
      s.suite ? std::string(wire::suite_name(*s.suite)).c_str() : "none", ro.policy.policy.c_str(),
      std::string(core::to_string(ro.discard)).c_str(),
      std::string(ddl::to_string(ro.missing_fill)).c_str(),
      ro.stage_deadline_ms ? (std::to_string(*ro.stage_deadline_ms) + " ms").c_str() : "adaptive",
      ro.paced ? "paced" : "burst", ro.worker_egress_discard ? "on" : "off");
}

void print_summary(const JobSetup& s, const DdlRelayStats& rs, const JobTable::Totals& t,
                   const std::vector<JobWorkerDone>& done, double seconds) {
  std::printf("\n%llu stages in %.2f s: %.1f stages/s (relay + %u workers on this machine)\n",
              static_cast<unsigned long long>(rs.stages), seconds,
              static_cast<double>(rs.stages) / seconds, s.workers);
  for (std::uint32_t w = 0; w < s.workers; ++w) {
    const double mean = w < t.rate_n.size() && t.rate_n[w] ? t.rate_sum[w] / t.rate_n[w] : 0.0;
    std::printf(
        "worker %u: %u stages, test accuracy %.4f, relay R mean %.3f (min %.2f, max %.2f)%s\n", w,
        done[w].summary.stages, done[w].summary.final_accuracy, mean,
        w < t.rate_min.size() ? t.rate_min[w] : 0.0, w < t.rate_max.size() ? t.rate_max[w] : 0.0,
        done[w].status ? "" : "  [did not finish]");
  }
  std::printf(
      "relay: %llu chunks received, %llu late (dropped), %llu pre-discarded, %llu reports, %llu "
      "missing; %llu deadline closes; %llu evicted; controller: %llu increases, %llu decreases\n",
      static_cast<unsigned long long>(rs.chunks_received),
      static_cast<unsigned long long>(rs.chunks_late),
      static_cast<unsigned long long>(rs.packets_discarded),
      static_cast<unsigned long long>(rs.reports),
      static_cast<unsigned long long>(rs.reports_missing),
      static_cast<unsigned long long>(t.deadline_closes),
      static_cast<unsigned long long>(rs.evicted), static_cast<unsigned long long>(t.increases),
      static_cast<unsigned long long>(t.decreases));
  std::printf(
      "relay: %llu datagrams failed SRTP/SRTCP, %llu from unknown addresses, %llu too early, "
      "%llu rejected, %llu send drops\n",
      static_cast<unsigned long long>(rs.srtp_failures),
      static_cast<unsigned long long>(rs.foreign_datagrams),
      static_cast<unsigned long long>(rs.chunks_too_early),
      static_cast<unsigned long long>(rs.chunks_rejected),
      static_cast<unsigned long long>(rs.send_drops));
  std::printf("workers: %llu aggregate chunks lost in the network, %llu filled (%s)\n",
              static_cast<unsigned long long>(t.lost), static_cast<unsigned long long>(t.filled),
              std::string(ddl::to_string(s.relay.missing_fill)).c_str());
  if (!s.csv_path.empty()) std::printf("trace: %s\n", s.csv_path.c_str());
}

}  // namespace

int run_local_job(const JobSetup& s) {
  auto data = load_ddl_dataset(s.data_dir);
  if (!data) return fail(data.error().message);

  // One fresh key for this job, handed to the relay and to every worker.
  DdlRelayOptions ro = s.relay;
  ro.key = generate_job_key(s.suite);

  std::FILE* csv = nullptr;
  if (!s.csv_path.empty()) {
    csv = std::fopen(s.csv_path.c_str(), "w");
    if (csv == nullptr) return fail("cannot write " + s.csv_path);
  }

  net::SrtpLibraryGuard srtp_library;
  JobInbox inbox;
  JobRelayForwarder forwarder(inbox);
  net::EventLoop relay_loop;
  // One clock for every thread: MonotonicClock is stateless and reads CLOCK_MONOTONIC.
  const net::MonotonicClock clock;
  DdlRelay relay(relay_loop, clock, ro, &forwarder);
  if (auto st = relay.start(); !st) return fail(st.error().message);
  const net::SocketAddress relay_address = relay.local_address();
  print_banner(s, ro, relay_address);

  const auto t0 = std::chrono::steady_clock::now();
  std::thread relay_thread([&relay_loop] { relay_loop.run(); });
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<net::EventLoop>> loops;
  std::vector<std::unique_ptr<DdlWorker>> worker_objects;
  for (std::uint32_t w = 0; w < s.workers; ++w) {
    DdlWorkerOptions o = s.worker;
    o.relay = relay_address;
    o.bind = net::SocketAddress::loopback_v4(0);
    o.key = ro.key;
    o.rank = static_cast<std::uint16_t>(w);
    o.vanish_at_stage = s.vanish[w];
    loops.push_back(std::make_unique<net::EventLoop>());
    const auto index = static_cast<std::uint16_t>(w);
    worker_objects.push_back(std::make_unique<DdlWorker>(
        *loops.back(), clock, *data, o, [&inbox](const DdlWorkerStageRow& r) { inbox.push(r); },
        [&inbox, index](const core::Status& st, const DdlWorkerSummary& sum) {
          inbox.push(JobWorkerDone{index, st, sum});
        }));
    if (auto st = worker_objects.back()->start(); !st) return fail(st.error().message);
  }
  for (std::uint32_t w = 0; w < s.workers; ++w) {
    threads.emplace_back([loop = loops[w].get()] { loop->run(); });
  }

  JobTable table(s.workers, csv, s.print_every);
  table.header();
  std::uint32_t workers_done = 0;
  bool relay_done = false;
  core::Status relay_status = core::Ok{};
  std::vector<JobWorkerDone> done(s.workers);
  while (workers_done < s.workers || !relay_done) {
    JobEvent e = inbox.pop();
    if (auto* r = std::get_if<DdlRelayStageRow>(&e)) {
      table.add(*r);
    } else if (auto* rr = std::get_if<DdlRelayReportRow>(&e)) {
      table.add(*rr);
    } else if (auto* wr = std::get_if<DdlWorkerStageRow>(&e)) {
      table.add(*wr);
    } else if (auto* wd = std::get_if<JobWorkerDone>(&e)) {
      done[wd->index] = *wd;
      ++workers_done;
      table.worker_gone(wd->index);
      if (!wd->status) {
        std::printf("worker %u: %s\n", unsigned{wd->index}, wd->status.error().message.c_str());
      }
    } else if (auto* rd = std::get_if<JobRelayDone>(&e)) {
      relay_done = true;
      relay_status = rd->status;
    } else if (auto* ev = std::get_if<DdlRelayEvent>(&e)) {
      if (ev->kind == DdlRelayEvent::Kind::kEvicted) {
        std::printf("relay: rank %u evicted: %s\n", unsigned{ev->rank}, ev->text.c_str());
      }
    }
    table.flush(false);
  }
  relay_thread.join();
  for (auto& t : threads) {
    t.join();
  }
  table.flush(true);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  worker_objects.clear();
  const DdlRelayStats& rs = relay.stats();
  if (csv != nullptr) std::fclose(csv);

  print_summary(s, rs, table.totals(), done, seconds);
  bool ok = static_cast<bool>(relay_status);
  for (std::uint32_t w = 0; w < s.workers; ++w) {
    if (!done[w].status && !s.vanish[w]) ok = false;
  }
  if (!relay_status) std::printf("relay: %s\n", relay_status.error().message.c_str());
  return ok ? 0 : 1;
}

}  // namespace predrop::ddl::train
