#!/usr/bin/env bash
# Measures what logs and traces cost `sluice serve`: its CPU time per event
# at one sustained rate, under configurations run interleaved, round after
# round, on the same Kafka, ClickHouse and Jaeger (scripts/services,
# scripts/jaeger). The load comes from `loadtest gen`, a process of its own;
# the CPU counted is the serve process's alone (/proc/PID/stat, user+system),
# from before the first event to after the last one is stored.
#
#   cmd/sluice/testdata/observe-cost.sh [RATE [SECONDS [ROUNDS]]]   # default 5000 20 3
#
# Configurations: before (a binary built from $SLUICE_BEFORE, a commit
# without logs and traces, if set), off (this tree, no --otlp), 1% and
# 100% (--otlp to Jaeger with --trace-sample 0.01 and 1). Prints one line
# per run and, per configuration, the median µs of CPU per event.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
rate=${1:-5000}
secs=${2:-20}
rounds=${3:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

eval "$("$root/scripts/services" start)"
eval "$("$root/scripts/jaeger" start)"
(cd "$root" && go build -o "$work/sluice" ./cmd/sluice && go build -o "$work/loadtest" ./bench/cmd/loadtest)
configs="off 1% 100%"
if [ -n "${SLUICE_BEFORE:-}" ]; then
  mkdir "$work/before"
  git -C "$root" archive "$SLUICE_BEFORE" | tar -x -C "$work/before"
  (cd "$work/before" && go build -o "$work/sluice-before" ./cmd/sluice)
  configs="before $configs"
fi

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

run() { # config round
  local cfg=$1 name="cost$2x${RANDOM}" bin=$work/sluice args=()
  case $cfg in
  before) bin=$work/sluice-before ;;
  1%) args=(--otlp "$JAEGER_OTLP" --trace-sample 0.01) ;;
  100%) args=(--otlp "$JAEGER_OTLP" --trace-sample 1) ;;
  esac
  "$bin" serve --kafka "$KAFKA_BROKERS" --clickhouse "$CLICKHOUSE_ADDR" --name "$name" --partitions 4 \
    "${args[@]}" >"$work/serve.out" 2>"$work/serve.err" &
  local pid=$!
  until grep -q '^serving:' "$work/serve.out"; do sleep 0.2; done
  sleep 8 # the group's first join
  local t0
  t0=$(cpu_ticks $pid)
  "$work/loadtest" gen --kafka "$KAFKA_BROKERS" --topic "$name-market" --rate "$rate" --duration "${secs}s" --quiet >"$work/gen.out" 2>&1
  local n
  n=$(sed -n 's/.*acknowledged \([0-9]*\).*/\1/p' "$work/gen.out" | tail -1)
  sleep 3 # the last batches stored
  local t1
  t1=$(cpu_ticks $pid)
  kill -TERM $pid
  wait $pid || true
  local lines
  lines=$(wc -l <"$work/serve.err")
  awk -v c="$cfg" -v r="$2" -v t="$((t1 - t0))" -v hz="$hz" -v n="$n" -v l="$lines" \
    'BEGIN { printf "%-7s round %d: %d events, %.2f s CPU, %.2f µs/event, %d log lines\n", c, r, n, t/hz, t/hz/n*1e6, l }' |
    tee -a "$work/results"
}

for r in $(seq "$rounds"); do
  for cfg in $configs; do
    run "$cfg" "$r"
  done
done
echo "median µs of CPU per event at $rate events/s for ${secs}s, $rounds rounds:"
for cfg in $configs; do
  grep "^$cfg " "$work/results" | sed 's/.*, \([0-9.]*\) µs\/event.*/\1/' | sort -n |
    awk -v c="$cfg" '{ v[NR] = $1 } END { printf "  %-7s %.2f\n", c, v[int((NR + 1) / 2)] }'
done
