#!/usr/bin/env bash
# The reactor: N custom events, each triggering one `runner.test.arg` reaction and (with
# BENCH_REACTOR_MINIONS > 0, default 100) one `local.test.arg` reaction to that many swarm
# minions; Salt's master vs ours, same run, same input (issue 35).
#
#   scripts/bench-reactor.sh [SALT_VERSION] [EVENTS]
#
# For each master (Salt <version> from .venv/salt-<version>, then ours from
# ${BIN_DIR:-target/debug}), on loopback under a temp root: a master with
#   reactor: [{'bench/react/*': [<root>/react.sls]}]   (react.sls: runner.test.arg, args n)
# one raw reader on the pub socket (scripts/bench_reactor.py listen), then EVENTS (10000)
# events `bench/react/<n>` written into master_event_pull.ipc by one writer. Reported:
#   reactions/s = reactions returned / (last `salt/run/<jid>/ret` - first event)
#   event -> reaction start: p50/p99/max of the reaction's `salt/run/<jid>/new` stamp minus
#   its event's stamp (both stamped on this host); the same for the local reactions, and
#   events/s whose two reactions both completed (see bench_reactor.py).
# The events are written as fast as the writer can: the latency includes the queueing of a
# burst. BENCH_REACTOR_IDLE (120 s): how long the reader waits for the next reaction;
# BENCH_REACTOR_SIDES ("salt ours"): which masters to run; BENCH_REACTOR_RATE (0 = a burst):
# events/s to pace the writer at, for the reactor's own latency without a backlog.
# BENCH_REACTOR_MINIONS (100): swarm minions (examples/src/bin/swarm.rs, ${BIN_DIR}/swarm,
# keys from ${SWARM_KEYS:-target/swarm-keys}, made there if missing; auto-accepted)
# targeted by the `local.` reaction (`tgt: react-*`); its start is the job's `salt/job/<jid>/new`, its end the last of the
# minions' returns; 0 = the runner reaction alone. BENCH_REACTOR_SALT_N (EVENTS): events for
# Salt's side (bound it when Salt's master is too slow for EVENTS). BENCH_REACTOR_WORKERS (4):
# worker_threads of both masters.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:-3007.17}
EVENTS=${2:-${BENCH_REACTOR_N:-10000}}
IDLE=${BENCH_REACTOR_IDLE:-120}
VENV=.venv/salt-$VERSION
BIN_DIR=${BIN_DIR:-target/debug}
MINIONS=${BENCH_REACTOR_MINIONS:-100}
SWARM_KEYS=${SWARM_KEYS:-target/swarm-keys}
PY=$VENV/bin/python
[ -x "$PY" ] || { echo "no $VENV (scripts/salt-venv.sh $VERSION)" >&2; exit 1; }
[ -x "$BIN_DIR/salt-master" ] || { echo "no $BIN_DIR/salt-master (cargo build -p salt-master)" >&2; exit 1; }
ROOT=$(mktemp -d "${BENCH_TMP:-/tmp}/bench-reactor.XXXXXX")
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "${BENCH_REACTOR_KEEP:-}" ] || rm -rf "$ROOT"
}
trap cleanup EXIT

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run_side() {
    local side=$1 dir=$ROOT/$1 events=$EVENTS
    [ "$side" = salt ] && events=${BENCH_REACTOR_SALT_N:-$EVENTS}
    mkdir -p "$dir/conf" "$dir/pki"
    cat > "$dir/react.sls" <<'SLS'
bench_{{ data['n'] }}:
  runner.test.arg:
    - args:
      - n: {{ data['n'] }}
SLS
    if [ "$MINIONS" -gt 0 ]; then
        cat >> "$dir/react.sls" <<'SLS'
bench_local_{{ data['n'] }}:
  local.test.arg:
    - tgt: 'react-*'
    - arg:
      - {{ data['n'] }}
SLS
    fi
    local pub ret
    pub=$(free_port); ret=$(free_port)
    cat > "$dir/conf/master" <<CONF
id: benchmaster
user: $(id -un)
root_dir: $dir
pki_dir: $dir/pki
cachedir: $dir/cache
sock_dir: $dir/sock
pidfile: $dir/master.pid
log_file: $dir/master.log
log_level_logfile: warning
interface: 127.0.0.1
publish_port: $pub
ret_port: $ret
worker_threads: ${BENCH_REACTOR_WORKERS:-4}
auto_accept: True
reactor:
  - 'bench/react/*':
    - $dir/react.sls
CONF
    # Extra master options for both sides (e.g. "job_cache: False"), one per line.
    [ -n "${BENCH_REACTOR_CONF:-}" ] && printf '%s\n' "$BENCH_REACTOR_CONF" >> "$dir/conf/master"
    local framing=tcp
    if [[ $VERSION == 3006* ]]; then
        framing=ipc
        [ "$side" = ours ] && echo "event_bus_framing: ipc" >> "$dir/conf/master"
    fi
    if [ "$side" = salt ]; then
        "$VENV/bin/salt-master" -c "$dir/conf" -l warning > "$dir/out" 2>&1 &
    else
        "$BIN_DIR/salt-master" -c "$dir/conf" -l warning > "$dir/out" 2>&1 &
    fi
    local master=$!
    PIDS+=("$master")
    for _ in $(seq 600); do
        [ -S "$dir/sock/master_event_pub.ipc" ] && [ -S "$dir/sock/master_event_pull.ipc" ] && break
        sleep 0.1
    done
    [ -S "$dir/sock/master_event_pull.ipc" ] || { echo "$side master did not start" >&2; cat "$dir/out" >&2; exit 1; }
    local swarm=
    if [ "$MINIONS" -gt 0 ]; then
        local sbin=$BIN_DIR/swarm
        [ -x "$sbin" ] || sbin=$BIN_DIR/examples/swarm
        "$sbin" -n "$MINIONS" --master 127.0.0.1 --ret-port "$ret" --publish-port "$pub" \
            --key-cache "$SWARM_KEYS" --keys "$MINIONS" --id-prefix react- \
            --interval 5 > "$dir/swarm.log" 2>&1 &
        swarm=$!
        PIDS+=("$swarm")
        for _ in $(seq 1200); do grep -q ALL_SIGNED_IN "$dir/swarm.log" && break; sleep 0.1; done
        grep -q ALL_SIGNED_IN "$dir/swarm.log" || { echo "$side: swarm did not sign in" >&2; tail -3 "$dir/swarm.log" >&2; exit 1; }
    fi
    # Salt's reactor process subscribes some seconds after the sockets exist.
    sleep "${BENCH_REACTOR_SETTLE:-15}"
    "$PY" scripts/bench_reactor.py listen "$dir/conf/master" "$events" "$IDLE" "$framing" "$MINIONS" > "$dir/l" 2>"$dir/l.err" &
    local reader=$!
    PIDS+=("$reader")
    for _ in $(seq 600); do grep -q READY "$dir/l" && break; sleep 0.1; done
    sleep 1
    local l0 l1
    l0=$(cut -d' ' -f1 /proc/loadavg)
    "$PY" scripts/bench_reactor.py fire "$dir/conf/master" "$events" "${BENCH_REACTOR_RATE:-0}" > "$dir/fire"
    wait "$reader" || true
    l1=$(cut -d' ' -f1 /proc/loadavg)
    local r
    r=$(grep RESULT "$dir/l" || echo "RESULT - - - - - - (reader: $(tail -1 "$dir/l.err"))")
    read -r _ started returned p50 p99 max rate rest <<< "$r"
    echo "$side master: $events events -> $started runner reactions started, $returned returned; $rate runner reactions/s; event->reaction start p50 $p50 ms, p99 $p99 ms, max $max ms $rest (load $l0 -> $l1)"
    if [ "$MINIONS" -gt 0 ]; then
        r=$(grep '^LOCAL' "$dir/l" || echo "LOCAL - - - - - - -")
        read -r _ started done p50 p99 max rate both <<< "$r"
        echo "$side master: $events events -> $started local reactions started, $done returned from all $MINIONS minions; $rate local reactions/s; $both events/s with both reactions done; event->local start p50 $p50 ms, p99 $p99 ms, max $max ms"
    fi
    [ -n "$swarm" ] && { kill "$swarm" 2>/dev/null || true; wait "$swarm" 2>/dev/null || true; }
    kill "$master" 2>/dev/null || true
    wait "$master" 2>/dev/null || true
}

echo "reactor: Salt $VERSION tools; $EVENTS events (Salt: ${BENCH_REACTOR_SALT_N:-$EVENTS}; rate ${BENCH_REACTOR_RATE:-0}/s, 0 = burst) each -> one runner.test.arg reaction + local.test.arg to $MINIONS swarm minions; ours from $BIN_DIR; load $(cut -d' ' -f1-3 /proc/loadavg)"
for side in ${BENCH_REACTOR_SIDES:-salt ours}; do
    run_side "$side"
done
