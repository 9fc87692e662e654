#!/usr/bin/env bash
# File-server benchmark: our master vs real Salt 3007.17's, same tree, same client, one run.
# The client (examples/src/bin/fsbench.rs) signs in like a minion and sends what the
# fileclient sends:
#   small: `_file_hash` + `_serve_file` of each file of a 1,000-file tree (1-8 KiB), from
#          BENCH_FS_CLIENTS concurrent minions for BENCH_FS_SECS seconds → requests/s;
#   big:   one 100 MiB file served chunk by chunk (file_buffer_size 1 MiB, as cp.get_file
#          does), hash checked → MiB/s; next to the ceilings: a plain TCP copy over loopback,
#          the same with one round trip per chunk, and that with Salt's mandatory crypto.
# Both masters: worker_threads BENCH_FS_WORKERS (default 2, the machine's cores), hash_type
# sha256, auto_accept. Knobs: BENCH_FS_SECS=10 BENCH_FS_CLIENTS=4 BENCH_FS_WORKERS=2
# BENCH_SKIP_SALT=1 SALT_VENV=... Prints a Markdown table (for docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${BENCH_FS_SECS:-10}
CLIENTS=${BENCH_FS_CLIENTS:-4}
WORKERS=${BENCH_FS_WORKERS:-2}
VENV=${SALT_VENV:-$PWD/.venv/salt-3007.17}
if [ -n "${BENCH_BIN:-}" ]; then
    BIN=$BENCH_BIN # prebuilt salt-master + fsbench (e.g. a before/after comparison)
else
    cargo build --release --quiet -p salt-master -p salt-examples --bin fsbench --bin salt-master
    BIN=$PWD/target/release
fi
T=$(mktemp -d /tmp/salt-fsbench.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
    sleep 2
    for p in "${PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT

# The tree: 1,000 files of 1-8 KiB in 20 directories, and big.bin (100 MiB).
python3 - "$T/srv" <<'PY'
import os, random, sys
root = sys.argv[1]
r = random.Random(16)
names = []
for i in range(1000):
    rel = f"d{i % 20:02d}/f{i:04d}.txt"
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(r.randbytes(r.randint(1024, 8192)))
    names.append(rel)
with open(os.path.join(root, "big.bin"), "wb") as f:
    block = r.randbytes(1 << 20)
    for i in range(100):
        f.write(block[i:] + block[:i])
with open(os.path.join(os.path.dirname(root), "files.txt"), "w") as f:
    f.write("\n".join(names) + "\n")
PY

conf() { # dir pub ret
    mkdir -p "$1/conf"
    cat > "$1/conf/master" <<CONF
id: fsbench_master
interface: 127.0.0.1
publish_port: $2
ret_port: $3
root_dir: $1
pki_dir: $1/pki
cachedir: $1/cache
sock_dir: $1/sock
pidfile: $1/master.pid
log_file: $1/master.log
log_level: warning
user: $(id -un)
auto_accept: True
worker_threads: $WORKERS
file_roots:
  base: [$T/srv]
CONF
}

start() { # name bin dir ret ready-pattern
    setsid "$2" -c "$3/conf" -l warning >"$3.out" 2>&1 &
    PIDS+=($!)
    local i=0
    until (exec 3<>"/dev/tcp/127.0.0.1/$4") 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 240 ] || { echo "$1 did not start"; tail "$3.out"; exit 1; }
        sleep 0.5
    done
    sleep "${6:-1}"
}

# CPU seconds (user + system) used so far by every process of a process group: the master's
# cost, which on this shared machine is steadier than the wall-clock rate.
cpu() { # pgid
    python3 - "$1" <<'PY'
import os, sys
pg, tck, tot = int(sys.argv[1]), os.sysconf("SC_CLK_TCK"), 0
for d in os.listdir("/proc"):
    if d.isdigit():
        try:
            f = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            if int(f[2]) == pg:
                tot += int(f[11]) + int(f[12])
        except (OSError, ValueError, IndexError):
            pass
print(tot / tck)
PY
}

