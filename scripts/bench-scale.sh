#!/usr/bin/env bash
# Scaling curve: test.ping fan-out time and master RSS at growing fleet sizes, ours vs real
# Salt 3007.17, one chart (docs/benchmarks.md "Scaling curve"). Knobs (environment):
#   BENCH_SCALE_SIZES="1000 2000 5000 10000 15000"  BENCH_SCALE_PINGS=5 (median of)
#   BENCH_SCALE_SALT_MAX=5000 (Salt skipped above, with a note)  BENCH_SCALE_IDLE=10 (s)
#   BENCH_SCALE_SVG=<path> (copy the chart there, e.g. docs/scale.svg)  BENCH_SCALE_OUT=<dir>
#   and bench.sh's: BENCH_WORKERS, BENCH_SALT_SIGNIN_BUDGET, BENCH_SKIP_SALT, SALT_VENV, BENCH_ROOT
# Writes scale.csv and scale.svg under $BENCH_ROOT/scale (or BENCH_SCALE_OUT) and prints a table.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${BENCH_BIN_DIR:-}" ]]; then
    cargo build --release --quiet -p salt-master -p salt-examples
fi
exec python3 scripts/bench_scale.py "$@"
