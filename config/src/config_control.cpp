// [control] with [control.adaptive] and [control.capacity]: the rate policy and its parameters
// (docs/design.md §2.2); config_policy.cpp maps them onto core::PolicyConfig.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "config_reader.hpp"
#include "predrop/core/capacity_params.hpp"

namespace predrop::config::detail {

namespace {
/// control.capacity.repaid_burst_bytes' and control.browser_repaid_burst_bytes' upper bound.
constexpr auto kMaxRepaidBurstBytes =
    static_cast<std::uint32_t>(core::CapacityParams::kMaxBurstBytes);
}  // namespace

void read_control(Reader& r, const toml::table& table, ControlConfig& c) {
  const auto rate_key = [&](double& field) {
    return [&r, &field](const toml::node& n) {
      const auto v = r.number(n);
      if (!v) {
        return;
      }
      if (*v < 0.0 || *v > 1.0) {
        return r.fail(n.source(), r.current(),
                      "must be a rate in [0, 1], got " + format_number(*v));
      }
      field = *v;
    };
  };
  const auto threshold_key = [&](ThresholdSetting& field, bool delay) {
    return [&r, &field, delay](const toml::node& n) {
      if (n.is_integer() || n.is_floating_point()) {
        const auto v = r.number(n);
        if (!v) {
          return;
        }
        if (*v < 0.0) {
          return r.fail(n.source(), r.current(), "must be >= 0");
        }
        field = ThresholdSetting{*v, false};
        return;
      }
      if (!n.is_string()) {
        return r.fail_type(n, r.current(),
                           delay ? "a number of µs or a string like \"5%\" or \"2ms\""
                                 : "a number or a string like \"5%\" or \"0.5dB\"");
      }
      const auto text = n.as_string()->get();
      auto t = delay ? parse_delay_threshold(text) : parse_performance_threshold(text);
      if (!t) {
        return r.fail(n.source(), r.current(), t.error().message);
      }
      field = *t;
    };
  };
  // A finite number within [lo, hi] for the capacity policy's keys (unit in the message).
  const auto number_key = [&](double& field, std::string key, double lo, double hi,
                              const char* unit) {
    return [&r, &field, key = std::move(key), lo, hi, unit](const toml::node& n) {
      const auto v = r.number(n);
      if (!v) {
        return;
      }
      if (!std::isfinite(*v) || *v < lo || *v > hi) {
        return r.fail(n.source(), key,
                      "must be in [" + format_number(lo) + ", " + format_number(hi) + "]" + unit +
                          ", got " + format_number(*v));
      }
      field = *v;
    };
  };
  // A capacity key of [control] before [control.capacity] existed: refused, naming its home.
  const auto moved_key = [&](std::string_view name) {
    return Key{name,
               [&r, name](const toml::node& n) {
                 r.fail(n.source(), "control." + std::string(name),
                        "moved to [control.capacity] (write it under that table; "
                        "configs/README.md)");
               },
               true};
  };
  const std::vector<Key> control_keys = {
      {"policy",
       [&](const toml::node& n) {
         const auto s = r.string(n);
         if (!s) {
           return;
         }
         if (std::find(kControlPolicies.begin(), kControlPolicies.end(), *s) ==
             kControlPolicies.end()) {
           return r.fail(
               n.source(), "control.policy",
               "must be " + one_of(kControlPolicies) + ", got " + core::text::quote_for_error(*s));
         }
         c.policy = *s;
       }},
      {"r0", rate_key(c.r0)},
      {"rp", rate_key(c.rp)},
      {"rp1", rate_key(c.rp1)},
      {"rp2", rate_key(c.rp2)},
      {"rmax", rate_key(c.rmax)},
      {"fixed_rate", rate_key(c.fixed_rate)},
      {"player_rate", rate_key(c.player_rate)},
      {"browser_start_rate", rate_key(c.browser_start_rate)},
      {"player_adaptation",
       [&](const toml::node& n) {
         const auto s = r.string(n);
         if (!s) {
           return;
         }
         if (std::find(kPlayerAdaptations.begin(), kPlayerAdaptations.end(), *s) ==
             kPlayerAdaptations.end()) {
           return r.fail(n.source(), "control.player_adaptation",
                         "must be " + one_of(kPlayerAdaptations) + ", got " +
                             core::text::quote_for_error(*s));
         }
         c.player_adaptation = *s;
       }},
      {"browser_policy",
       [&](const toml::node& n) {
         const auto s = r.string(n);
         if (!s) {
           return;
         }
         if (std::find(kBrowserPolicies.begin(), kBrowserPolicies.end(), *s) ==
             kBrowserPolicies.end()) {
           return r.fail(
               n.source(), "control.browser_policy",
               "must be " + one_of(kBrowserPolicies) + ", got " + core::text::quote_for_error(*s));
         }
         c.browser_policy = *s;
       }},
      {"t1", threshold_key(c.t1, false)},
      {"t2", threshold_key(c.t2, true)},
      {"adaptive",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "control.adaptive", "a table ([control.adaptive])");
         }
         AdaptiveTuning& a = c.adaptive;
         const std::vector<Key> keys = {
             {"loss_threshold",
              number_key(a.loss_threshold, "control.adaptive.loss_threshold", 0.0, 1.0, "")},
             {"clean_loss", number_key(a.clean_loss, "control.adaptive.clean_loss", 0.0, 1.0, "")},
             {"margin", number_key(a.margin, "control.adaptive.margin", 0.01, 1.0, "")},
             {"drain_margin",
              number_key(a.drain_margin, "control.adaptive.drain_margin", 0.01, 1.0, "")},
             {"queue_high_ms",
              number_key(a.queue_high_ms, "control.adaptive.queue_high_ms", 0.0, 10000.0, " ms")},
             {"queue_low_ms",
              number_key(a.queue_low_ms, "control.adaptive.queue_low_ms", 0.0, 10000.0, " ms")},
             {"stretch_min_ms",
              number_key(a.stretch_min_ms, "control.adaptive.stretch_min_ms", 0.0, 10000.0, " ms")},
             {"base_window",
              [&](const toml::node& v) { r.unsigned_into(v, a.base_window, 1, 1024); }},
             {"hold_stages",
              [&](const toml::node& v) { r.unsigned_into(v, a.hold_stages, 1, 1024); }},
             {"max_hold_stages",
              [&](const toml::node& v) { r.unsigned_into(v, a.max_hold_stages, 1, 1024); }},
             {"pulse_rate", rate_key(a.pulse_rate)},
             {"creep_step", rate_key(a.creep_step)},
             {"creep_queue_ms",
              number_key(a.creep_queue_ms, "control.adaptive.creep_queue_ms", 0.0, 10000.0, " ms")},
             {"quality_floor",
              number_key(a.quality_floor, "control.adaptive.quality_floor", -1e9, 1e9, "")},
         };
         r.section(*t, "control.adaptive", keys);
       }},
      {"k", [&](const toml::node& n) { r.unsigned_into(n, c.k, 1, 1024); }},
      {"missing_report",
       [&](const toml::node& n) { r.enumeration(n, kMissingActions, c.missing_report); }},
      {"browser_alert_ms",
       [&](const toml::node& n) { r.unsigned_into(n, c.browser_alert_ms, 0, 1000); }},
      {"browser_repaid_burst_bytes",
       [&](const toml::node& n) {
         r.unsigned_into(n, c.browser_repaid_burst_bytes, 0, kMaxRepaidBurstBytes);
       }},
      {"report_timeout_stages",
       [&](const toml::node& n) { r.unsigned_into(n, c.report_timeout_stages, 1, 1000); }},
      {"couple_prefix_v4",
       [&](const toml::node& n) { r.unsigned_into(n, c.couple_prefix_v4, 0, 32); }},
      {"couple_prefix_v6",
       [&](const toml::node& n) { r.unsigned_into(n, c.couple_prefix_v6, 0, 128); }},
      {"psnr_cap_db",
       [&](const toml::node& n) {
         const auto v = r.number(n);
         if (!v) {
           return;
         }
         if (*v <= 0.0 || *v > 200.0) {
           return r.fail(n.source(), "control.psnr_cap_db",
                         "must be in (0, 200] dB, got " + format_number(*v));
         }
         c.psnr_cap_db = *v;
       }},
      {"capacity",
       [&](const toml::node& n) {
         const auto* t = n.as_table();
         if (!t) {
           return r.fail_type(n, "control.capacity", "a table ([control.capacity])");
         }
         CapacityTuning& a = c.capacity;
         const std::vector<Key> keys = {
             {"margin", number_key(a.margin, "control.capacity.margin", 0.01, 1.0, "")},
             {"queue_target_ms",
              number_key(a.queue_target_ms, "control.capacity.queue_target_ms", 0.0, 60.0, " ms")},
             {"increase_step",
              number_key(a.increase_step, "control.capacity.increase_step", 0.0, 1.0, "")},
             {"probe_gain", number_key(a.probe_gain, "control.capacity.probe_gain", 1.0, 4.0, "")},
             {"pacing_gain",
              number_key(a.pacing_gain, "control.capacity.pacing_gain", 0.0, 10.0, "")},
             {"quality_floor",
              number_key(a.quality_floor, "control.capacity.quality_floor", -1e9, 1e9, "")},
             {"repaid_burst_bytes",
              number_key(a.repaid_burst_bytes, "control.capacity.repaid_burst_bytes", 0.0,
                         core::CapacityParams::kMaxBurstBytes, " bytes")},
             {"loss_threshold",
              number_key(a.loss_threshold, "control.capacity.loss_threshold", 0.0, 1.0, "")},
             {"decrease_factor",
              number_key(a.decrease_factor, "control.capacity.decrease_factor", 0.5, 1.0, "")},
             {"compete_blocks",
              [&](const toml::node& v) { r.unsigned_into(v, a.compete_blocks, 1, 1000); }},
             {"compete_loss_high",
              number_key(a.compete_loss_high, "control.capacity.compete_loss_high", 0.0, 1.0, "")},
             {"compete_loss_low",
              number_key(a.compete_loss_low, "control.capacity.compete_loss_low", 0.0, 1.0, "")},
             {"compete_gain",
              number_key(a.compete_gain, "control.capacity.compete_gain", 1.0, 2.0, "")},
             {"missing_backoff",
              number_key(a.missing_backoff, "control.capacity.missing_backoff", 0.01, 1.0, "")},
         };
         r.section(*t, "control.capacity", keys);
       }},
      // Removed with the capacity policy's redesign (issue 21) or moved to [control.capacity]
      // (issue 25): say so instead of "unknown key".
      {"probe_step_ms",
       [&](const toml::node& n) {
         r.fail(n.source(), "control.probe_step_ms",
                "was removed: the capacity policy now probes by control.capacity.increase_step "
                "and control.capacity.probe_gain (configs/README.md)");
       },
       true},
      {"probe_max_ms",
       [&](const toml::node& n) {
         r.fail(n.source(), "control.probe_max_ms",
                "was removed: the capacity policy now probes by control.capacity.increase_step "
                "and control.capacity.probe_gain (configs/README.md)");
       },
       true},
      moved_key("margin"),
      moved_key("queue_target_ms"),
      moved_key("increase_step"),
      moved_key("probe_gain"),
      moved_key("pacing_gain"),
      moved_key("quality_floor"),
  };
  r.section(table, "control", control_keys);
}

