#!/usr/bin/env bash
# The failover lab (needs root: network namespaces and nftables). Prints the measured table.
#
#   scripts/failover-lab.sh              each fault mode once (tests/tests/failover_lab.rs)
#   scripts/failover-lab.sh --soak [N]   N rounds of random faults with failback (default 100);
#                                        prints min/median/p95/max per fault type and fails if
#                                        any failover was over its bound (SIGSTOP and black
#                                        hole: master_alive_interval; SIGTERM, SIGKILL: 1 s)
#
# Env passed through: LAB_ALIVE_INTERVAL (default 3), LAB_MINION (path or salt:VENV),
# LAB_SEED, LAB_FAULT_LIMIT, SALT_TEST_KEEP=1 (keep the temp root).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--soak" ]; then
  export LAB_SOAK="${2:-100}"
  exec cargo test -p salt-integration-tests --test failover_lab -- --ignored --nocapture --test-threads=1 soak_random_faults
fi
exec cargo test -p salt-integration-tests --test failover_lab -- --nocapture --test-threads=1 failover_each_fault_mode
