// predrop-ddl-job: one command for a whole local DDL job on loopback: the relay (the same
// ddl::DdlRelay that predrop-server --mode ddl runs) and N workers (ddl::train::DdlWorker, as in
// predrop-ddl-worker), each on its own thread and event loop, talking real SRTP/SRTCP over UDP on
// 127.0.0.1. Prints one line per stage and writes a CSV trace. See docs/ddl-mode.md.
//   job_options.hpp  the command line and the job it describes
//   job_run.hpp      the threads, the event collection, the summary
//   job_table.hpp    the per-stage table and CSV
#include <cstdio>
#include <exception>

#include "job_options.hpp"
#include "job_run.hpp"

namespace {
int run(int argc, char** argv) {
  using namespace predrop::ddl::train;
  JobCommandLine cl;
  if (auto code = parse_job_command_line(argc, argv, cl)) return *code;
  auto setup = make_job_setup(cl);
  if (!setup) {
    std::fprintf(stderr, "predrop-ddl-job: %s\n", setup.error().message.c_str());
    return 2;
  }
  return run_local_job(*setup);
}
}  // namespace

// An exception that escapes is an error exit, never std::terminate (docs/design.md §5).
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "predrop-ddl-job: fatal: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "predrop-ddl-job: fatal: unknown exception\n");
  }
  return 1;
}
