#!/usr/bin/env bash
# A real single-node Apache Kafka broker (KRaft, combined broker+controller) from Maven Central jars, no Docker.
# Notes and sources: ../shared/reference/kafka-broker.md.
#
#   scripts/kafka-broker.sh fetch              copy the broker jars into .ci/kafka/lib (idempotent)
#   scripts/kafka-broker.sh start [STATE_DIR]  start a broker; prints KAFKA_BROKERS=127.0.0.1:<port>. A STATE_DIR that
#                                              already holds a broker's data restarts that broker on its data and on
#                                              the same ports (so clients reconnect); a fresh one picks free ports
#   scripts/kafka-broker.sh stop  [STATE_DIR]  TERM, wait 30 s, KILL; keeps the broker's data (a later start resumes it)
#   scripts/kafka-broker.sh stop --purge [STATE_DIR]
#   scripts/kafka-broker.sh purge [STATE_DIR]  stop, then delete the broker's data
#   scripts/kafka-broker.sh add FIRST_STATE_DIR STATE_DIR
#                                              add a broker to the cluster of the one in FIRST_STATE_DIR (a broker-only
#                                              node: the first stays the cluster's controller); prints
#                                              KAFKA_BROKERS=<every broker of the cluster>. `start STATE_DIR` restarts it
#                                              on its data, `stop`/`purge STATE_DIR` as above (purge the added ones first)
#
# STATE_DIR (argument, else $KAFKA_STATE_DIR, else .ci/kafka/run) holds pid, data-dir, ports, brokers,
# server.properties and broker.log. Use a distinct STATE_DIR per concurrent broker. Only the KAFKA_BROKERS line goes
# to stdout.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
K="$ROOT/.ci/kafka"
START_TIMEOUT_S="${KAFKA_START_TIMEOUT_S:-120}"
JVM_OPTS=(-Xms256m -Xmx512m -XX:+UseSerialGC -Djava.awt.headless=true "-Dlog4j.configuration=file:$K/log4j.properties")

say() { echo "kafka-broker: $*" >&2; }

state_dir() {
  local dir="${1:-${KAFKA_STATE_DIR:-$K/run}}"
  mkdir -p "$dir"
  (cd "$dir" && pwd)
}

jars_present() {
  compgen -G "$K/lib/kafka_2.13-*.jar" >/dev/null && compgen -G "$K/lib/slf4j-reload4j-*.jar" >/dev/null
}

cmd_fetch() {
  if jars_present; then
    say "jars already in $K/lib ($(ls "$K/lib" | wc -l) files)"
    return 0
  fi
  say "fetching broker jars from Maven Central (first run downloads ~50 MB)"
  mvn -B -q -f "$K/pom.xml" dependency:copy-dependencies
  jars_present || { say "copy-dependencies finished but kafka_2.13 / slf4j-reload4j jars are missing in $K/lib"; exit 1; }
}

free_ports() {
  # Two distinct free ports, held open together so they differ.
  node -e '
    const net = require("node:net")
    const a = net.createServer().listen(0, "127.0.0.1", () => {
      const b = net.createServer().listen(0, "127.0.0.1", () => {
        console.log(a.address().port + " " + b.address().port)
        a.close(); b.close()
      })
    })'
}

