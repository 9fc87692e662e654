#!/usr/bin/env bash
# Chaos over a 3-master group on a real PostgreSQL (docs/group.md): 3 failover minions, jobs
# published on every live master every second; a quarter in, PostgreSQL is SIGKILLed and
# restarted 4 s later; half-way, master ma is SIGKILLed, restarted at three quarters. Prints
# "returns lost: N" (every return a minion executed must be in salt_returns exactly once).
# GROUP_CHAOS_SECS sets the length (default here 300; the test suite runs 24 s). Needs root
# and Debian's postgresql; prints SKIPPED otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
export GROUP_CHAOS_SECS="${GROUP_CHAOS_SECS:-300}"
cargo test -p salt-integration-tests --test group_jobs group_jobs_chaos -- --nocapture 2>&1 \
  | grep -E "^chaos:|SKIPPED|test result|panicked"
