#!/usr/bin/env bash
# `npm run bench`: starts a real Kafka broker (unless KAFKA_BROKERS is set or SVC_SKIP_KAFKA=1), runs every bench.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${KAFKA_BROKERS:-}" ] && [ "${SVC_SKIP_KAFKA:-}" != "1" ]; then
  bash scripts/kafka-broker.sh fetch
  KAFKA_STATE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/svc-kafka-bench.XXXXXX")"
  trap 'bash scripts/kafka-broker.sh stop "$KAFKA_STATE_DIR"; rm -rf "$KAFKA_STATE_DIR"' EXIT
  KAFKA_BROKERS="$(bash scripts/kafka-broker.sh start "$KAFKA_STATE_DIR" | sed -n 's/^KAFKA_BROKERS=//p')"
  export KAFKA_BROKERS
fi
# The same young-generation size as `npm start` (docs/decisions.md), so the serving figures are what it serves.
LOG_LEVEL="${LOG_LEVEL:-warn}" node --max-semi-space-size=32 --import tsx bench/index.ts
