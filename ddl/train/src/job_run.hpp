#pragma once
// Running predrop-ddl-job's job (job_main.cpp): the relay and every worker on their own thread
// and event loop over loopback with one fresh job key, the main thread collecting their events
// into the per-stage table (job_table.hpp), then the summary. docs/ddl-mode.md "Commands".
#include "job_options.hpp"

namespace predrop::ddl::train {

/// Runs the job to its end and prints the table and the summary; returns the exit code (0 when
/// the relay and every worker not killed by --kill finished cleanly, 1 otherwise, 2 when the job
/// could not be set up).
int run_local_job(const JobSetup& setup);

}  // namespace predrop::ddl::train
