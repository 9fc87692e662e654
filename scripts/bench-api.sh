#!/usr/bin/env bash
# salt-api benchmark (docs/benchmarks.md "salt-api"): POST / local test.ping through our
# salt-api on our master vs Salt 3007.17's Python salt-api on Salt's master, same run
# (tests/tests/api_bench.rs). Knobs: BENCH_API_N (requests per client, 50), BENCH_API_C (8).
set -euo pipefail
cd "$(dirname "$0")/.."
export SALT_VENV="${SALT_VENV:-$PWD/.venv/salt-3007.17}"
cargo test -q -p salt-integration-tests --test api_bench -- --ignored --nocapture api_bench
