#!/usr/bin/env bash
# The last step of scripts/test.sh: how many tests were skipped, by reason, from the log the
# tests append to (SALT_RS_SKIP_LOG; salt_testkit::require writes one line per skip,
# `SKIPPED <test> : <reason>`). Under CI=true a missing prerequisite fails its test instead,
# so the count there is 0. Prints only; its exit status is 0 (the tests' result is cargo's).
#
#   scripts/test-skips.sh [LOG]     (default: $SALT_RS_SKIP_LOG, else target/test-skips.log)
set -uo pipefail
cd "$(dirname "$0")/.."
log="${1:-${SALT_RS_SKIP_LOG:-${CARGO_TARGET_DIR:-target}/test-skips.log}}"
n=0
[ -s "$log" ] && n=$(grep -c '^SKIPPED ' "$log")
if [ "$n" -eq 0 ]; then
    echo "== skipped tests: 0"
    exit 0
fi
echo "== skipped tests: $n (a prerequisite was missing; CI=true fails them instead; list in $log)"
sed -n 's/^SKIPPED .* : //p' "$log" | sort | uniq -c | sort -rn | sed 's/^ *\([0-9]*\) /   \1  /'
exit 0
