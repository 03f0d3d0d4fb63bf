// [server.streams]: each stream is name = "path" (a file) or a table for a published or a
// pulled stream (docs/live.md).
#include <algorithm>
#include <cctype>

#include "config_reader.hpp"

namespace predrop::config::detail {

void read_streams(Reader& r, const toml::node& n, std::vector<StreamEntry>& out) {
  const auto* t = n.as_table();
  if (!t) {
    return r.fail_type(n, "server.streams", "a table of name = \"path\"");
  }
  for (const auto& [name, path] : *t) {
    const std::string key = "server.streams." + std::string(name.str());
    if (!is_stream_name(name.str())) {
      return r.fail(name.source(), key_text(key),
                    "stream names use letters, digits, '.', '_' and '-' (1..64 bytes)");
    }
    if (const auto* live = path.as_table()) {
      // [server.streams.<name>]: a published or pulled stream (docs/live.md).
      StreamEntry e;
      e.name = std::string(name.str());
      bool has_source = false;
      bool has_secret = false;
      bool has_publish_key = false;
      bool has_pull = false;
      r.section(
          *live, key,
          {{"source",
            [&](const toml::node& v) {
              const auto s = r.string(v);
              if (!s) return;
              const bool url = s->starts_with("rtsp://") && s->size() > 7 &&
                               s->find_first_of(" \t\r\n") == std::string::npos;
              if (*s != "publish" && !url) {
                return r.fail(v.source(), r.current(),
                              "must be \"publish\" or an rtsp://host:port/path URL to "
                              "pull (a file is " +
                                  key + " = \"path\"), got " + core::text::quote_for_error(*s));
              }
              if (url) e.pull_url = *s;
              has_source = true;
            }},
           {"publish_secret",
            [&](const toml::node& v) {
              const auto s = r.string(v);
              if (!s) return;
              const bool url_safe = std::all_of(s->begin(), s->end(), [](char ch) {
                return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '-' ||
                       ch == '_' || ch == '.' || ch == '~';
              });
              if (s->size() < kMinPublishSecret || !url_safe) {
                return r.fail(v.source(), r.current(),
                              "must be at least " + std::to_string(kMinPublishSecret) +
                                  " characters of A-Z a-z 0-9 - _ . ~ (it goes in "
                                  "the publisher's URL unescaped)");
              }
              e.publish_secret = *s;
              has_secret = true;
            }},
           {"replace",
            [&](const toml::node& v) {
              if (const auto b = r.boolean(v)) e.replace = *b;
              has_publish_key = true;
            }},
           {"edges",
            [&](const toml::node& v) {
              // An origin's edges (docs/edge.md): viewers' DESCRIBEs go there.
              const auto* a = v.as_array();
              if (!a || a->empty() || a->size() > kMaxEdges) {
                return r.fail_type(v, r.current(),
                                   "an array of 1.." + std::to_string(kMaxEdges) + " rtsp:// URLs");
              }
              for (const auto& item : *a) {
                const auto* u = item.as_string();
                if (!u || !u->get().starts_with("rtsp://") || u->get().size() <= 7 ||
                    u->get().find_first_of(" \t\r\n") != std::string::npos) {
                  return r.fail(item.source(), r.current(),
                                "each edge is an rtsp://host:port/path URL");
                }
                e.edges.push_back(u->get());
              }
            }},
           {"pull", [&](const toml::node& v) {
              const auto s = r.string(v);
              if (!s) return;
              if (*s != "always" && *s != "on-demand") {
                return r.fail(
                    v.source(), r.current(),
                    "must be \"always\" or \"on-demand\", got " + core::text::quote_for_error(*s));
              }
              e.pull_always = *s == "always";
              has_pull = true;
            }}});
      if (r.failed()) return;
      if (!has_source) {
        return r.fail(path.source(), key_text(key),
                      "a stream table needs source = \"publish\" or source = \"rtsp://...\"");
      }
      if (!e.pull_url.empty()) {
        // A pulled stream (docs/live.md "Pull"): nobody publishes it.
        if (has_secret || has_publish_key) {
          return r.fail(path.source(), key_text(key),
                        "a pulled stream (source = \"rtsp://...\") takes no publish_secret or "
                        "replace");
        }
        out.push_back(std::move(e));
        continue;
      }
      if (has_pull) {
        return r.fail(path.source(), key_text(key),
                      "pull is for a pulled stream (source = \"rtsp://...\")");
      }
      if (!has_secret) {
        return r.fail(path.source(), key_text(key),
                      "a published stream needs publish_secret (viewers need none)");
      }
      e.publish = true;
      out.push_back(std::move(e));
      continue;
    }
    const auto* p = path.as_string();
    if (!p) {
      return r.fail_type(path, key, "a string (file path) or a table (source = \"publish\")");
    }
    if (p->get().empty()) {
      return r.fail(path.source(), key, "path is empty");
    }
    out.push_back({std::string(name.str()), p->get()});
  }
}

}  // namespace predrop::config::detail