run() { # label ret pgid
    local small big c0 c1 c2
    c0=$(cpu "$3")
    small=$(nice -n 0 "$BIN/fsbench" small --port "$2" --files "$T/files.txt" \
        --clients "$CLIENTS" --secs "$SECS")
    c1=$(cpu "$3")
    big=$("$BIN/fsbench" big --port "$2" --path big.bin)
    c2=$(cpu "$3")
    echo "$1 $small $big cpu $c0 $c1 $c2" >&2
    python3 - "$1" "$small" "$big" "$c0" "$c1" "$c2" <<'PY'
import json, sys
label, small, big = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
c0, c1, c2 = map(float, sys.argv[4:7])
us = 1e6 * (c1 - c0) / max(small["requests"], 1)
ms = 1e3 * (c2 - c1) / (big["bytes"] / 1048576)
print(f"{label}|{small['rps']}|{big['mib_s']}|{us:.0f}|{ms:.2f}")
PY
}

conf "$T/ours" 35505 35506
start ours "$BIN/salt-master" "$T/ours" 35506
OURS=$(run ours 35506 "${PIDS[0]}")
kill -TERM -- "-${PIDS[0]}" 2>/dev/null || true
SALT="salt|-|-|-|-"
if [ -z "${BENCH_SKIP_SALT:-}" ] && [ -x "$VENV/bin/salt-master" ]; then
    conf "$T/salt" 36505 36506
    start salt "$VENV/bin/salt-master" "$T/salt" 36506 "" 15
    SALT=$(run salt 36506 "${PIDS[1]}")
fi
mib_s() { python3 -c 'import json,sys; print(json.load(sys.stdin)["mib_s"])'; }
LOOP=$("$BIN/fsbench" loopback --mib 100 | mib_s)
# The fileclient's shape over plain TCP (one round trip per 1 MiB chunk), without and with
# the encryption Salt's protocol requires: the ceilings for any master.
LOOP_RT=$("$BIN/fsbench" loopback --mib 100 --per-chunk | mib_s)
LOOP_CRYPTO=$("$BIN/fsbench" loopback --mib 100 --per-chunk --crypto | mib_s)

IFS='|' read -r _ o_rps o_mib o_us o_ms <<<"$OURS"
IFS='|' read -r _ s_rps s_mib s_us s_ms <<<"$SALT"
ratio() { python3 -c "import sys; a,b=sys.argv[1:]; print('-' if b in ('-','0') else f'{float(a)/float(b):.1f}x')" "$1" "$2"; }
pct() { python3 -c "import sys; a,b=sys.argv[1:]; print(f'{100*float(a)/float(b):.0f}%')" "$1" "$2"; }
echo
echo "| file server ($CLIENTS clients, worker_threads $WORKERS, $(nproc) cores) | ours | Salt 3007.17 | ours / Salt |"
echo "|---|---|---|---|"
echo "| \`_file_hash\` + \`_serve_file\`, 1,000 files of 1-8 KiB (requests/s) | $o_rps | $s_rps | $(ratio "$o_rps" "$s_rps") |"
echo "| same: master CPU per request (µs, user + system, all its processes) | $o_us | $s_us | $(ratio "$s_us" "$o_us") less |"
echo "| 100 MiB file, 1 MiB chunks, one minion (MiB/s) | $o_mib | $s_mib | $(ratio "$o_mib" "$s_mib") |"
echo "| same: master CPU per MiB served (ms) | $o_ms | $s_ms | $(ratio "$s_ms" "$o_ms") less |"
echo "| plain TCP copy over loopback, 1 MiB writes (MiB/s) | $LOOP | | ours = $(pct "$o_mib" "$LOOP") of it |"
echo "| TCP over loopback, one round trip per 1 MiB chunk (MiB/s) | $LOOP_RT | | ours = $(pct "$o_mib" "$LOOP_RT") of it |"
echo "| same + AES-192-CBC/HMAC-SHA256 seal and open of each chunk (MiB/s) | $LOOP_CRYPTO | | ours = $(pct "$o_mib" "$LOOP_CRYPTO") of it |"
echo "(load average: $(cut -d' ' -f1-3 /proc/loadavg))"
