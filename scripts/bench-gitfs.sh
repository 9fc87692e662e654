#!/usr/bin/env bash
# gitfs benchmark: our master vs real Salt 3007.17's (GitPython provider), same repositories,
# same client, one run (issue #36's done-when):
#   update: `salt-run fileserver.update` over 20 `file://` remotes after 5 new commits were
#           pushed to each (wall time of the salt-run command, each side, BENCH_GITFS_ROUNDS
#           rounds, ours and Salt's in turn on the same pushed commits);
#   serve:  `_file_hash` + `_serve_file` requests/s of the 1,000 files (1-8 KiB) of remote 0,
#           served from gitfs saltenv `base` (examples/src/bin/fsbench.rs, BENCH_FS_CLIENTS
#           minions, BENCH_FS_SECS seconds).
# Salt's master gets GitPython through PYTHONPATH (pip install --target, once, into
# target/gitfs-gitpython). Knobs: BENCH_GITFS_ROUNDS=3 BENCH_FS_SECS=5 BENCH_FS_CLIENTS=16
# BENCH_FS_WORKERS=2 BENCH_BIN=<dir with salt-master, salt-run, fsbench> SALT_VENV=...
# BENCH_BIN_BASE=<dir with another build's salt-master>: a third master (a baseline, e.g. the
# build before a change) whose update is timed in the same rounds (extra column; its requests/s
# are not measured).
# Prints a Markdown table (for docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${BENCH_GITFS_ROUNDS:-3}
SECS=${BENCH_FS_SECS:-5}
CLIENTS=${BENCH_FS_CLIENTS:-16}
WORKERS=${BENCH_FS_WORKERS:-2}
VENV=${SALT_VENV:-$PWD/.venv/salt-3007.17}
if [ -n "${BENCH_BIN:-}" ]; then
    BIN=$BENCH_BIN
else
    cargo build --release --quiet -p salt-master -p salt-cli -p salt-examples --bin fsbench
    BIN=$PWD/target/release
fi
GITPY=$PWD/target/gitfs-gitpython
if [ ! -f "$GITPY/git/__init__.py" ]; then
    "$VENV/bin/pip" install -q --target "$GITPY" GitPython >/dev/null 2>&1 || true
fi
[ -f "$GITPY/git/__init__.py" ] || { echo "GitPython not installable into $GITPY"; exit 1; }
. scripts/bench-master-lib.sh
bench_init gitfsbench
# Salt's master and salt-run find GitPython here (harmless to ours).
export PYTHONPATH=$GITPY
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.com GIT_COMMITTER_NAME=b \
    GIT_COMMITTER_EMAIL=b@example.com

