// DDL mode entry point of predrop-server. The relay itself lives in the ddl module.
#include "predrop/core/log.hpp"
#include "predrop/server/server_setup.hpp"

namespace predrop::server {

int run_ddl_mode(const ServerConfig& /*config*/) {
  core::log(core::LogLevel::kError, "ddl", "DDL relay mode is not part of this build yet");
  return 2;
}

}  // namespace predrop::server
