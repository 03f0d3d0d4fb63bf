#pragma once
// What the config tests share: a stream-mode config around the lines under test, and the check
// that a config is refused with a message naming what is wrong.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "predrop/config/config.hpp"

namespace predrop::config::test {

/// A minimal stream-mode config: `server_lines` go into [server], `rest` after the streams.
inline std::string stream_with(const std::string& rest, const std::string& server_lines = {}) {
  return "[server]\nmode = \"stream\"\n" + server_lines +
         "[server.streams]\nsample = \"media/sample.mp4\"\n" + rest;
}

/// Asserts that `text` fails and that the message mentions every string in `needles`.
inline void expect_error(const std::string& text, std::initializer_list<std::string_view> needles) {
  const auto r = parse_config(text, "test.toml");
  ASSERT_FALSE(r.ok()) << "accepted:\n" << text;
  for (const auto n : needles) {
    EXPECT_NE(r.error().message.find(n), std::string::npos)
        << "message \"" << r.error().message << "\" lacks \"" << n << "\"";
  }
}

}  // namespace predrop::config::test
