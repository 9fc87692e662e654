#!/usr/bin/env bash
# Clear `publish` round trips/s on the request port: Salt's master vs ours, same run, same
# Python client (Salt's own clear request channel, as `LocalClient.pub` sends it).
#
#   scripts/bench-clear-publish.sh [SALT_VERSION] [SECONDS] [CLIENTS]
#
# For each master (Salt <version> from .venv/salt-<version>, then ours from
# ${BIN_DIR:-target/release}), on loopback under a temp root, worker_threads 2: accept
# BENCH_CP_MINIONS (10) minion keys (no minion runs: each publish still authenticates with
# the root key, resolves the target, assigns a jid, stores the job and goes out on the
# publisher), then CLIENTS (4) processes of scripts/bench_clear_publish.py send `publish`
# loads, one in flight each, for SECONDS (10); then the same from CLIENTS threads of the
# native client ${BIN_DIR}/clearpub (examples/src/bin/clearpub.rs), whose own CPU is
# negligible. Prints round trips/s per master and client, and the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:-3007.17}
SECS=${2:-10}
CLIENTS=${3:-4}
MINIONS=${BENCH_CP_MINIONS:-10}
VENV=.venv/salt-$VERSION
BIN_DIR=${BIN_DIR:-target/release}
PY=$VENV/bin/python
[ -x "$PY" ] || { echo "no $VENV (scripts/salt-venv.sh $VERSION)" >&2; exit 1; }
[ -x "$BIN_DIR/salt-master" ] || { echo "no $BIN_DIR/salt-master (cargo build --release -p salt-master)" >&2; exit 1; }
# The native client (examples/src/bin/clearpub.rs): the masters' own ratio, without the
# Python client's ~2.6 ms of CPU per round trip on the same cores. Left out when not built.
NATIVE=$BIN_DIR/clearpub
[ -x "$NATIVE" ] || { echo "no $NATIVE (cargo build --release -p salt-examples): native clients left out" >&2; NATIVE=; }
ROOT=$(mktemp -d "${BENCH_TMP:-/tmp}/bench-clearpub.XXXXXX")
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$ROOT"
}
trap cleanup EXIT

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
openssl genrsa -out "$ROOT/minion.pem" 2048 2>/dev/null
openssl rsa -in "$ROOT/minion.pem" -pubout -out "$ROOT/minion.pub" 2>/dev/null
TGT=$(seq -s, -f "bench%g" "$MINIONS")

declare -A RATE
# measure KEY CLIENT_KIND CMD...: run a client that prints `RATE <rate> <ok> <failed> <secs>`,
# keep the rate as RATE[KEY] and print it (the side is KEY without a `native_` prefix).
measure() {
    local key=$1 kind=$2 out rate ok failed secs
    shift 2
    out=$("$@")
    read -r _ rate ok failed secs <<< "$out"
    RATE[$key]=$rate
    printf '%-5s master, %s clients: %s publish round trips in %s s = %s/s (%s failed), %s clients\n' \
        "${key#native_}" "$kind" "$ok" "$secs" "$rate" "$failed" "$CLIENTS"
}
run_side() {
    local side=$1 dir=$ROOT/$1
    mkdir -p "$dir/conf" "$dir/pki/minions"
    for m in ${TGT//,/ }; do cp "$ROOT/minion.pub" "$dir/pki/minions/$m"; done
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
    if [ "$side" = salt ]; then
        "$VENV/bin/salt-master" -c "$dir/conf" -l warning > "$dir/out" 2>&1 &
    else
        "$BIN_DIR/salt-master" -c "$dir/conf" -l warning > "$dir/out" 2>&1 &
    fi
    local master=$!
    PIDS+=("$master")
    # Ready when a clear publish is answered with a jid (Salt's workers load their modules
    # after the port opens).
    for _ in $(seq 120); do
        [ -f "$dir/cache/.root_key" ] && "$PY" scripts/bench_clear_publish.py "$dir/conf/master" "$TGT" 0.2 1 2>/dev/null | grep -qv "RATE 0.0" && break
        sleep 1
    done
    measure "$side" Python "$PY" scripts/bench_clear_publish.py "$dir/conf/master" "$TGT" "$SECS" "$CLIENTS"
    [ -z "$NATIVE" ] || measure "native_$side" native "$NATIVE" --port "$ret" \
        --key-file "$dir/cache/.root_key" --tgt "$TGT" --clients "$CLIENTS" --secs "$SECS"
    kill "$master" 2>/dev/null || true
    wait "$master" 2>/dev/null || true
}

echo "Salt $VERSION tools; $CLIENTS clients x ${SECS}s, $MINIONS accepted minions; ours from $BIN_DIR; load $(cut -d' ' -f1-3 /proc/loadavg)"
run_side salt
run_side ours
ratio() { "$PY" -c "import sys; s, o = float(sys.argv[2]), float(sys.argv[3]); print(f'ours / Salt, {sys.argv[1]} clients: {o / s:.1f}x' if s else 'Salt answered none')" "$@"; }
ratio Python "${RATE[salt]}" "${RATE[ours]}"
[ -z "$NATIVE" ] || ratio native "${RATE[native_salt]}" "${RATE[native_ours]}"
