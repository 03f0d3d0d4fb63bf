#pragma once
// predrop-ddl-job's options (job_main.cpp): the command line, and the job they describe once
// merged with the configuration file (or the built-in defaults: basic rule, priority discard,
// zero fill, adaptive deadline, burst, AES-GCM) and checked. docs/ddl-mode.md "Commands".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "predrop/core/result.hpp"
#include "predrop/ddl/relay.hpp"
#include "predrop/ddl/train/worker.hpp"
#include "predrop/wire/sdes_key.hpp"

namespace predrop::ddl::train {

/// The command line as given.
struct JobCommandLine {
  std::string config_path, policy, fill, discard, pacing, srtp;
  std::string csv_path = "ddl-job.csv";
  std::string log_level = "warn";
  std::string data_dir;
  std::uint32_t workers = 3;
  std::optional<double> fixed_rate;
  std::optional<std::uint32_t> deadline_ms;
  std::optional<bool> egress;
  std::vector<std::string> kills;  ///< RANK@STAGE
  unsigned print_every = 1;
  DdlWorkerOptions worker;  ///< Training options common to every worker.
};

/// Parses argv into `out`. Returns an exit code when the program should end now (help, or a
/// usage error, already printed); nullopt to go on.
std::optional<int> parse_job_command_line(int argc, char** argv, JobCommandLine& out);

/// The job to run.
struct JobSetup {
  std::uint32_t workers = 0;
  DdlRelayOptions relay;    ///< Everything but the key and the listen address.
  DdlWorkerOptions worker;  ///< Template: relay, bind, key and rank are set per worker.
  std::vector<std::optional<std::uint32_t>> vanish;  ///< Per rank: --kill's stage.
  std::optional<wire::SrtpSuite> suite;              ///< nullopt: plain RTP.
  std::string data_dir, csv_path;
  unsigned print_every = 1;
};

/// Merges the command line with its configuration and checks it; the error is for the user.
core::Result<JobSetup> make_job_setup(const JobCommandLine& cl);

}  // namespace predrop::ddl::train
