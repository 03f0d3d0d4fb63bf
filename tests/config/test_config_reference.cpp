// The TOML reference (configs/README.md) and the parser (config/src/config.cpp) agree (issue 25
// item 7): every key the parser accepts is in a key table of the reference, every key in a table
// is accepted, and every documented key fed to the parser alone is never an "unknown key".
//
// The reference is read as the operator reads it: a heading "## [section]" or "### [a.b] ..."
// opens a section, and the first cell of each table row below it, in backticks, is a key of that
// section. A heading of its own documents a nested table (server.streams, control.adaptive).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "predrop/config/config.hpp"

namespace predrop::config {
namespace {

std::string read_reference() {
  std::ifstream in(std::string(PREDROP_SOURCE_DIR) + "/configs/README.md");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Dotted keys of the reference's tables and the nested tables its headings name.
std::set<std::string> documented_keys(const std::string& text) {
  std::set<std::string> keys;
  const std::regex heading(R"(^#{2,3} \[([a-z_.]+)\])");
  const std::regex row(R"(^\| `([a-z_0-9]+)` \|)");
  std::string section;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, heading)) {
      section = m[1];
      if (section.find('.') != std::string::npos) keys.insert(section);
    } else if (line.starts_with("#")) {
      section.clear();  // A heading that is not a section ends the one before.
    } else if (!section.empty() && std::regex_search(line, m, row)) {
      keys.insert(section + "." + std::string(m[1]));
    }
  }
  return keys;
}

// `key = value` under its table, in a file of the mode the key belongs to.
std::string file_with(const std::string& dotted, const std::string& value) {
  const std::size_t dot = dotted.rfind('.');
  const std::string table = dotted.substr(0, dot);
  const std::string key = dotted.substr(dot + 1);
  const bool ddl = table == "ddl";
  std::string out = ddl ? "[server]\nmode = \"ddl\"\n" : "[server.streams]\ns = \"a.mp4\"\n";
  return out + "[" + table + "]\n" + key + " = " + value + "\n";
}

TEST(ConfigReference, TheReferenceHasKeyTablesForEverySection) {
  const std::set<std::string> documented = documented_keys(read_reference());
  for (const char* key : {"server.mode", "blocks.duration_ms", "control.rmax",
                          "control.adaptive.margin", "discard.policy", "ddl.chunk_bytes"}) {
    EXPECT_TRUE(documented.contains(key)) << key << " not found: the reference's layout changed";
  }
}

TEST(ConfigReference, EveryAcceptedKeyIsDocumented) {
  const std::set<std::string> documented = documented_keys(read_reference());
  const std::vector<std::string> accepted = accepted_config_keys();
  ASSERT_GT(accepted.size(), 40u);
  for (const std::string& key : accepted) {
    EXPECT_TRUE(documented.contains(key))
        << key << " is accepted by config/src/config.cpp but not documented in configs/README.md";
  }
}

TEST(ConfigReference, EveryDocumentedKeyIsAccepted) {
  const std::vector<std::string> accepted = accepted_config_keys();
  for (const std::string& key : documented_keys(read_reference())) {
    EXPECT_TRUE(std::binary_search(accepted.begin(), accepted.end(), key))
        << key << " is documented in configs/README.md but the parser does not accept it";
  }
}

TEST(ConfigReference, EveryDocumentedKeyFedAloneIsNeverUnknown) {
  // A value of a type no key takes: the parser must name a type or range, never "unknown key".
  for (const std::string& key : documented_keys(read_reference())) {
    const auto r = parse_config(file_with(key, "1979-05-27"), "ref.toml");
    ASSERT_FALSE(r.ok()) << key << " took a date";
    EXPECT_EQ(r.error().message.find("unknown"), std::string::npos)
        << key << ": " << r.error().message;
  }
}

TEST(ConfigReference, RemovedKeysAreRefusedByName) {
  for (const char* key : {"control.probe_step_ms", "control.probe_max_ms"}) {
    const auto r = parse_config(file_with(key, "10"), "ref.toml");
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_NE(r.error().message.find("was removed"), std::string::npos) << r.error().message;
    const std::vector<std::string> accepted = accepted_config_keys();
    EXPECT_FALSE(std::binary_search(accepted.begin(), accepted.end(), std::string(key)));
  }
}

}  // namespace
}  // namespace predrop::config
