#!/usr/bin/env bash
# Highstate of N file states (default 200), masterless: our salt-call vs Salt's
# (`salt-call --local state.apply`), each in a throwaway root. Prints wall time and peak RSS
# (GNU time) for the first apply (all files new) and a second one (nothing to change).
# Then the same highstate through a master (scripts/bench_highstate.py): `salt hs-* state.apply`
# with our master + our minion vs Salt's master + a Python minion (BENCH_STATES_MASTER=0 skips).
# Usage: scripts/bench-states.sh [N]   (N also from BENCH_STATES_N; SALT_VENV defaults to
# .venv/salt-3007.17; BENCH_SKIP_SALT=1 runs ours only)
set -euo pipefail
N=${1:-${BENCH_STATES_N:-200}}
HERE=$(cd "$(dirname "$0")/.." && pwd)
VENV=${SALT_VENV:-$HERE/.venv/salt-3007.17}
OURS=${SALT_CALL:-$HERE/target/release/salt-call}
[ -x "$OURS" ] || cargo build --release -q -p salt-minion --bin salt-call
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/srv"
printf "base:\n  '*':\n    - many\n" > "$T/srv/top.sls"
{
  echo "{% set out = opts['root_dir'] ~ '/out' %}"
  echo "{% for i in range($N) %}"
  echo "{{ out }}/f{{ i }}.conf:"
  echo "  file.managed:"
  echo "    - contents: 'value {{ i }}'"
  echo "    - mode: '0640'"
  echo "    - makedirs: True"
  echo "{% endfor %}"
} > "$T/srv/many.sls"
run() { # name bin
  local root="$T/$1"
  mkdir -p "$root/conf"
  printf "id: bench\nfile_client: local\nroot_dir: %s\ncachedir: %s/cache\npki_dir: %s/pki\nlog_file: %s/log\nfile_roots:\n  base: [%s/srv]\n" \
    "$root" "$root" "$root" "$root" "$T" > "$root/conf/minion"
  for pass in first second; do
    ( cd "$root" && /usr/bin/time -f "%e %M" -o "$root/time.$pass" "$2" -c conf --local --out json state.apply > "$root/out.$pass.json" ) || true
    read -r wall rss < "$root/time.$pass"
    local ok; ok=$(grep -c '"result": true' "$root/out.$pass.json" || true)
    printf "%-7s %-6s wall %6.2f s  peak RSS %7.1f MiB  states ok %s/%s\n" "$1" "$pass" "$wall" "$(echo "$rss/1024" | bc -l)" "$ok" "$N"
  done
}
[ -n "${BENCH_SKIP_SALT:-}" ] || run python "$VENV/bin/salt-call"
run ours "$OURS"
if [ "${BENCH_STATES_MASTER:-1}" != 0 ]; then
  [ -x "$HERE/target/release/salt-master" ] && [ -x "$HERE/target/release/salt-minion" ] \
    || cargo build --release -q -p salt-master -p salt-minion
  SALT_VENV="$VENV" BENCH_ROOT="$T/hs" python3 "$HERE/scripts/bench_highstate.py" "$N"
fi
