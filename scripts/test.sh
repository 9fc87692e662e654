#!/usr/bin/env bash
# Runs every test: formatting, clippy (warnings are errors), then the whole workspace's tests.
# Tests that need real Salt find its venvs relative to the workspace (SALT_VENVS, SALT_VENV,
# else .venv/salt-<version>, made by .ci/run or scripts/salt-venv.sh <version>). A test whose
# prerequisite (a venv, root, PostgreSQL, a command) is missing fails under CI=true; elsewhere
# it is skipped and recorded, and the run ends with the count of skipped tests by reason
# (scripts/test-skips.sh). The exit status is cargo test's.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
mkdir -p "$target"
export SALT_RS_SKIP_LOG="$target/test-skips.log"
: > "$SALT_RS_SKIP_LOG"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# A short fuzz smoke of every cargo-fuzz target, on request (FUZZ_SMOKE_SECS=5: seconds each;
# needs a nightly toolchain and cargo-fuzz). Not in CI's run: its nightly toolchain, cargo-fuzz
# install and fuzz-workspace build cost minutes the 90-minute budget no longer has; the
# committed corpora are replayed on stable by the fuzz_corpus tests. Before the tests, so
# their summary stays the last thing printed.
if [ "${FUZZ_SMOKE_SECS:-0}" != 0 ]; then
  FUZZ_SMOKE=1 scripts/fuzz.sh "$FUZZ_SMOKE_SECS"
fi
status=0
# The test binaries three at a time (scripts/run-tests.py: most tests wait on real daemons);
# TEST_RUNNER=cargo runs them one after another as `cargo test` does.
if [ "${TEST_RUNNER:-slots}" = cargo ]; then
  cargo test --workspace --no-fail-fast -- --test-threads=2 || status=$?
else
  scripts/run-tests.py || status=$?
fi
scripts/test-skips.sh "$SALT_RS_SKIP_LOG"
exit "$status"
