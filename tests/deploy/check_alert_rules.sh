#!/usr/bin/env bash
# deploy/prometheus/alerts.yml is valid (promtool check rules) and its alerts fire as its unit
# tests say (promtool test rules alerts_test.yml). Exits 77 (ctest skip) without promtool
# (Debian: apt-get install prometheus).
#   check_alert_rules.sh SOURCE_DIR
set -euo pipefail
src="$1"
promtool="${PROMTOOL:-$(command -v promtool || true)}"
if [[ -z "$promtool" ]]; then
  echo "SKIP: no promtool (Debian: apt-get install prometheus)"
  exit 77
fi
"$promtool" check rules "$src/deploy/prometheus/alerts.yml"
"$promtool" test rules "$src/deploy/prometheus/alerts_test.yml"
