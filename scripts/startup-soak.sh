#!/usr/bin/env bash
# Start-up soak (needs root: network namespaces): 20 of our minions started in the same second
# against 3 healthy masters, 50 rounds (tests/tests/startup_soak.rs, tests/src/fleet.rs).
# Prints per round the "considered lost" lines (spurious leaves), the slowest ready time and
# the minions per master, then a summary; fails if any minion left a healthy master, signed
# in more than once, answers through other than exactly one master, or was not ready within
# 5 s of its start.
#
#   scripts/startup-soak.sh [ROUNDS]     default 50
#
# Env passed through: STARTUP_MINIONS (20), STARTUP_MASTERS (3), STARTUP_READY_LIMIT (5),
# STARTUP_HOLD (seconds kept running after all are ready; default interval + 1),
# STARTUP_FRESH_KEYS=1 (each minion generates its key at start), LAB_ALIVE_INTERVAL (5).
set -euo pipefail
cd "$(dirname "$0")/.."
export STARTUP_ROUNDS="${1:-50}"
exec cargo test -p salt-integration-tests --test startup_soak -- --nocapture --test-threads=1 startup_soak_short
