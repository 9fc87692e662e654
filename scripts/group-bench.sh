#!/usr/bin/env bash
# Master group figures (docs/group.md): two of our masters on a real PostgreSQL started by
# the test harness; prints accept -> visible on the other master, p50/p99/max over
# GROUP_KEYS keys accepted one by one (default here 1000). Needs root and Debian's
# postgresql; prints SKIPPED otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
export GROUP_KEYS="${GROUP_KEYS:-1000}"
cargo test -p salt-integration-tests --test group_keys -- --nocapture --include-ignored 2>&1 | grep -E "^group:|SKIPPED|test result"
