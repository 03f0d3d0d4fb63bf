#include "job_table.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace predrop::ddl::train {

void JobInbox::push(JobEvent e) {
  {
    std::lock_guard lock(mu_);
    q_.push_back(std::move(e));
  }
  cv_.notify_one();
}

JobEvent JobInbox::pop() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !q_.empty(); });
  JobEvent e = std::move(q_.front());
  q_.pop_front();
  return e;
}

JobTable::JobTable(std::uint32_t workers, std::FILE* csv, unsigned print_every)
    : workers_(workers), csv_(csv), print_every_(print_every), alive_(workers, true) {
  if (csv_ != nullptr) {
    std::fprintf(csv_,
                 "stage,rank,rate,planned,discarded,sent,L_us,received,announced,lost,filled,"
                 "partial,train_loss,probe_loss,P,test_accuracy,decision,next_rate,uplink_rate,"
                 "uplink_discarded,uplink_L_us,relay_close,relay_L_us,deadline_us,stage_us\n");
  }
}

void JobTable::header() const {
  if (print_every_ == 0) return;
  std::printf("%6s  %-*s  %-*s  %7s  %6s  %5s %5s %5s  %s\n", "stage", int(6 * workers_),
              "R per worker", int(7 * workers_), "L ms", "loss", "acc", "disc", "lost", "fill",
              "close");
}

void JobTable::add(const DdlRelayStageRow& r) {
  if (r.stage >= next_) entry(r.stage).relay = r;
}

void JobTable::add(const DdlRelayReportRow& r) {
  if (r.rank < workers_ && r.stage >= next_) entry(r.stage).reports[r.rank] = r;
}

void JobTable::add(const DdlWorkerStageRow& r) {
  if (r.rank < workers_ && r.stage >= next_) entry(r.stage).rows[r.rank] = r;
}

void JobTable::worker_gone(std::uint16_t rank) {
  if (rank < workers_) alive_[rank] = false;
}

void JobTable::flush(bool all) {
  while (!stages_.empty()) {
    auto it = stages_.begin();
    if (!all && !complete(it->second)) break;
    emit(it->first, it->second);
    next_ = it->first + 1;
    stages_.erase(it);
  }
}

JobTable::Entry& JobTable::entry(std::uint32_t stage) {
  Entry& e = stages_[stage];
  if (e.rows.empty()) {
    e.rows.resize(workers_);
    e.reports.resize(workers_);
  }
  return e;
}

bool JobTable::complete(const Entry& e) const {
  if (!e.relay) return false;
  for (std::uint32_t w = 0; w < workers_; ++w) {
    const bool in_stage = w < e.relay->peers.size() && e.relay->peers[w].live;
    if (!in_stage || !alive_[w]) continue;
    if (!e.rows[w] || !e.reports[w]) return false;
  }
  return true;
}

void JobTable::emit(std::uint32_t stage, const Entry& e) {
  ++t_.emitted;
  if (t_.rate_sum.empty()) {
    t_.rate_sum.assign(workers_, 0.0);
    t_.rate_min.assign(workers_, 1.0);
    t_.rate_max.assign(workers_, 0.0);
    t_.rate_n.assign(workers_, 0);
  }
  std::string rates, periods;
  double loss = 0.0, acc = 0.0;
  unsigned n_loss = 0, n_acc = 0;
  std::uint32_t disc = 0, lst = 0, fill = 0;
  for (std::uint32_t w = 0; w < workers_; ++w) {
    char b[32];
    const DdlRelayPeerStage* ps = e.relay && w < e.relay->peers.size() && e.relay->peers[w].live
                                      ? &e.relay->peers[w]
                                      : nullptr;
    if (ps != nullptr) {
      std::snprintf(b, sizeof b, "%5.2f ", ps->rate);
      disc += ps->discarded;
      t_.rate_sum[w] += ps->rate;
      t_.rate_min[w] = std::min(t_.rate_min[w], ps->rate);
      t_.rate_max[w] = std::max(t_.rate_max[w], ps->rate);
      ++t_.rate_n[w];
    } else {
      std::snprintf(b, sizeof b, "%5s ", "-");
    }
    rates += b;
    const auto& row = e.rows[w];
    if (row) {
      std::snprintf(b, sizeof b, "%6.2f ", row->reception_period_us / 1000.0);
      loss += row->train_loss;
      ++n_loss;
      if (row->test_accuracy >= 0) {
        acc += row->test_accuracy;
        ++n_acc;
      }
      lst += row->lost;
      fill += row->filled;
    } else {
      std::snprintf(b, sizeof b, "%6s ", "-");
    }
    periods += b;
    const auto& rep = e.reports[w];
    if (rep) {
      if (rep->decision.kind == core::DecisionKind::kIncrease) ++t_.increases;
      if (rep->decision.kind == core::DecisionKind::kDecrease) ++t_.decreases;
    }
    if (csv_ != nullptr && (ps != nullptr || row)) write_csv(stage, w, ps, row, rep, e.relay);
  }
  t_.discarded += disc;
  t_.lost += lst;
  t_.filled += fill;
  if (e.relay && e.relay->reason == 1) ++t_.deadline_closes;
  if (n_acc != 0) t_.last_accuracy = acc / n_acc;
  if (print_every_ == 0) return;
  if (stage % print_every_ != 0 && n_acc == 0) return;
  char accs[16] = "     -";
  if (n_acc != 0) std::snprintf(accs, sizeof accs, "%6.3f", acc / n_acc);
  const char* close = !e.relay               ? "?"
                      : e.relay->reason == 0 ? "complete"
                      : e.relay->reason == 1 ? "deadline"
                                             : "forced";
  std::printf("%6u  %s  %s  %7.4f  %s  %5u %5u %5u  %s\n", stage, rates.c_str(), periods.c_str(),
              n_loss != 0 ? loss / n_loss : 0.0, accs, disc, lst, fill, close);
  std::fflush(stdout);
}

void JobTable::write_csv(std::uint32_t stage, std::uint32_t w, const DdlRelayPeerStage* ps,
                         const std::optional<DdlWorkerStageRow>& row,
                         const std::optional<DdlRelayReportRow>& rep,
                         const std::optional<DdlRelayStageRow>& relay) {
  std::fprintf(
      csv_,
      "%u,%u,%.4f,%u,%u,%u,%.0f,%u,%u,%u,%u,%u,%.6f,%.6f,%.6g,%.4f,%s,%.4f,%.4f,%u,%.0f,%u,%.0f,"
      "%llu,%llu\n",
      stage, w, ps ? ps->rate : 0.0, ps ? ps->planned : 0u, ps ? ps->discarded : 0u,
      ps ? ps->sent : 0u, row ? row->reception_period_us : 0.0, row ? row->received : 0u,
      row ? row->announced : 0u, row ? row->lost : 0u, row ? row->filled : 0u,
      row ? row->partial : 0u, row ? row->train_loss : 0.0, row ? row->probe_loss : 0.0,
      row ? row->performance : 0.0, row ? row->test_accuracy : -1.0,
      rep ? std::string(core::to_string(rep->decision.kind)).c_str() : "",
      rep ? rep->next_rate : 0.0, row ? row->uplink_rate : 0.0, row ? row->uplink_discarded : 0u,
      row ? row->uplink_period_us : -1.0, relay ? unsigned{relay->reason} : 0u,
      relay ? relay->period_us : 0.0,
      static_cast<unsigned long long>(relay ? relay->deadline_us : 0),
      static_cast<unsigned long long>(row ? row->stage_us : 0));
}

}  // namespace predrop::ddl::train
