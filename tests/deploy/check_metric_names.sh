#!/usr/bin/env bash
# Every metric the Grafana dashboard (deploy/grafana/predrop.json) and the alert rules
# (deploy/prometheus/alerts.yml) name is one predrop-server exports: a server streams the sample
# to the measuring client (so the per-session series exist), its /metrics is scraped, and each
# predrop_* name in the two files must be in the scrape. Also: the dashboard is valid JSON.
#   check_metric_names.sh SOURCE_DIR SERVER_BINARY CLIENT_BINARY SAMPLE WORKDIR
set -euo pipefail
src="$1"
# shellcheck disable=SC2034  # read by lib.sh start_server
server="$2"
client="$3"
sample="$4"
work="$5"
dashboard="$src/deploy/grafana/predrop.json"
rules="$src/deploy/prometheus/alerts.yml"
mkdir -p "$work"
cd "$work"
rm -f server.log client.log metrics.txt exported.txt referenced.txt trace.csv

python3 -m json.tool "$dashboard" >/dev/null || { echo "$dashboard is not valid JSON"; exit 1; }

# shellcheck source=../integration/lib.sh
source "$src/tests/integration/lib.sh"
rtsp_port=$(pick_port)
metrics_port=$(pick_port)
client_pid=""
cleanup() {
  if [[ -n "$client_pid" ]]; then
    kill "$client_pid" 2>/dev/null || true
    wait "$client_pid" 2>/dev/null || true
  fi
  stop_server
}
trap cleanup EXIT
# With a trace CSV, so that its counters are exported too.
start_server server.log --stream sample="$sample" --listen 127.0.0.1:"$rtsp_port" --loop \
  --metrics 127.0.0.1:"$metrics_port" --trace-csv trace.csv --log-level info
"$client" "rtsp://127.0.0.1:$rtsp_port/sample" --reference "$sample" -n 100000 \
  --log-level warn >client.log 2>&1 &
client_pid=$!

# Scrape until a session with a report is in it (every per-session series then exists).
for _ in $(seq 150); do
  curl -sf --max-time 5 "http://127.0.0.1:$metrics_port/metrics" >metrics.txt || true
  if grep -Eq '^predrop_session_reports_total\{[^}]*\} [1-9]' metrics.txt; then
    break
  fi
  sleep 0.1
done
grep -Eq '^predrop_session_reports_total\{[^}]*\} [1-9]' metrics.txt ||
  { echo "no reporting session in /metrics"; cat metrics.txt client.log; exit 1; }

# Names in the scrape: from # TYPE lines and from the samples themselves.
{
  awk '$1 == "#" && $2 == "TYPE" { print $3 }' metrics.txt
  grep -Eo '^[a-zA-Z_:][a-zA-Z0-9_:]*' metrics.txt
} | sort -u >exported.txt
grep -Eoh 'predrop_[a-z0-9_]+' "$dashboard" "$rules" | sort -u >referenced.txt
echo "$(wc -l <referenced.txt) metric names referenced, $(wc -l <exported.txt) exported"
missing=$(comm -23 referenced.txt exported.txt)
if [[ -n "$missing" ]]; then
  echo "referenced by deploy/ but not exported by predrop-server:"
  echo "$missing"
  exit 1
fi
echo "every metric the dashboard and the alert rules name is exported"
