#!/usr/bin/env bash
# Runs every cargo-fuzz target (or the ones named) for SECONDS each, niced, one process,
# growing fuzz/corpus/<target>. Needs a nightly toolchain and cargo-fuzz; otherwise
# prints SKIPPED and succeeds. Not part of CI (the corpora are replayed on stable by
# `cargo test -p salt-proto -p salt-pki --test fuzz_corpus`).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      (default 60 seconds, all targets)
#
# Prints one summary line per target (executions, seconds, crashes). A crash leaves
# its input in fuzz/artifacts/<target>/ and makes the script exit non-zero.
set -euo pipefail

secs="${1:-60}"
[ $# -gt 0 ] && shift
cd "$(dirname "$0")/../fuzz"

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "SKIPPED: no nightly toolchain (rustup toolchain install nightly)"
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "SKIPPED: cargo-fuzz not installed (cargo install cargo-fuzz --locked)"
    exit 0
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
nice -n 10 cargo +nightly fuzz build -O

failed=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    log="$logdir/$t.log"
    start=$(date +%s)
    rc=0
    nice -n 10 "${detach[@]}" cargo +nightly fuzz run -O "$t" -- \
        -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 </dev/null >"$log" 2>&1 || rc=$?
    end=$(date +%s)
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    crashes=$(ls "artifacts/$t" 2>/dev/null | wc -l)
    prompts=$(grep -c 'pass phrase' "$log" || true)
    echo "$t: execs=${execs:-?} seconds=$((end - start)) crashes=$crashes rc=$rc tty_prompts=$prompts corpus=$(ls "corpus/$t" | wc -l) log=$log"
    if [ "$rc" -ne 0 ]; then failed=1; fi
done
exit "$failed"