void check_control(const ControlConfig& k, Problems& problems) {
  if (std::find(kControlPolicies.begin(), kControlPolicies.end(), k.policy) ==
      kControlPolicies.end()) {
    problems.add(Problem{"control.policy", "must be " + one_of(kControlPolicies) + ", got " +
                                               core::text::quote_for_error(k.policy)});
  }
  problems.add(rate_problem("control.r0", k.r0));
  problems.add(rate_problem("control.rp", k.rp));
  problems.add(rate_problem("control.rp1", k.rp1));
  problems.add(rate_problem("control.rp2", k.rp2));
  problems.add(rate_problem("control.rmax", k.rmax));
  problems.add(rate_problem("control.fixed_rate", k.fixed_rate));
  problems.add(rate_problem("control.player_rate", k.player_rate));
  problems.add(rate_problem("control.browser_start_rate", k.browser_start_rate));
  if (std::find(kPlayerAdaptations.begin(), kPlayerAdaptations.end(), k.player_adaptation) ==
      kPlayerAdaptations.end()) {
    problems.add(
        Problem{"control.player_adaptation", "must be " + one_of(kPlayerAdaptations) + ", got " +
                                                 core::text::quote_for_error(k.player_adaptation)});
  }
  if (std::find(kBrowserPolicies.begin(), kBrowserPolicies.end(), k.browser_policy) ==
      kBrowserPolicies.end()) {
    problems.add(
        Problem{"control.browser_policy", "must be " + one_of(kBrowserPolicies) + ", got " +
                                              core::text::quote_for_error(k.browser_policy)});
  }
  if (!problems.any() && k.rmax < k.rp) {
    problems.add(Problem{"control.rmax", "must be >= control.rp (" + format_number(k.rmax) + " < " +
                                             format_number(k.rp) + ")"});
  }
  if (!problems.any() && k.rmax < k.r0) {
    problems.add(Problem{"control.rmax", "must be >= control.r0 (" + format_number(k.rmax) + " < " +
                                             format_number(k.r0) + ")"});
  }
  problems.add(range_problem("control.k", k.k, 1, 1024));
  if (!problems.any() && k.policy == "basic" && k.k != 1) {
    problems.add(Problem{"control.k",
                         "policy \"basic\" is the k = 1 rule; use policy = \"history\" for k = " +
                             std::to_string(k.k)});
  }
  const auto threshold = [&](const std::string& key, const ThresholdSetting& t) {
    if (!std::isfinite(t.value) || t.value < 0.0) {
      problems.add(Problem{key, "must be >= 0, got " + format_number(t.value)});
    } else if (t.relative && t.value > 10.0) {
      problems.add(Problem{key, "relative threshold above 1000 %"});
    }
  };
  // "<key> must be <= <bound_key> (v > bound)" for two keys whose order is fixed.
  const auto at_most = [&](const char* key, auto v, const char* bound_key, auto bound) {
    const auto text = [](auto x) {
      if constexpr (std::is_integral_v<decltype(x)>) {
        return std::to_string(x);
      } else {
        return format_number(x);
      }
    };
    if (v > bound) {
      problems.add(Problem{key, "must be <= " + std::string(bound_key) + " (" + text(v) + " > " +
                                    text(bound) + ")"});
    }
  };
  const AdaptiveTuning& a = k.adaptive;
  at_most("control.adaptive.clean_loss", a.clean_loss, "control.adaptive.loss_threshold",
          a.loss_threshold);
  at_most("control.adaptive.queue_low_ms", a.queue_low_ms, "control.adaptive.queue_high_ms",
          a.queue_high_ms);
  at_most("control.adaptive.creep_queue_ms", a.creep_queue_ms, "control.adaptive.queue_low_ms",
          a.queue_low_ms);
  at_most("control.adaptive.hold_stages", a.hold_stages, "control.adaptive.max_hold_stages",
          a.max_hold_stages);
  if (k.policy == "adaptive") {
    at_most("control.adaptive.pulse_rate", a.pulse_rate, "control.rmax", k.rmax);
  }
  threshold("control.t1", k.t1);
  threshold("control.t2", k.t2);
  problems.add(range_problem("control.browser_alert_ms", k.browser_alert_ms, 0, 1000));
  problems.add(range_problem("control.browser_repaid_burst_bytes", k.browser_repaid_burst_bytes, 0,
                             kMaxRepaidBurstBytes));
  problems.add(range_problem("control.report_timeout_stages", k.report_timeout_stages, 1, 1000));
  problems.add(range_problem("control.couple_prefix_v4", k.couple_prefix_v4, 0, 32));
  problems.add(range_problem("control.couple_prefix_v6", k.couple_prefix_v6, 0, 128));
  // "<key> must be in <range>, got v" unless v is finite and `ok`.
  const auto within = [&](const char* key, double v, bool ok, const char* range) {
    if (!(std::isfinite(v) && ok)) {
      problems.add(Problem{key, "must be in " + std::string(range) + ", got " + format_number(v)});
    }
  };
  within("control.psnr_cap_db", k.psnr_cap_db, k.psnr_cap_db > 0.0 && k.psnr_cap_db <= 200.0,
         "(0, 200] dB");
  const CapacityTuning& c = k.capacity;
  within("control.capacity.margin", c.margin, c.margin > 0.0 && c.margin <= 1.0, "(0, 1]");
  within("control.capacity.queue_target_ms", c.queue_target_ms,
         c.queue_target_ms >= 0.0 && c.queue_target_ms <= 60.0, "[0, 60] ms");
  within("control.capacity.increase_step", c.increase_step,
         c.increase_step > 0.0 && c.increase_step <= 1.0, "(0, 1]");
  within("control.capacity.probe_gain", c.probe_gain, c.probe_gain > 1.0 && c.probe_gain <= 4.0,
         "(1, 4]");
  if (!(std::isfinite(k.capacity.pacing_gain) &&
        (k.capacity.pacing_gain == 0.0 ||
         (k.capacity.pacing_gain >= 1.0 && k.capacity.pacing_gain <= 10.0)))) {
    problems.add(Problem{
        "control.capacity.pacing_gain",
        "must be 0 (no pacing limit) or in [1, 10], got " + format_number(k.capacity.pacing_gain)});
  }
  if (std::isnan(k.capacity.quality_floor)) {
    problems.add(Problem{"control.capacity.quality_floor", "must be a number"});
  }
  {
    const CapacityTuning& t = k.capacity;
    const auto in = [&](const char* key, double v, double lo, double hi) {
      if (!(std::isfinite(v) && v >= lo && v <= hi)) {
        problems.add(Problem{std::string("control.capacity.") + key,
                             "must be in [" + format_number(lo) + ", " + format_number(hi) +
                                 "], got " + format_number(v)});
      }
    };
    in("loss_threshold", t.loss_threshold, 0.0, 1.0);
    in("decrease_factor", t.decrease_factor, 0.5, 1.0);
    problems.add(range_problem("control.capacity.compete_blocks", t.compete_blocks, 1, 1000));
    in("compete_loss_high", t.compete_loss_high, 0.0, 1.0);
    in("compete_loss_low", t.compete_loss_low, 0.0, t.compete_loss_high);
    in("compete_gain", t.compete_gain, 1.0, 2.0);
    in("missing_backoff", t.missing_backoff, 0.01, 1.0);
  }
}

}  // namespace predrop::config::detail
