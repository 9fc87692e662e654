#!/usr/bin/env bash
# Build (or reuse) a venv holding pepper (PyPI `salt-pepper`), salt-api's command-line
# client, for tests/tests/api_pepper.rs. Usage: scripts/pepper-venv.sh [DIR]. Prints the path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/.venv/pepper}"
if [ -x "$dir/bin/pepper" ] && "$dir/bin/python" -c "import pepper" 2>/dev/null; then
  echo "$dir"; exit 0
fi
rm -rf "$dir"
python3 -m venv "$dir" >&2
"$dir/bin/pip" install -q salt-pepper >&2
echo "$dir"
