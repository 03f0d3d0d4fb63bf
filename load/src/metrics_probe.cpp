// Scrapes of predrop-server's /metrics (predrop/load/metrics_probe.hpp).
#include "predrop/load/metrics_probe.hpp"

#include <utility>

#include "predrop/load/prometheus_text.hpp"

namespace predrop::load {

core::Result<MetricsSnapshot> read_metrics_reply(std::string_view reply, std::uint64_t at_us) {
  // "HTTP/1.x 200 <reason>", then the header block, a blank line and the scrape.
  std::string_view status_line = reply.substr(0, reply.find('\n'));
  if (status_line.ends_with('\r')) status_line.remove_suffix(1);
  const auto sp = status_line.find(' ');
  const std::string_view version = status_line.substr(0, sp);
  const std::string_view rest = sp == std::string_view::npos ? "" : status_line.substr(sp + 1);
  if (!version.starts_with("HTTP/1.") || rest.substr(0, rest.find(' ')) != "200") {
    return core::make_error("metrics reply");
  }
  std::size_t body = reply.find("\r\n\r\n");
  if (body != std::string_view::npos) {
    body += 4;
  } else if ((body = reply.find("\n\n")) != std::string_view::npos) {
    body += 2;
  } else {
    body = reply.size();  // headers only: an empty scrape
  }
  MetricsSnapshot m;
  m.fetched_us = at_us;
  double late_total = -1;  // predrop_late_blocks_total, counts ended sessions too
  for (const PrometheusSample& s : parse_prometheus_text(reply.substr(body)).samples) {
    const std::string session(s.label("session").value_or(""));
    if (s.name == "predrop_session_reports_total" && !session.empty()) {
      m.reports[session] = s.value;
    } else if (s.name == "predrop_session_packets_sent_total") {
      m.packets_sent += s.value;
      if (!session.empty()) m.sent[session] = s.value;
    } else if (s.name == "predrop_session_late_blocks_total") {
      m.late_blocks += s.value;
      m.late_known = true;
    } else if (s.name == "predrop_late_blocks_total") {
      late_total = s.value;
    }
  }
  if (late_total >= 0) {
    m.late_blocks = late_total;
    m.late_known = true;
  }
  return m;
}

MetricsProbe::MetricsProbe(net::EventLoop& loop, const net::Clock& clock,
                           net::SocketAddress address)
    : loop_(loop), clock_(clock), address_(address) {}

MetricsProbe::~MetricsProbe() = default;

bool MetricsProbe::fetch(OnSnapshot done) {
  if (conn_) return false;
  reply_.clear();
  done_ = std::move(done);
  auto c = net::TcpConnection::connect(loop_, address_, [this](const core::Status& st) {
    if (!st) {
      conn_.reset();  // destroying the connection inside its own callback is allowed
      auto cb = std::move(done_);
      cb(core::make_error("metrics connect"));
      return;
    }
    (void)conn_->start(
        [this](std::span<const std::uint8_t> d) {
          reply_.append(reinterpret_cast<const char*>(d.data()), d.size());
        },
        [this](const core::Status&) { on_done(); });
    (void)conn_->write("GET /metrics HTTP/1.0\r\nHost: predrop\r\n\r\n");
  });
  if (!c) {
    auto cb = std::move(done_);
    cb(core::make_error("metrics connect"));
    return true;
  }
  conn_ = std::move(c.value());
  return true;
}

void MetricsProbe::on_done() {
  // The server closes the connection after the reply.
  conn_.reset();
  auto cb = std::move(done_);
  cb(read_metrics_reply(reply_, clock_.now_us()));
}

}  // namespace predrop::load
