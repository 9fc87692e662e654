#!/usr/bin/env bash
# The reactor: N custom events, each triggering one `runner.test.arg` reaction; Salt's master
# vs ours, same run, same input (issue 35).
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
#   its event's stamp (both stamped on this host).
# The events are written as fast as the writer can: the latency includes the queueing of a
# burst. BENCH_REACTOR_IDLE (120 s): how long the reader waits for the next reaction;
# BENCH_REACTOR_SIDES ("salt ours"): which masters to run; BENCH_REACTOR_RATE (0 = a burst):
# events/s to pace the writer at, for the reactor's own latency without a backlog.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:-3007.17}
EVENTS=${2:-${BENCH_REACTOR_N:-10000}}
IDLE=${BENCH_REACTOR_IDLE:-120}
VENV=.venv/salt-$VERSION
BIN_DIR=${BIN_DIR:-target/debug}
PY=$VENV/bin/python
[ -x "$PY" ] || { echo "no $VENV (scripts/salt-venv.sh $VERSION)" >&2; exit 1; }
[ -x "$BIN_DIR/salt-master" ] || { echo "no $BIN_DIR/salt-master (cargo build -p salt-master)" >&2; exit 1; }
ROOT=$(mktemp -d /tmp/bench-reactor.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$ROOT"
}
trap cleanup EXIT

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run_side() {
    local side=$1 dir=$ROOT/$1
    mkdir -p "$dir/conf" "$dir/pki"
    cat > "$dir/react.sls" <<'SLS'
bench_{{ data['n'] }}:
  runner.test.arg:
    - args:
      - n: {{ data['n'] }}
SLS
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
worker_threads: 2
reactor:
  - 'bench/react/*':
    - $dir/react.sls
CONF
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
    # Salt's reactor process subscribes some seconds after the sockets exist.
    sleep "${BENCH_REACTOR_SETTLE:-15}"
    "$PY" scripts/bench_reactor.py listen "$dir/conf/master" "$EVENTS" "$IDLE" "$framing" > "$dir/l" 2>"$dir/l.err" &
    local reader=$!
    PIDS+=("$reader")
    for _ in $(seq 600); do grep -q READY "$dir/l" && break; sleep 0.1; done
    sleep 1
    "$PY" scripts/bench_reactor.py fire "$dir/conf/master" "$EVENTS" "${BENCH_REACTOR_RATE:-0}" > "$dir/fire"
    wait "$reader" || true
    local r
    r=$(grep RESULT "$dir/l" || echo "RESULT - - - - - - (reader: $(tail -1 "$dir/l.err"))")
    read -r _ started returned p50 p99 max rate rest <<< "$r"
    echo "$side master: $EVENTS events -> $started reactions started, $returned returned; $rate reactions/s; event->reaction start p50 $p50 ms, p99 $p99 ms, max $max ms $rest"
    kill "$master" 2>/dev/null || true
    wait "$master" 2>/dev/null || true
}

echo "reactor: Salt $VERSION tools; $EVENTS events (rate ${BENCH_REACTOR_RATE:-0}/s, 0 = burst) each -> one runner.test.arg reaction; ours from $BIN_DIR; load $(cut -d' ' -f1-3 /proc/loadavg)"
for side in ${BENCH_REACTOR_SIDES:-salt ours}; do
    run_side "$side"
done
