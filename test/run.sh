#!/usr/bin/env bash
# The test command: typecheck, then every tap test. (The Kafka broker lifecycle is added by the backbone work.)
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -p tsconfig.json
NODE_ENV=test npx tap "$@"
