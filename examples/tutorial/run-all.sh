#!/usr/bin/env bash
# Runs every tutorial step in order; stops at the first failure. Env: see lib.sh
# (TUTORIAL_QUICK=1 for the short version, BIN_DIR to use other binaries).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for s in "$here"/[0-9][0-9]-*.sh; do
  printf '\n######## %s\n' "$(basename "$s")"
  bash "$s"
done
printf '\nall tutorial steps passed\n'
