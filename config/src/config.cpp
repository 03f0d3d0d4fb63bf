// Server configuration from TOML (toml++): the entry points. The strict reader is
// config_reader.{hpp,cpp}; each section has its reader and checks in a file of its own
// (config_server.cpp, config_streams.cpp, config_blocks.cpp with [discard], config_control.cpp
// and config_policy.cpp, config_ddl.cpp). toml++ is included only by these.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "config_reader.hpp"
#include "predrop/config/config.hpp"
#include "predrop/core/text_util.hpp"

namespace predrop::config {

using core::make_error;
using namespace detail;  // This file is the facade over the section files.

namespace {

// ---- validation (shared by parse_config and validate_config) --------------------------------

std::optional<Problem> check_config(const ServerConfig& c) {
  Problems problems;
  check_server(c.server, problems);
  check_blocks(c.blocks, problems);
  check_control(c.control, problems);
  check_ddl(c.ddl, problems);
  return problems.take();
}

// ---- TOML reading ---------------------------------------------------------------------------

void read_all(const toml::table& root, Reader& r, ServerConfig& c) {
  // The mode decides which sections are allowed, so read it first.
  if (const auto* server = root.get_as<toml::table>("server")) {
    if (const auto* mode = server->get("mode")) {
      // Reported with its key path like every other error.
      const auto s = mode->as_string();
      if (!s) {
        r.fail_type(*mode, "server.mode", "a string");
        return;
      }
      bool found = false;
      for (const auto& m : kModes) {
        if (m.name == s->get()) {
          c.server.mode = m.value;
          found = true;
        }
      }
      if (!found) {
        r.fail(mode->source(), "server.mode",
               "must be " + one_of(kModes) + ", got " + core::text::quote_for_error(s->get()));
        return;
      }
    }
  }
  const bool stream = c.server.mode == ServerMode::kStream;
  BlockSizeKeys block_sizes;
  const std::vector<Key> top_keys = {
      {"server",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "server", "a table ([server])");
         }
         read_server(r, *t, c.server, stream);
       }},
      {"blocks",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "blocks", "a table ([blocks])");
         }
         if (!stream) {
           return r.fail(n.source(), "blocks", "only valid with server.mode = \"stream\"");
         }
         read_blocks(r, *t, c.blocks, block_sizes);
       }},
      {"control",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "control", "a table ([control])");
         }
         read_control(r, *t, c.control);
       }},
      {"discard",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "discard", "a table ([discard])");
         }
         read_discard(r, *t, c.discard);
       }},
      {"ddl",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "ddl", "a table ([ddl])");
         }
         if (stream) {
           return r.fail(n.source(), "ddl", "only valid with server.mode = \"ddl\"");
         }
         read_ddl(r, *t, c.ddl);
       }},
  };
  // Iterate the root like a section so that unknown top-level tables are caught too.
  for (const auto& entry : root) {
    const toml::key& k = entry.first;
    const toml::node& node = entry.second;
    if (r.failed()) {
      return;
    }
    const auto it = std::find_if(top_keys.begin(), top_keys.end(),
                                 [&](const Key& key) { return key.name == k.str(); });
    if (it == top_keys.end()) {
      std::string hint;
      for (const auto& key : top_keys) {
        if (edit_distance(k.str(), key.name) <= 2) {
          hint = " (did you mean [" + std::string(key.name) + "]?)";
        }
      }
      r.fail(k.source(), key_text(k.str()), "unknown section or key" + hint);
      return;
    }
    it->read(node);
  }
  if (r.failed()) {
    return;
  }
  finish_blocks(root, r, c.blocks, block_sizes);
  if (r.failed()) {
    return;
  }
  // TOML tables are unordered maps; sort streams so that the order never depends on the parser.
  std::sort(c.server.streams.begin(), c.server.streams.end(),
            [](const StreamEntry& a, const StreamEntry& b) { return a.name < b.name; });
}

}  // namespace

// ---- public ---------------------------------------------------------------------------------

