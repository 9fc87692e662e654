#!/usr/bin/env bash
# File-server benchmark: our master vs real Salt 3007.17's, same tree, same client, one run.
# The client (examples/src/bin/fsbench.rs) signs in like a minion and sends what the
# fileclient sends:
#   small: `_file_hash` + `_serve_file` of each file of a 1,000-file tree (1-8 KiB), from
#          BENCH_FS_CLIENTS concurrent minions (each with its own connection and one request
#          in flight, polled by BENCH_FS_THREADS client threads) for BENCH_FS_SECS seconds
#          → requests/s;
#   big:   one 100 MiB file served chunk by chunk (file_buffer_size 1 MiB, as cp.get_file
#          does; each reply opened in the buffer it arrived in, as our minion does; the
#          file's hash checked on a second client thread, off the measured loop: Salt's
#          get_file hashes nothing per chunk) → MiB/s; next to the ceilings: a plain TCP copy
#          over loopback, the same with one round trip per chunk, and that with Salt's
#          mandatory crypto.
# Both masters: worker_threads BENCH_FS_WORKERS (default 2, the machine's cores), hash_type
# sha256, auto_accept. Both run at once and are driven in turn, BENCH_FS_ROUNDS times each;
# medians reported. Knobs: BENCH_FS_SECS=5 BENCH_FS_CLIENTS=16 BENCH_FS_THREADS=1
# BENCH_FS_ROUNDS=3 BENCH_FS_WORKERS=2 BENCH_FS_PORT=35505 BENCH_FS_SALT_PORT=36505 (publish ports;
# ret = +1) BENCH_SKIP_SALT=1 SALT_VENV=... Prints a Markdown
# table (for docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${BENCH_FS_SECS:-5}
CLIENTS=${BENCH_FS_CLIENTS:-16}
THREADS=${BENCH_FS_THREADS:-1}
ROUNDS=${BENCH_FS_ROUNDS:-3}
WORKERS=${BENCH_FS_WORKERS:-2}
# Publish ports of the two masters (ret port = publish port + 1).
OP=${BENCH_FS_PORT:-35505}
SP=${BENCH_FS_SALT_PORT:-36505}
VENV=${SALT_VENV:-$PWD/.venv/salt-3007.17}
if [ -n "${BENCH_BIN:-}" ]; then
    BIN=$BENCH_BIN # prebuilt salt-master + fsbench (e.g. a before/after comparison)
else
    cargo build --release --quiet -p salt-master -p salt-examples --bin fsbench --bin salt-master
    BIN=$PWD/target/release
fi
. scripts/bench-master-lib.sh
bench_init fsbench

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
    bench_conf "$1" fsbench_master "$2" "$3" <<CONF
file_roots:
  base: [$T/srv]
CONF
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

# One round: the small-file run then the big file against one master; appends a JSON line
# (rates, the client's CPU per request, the master's CPU per request and per MiB) to $T/rounds.
round() { # label ret pgid
    local small big c0 c1 c2
    c0=$(cpu "$3")
    small=$("$BIN/fsbench" small --port "$2" --files "$T/files.txt" \
        --clients "$CLIENTS" --threads "$THREADS" --secs "$SECS")
    c1=$(cpu "$3")
    big=$("$BIN/fsbench" big --port "$2" --path big.bin)
    c2=$(cpu "$3")
    echo "$1 $small $big cpu $c0 $c1 $c2 load $(cut -d' ' -f1 /proc/loadavg)" >&2
    python3 - "$1" "$small" "$big" "$c0" "$c1" "$c2" >>"$T/rounds" <<'PY'
import json, sys
label, small, big = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
c0, c1, c2 = map(float, sys.argv[4:7])
print(json.dumps({"label": label, "rps": small["rps"], "client_us": small["client_cpu_us"],
                  "us": 1e6 * (c1 - c0) / max(small["requests"], 1), "mib_s": big["mib_s"],
                  "ms": 1e3 * (c2 - c1) / (big["bytes"] / 1048576),
                  "wait": big["wait_ms_per_mib"], "open": big["open_ms_per_mib"],
                  "load": float(open("/proc/loadavg").read().split()[0])}))
PY
}

# Both masters run side by side and are driven in turn, ROUNDS times each (ours, Salt, ours,
# Salt, ...), so a change in the other sessions' load hits both alike; the medians are
# reported. The master not being driven is idle.
conf "$T/ours" "$OP" "$((OP + 1))"
bench_start ours "$BIN/salt-master" "$T/ours" "$((OP + 1))"
HAVE_SALT=
if [ -z "${BENCH_SKIP_SALT:-}" ] && [ -x "$VENV/bin/salt-master" ]; then
    conf "$T/salt" "$SP" "$((SP + 1))"
    bench_start salt "$VENV/bin/salt-master" "$T/salt" "$((SP + 1))" 15
    HAVE_SALT=1