# 20 repositories: r00 holds the 1,000 served files (d00..d19/fNNNN.txt), r01..r19 50 files
# each under rNN/.
python3 - "$T" <<'PY'
import os, random, sys
t = sys.argv[1]
r = random.Random(36)
names = []
for n in range(20):
    w = os.path.join(t, "work", f"r{n:02d}")
    for i in range(1000 if n == 0 else 50):
        rel = f"d{i % 20:02d}/f{i:04d}.txt" if n == 0 else f"r{n:02d}/f{i:03d}.sls"
        p = os.path.join(w, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(r.randbytes(r.randint(1024, 8192)) if n == 0 else b"x: 1\n")
        if n == 0:
            names.append(rel)
with open(os.path.join(t, "files.txt"), "w") as f:
    f.write("\n".join(names) + "\n")
PY
REMOTES=""
for w in "$T"/work/r*; do
    n=$(basename "$w")
    (cd "$w" && git init -q -b master && git add -A && git commit -q -m init)
    git clone -q --bare "$w" "$T/git/$n.git"
    REMOTES="$REMOTES  - file://$T/git/$n.git
"
done

conf() { # dir pub ret
    bench_conf "$1" gitfsbench_master "$2" "$3" <<CONF
fileserver_backend: [gitfs]
gitfs_update_interval: 86400
gitfs_remotes:
$REMOTES
CONF
}

update() { # run-bin dir → seconds
    local t0 t1
    t0=$(date +%s.%N)
    "$1" -c "$2/conf" fileserver.update --out json >"$2.update" 2>&1
    t1=$(date +%s.%N)
    python3 -c "print(round($t1 - $t0, 3))"
}

conf "$T/ours" 37505 37506
bench_start ours "$BIN/salt-master" "$T/ours" 37506 1
conf "$T/salt" 38505 38506
bench_start salt "$VENV/bin/salt-master" "$T/salt" 38506 15
BASE=${BENCH_BIN_BASE:-}
if [ -n "$BASE" ]; then
    conf "$T/base" 39505 39506
    bench_start base "$BASE/salt-master" "$T/base" 39506 1
    update "$BIN/salt-run" "$T/base" >/dev/null
fi
# The first fetch (clone) of every remote, not measured.
update "$BIN/salt-run" "$T/ours" >/dev/null
update "$VENV/bin/salt-run" "$T/salt" >/dev/null
: >"$T/rounds"
for round in $(seq "$ROUNDS"); do
    for w in "$T"/work/r*; do
        n=$(basename "$w")
        (cd "$w" && for c in 1 2 3 4 5; do
            echo "round $round commit $c" >> CHANGES && git add CHANGES && git commit -q -m "r$round c$c"
        done && git push -q "$T/git/$n.git" master)
    done
    o=$(update "$BIN/salt-run" "$T/ours")
    s=$(update "$VENV/bin/salt-run" "$T/salt")
    echo "update $o $s" >>"$T/rounds"
    echo "round $round: fileserver.update ours ${o}s, Salt ${s}s (ours answered $(cat "$T/ours.update" | tr -d '\n '))" >&2
    if [ -n "$BASE" ]; then
        b=$(update "$BIN/salt-run" "$T/base")
        echo "base $b" >>"$T/rounds"
        echo "round $round: fileserver.update baseline ${b}s (answered $(cat "$T/base.update" | tr -d '\n '))" >&2
    fi
done
for round in $(seq "$ROUNDS"); do
    o=$("$BIN/fsbench" small --port 37506 --files "$T/files.txt" --clients "$CLIENTS" --secs "$SECS")
    s=$("$BIN/fsbench" small --port 38506 --files "$T/files.txt" --clients "$CLIENTS" --secs "$SECS")
    echo "rps $(echo "$o" | python3 -c 'import json,sys; print(json.load(sys.stdin)["rps"])') $(echo "$s" | python3 -c 'import json,sys; print(json.load(sys.stdin)["rps"])')" >>"$T/rounds"
done
python3 - "$T/rounds" "$CLIENTS" "$WORKERS" "$(nproc)" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
clients, workers, cores = sys.argv[2:5]
def med(kind, i):
    return statistics.median(float(r[i]) for r in rows if r[0] == kind)
uo, us = med("update", 1), med("update", 2)
ro, rs = med("rps", 1), med("rps", 2)
n = sum(1 for r in rows if r[0] == "update")
print()
print(f"| gitfs ({clients} minions, worker_threads {workers}, {cores} cores; median of {n} rounds) | ours | Salt 3007.17 (GitPython) | ours / Salt |")
print("|---|---|---|---|")
print(f"| `salt-run fileserver.update`, 20 remotes x 5 new commits (s, wall) | {uo:.2f} | {us:.2f} | {us / uo:.1f}x faster |")
if any(r[0] == "base" for r in rows):
    ub = med("base", 1)
    print(f"| same update, baseline master (BENCH_BIN_BASE) (s, wall) | {ub:.2f} | | {us / ub:.1f}x faster |")
print(f"| `_file_hash` + `_serve_file` from gitfs `base`, 1,000 files of 1-8 KiB (requests/s) | {ro:.0f} | {rs:.0f} | {ro / rs:.1f}x |")
for r in rows:
    print(" ".join(r))
PY
echo "(load average: $(cut -d' ' -f1-3 /proc/loadavg))"