core::Result<std::uint32_t> parse_workers(std::string_view text) {
  const std::string wanted =
      "\"auto\" or an integer in [0, " + std::to_string(kMaxWorkers) + "] (0 = auto, one per core)";
  if (text == "auto") {
    return std::uint32_t{0};
  }
  std::uint32_t v = 0;
  if (text.empty() || text.size() > 3) {
    return core::make_error("must be " + wanted + ", got " + core::text::quote_for_error(text));
  }
  for (const char ch : text) {
    if (ch < '0' || ch > '9') {
      return core::make_error("must be " + wanted + ", got " + core::text::quote_for_error(text));
    }
    v = v * 10 + static_cast<std::uint32_t>(ch - '0');
  }
  if (v > kMaxWorkers) {
    return core::make_error("must be " + wanted + ", got " + std::string(text));
  }
  return v;
}

core::Result<Endpoint> parse_endpoint(std::string_view text, bool allow_port_zero) {
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return make_error("expected \"[ipv6]:port\", got " + core::text::quote_for_error(text));
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      return make_error("expected \"host:port\" (IPv6 in brackets), got " +
                        core::text::quote_for_error(text));
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty() || core::text::has_ctl(host) ||
      host.find_first_of(" /") != std::string_view::npos) {
    return make_error("invalid host in " + core::text::quote_for_error(text));
  }
  const auto p = core::text::parse_uint<std::uint16_t>(port);
  if (!p || (*p == 0 && !allow_port_zero)) {
    return make_error(std::string("port must be in [") + (allow_port_zero ? "0" : "1") +
                      ", 65535], got " + core::text::quote_for_error(port));
  }
  return Endpoint{std::string(host), *p};
}

std::string to_string(const Endpoint& e) {
  if (e.host.find(':') != std::string::npos) {
    return "[" + e.host + "]:" + std::to_string(e.port);
  }
  return e.host + ":" + std::to_string(e.port);
}

core::Status validate_config(const ServerConfig& config) {
  if (const auto p = check_config(config)) {
    return make_error(p->key + ": " + p->message);
  }
  return core::Ok{};
}

core::Result<ServerConfig> parse_config(std::string_view toml_text, std::string_view source_name) {
  toml::table root;
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return make_error(std::string(source_name) + ":" + std::to_string(b.line) + ":" +
                      std::to_string(b.column) + ": TOML syntax: " + std::string(e.description()));
  }
  ServerConfig cfg;
  Reader reader(source_name);
  read_all(root, reader, cfg);
  if (reader.failed()) {
    return make_error(reader.error());
  }
  if (const auto p = check_config(cfg)) {
    const auto* node = find_node(root, p->key);
    std::string loc = std::string(source_name) + ": ";
    if (node) {
      loc = reader.location(node->source());
    }
    return make_error(loc + p->key + ": " + p->message);
  }
  return cfg;
}

std::vector<std::string> accepted_config_keys() {
  // Every section is read once per mode, empty: section() lists its keys whatever the table holds.
  std::vector<std::string> keys;
  for (const std::string_view text :
       {std::string_view("[server]\n[blocks]\n[control.adaptive]\n[control.capacity]\n[discard]\n"),
        std::string_view("[server]\nmode = \"ddl\"\n[ddl]\n")}) {
    const toml::table root = toml::parse(text, std::string_view("<keys>"));
    ServerConfig cfg;
    Reader reader("<keys>");
    reader.list_keys_into(&keys);
    read_all(root, reader, cfg);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

core::Result<ServerConfig> load_config_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return make_error(path.string() + ": cannot open the file");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > (1u << 20)) {
    return make_error(path.string() + ": larger than 1 MiB");
  }
  return parse_config(text.str(), path.string());
}

std::string_view to_string(ServerMode mode) {
  return name_of(kModes, mode);
}
std::string_view srtp_name(const std::optional<wire::SrtpSuite>& suite) {
  return name_of(kSuites, suite);
}
std::string_view to_string(Pacing pacing) {
  return name_of(kPacings, pacing);
}
std::string_view to_string(core::MissingReportAction action) {
  return name_of(kMissingActions, action);
}
std::string_view to_string(MissingChunkFill fill) {
  return name_of(kFills, fill);
}

}  // namespace predrop::config
