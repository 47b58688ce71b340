#!/usr/bin/env bash
# The test command: typecheck, start a real single-node Kafka broker (unless KAFKA_BROKERS is already set), run every
# tap test with KAFKA_BROKERS exported, and always stop the broker.
#   KAFKA_BROKERS=host:port  use that broker; nothing is started
#   TAP_JOBS=n               test files run in parallel (default 2: tap's own default leaves one CPU free, which on a
#                            2-core machine runs every file serially while most of them wait on fsync, sockets and
#                            child processes)
#   SVC_SKIP_KAFKA=1         start no broker; Kafka tests skip with a message (never allowed under CI=true:
#                            test/helpers/logs.ts fails them instead)
# tap loads each test file's TypeScript through tsx (package.json "tap": the @tapjs/typescript plugin off, node-arg
# --import=tsx), as bin/svc.js and the benches do: ts-node's per-file start-up cost about 5 s of CPU per file
# (test/serving/routeWalker.test.ts: 11.9 s wall, 10.5 s user under ts-node; 8.6 s, 5.7 s under tsx), and tsc above
# is the one type check.
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -p tsconfig.json

if [ -z "${KAFKA_BROKERS:-}" ] && [ "${SVC_SKIP_KAFKA:-}" != "1" ]; then
  bash scripts/kafka-broker.sh fetch
  # A state dir per run, so engineers (and CI jobs) sharing a checkout each get their own broker.
  KAFKA_STATE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/svc-kafka-state.XXXXXX")"
  trap 'bash scripts/kafka-broker.sh purge "$KAFKA_STATE_DIR"; rm -rf "$KAFKA_STATE_DIR"' EXIT
  trap 'exit 130' INT TERM
  KAFKA_BROKERS="$(bash scripts/kafka-broker.sh start "$KAFKA_STATE_DIR" | sed -n 's/^KAFKA_BROKERS=//p')"
  [ -n "$KAFKA_BROKERS" ] || { echo "test/run.sh: the Kafka broker did not start" >&2; exit 1; }
  export KAFKA_BROKERS
fi

# tap rebuilds its plugin set on the first run after the "plugin" config changed (a fresh clone's node_modules hold
# the default set, @tapjs/typescript in it), but that run still loads the old set's loaders: a fresh clone's first
# `npm test` ran every file through ts-node and tsx both. So the set is built first when it is not the configured one.
TAP_BUILT=node_modules/@tapjs/test/test-built/dist/esm/index.js
if [ ! -f "$TAP_BUILT" ] || grep -q '@tapjs/typescript' "$TAP_BUILT"; then npx tap build >/dev/null; fi

# A folder given (`npm test -- test/product/arena`) runs the .test.ts files under it: tap itself takes a folder's .ts
# files for tests only with @tapjs/typescript loaded, which is off (above).
args=()
for a in "$@"; do
  if [ -d "$a" ]; then
    while IFS= read -r f; do args+=("$f"); done < <(find "$a" -name '*.test.ts' | sort)
  else
    args+=("$a")
  fi
done
set -- ${args[@]+"${args[@]}"}

# Off a terminal (CI), the whole TAP stream is also kept, and the failures are printed again at the end: a CI log
# is often read from its tail only, and 35,000 passing checks would otherwise hide the one that failed.
if [ -t 1 ]; then
  NODE_ENV=test npx tap --jobs="${TAP_JOBS:-2}" "$@"
else
  TAP_OUT="$(mktemp "${TMPDIR:-/tmp}/svc-tap-out.XXXXXX")"
  status=0
  NODE_ENV=test npx tap --jobs="${TAP_JOBS:-2}" "$@" | tee "$TAP_OUT" || status=$?
  bash test/failures.sh "$TAP_OUT"
  rm -f "$TAP_OUT"
  exit "$status"
fi
