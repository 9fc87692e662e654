#!/usr/bin/env bash
# Time real salt-key against our key store on the same generated pki_dir.
#
#   scripts/bench-salt-key.sh [N]        (default N=10000; 100000 takes Salt a long time)
#
# Env: SALT_VENV (default /work/main/.venv/salt-3007.17), BENCH_DIR (default: a new temp
# dir, removed at the end). Generates N pending keys holding one real RSA public key with
# crates/keystore/examples/bench100k.rs --generate-only, writes a minimal master config
# (pki_dir, cachedir, sock_dir, log_file, user, id), then times the real salt-key CLI for
# -L and -F, Salt's salt.key.Key methods in-process for -L/-F/-a 'minion-*0' (10%
# subset)/-A (see below why), and finally runs our bench on a fresh directory of the
# same N for comparison.
set -euo pipefail

N=${1:-10000}
SALT_VENV=${SALT_VENV:-/work/main/.venv/salt-3007.17}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SALT_KEY="$SALT_VENV/bin/salt-key"
[ -x "$SALT_KEY" ] || { echo "SKIPPED: no Salt venv at $SALT_VENV"; exit 0; }

CLEANUP=0
if [ -z "${BENCH_DIR:-}" ]; then
    BENCH_DIR=$(mktemp -d)
    CLEANUP=1
fi
trap '[ "$CLEANUP" = 1 ] && rm -rf "$BENCH_DIR"' EXIT

cargo build --release -q -p salt-keystore --example bench100k
BIN="$ROOT/target/release/examples/bench100k"

SALT_DIR="$BENCH_DIR/salt"
mkdir -p "$SALT_DIR/conf" "$SALT_DIR/cache"
"$BIN" --n "$N" --dir "$SALT_DIR" --generate-only
cat > "$SALT_DIR/conf/master" <<CONF
pki_dir: $SALT_DIR/pki
cachedir: $SALT_DIR/cache
sock_dir: $SALT_DIR/sock
log_file: $SALT_DIR/log
user: $(id -un)
id: benchmaster
CONF

TIMEFORMAT='%3R s'
run() {
    local label=$1
    shift
    printf '%-40s ' "$label"
    { time "$SALT_KEY" -c "$SALT_DIR/conf" "$@" >/dev/null 2>&1; } 2>&1
}

echo "== real salt-key CLI ($("$SALT_KEY" --version)), N=$N, dir $SALT_DIR"
run "salt-key --version (startup only)" --version
run "salt-key -L" -L
run "salt-key -F" -F
# salt-key -a/-A fire one salt/key event per key; without a running master each event
# waits up to 1 s for the event socket (fire_event timeout=1000 ms), so timing the CLI
# would measure that timeout. Instead time Salt's own salt.key.Key methods (what the CLI
# calls) in-process with the event bus stubbed out: the storage logic only.
echo "== salt.key.Key in-process (event bus stubbed, no interpreter startup)"
"$SALT_VENV/bin/python" - "$SALT_DIR/conf/master" <<'PY'
import sys, time
import salt.config, salt.key, salt.utils.event

class NoEvent:
    def fire_event(self, *a, **k):
        return True
    def destroy(self):
        pass

salt.utils.event.get_event = lambda *a, **k: NoEvent()
opts = salt.config.master_config(sys.argv[1])
opts["__role"] = "master"
key = salt.key.Key(opts)

def timed(label, f):
    t = time.perf_counter()
    r = f()
    print(f"{label:<40} {time.perf_counter() - t:.3f} s")
    return r

n = len(timed("list_keys (-L)", key.list_keys)["minions_pre"])
timed("finger_all (-F)", lambda: key.finger_all("sha256"))
r = timed("accept('minion-*0') (-a, validated)", lambda: key.accept(match="minion-*0"))
timed("accept_all (-A)", key.accept_all)
print(f"pending before: {n}, accepted now: {len(key.list_keys()['minions'])}")
PY
run "salt-key -L (after)" -L

echo "== salt-keystore, N=$N (same file system)"
mkdir -p "$BENCH_DIR/ours"
"$BIN" --n "$N" --dir "$BENCH_DIR/ours"
