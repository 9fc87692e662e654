#!/usr/bin/env bash
# Benchmarks: ours vs real Salt 3007.17, side by side in one run, on this machine.
# `scripts/bench.sh` with no arguments reproduces every figure in docs/benchmarks.md and ends
# with a TARGETS table (issues #21, #16, #33 and #39: each target, the measured value, met / NOT MET).
# Documented in docs/benchmarks.md. Sizes and knobs are environment variables:
#   BENCH_SIGNIN_N=1000  BENCH_FANOUT="1000 5000 10000"  BENCH_ROT_N=1000
#   BENCH_FANOUT_ROUNDS=5 (pings per size, median)  BENCH_FANOUT_SALT_BIG=5000
#   BENCH_FANOUT_SALT_BIG_ROUNDS=1 (Salt's pings at >= that many minions: ~2 min each at 10k)
#   BENCH_WORKERS=4  BENCH_STORM_WORKERS="4 2"  BENCH_STORM_ROUNDS=3 (sign-in sections: median round)
#   BENCH_SALT_SIGNIN_BUDGET=240 (s)  BENCH_SKIP_SALT=1  SALT_VENV=...
#   BENCH_KEYS=<distinct minion keys; default: what the cache holds, generating up to 1000>
#   BENCH_JOBCLEAN_N=100000 (old jobs the masters remove while answering pings)
#   BENCH_OVERLOAD_X=5 (section overload: a storm of X seconds of the master's peak sign-ins;
#   the peak is the best of BENCH_OVERLOAD_CONC="4 16 64 256" in flight; BENCH_OVERLOAD_HELD=50
#   signed-in minions are pinged during the storm)
#   BENCH_KEYS100K_SALT=10000 (section keys100k: keys for Salt's salt-key; ours always 100k)
#   BENCH_TARGETS_N=100000 (section targets100k: cached minions grain/pillar/compound targets run over)
#   BENCH_ONLY="<sections>": a subset, run in the order of SECTIONS below. The sections of
#   scripts/bench.py go first, then one line per scripts/bench-*.sh (their knobs are in
#   their headers: BENCH_FS_*, BENCH_PILLAR_*, BENCH_STATES_N, GROUP_KEYS, ...).
# Prints each section's output; the raw logs stay under $BENCH_ROOT (default
# /tmp/salt-bench.<random>): results.tsv (bench.py's rows) and <section>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
PY_SECTIONS="openssl storm returning fanout rotation footprint jobclean overload"
SECTIONS="${PY_SECTIONS% overload} fileserver pillar states orch group events clearpub formulas hsstorm"
only=" ${BENCH_ONLY:-$SECTIONS} "
export BENCH_ROOT="${BENCH_ROOT:-$(mktemp -d /tmp/salt-bench.XXXXXX)}"
mkdir -p "$BENCH_ROOT"
export SALT_VENV="${SALT_VENV:-$PWD/.venv/salt-3007.17}"
# Salt compiles ~3 pillars/s here: 200 of them keep its side of `pillar` near a minute.
export BENCH_PILLAR_SALT_N="${BENCH_PILLAR_SALT_N:-200}"
t_start=$(date +%s)
echo "bench: $(date -u '+%F %T') UTC, sections:$only, load $(cut -d' ' -f1-3 /proc/loadavg), logs $BENCH_ROOT"
cargo build --release --quiet -p salt-master -p salt-cli -p salt-minion -p salt-key -p salt-examples
# The minion as shipped for a small footprint: Cargo profile `minion`, OpenSSL linked
# statically (scripts/build-minion.sh, docs/benchmarks.md "Minion footprint").
scripts/build-minion.sh --quiet
export BENCH_MINION_BIN_DIR="${BENCH_MINION_BIN_DIR:-$PWD/target/minion}"

py_only=""
for s in $PY_SECTIONS; do [[ "$only" == *" $s "* ]] && py_only+="$s "; done
if [ -n "$py_only" ]; then
    BENCH_ONLY="$py_only" python3 scripts/bench.py "$@" 2>&1 | tee "$BENCH_ROOT/py.log"
fi

# section NAME COMMAND...: run a scripts/bench-*.sh section if selected; its output goes to
# the terminal and to $BENCH_ROOT/NAME.log (read by the TARGETS table). A failing section
# does not stop the others.
section() {
    local name=$1
    shift
    [[ "$only" == *" $name "* ]] || return 0
    echo
    echo "== $name: $* (load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%T) UTC)"
    local t0=$SECONDS
    "$@" 2>&1 | tee "$BENCH_ROOT/$name.log" || echo "section $name FAILED" | tee -a "$BENCH_ROOT/$name.log"
    echo "== $name took $((SECONDS - t0)) s"
}
# One line per section (helpers add theirs here).
section fileserver scripts/bench-fileserver.sh
section pillar scripts/bench-pillar.sh
section states scripts/bench-states.sh
section orch scripts/bench-orch.sh
section group scripts/group-bench.sh
# Salt's client interfaces (issue #33): events/s to 10 listeners, clear `publish` round trips/s.
section events env BIN_DIR=target/release scripts/bench-events.sh 3007.17 20000 10 raw
section clearpub env BIN_DIR=target/release scripts/bench-clear-publish.sh 3007.17
section reactor env BIN_DIR=target/release scripts/bench-reactor.sh
# The ten training formulas of ../shared/formulas: state.apply test=True, time and peak RSS.
section formulas env BENCH=1 SALT_CALL=target/release/salt-call scripts/formulas.sh
section api scripts/bench-api.sh
# The scaling curve and its chart (docs/scale.svg): long, so only when named in BENCH_ONLY.
section scale scripts/bench-scale.sh
# Issue #39 item 3: 1,000 swarm minions start a highstate at once, ours vs Salt (BENCH_STORM_*).
section hsstorm scripts/bench-storm.sh storm
# Issue #39 item 4: cost per minion at 1k..8k, fitted to 100k, chart docs/cost.svg: long, so
# only when named in BENCH_ONLY.
section cost env BENCH_COST_SVG="${BENCH_COST_SVG:-$PWD/docs/cost.svg}" scripts/bench-storm.sh cost
# Issue #39 item 5: salt-key -L / -A at 100,000 keys (long, so only when named in BENCH_ONLY).
section keys100k scripts/bench-salt-key.sh 100000 "${BENCH_KEYS100K_SALT:-10000}"
# Issue #39 item 5: grain/pillar/compound target lists at 100,000 cached minions (ours only:
# crates/master-core/src/minions/target_bench.rs, BENCH_TARGETS_N), only when named.
section targets100k cargo test --release --quiet -p salt-master-core --lib -- --ignored --nocapture targets_100k

echo
python3 scripts/bench_targets.py "$BENCH_ROOT"
echo "bench: $(( $(date +%s) - t_start )) s in all; load at end $(cut -d' ' -f1-3 /proc/loadavg)"