# Succeeds when a kafkajs admin client can describe the cluster.
broker_answers() {
  (cd "$ROOT" && timeout 20 node -e '
    const { Kafka, logLevel } = require("kafkajs")
    const admin = new Kafka({ brokers: [process.argv[1]], logLevel: logLevel.NOTHING, retry: { retries: 0 }, connectionTimeout: 3000 }).admin()
    admin.connect()
      .then(() => admin.describeCluster())
      .then((c) => admin.disconnect().then(() => process.exit(c.brokers.length > 0 ? 0 : 1)))
      .catch(() => process.exit(1))' "$1") >/dev/null 2>&1
}

# True when STATE_DIR holds a formatted broker data dir and its ports: `start` then resumes that broker.
has_data() {
  local state="$1"
  [ -f "$state/data-dir" ] && [ -f "$state/ports" ] && [ -f "$(cat "$state/data-dir")/meta.properties" ]
}

# A broker-only node of an existing cluster (`add`): its STATE_DIR's join file holds the first broker's state dir.
# Echoes "<node id> <controller port> <cluster id> <first's KAFKA_BROKERS>".
join_of() {
  local join="$1" jport jcport node
  read -r jport jcport <"$join/ports"
  node=$(($(cat "$join/nodes" 2>/dev/null || echo 1) + 1))
  echo "$node" >"$join/nodes"
  echo "$node $jcport $(sed -n 's/^cluster.id=//p' "$(cat "$join/data-dir")/meta.properties") $(cat "$join/cluster-brokers" 2>/dev/null || cat "$join/brokers")"
}

start_once() {
  local state="$1" port cport data cluster_id pid deadline resumed=0 node=1 roles="broker,controller" joined=""
  if [ -f "$state/join" ]; then
    # An added broker: node id, the controller's port and the cluster id were fixed when it was added.
    read -r node cport cluster_id joined <"$state/join"
    roles="broker"
  fi
  if has_data "$state"; then
    # A restart: the same data and the same ports, so a client that kept the old address reconnects by itself.
    read -r port cport <"$state/ports"
    data="$(cat "$state/data-dir")"
    resumed=1
  else
    local fresh
    read -r port fresh < <(free_ports)
    [ -n "$joined" ] || cport="$fresh"
    data="$(mktemp -d "${TMPDIR:-/tmp}/svc-kafka-data.XXXXXX")"
    echo "$data" >"$state/data-dir"
    echo "$port $cport" >"$state/ports"
  fi
  # The controller (the first broker) listens on CONTROLLER too; an added broker-only node only reaches it there.
  local listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
  [ -n "$joined" ] && listeners="PLAINTEXT://127.0.0.1:$port"
  cat >"$state/server.properties" <<EOF
process.roles=$roles
node.id=$node
controller.quorum.voters=1@127.0.0.1:$cport
listeners=$listeners
advertised.listeners=$listeners
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
log.flush.interval.messages=9223372036854775807
# Retention is checked every second (default 5 min) so a topic created without retention.ms=-1 loses old
# records within a test run, not silently some minutes later (test/pipeline/log/kafkaRetention.test.ts).
log.retention.check.interval.ms=1000
EOF
  # 16 random bytes in base64url, as Kafka's own random-uuid, and like it never starting with '-': the format tool's
  # argument parser would read such an id as an option ("--cluster-id: expected one argument"; 1 start in 64 failed).
  [ -n "$joined" ] || cluster_id="$(node -e 'let id; do id = require("node:crypto").randomBytes(16).toString("base64url"); while (id.startsWith("-")); console.log(id)')"
  # A resumed data dir is formatted already, with its own cluster id (formatting it again under a new id fails).
  if [ "$resumed" -eq 0 ] && ! java "${JVM_OPTS[@]}" -cp "$K/lib/*" kafka.tools.StorageTool format -t "$cluster_id" -c "$state/server.properties" --ignore-formatted >"$state/format.log" 2>&1; then
    say "storage format failed:"
    cat "$state/format.log" >&2
    return 1
  fi
  java "${JVM_OPTS[@]}" -cp "$K/lib/*" kafka.Kafka "$state/server.properties" >"$state/broker.log" 2>&1 &
  pid=$!
  disown "$pid" 2>/dev/null || true
  echo "$pid" >"$state/pid"
  echo "127.0.0.1:$port" >"$state/brokers"
  if [ -n "$joined" ]; then echo "$joined,127.0.0.1:$port" >"$state/cluster-brokers"
  elif [ ! -f "$state/cluster-brokers" ]; then echo "127.0.0.1:$port" >"$state/cluster-brokers"; fi
  deadline=$((SECONDS + START_TIMEOUT_S))
  until grep -q 'Kafka Server started' "$state/broker.log" && broker_answers "127.0.0.1:$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      say "broker JVM (pid $pid) died during startup; log follows"
      cat "$state/broker.log" >&2
      rm -f "$state/pid"
      if grep -q 'Address already in use' "$state/broker.log"; then
        # A resumed broker keeps its ports (its clients know them); a fresh one may pick again.
        [ "$resumed" -eq 1 ] && { say "port $port or $cport of the stopped broker is taken by another process"; return 1; }
        rm -rf "$data"
        rm -f "$state/data-dir" "$state/ports"
        return 2
      fi
      [ "$resumed" -eq 1 ] || rm -rf "$data"
      return 1
    fi
    if ((SECONDS >= deadline)); then
      say "broker not ready after ${START_TIMEOUT_S}s; log follows"
      cat "$state/broker.log" >&2
      if [ "$resumed" -eq 1 ]; then cmd_stop "$state"; else cmd_purge "$state"; fi
      return 1
    fi
    sleep 1
  done
  if [ "$resumed" -eq 1 ]; then
    say "broker pid $pid resumed on 127.0.0.1:$port (data $data, log $state/broker.log)"
  else
    say "broker pid $pid ready on 127.0.0.1:$port (data $data, log $state/broker.log)"
  fi
  echo "KAFKA_BROKERS=$(cat "$state/cluster-brokers")"
}

cmd_start() {
  local state rc
  state="$(state_dir "${1:-}")"
  if [ -f "$state/pid" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null; then
    say "a broker (pid $(cat "$state/pid")) is already running for $state"
    echo "KAFKA_BROKERS=$(cat "$state/cluster-brokers" 2>/dev/null || cat "$state/brokers")"
    return 0
  fi
  jars_present || { say "no jars in $K/lib: run '$0 fetch' first"; exit 1; }
  for attempt in 1 2 3; do
    rc=0
    start_once "$state" || rc=$?
    [ "$rc" -eq 0 ] && return 0
    [ "$rc" -eq 2 ] || exit 1
    say "port taken between picking and binding; retrying (attempt $attempt)"
  done
  exit 1
}

cmd_add() {
  local first state
  [ -n "${1:-}" ] && [ -n "${2:-}" ] || { say "usage: $0 add FIRST_STATE_DIR STATE_DIR"; exit 64; }
  first="$(state_dir "$1")"
  state="$(state_dir "$2")"
  has_data "$first" && [ -f "$first/pid" ] && kill -0 "$(cat "$first/pid")" 2>/dev/null || { say "no running broker in $first to join"; exit 1; }
  [ -f "$first/join" ] && { say "$first is an added broker: add to the cluster's first broker"; exit 1; }
  if [ ! -f "$state/join" ]; then
    local joined
    joined="$(join_of "$first")"
    echo "$joined" >"$state/join"
  fi
  cmd_start "$state"
  # The first broker's KAFKA_BROKERS line names the whole cluster from now on.
  cp "$state/cluster-brokers" "$first/cluster-brokers"
}

cmd_stop() {
  local state pid
  state="$(state_dir "${1:-}")"
  if [ -f "$state/pid" ]; then
    pid="$(cat "$state/pid")"
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      timeout 30 tail --pid="$pid" -f /dev/null 2>/dev/null || true
      if kill -0 "$pid" 2>/dev/null; then
        say "broker pid $pid ignored TERM for 30 s; killing"
        kill -KILL "$pid" 2>/dev/null || true
      fi
    fi
    rm -f "$state/pid"
    say "broker pid $pid stopped (data kept; 'purge' deletes it)"
  fi
}

cmd_purge() {
  local state data
  state="$(state_dir "${1:-}")"
  cmd_stop "$state"
  if [ -f "$state/data-dir" ]; then
    data="$(cat "$state/data-dir")"
    [ -n "$data" ] && rm -rf "$data"
    say "broker data $data deleted"
  fi
  rm -f "$state/data-dir" "$state/ports" "$state/brokers" "$state/cluster-brokers" "$state/join" "$state/nodes"
}

case "${1:-}" in
  fetch) cmd_fetch ;;
  start) cmd_start "${2:-}" ;;
  stop)
    if [ "${2:-}" = "--purge" ]; then cmd_purge "${3:-}"; else cmd_stop "${2:-}"; fi
    ;;
  purge) cmd_purge "${2:-}" ;;
  add) cmd_add "${2:-}" "${3:-}" ;;
  *)
    echo "usage: $0 fetch | start [STATE_DIR] | stop [--purge] [STATE_DIR] | purge [STATE_DIR] | add FIRST_STATE_DIR STATE_DIR" >&2
    exit 64
    ;;
esac