fi
: >"$T/rounds"
for _ in $(seq "$ROUNDS"); do
    round ours "$((OP + 1))" "${PIDS[0]}"
    [ -z "$HAVE_SALT" ] || round salt "$((SP + 1))" "${PIDS[1]}"
done
mib_s() { python3 -c 'import json,sys; print(json.load(sys.stdin)["mib_s"])'; }
LOOP=$("$BIN/fsbench" loopback --mib 100 | mib_s)
# The fileclient's shape over plain TCP (one round trip per 1 MiB chunk), without and with
# the encryption Salt's protocol requires: the ceilings for any master.
LOOP_RT=$("$BIN/fsbench" loopback --mib 100 --per-chunk | mib_s)
# The crypto line is the best of three: one shot swings 124-233 MiB/s within a minute on a
# loaded machine (as bench.py takes the best of three `openssl speed` runs for the RSA floor).
LOOP_CRYPTO=$(for _ in 1 2 3; do "$BIN/fsbench" loopback --mib 100 --per-chunk --crypto | mib_s; done | sort -g | tail -1)

python3 - "$T/rounds" "$CLIENTS" "$THREADS" "$WORKERS" "$(nproc)" "$LOOP" "$LOOP_RT" "$LOOP_CRYPTO" <<'PY'
import json, statistics, sys
rounds = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
clients, threads, workers, cores = sys.argv[2:6]
loop, loop_rt, loop_crypto = map(float, sys.argv[6:9])
def med(kind, k):
    v = [r[k] for r in rounds if r["label"] == kind]
    # Numbers only: the median of an even count of strings ("label") would add them up.
    return statistics.median(v) if v and all(isinstance(x, (int, float)) for x in v) else None
def f(v, d=0):
    return "-" if v is None else f"{v:.{d}f}"
def ratio(a, b, suffix=""):
    return "-" if a is None or not b else f"{a / b:.1f}x{suffix}"
def pct(a, b):
    return "-" if a is None or not b else f"{100 * a / b:.0f}%"
o = {k: med("ours", k) for k in rounds[0]} if rounds else {}
s = {k: med("salt", k) for k in rounds[0]} if rounds else {}
n = sum(1 for r in rounds if r["label"] == "ours")
print()
print(f"| file server ({clients} minions, {threads} client thread(s), worker_threads {workers}, "
      f"{cores} cores; median of {n} alternating rounds) | ours | Salt 3007.17 | ours / Salt |")
print("|---|---|---|---|")
print(f"| `_file_hash` + `_serve_file`, 1,000 files of 1-8 KiB (requests/s) | {f(o.get('rps'))} | {f(s.get('rps'))} | {ratio(o.get('rps'), s.get('rps'))} |")
print(f"| same: master CPU per request (µs, user + system, all its processes) | {f(o.get('us'))} | {f(s.get('us'))} | {ratio(s.get('us'), o.get('us'), ' less')} |")
print(f"| same: the client's CPU per request (µs, the same client for both) | {f(o.get('client_us'))} | {f(s.get('client_us'))} | |")
print(f"| 100 MiB file, 1 MiB chunks, one minion (MiB/s) | {f(o.get('mib_s'), 1)} | {f(s.get('mib_s'), 1)} | {ratio(o.get('mib_s'), s.get('mib_s'))} |")
print(f"| same: master CPU per MiB served (ms) | {f(o.get('ms'), 2)} | {f(s.get('ms'), 2)} | {ratio(s.get('ms'), o.get('ms'), ' less')} |")
print(f"| same: client waiting for the reply / opening it, per MiB (ms) | {f(o.get('wait'), 2)} / {f(o.get('open'), 2)} | {f(s.get('wait'), 2)} / {f(s.get('open'), 2)} | |")
print(f"| plain TCP copy over loopback, 1 MiB writes (MiB/s) | {loop:.1f} | | ours = {pct(o.get('mib_s'), loop)} of it |")
print(f"| TCP over loopback, one round trip per 1 MiB chunk (MiB/s) | {loop_rt:.1f} | | ours = {pct(o.get('mib_s'), loop_rt)} of it |")
print(f"| same + AES-192-CBC/HMAC-SHA256 seal and open of each chunk (MiB/s) | {loop_crypto:.1f} | | ours = {pct(o.get('mib_s'), loop_crypto)} of it |")
for kind in ("ours", "salt"):
    rs = [r for r in rounds if r["label"] == kind]
    if rs:
        print(f"{kind} rounds: requests/s " + ", ".join(f"{r['rps']:,.0f}" for r in rs)
              + "; MiB/s " + ", ".join(f"{r['mib_s']:.1f}" for r in rs)
              + "; load " + ", ".join(f"{r['load']:.1f}" for r in rs))
PY
echo "(load average: $(cut -d' ' -f1-3 /proc/loadavg))"
