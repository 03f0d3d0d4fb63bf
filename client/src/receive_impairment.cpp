// The client's receive-side impairments; see receive_impairment.hpp. parse_impairment (declared
// in measuring_client.hpp with ClientOptions) reads their text form.
#include "receive_impairment.hpp"

#include <charconv>
#include <cmath>
#include <exception>
#include <string>

namespace predrop::client {

core::Result<Impairment> parse_impairment(std::string_view text) {
  Impairment imp;
  const auto colon = text.find(':');
  auto bad = [&] {
    return core::make_error("impairment '" + std::string(text) +
                            "': want STAGE:drop=F[,stretch=MS]");
  };
  if (colon == std::string_view::npos) return bad();
  auto [p, ec] = std::from_chars(text.data(), text.data() + colon, imp.stage);
  if (ec != std::errc() || p != text.data() + colon) return bad();
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) return bad();
    const std::string_view key = item.substr(0, eq);
    const std::string value(item.substr(eq + 1));
    try {
      if (key == "drop") {
        imp.drop_fraction = std::stod(value);
        if (!(imp.drop_fraction >= 0 && imp.drop_fraction <= 1)) return bad();
      } else if (key == "stretch") {
        imp.stretch_ms = static_cast<std::uint32_t>(std::stoul(value));
      } else {
        return bad();
      }
    } catch (const std::exception&) {
      return bad();
    }
  }
  return imp;
}

bool ReceiveImpairment::apply(const wire::RtpPacketView& v, std::uint64_t& arrival) {
  if (!v.stage) return true;
  for (const auto& imp : impairments_) {
    if (imp.stage != v.stage->stage_id) continue;
    if (imp.drop_fraction > 0) {
      // Deterministic: drop packet i when floor((i+1)f) > floor(i f).
      const std::uint64_t i = counter_++;
      if (std::floor((i + 1) * imp.drop_fraction) > std::floor(i * imp.drop_fraction)) {
        return false;
      }
    }
    if (imp.stretch_ms > 0 && v.stage->index >= v.stage->count / 2) {
      arrival += static_cast<std::uint64_t>(imp.stretch_ms) * 1000;
    }
  }
  return true;
}

}  // namespace predrop::client
