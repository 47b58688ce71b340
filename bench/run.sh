#!/usr/bin/env bash
# `npm run bench`: starts a real Kafka broker (unless KAFKA_BROKERS is set or SVC_SKIP_KAFKA=1) for the log, pipeline,
# payments and engine benchmarks (bench/index.ts), stops it, then runs the serving benchmark (bench/serving-report.ts)
# with nothing else on the two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
# The same young-generation size as `npm start` (docs/decisions.md), so the serving figures are what it serves.
NODE_FLAGS=(--max-semi-space-size=32 --import tsx)
export LOG_LEVEL="${LOG_LEVEL:-warn}"
KAFKA_STATE_DIR=""
stop_broker() {
  if [ -n "$KAFKA_STATE_DIR" ]; then
    bash scripts/kafka-broker.sh purge "$KAFKA_STATE_DIR"
    rm -rf "$KAFKA_STATE_DIR"
    KAFKA_STATE_DIR=""
  fi
}
trap stop_broker EXIT
if [ -z "${KAFKA_BROKERS:-}" ] && [ "${SVC_SKIP_KAFKA:-}" != "1" ]; then
  bash scripts/kafka-broker.sh fetch
  KAFKA_STATE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/svc-kafka-bench.XXXXXX")"
  KAFKA_BROKERS="$(bash scripts/kafka-broker.sh start "$KAFKA_STATE_DIR" | sed -n 's/^KAFKA_BROKERS=//p')"
  export KAFKA_BROKERS
fi
node "${NODE_FLAGS[@]}" bench/index.ts
stop_broker
node "${NODE_FLAGS[@]}" bench/serving-report.ts
# Part 3 (issue 31): restart time and RSS at 35 and 365 days of simulated history with a million calls, restored from
# state snapshots vs a full rebuild of the same folder. Long (the 365-day history is generated first); BENCH_SKIP_RESTART=1
# leaves it out.
if [ "${BENCH_SKIP_RESTART:-}" != "1" ]; then
  node "${NODE_FLAGS[@]}" bench/restart.ts
fi
# Part 4 (issue 32): free reads and paid calls (credits, 60 payers) through one port at 1, 2 and 3 instances on one
# broker (SVC_CLUSTER=on), each pinned to a core; starts and purges its own broker. BENCH_SKIP_CLUSTER=1 leaves it out.
if [ "${BENCH_SKIP_CLUSTER:-}" != "1" ]; then
  node "${NODE_FLAGS[@]}" bench/cluster.ts
fi
