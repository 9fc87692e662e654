#!/usr/bin/env bash
# Events/s delivered to 10 Python listeners: Salt's master vs ours, same run, same input.
#
#   scripts/bench-events.sh [SALT_VERSION] [EVENTS] [LISTENERS] [READER]
#
# READER: `salt` (default) = `get_master_event` readers, as tools use the bus; `raw` =
# readers that only split the pub socket's frames (msgpack's C unpacker), which shows what the
# master's publisher can deliver when the readers are not the bottleneck.
#
# For each master (Salt <version> from .venv/salt-<version>, then ours from
# ${BIN_DIR:-target/debug}), on loopback under a temp root: start the master, connect
# LISTENERS (10) `get_master_event` readers (scripts/bench_events.py), write EVENTS (20000)
# pre-framed events into master_event_pull.ipc from one writer, and report
#   delivered/s = events received by all listeners / (last receipt - first write)
# and how many each listener missed. The writer and the readers are the same Python for both
# masters, so the difference is the master's event publisher.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:-3007.17}
EVENTS=${2:-20000}
LISTENERS=${3:-10}
READER=${4:-salt}
VENV=.venv/salt-$VERSION
BIN_DIR=${BIN_DIR:-target/debug}
PY=$VENV/bin/python
[ -x "$PY" ] || { echo "no $VENV (scripts/salt-venv.sh $VERSION)" >&2; exit 1; }
[ -x "$BIN_DIR/salt-master" ] || { echo "no $BIN_DIR/salt-master (cargo build -p salt-master)" >&2; exit 1; }
ROOT=$(mktemp -d /tmp/bench-events.XXXXXX)
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
CONF
    if [ "$side" = ours ] && [[ $VERSION == 3006* ]]; then
        echo "event_bus_framing: ipc" >> "$dir/conf/master"
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
    local i
    for i in $(seq "$LISTENERS"); do
        if [ "$READER" = raw ]; then
            local framing=tcp
            [[ $VERSION == 3006* ]] && framing=ipc
            "$PY" scripts/bench_events.py rawlisten "$dir/conf/master" "$EVENTS" 10 "$framing" > "$dir/l$i" 2>/dev/null &
        else
            "$PY" scripts/bench_events.py listen "$dir/conf/master" "$EVENTS" 10 > "$dir/l$i" 2>/dev/null &
        fi
        PIDS+=("$!")
    done
    for i in $(seq "$LISTENERS"); do
        for _ in $(seq 600); do grep -q READY "$dir/l$i" && break; sleep 0.1; done
    done
    sleep 1
    "$PY" scripts/bench_events.py fire "$dir/conf/master" "$EVENTS" > "$dir/fire"
    for i in $(seq "$LISTENERS"); do
        for _ in $(seq 1200); do grep -q GOT "$dir/l$i" && break; sleep 0.1; done
    done
    "$PY" - "$side" "$EVENTS" "$dir" "$LISTENERS" <<'PYEOF'
import sys
side, events, d, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
start = float(open(f"{d}/fire").read().split()[2])
got, last, missed = 0, 0.0, []
for i in range(1, n + 1):
    parts = [l for l in open(f"{d}/l{i}").read().split("\n") if l.startswith("GOT")]
    g, _first, la = parts[0].split()[1:] if parts else ("0", "0", "0")
    got += int(g); last = max(last, float(la)); missed.append(events - int(g))
secs = last - start
rate = got / secs if secs > 0 else 0
print(f"{side:5s} master: {got} events delivered to {n} listeners in {secs:.2f} s = {rate:,.0f} events/s (missed per listener: {missed})")
PYEOF
    kill "$master" 2>/dev/null || true
    wait "$master" 2>/dev/null || true
}

echo "Salt $VERSION tools; $EVENTS events, $LISTENERS $READER listeners; ours from $BIN_DIR"
run_side salt
run_side ours
