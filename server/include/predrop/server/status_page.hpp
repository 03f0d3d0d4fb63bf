#pragma once
// The status page (issue 25, docs/control-api.md "The status page"): one HTML file with its
// script, server/status/status.html, embedded in the binary at build time and served at `/` and
// `/status` on the HTTP listener of /metrics. Everything it shows it reads from the JSON control
// API in the browser, so this unit only answers the page's own paths.
// Pure; never throws.
#include <optional>

#include "predrop/server/metrics_endpoint.hpp"

namespace predrop::server {

/// The page for GET or HEAD of `/` or `/status` (a query and a trailing slash are ignored);
/// nullopt for any other request, which the endpoint then serves as before (metrics).
std::optional<HttpReply> serve_status_page(const HttpRequest& request);

}  // namespace predrop::server
