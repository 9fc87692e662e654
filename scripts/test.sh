#!/usr/bin/env bash
# Runs every test: formatting, clippy (warnings are errors), then the whole workspace's tests.
# Tests that need real Salt look for SALT_VENV (default .venv/salt-3007.17, made by .ci/run or
# scripts/salt-venv.sh 3007.17) and say "SKIPPED" visibly where it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export SALT_VENV="${SALT_VENV:-$PWD/.venv/salt-3007.17}"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# A short fuzz smoke of every cargo-fuzz target (FUZZ_SMOKE_SECS each, default 5; 0 skips it);
# prints SKIPPED without a nightly toolchain and cargo-fuzz. Before the tests, so their
# summary stays the last thing printed.
if [ "${FUZZ_SMOKE_SECS:-5}" != 0 ]; then
  FUZZ_SMOKE=1 scripts/fuzz.sh "${FUZZ_SMOKE_SECS:-5}"
fi
cargo test --workspace --no-fail-fast -- --test-threads=2
