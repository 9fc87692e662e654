#!/usr/bin/env bash
# Orchestrate: `salt-run state.orchestrate` of N `salt.function` steps (default 50), our
# master vs Salt 3007.17's, each with a Python 3007.17 minion (scripts/bench_orch.py).
#   scripts/bench-orch.sh [N]    BENCH_ORCH_ROUNDS (default 3)  BENCH_ORCH_MINION=ours
#   BENCH_BIN_DIR (default target/release)  SALT_VENV (default .venv/salt-3007.17)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-${BENCH_ORCH_N:-50}}"
if [ -z "${BENCH_BIN_DIR:-}" ]; then
  [ -x target/release/salt-master ] && [ -x target/release/salt-run ] && [ -x target/release/salt-minion ] \
    || cargo build --release -q -p salt-master -p salt-cli -p salt-minion
fi
export BENCH_ROOT="${BENCH_ROOT:-$(mktemp -d /tmp/salt-bench.XXXXXX)}/orch"
mkdir -p "$BENCH_ROOT"
python3 scripts/bench_orch.py "$N"
