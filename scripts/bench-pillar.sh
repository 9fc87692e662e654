#!/usr/bin/env bash
# Pillar compiles/s for N minions (default 1000): our master's compiler vs Salt's master's
# (salt.pillar.get_pillar(...).compile_pillar(), the work of one `_pillar` request), on the
# golden formula tree tests/data/pillar-golden, same grains, same machine, one after the other.
#   scripts/bench-pillar.sh [N]          BENCH_PILLAR_THREADS (ours, default "1 2")
#   BENCH_PILLAR_SALT_N: minions for Salt's side (default N; Salt needs ~0.3 s each here)
#   SALT_VENV (default .venv/salt-3007.17)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-1000}"
VENV="${SALT_VENV:-$PWD/.venv/salt-3007.17}"
TREE="$PWD/tests/data/pillar-golden"
EXTRA="nodegroups: {grouped: 'L@pym1,other'}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cargo build --release -q -p salt-examples --bin pillar_bench
mkdir -p "$WORK/conf"
cat > "$WORK/conf/minion" <<CONF
id: pym1
file_client: local
root_dir: $WORK/root
pki_dir: $WORK/root/pki
cachedir: $WORK/root/cache
sock_dir: $WORK/root/sock
log_file: $WORK/root/log
CONF
"$VENV/bin/salt-call" -c "$WORK/conf" --local grains.items --out json \
  | "$VENV/bin/python" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["local"]))' \
  > "$WORK/grains.json"
echo "pillar compiles, $N minions, tree tests/data/pillar-golden ($(nproc) cores)"
for t in ${BENCH_PILLAR_THREADS:-1 2}; do
  target/release/pillar_bench --tree "$TREE" --grains "$WORK/grains.json" -n "$N" \
    --threads "$t" --extra "$EXTRA"
done
"$VENV/bin/python" scripts/bench-pillar.py "$TREE" "$WORK/grains.json" "${BENCH_PILLAR_SALT_N:-$N}" "$EXTRA"
