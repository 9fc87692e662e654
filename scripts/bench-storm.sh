#!/usr/bin/env bash
# Highstate storm (`storm`: N swarm minions start a highstate at once, our master vs Salt
# 3007.17's, master CPU per highstate) or the per-minion cost curve (`cost`: ours at growing
# sizes, a linear fit to 100,000 and its chart). Sections `hsstorm` and `cost` of
# scripts/bench.sh; knobs in scripts/bench_storm.py's header (BENCH_STORM_*, BENCH_COST_*).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${BENCH_BIN_DIR:-}" ]]; then
    cargo build --release --quiet -p salt-master -p salt-cli -p salt-examples
fi
exec python3 scripts/bench_storm.py "$@"
