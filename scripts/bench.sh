#!/usr/bin/env bash
# Benchmarks: our master vs real Salt 3007.17, side by side in one run, on this machine.
# Documented in docs/benchmarks.md. Sizes and knobs are environment variables:
#   BENCH_SIGNIN_N=1000  BENCH_FANOUT="1000 5000 10000"  BENCH_ROT_N=1000
#   BENCH_WORKERS=4  BENCH_SALT_SIGNIN_BUDGET=240 (s)  BENCH_SKIP_SALT=1  SALT_VENV=...
#   BENCH_KEYS=<distinct minion keys; default: what the cache holds, generating up to 1000>
#   BENCH_ONLY="openssl storm fanout rotation footprint jobclean fileserver" (subset, in that
#   order; fileserver is scripts/bench-fileserver.sh, knobs BENCH_FS_* there)
#   BENCH_JOBCLEAN_N=100000 (old jobs the masters remove while answering pings)
# Prints a table; the raw logs stay under $BENCH_ROOT (default /tmp/salt-bench.<random>).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p salt-master -p salt-cli -p salt-minion -p salt-key -p salt-examples
only=" ${BENCH_ONLY:-openssl storm fanout rotation footprint jobclean fileserver} "
if [[ "$only" != " fileserver " ]]; then
    python3 scripts/bench.py "$@"
fi
if [[ "$only" == *" fileserver "* ]]; then
    scripts/bench-fileserver.sh
fi
if [[ "$only" == *" scale "* ]]; then scripts/bench-scale.sh; fi # scaling curve + chart; not in the default set

