#pragma once
// predrop-ddl-job's per-stage view (job_main.cpp): the events the relay and worker threads post
// to the main thread (Inbox), and the Table that joins the relay's and the workers' parts of each
// stage and prints a line (every n-th stage, and every stage with a test accuracy) and writes one
// CSV row per stage and worker, in stage order. It also totals what the summary prints.
//
// Threading: Inbox::push from any thread, pop and the Table on the main thread only.
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <variant>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/ddl/relay.hpp"
#include "predrop/ddl/train/worker.hpp"

namespace predrop::ddl::train {

/// A worker thread is done.
struct JobWorkerDone {
  std::uint16_t index = 0;
  core::Status status = core::Ok{};
  DdlWorkerSummary summary;
};
/// The relay is done.
struct JobRelayDone {
  core::Status status = core::Ok{};
};
/// Anything a relay or worker thread tells the main thread.
using JobEvent = std::variant<DdlRelayStageRow, DdlRelayReportRow, DdlWorkerStageRow, JobWorkerDone,
                              JobRelayDone, DdlRelayEvent>;

/// Events from the relay and worker threads, consumed by the main thread.
class JobInbox {
 public:
  /// Any thread.
  void push(JobEvent e);
  /// Waits for the next event.
  JobEvent pop();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<JobEvent> q_;
};

/// Forwards the relay's callbacks (on the relay's thread) into an inbox.
class JobRelayForwarder final : public DdlRelayListener {
 public:
  explicit JobRelayForwarder(JobInbox& inbox) : inbox_(inbox) {}
  void on_stage(const DdlRelayStageRow& row) override { inbox_.push(row); }
  void on_report(const DdlRelayReportRow& row) override { inbox_.push(row); }
  void on_event(const DdlRelayEvent& e) override { inbox_.push(e); }
  void on_finished(const core::Status& st) override { inbox_.push(JobRelayDone{st}); }

 private:
  JobInbox& inbox_;
};

/// Joins the relay's and the workers' views of each stage and prints / writes them in order.
class JobTable {
 public:
  /// `csv` may be null (no trace); `print_every` 0 prints no stage lines.
  JobTable(std::uint32_t workers, std::FILE* csv, unsigned print_every);

  /// Prints the column header (unless print_every is 0).
  void header() const;

  /// Adds a part of a stage. Parts of a stage already printed (e.g. the missing-report note of a
  /// vanished worker) are dropped rather than printed again as a stage of their own.
  void add(const DdlRelayStageRow& r);
  void add(const DdlRelayReportRow& r);
  void add(const DdlWorkerStageRow& r);
  /// A worker is done: its parts are no longer waited for.
  void worker_gone(std::uint16_t rank);

  /// Emits every stage, in order, whose parts are all in (or all of them when `all`).
  void flush(bool all);

  /// Totals over the emitted stages.
  struct Totals {
    std::vector<double> rate_sum, rate_min, rate_max;  ///< Per worker, the relay's R.
    std::vector<std::uint64_t> rate_n;
    std::uint64_t emitted = 0, discarded = 0, lost = 0, filled = 0, deadline_closes = 0;
    std::uint64_t increases = 0, decreases = 0;
    double last_accuracy = -1.0;
  };
  const Totals& totals() const { return t_; }

 private:
  struct Entry {
    std::optional<DdlRelayStageRow> relay;
    std::vector<std::optional<DdlWorkerStageRow>> rows;
    std::vector<std::optional<DdlRelayReportRow>> reports;
  };

  Entry& entry(std::uint32_t stage);
  bool complete(const Entry& e) const;
  void emit(std::uint32_t stage, const Entry& e);
  void write_csv(std::uint32_t stage, std::uint32_t w, const DdlRelayPeerStage* ps,
                 const std::optional<DdlWorkerStageRow>& row,
                 const std::optional<DdlRelayReportRow>& rep,
                 const std::optional<DdlRelayStageRow>& relay);

  std::uint32_t workers_;
  std::FILE* csv_;
  unsigned print_every_;
  std::vector<bool> alive_;
  std::map<std::uint32_t, Entry> stages_;
  std::uint32_t next_ = 0;  // stages below this were printed
  Totals t_;
};

}  // namespace predrop::ddl::train
