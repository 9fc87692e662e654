#!/usr/bin/env bash
# salt-api benchmarks (docs/benchmarks.md "salt-api"), ours vs Salt 3007.17's Python salt-api
# on Salt's master, same run:
#  1. one minion: POST / local test.ping (tests/tests/api_bench.rs; knobs BENCH_API_N, _C);
#  2. 100 swarm minions: POST / local test.ping, runner jobs.list_jobs, SSE events/s to 50
#     clients (scripts/bench_api.py; knobs in its docstring). Release build unless
#     BENCH_BIN_DIR names other binaries (e.g. target/debug). BENCH_API_ONLY=one|fleet.
set -euo pipefail
cd "$(dirname "$0")/.."
export SALT_VENV="${SALT_VENV:-$PWD/.venv/salt-3007.17}"
only="${BENCH_API_ONLY:-one fleet}"
if [[ " $only " == *" one "* ]]; then
    cargo test -q -p salt-integration-tests --test api_bench -- --ignored --nocapture api_bench
fi
if [[ " $only " == *" fleet "* ]]; then
    if [[ -z "${BENCH_BIN_DIR:-}" ]]; then
        cargo build --release --quiet -p salt-master -p salt-api -p salt-examples
    fi
    python3 scripts/bench_api.py
fi
