#!/usr/bin/env bash
# Runs every cargo-fuzz target (or the ones named) for SECONDS each, niced, one process,
# growing fuzz/corpus/<target>. Needs a nightly toolchain and cargo-fuzz; without them it
# fails under CI=true and otherwise prints SKIPPED (recorded in SALT_RS_SKIP_LOG) and
# succeeds. CI runs a 5-second smoke of every target through scripts/test.sh (FUZZ_SMOKE=1;
# .ci/run installs the nightly toolchain and cargo-fuzz); the corpora are also replayed on
# stable by
# `cargo test -p salt-proto -p salt-pki --test fuzz_corpus`.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      (default 60 seconds, all targets)
#   FUZZ_SMOKE=1 scripts/fuzz.sh 5             (what scripts/test.sh runs: the committed
#                                               corpora are read, new inputs go to a temp dir)
#
# Prints one summary line per target (executions, seconds, crashes). A crash leaves
# its input in fuzz/artifacts/<target>/ and makes the script exit non-zero.
set -euo pipefail

secs="${1:-60}"
[ $# -gt 0 ] && shift
cd "$(dirname "$0")/../fuzz"

# A missing toolchain fails under CI=true (.ci/run installs both); elsewhere it is a skip,
# recorded in SALT_RS_SKIP_LOG (scripts/test.sh counts them) as the tests' are.
missing() {
    if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
        echo "fuzz smoke: prerequisite missing: $1 (CI=true: .ci/run installs it)" >&2
        exit 1
    fi
    echo "SKIPPED: $1"
    if [ -n "${SALT_RS_SKIP_LOG:-}" ]; then
        echo "SKIPPED scripts/fuzz.sh : $1" >> "$SALT_RS_SKIP_LOG"
    fi
    exit 0
}
if ! cargo +nightly --version >/dev/null 2>&1; then
    missing "no nightly toolchain (rustup toolchain install nightly)"
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    missing "cargo-fuzz is not installed (cargo install cargo-fuzz --locked)"
fi

if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

# setsid: no controlling terminal, so nothing can ever block on a tty prompt.
detach=()
command -v setsid >/dev/null 2>&1 && detach=(setsid --wait)

logdir="${FUZZ_LOG_DIR:-$(mktemp -d)}"
mkdir -p "$logdir"
# Real runs build as cargo-fuzz's docs do (-O, AddressSanitizer). The CI smoke builds the
# fuzz workspace's dev profile (opt-level 1, fuzz/Cargo.toml) without AddressSanitizer
# (libFuzzer's coverage guidance stays): the release + ASan build of every target took 13.6
# minutes of a local CI run on 2 cores (2026-11-29); a 5-second smoke proves the targets build and survive
# their corpora, which the dev build does too (with debug assertions and overflow checks).
if [ -n "${FUZZ_SMOKE:-}" ]; then
    mode=(--dev -s none)
else
    mode=(-O)
fi
nice -n 10 cargo +nightly fuzz build "${mode[@]}"

failed=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    corpora=()
    if [ -n "${FUZZ_SMOKE:-}" ]; then
        # libFuzzer writes new inputs into the first corpus dir: keep the committed ones clean.
        scratch="$logdir/corpus-$t"
        mkdir -p "$scratch"
        corpora=("$scratch" "corpus/$t")
    fi
    log="$logdir/$t.log"
    start=$(date +%s)
    rc=0
    nice -n 10 "${detach[@]}" cargo +nightly fuzz run "${mode[@]}" "$t" ${corpora[@]+"${corpora[@]}"} -- \
        -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 </dev/null >"$log" 2>&1 || rc=$?
    end=$(date +%s)
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    crashes=$(ls "artifacts/$t" 2>/dev/null | wc -l)
    prompts=$(grep -c 'pass phrase' "$log" || true)
    echo "$t: execs=${execs:-?} seconds=$((end - start)) crashes=$crashes rc=$rc tty_prompts=$prompts corpus=$(ls "corpus/$t" | wc -l) log=$log"
    if [ "$rc" -ne 0 ]; then failed=1; fi
done
if [ -n "${FUZZ_SMOKE:-}" ] && [ "$failed" -eq 0 ] && [ -z "${FUZZ_LOG_DIR:-}" ]; then
    rm -rf "$logdir"
fi
exit "$failed"
