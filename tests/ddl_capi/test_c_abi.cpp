// The C ABI's argument checks and start-up errors (predrop_ddl.h); a whole job through the ABI
// is tests/python's part.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "predrop/ddl/capi/predrop_ddl.h"

namespace {

predrop_ddl_options base() {
  predrop_ddl_options o{};
  o.abi_version = PREDROP_DDL_ABI_VERSION;
  o.relay = "127.0.0.1:9";
  o.key = "none";
  o.rank = -1;
  o.tensor_elements = 10;
  o.join_timeout_ms = 300;
  return o;
}

std::string open_error(const predrop_ddl_options& o) {
  std::array<char, 512> err{};
  predrop_ddl_peer* p = predrop_ddl_open(&o, err.data(), err.size());
  EXPECT_EQ(p, nullptr);
  if (p != nullptr) predrop_ddl_close(p);
  return err.data();
}

TEST(CAbi, RefusesAnotherAbiVersion) {
  predrop_ddl_options o = base();
  o.abi_version = 99;
  EXPECT_NE(open_error(o).find("ABI version"), std::string::npos);
}

TEST(CAbi, NamesBadArguments) {
  predrop_ddl_options o = base();
  o.relay = "127.0.0.1";
  EXPECT_NE(open_error(o).find("relay address"), std::string::npos);
  o = base();
  o.key = "a=crypto:1 NOSUCH inline:x";
  EXPECT_NE(open_error(o).find("job key"), std::string::npos);
  o = base();
  o.tensor_elements = 0;
  EXPECT_NE(open_error(o).find("no elements"), std::string::npos);
}

TEST(CAbi, AbsentRelayIsAnErrorWithinTheJoinTimeout) {
  EXPECT_NE(open_error(base()).find("no answer from the relay"), std::string::npos);
}

TEST(CAbi, NullHandlesAreErrors) {
  float g = 0.0f;
  EXPECT_EQ(predrop_ddl_submit(nullptr, &g, &g, 1, nullptr), -1);
  EXPECT_EQ(predrop_ddl_report(nullptr, 0, 0.0), -1);
  predrop_ddl_close(nullptr);
}

}  // namespace
