#!/usr/bin/env bash
# Benchmark salt-key (ours, release build) next to Salt's real salt-key on the same pki_dir:
# list (-L), glob accept (-a 'm-1*' -y: ~11% of the keys; Salt: 'm-1?', see the note it
# prints), fingerprints (-F).
#
#   scripts/bench-salt-key.sh [N_OURS] [N_SALT]     defaults: 100000 100000
#
# Measured 2026-11-22 on the shared 2-core box (load average ~1; wall/cpu seconds), one run:
#   ours 100k keys:  -L 0.13/0.13  -a 'm-1*' (11111 keys) 0.54/0.55  -a 'm-1?' (10) 0.15/0.14
#                    -F 0.72/1.21
#   salt-key 3007.17 100k keys: -L 0.88/0.86  -a 'm-1?' (10 keys) 11.17/11.00  -F 5.01/5.00
#   startup (empty pki_dir): ours 0.00, salt-key 0.54
#
# Ours runs on N_OURS keys; Salt on N_SALT keys (both 100k by default, about two minutes;
# pass a smaller N_SALT for a quicker run). Key files are copies of 8 real RSA-2048
# public keys (listing, globbing and fingerprinting do not care that they repeat).
# SALT_VENV selects the venv (default /work/main/.venv/salt-3007.17); without it only
# ours is measured.
set -euo pipefail
N_OURS=${1:-100000}
N_SALT=${2:-100000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${SALT_VENV:-/work/main/.venv/salt-3007.17}
OURS=$ROOT/target/release/salt-key
[ -x "$OURS" ] || cargo build --release -p salt-key --manifest-path "$ROOT/Cargo.toml"
WORK=$(mktemp -d /tmp/bench-salt-key.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# 8 real public keys.
mkdir -p "$WORK/gen"
for i in 0 1 2 3 4 5 6 7; do
  "$OURS" -c "$WORK/gen" --gen-keys "k$i" --gen-keys-dir "$WORK/gen" >/dev/null
done

# make_lab DIR N : config + pki_dir with N pending keys m-0 .. m-(N-1)
make_lab() {
  local d=$1 n=$2
  mkdir -p "$d/conf" "$d/cache" "$d/pki"/{minions,minions_pre,minions_rejected,minions_denied}
  chmod 700 "$d/pki"
  cat >"$d/conf/master" <<EOF
root_dir: $d
pki_dir: $d/pki
cachedir: $d/cache
sock_dir: $d/sock
key_logfile: $d/key.log
log_file: $d/master.log
id: benchmaster
user: $(id -un)
EOF
  python3 - "$WORK/gen" "$d/pki/minions_pre" "$n" <<'PY'
import sys
gen, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
keys = [open(f"{gen}/k{i}.pub").read() for i in range(8)]
for i in range(n):
    with open(f"{dst}/m-{i}", "w") as f:
        f.write(keys[i % 8])
PY
}

# t CMD... : "wall/cpu" seconds of one run (output discarded). CPU = user + sys, which
# is what to compare on a loaded machine (the wall time includes waiting for a core).
t() {
  local f
  f=$(mktemp)
  /usr/bin/time -f "%e %U %S" -o "$f" "$@" >/dev/null 2>&1 </dev/null || true
  awk '{printf "%.2f/%.2f", $1, $2 + $3}' "$f"
  rm -f "$f"
}

run_set() { # NAME BIN N GLOB
  local name=$1 bin=$2 n=$3 g=$4 d="$WORK/$1"
  make_lab "$d" "$n"
  local list glob fp
  list=$(t "$bin" -c "$d/conf" -L)
  fp=$(t "$bin" -c "$d/conf" -F)
  glob=$(t "$bin" -c "$d/conf" -a "$g" -y)
  local moved
  moved=$(find "$d/pki/minions" -type f | wc -l)
  printf '%-22s %8d %10s %14s %10s   (-a %s: %d keys)\n' "$name" "$n" "$list" "$glob" "$fp" "$g" "$moved"
  rm -rf "$d"
}

echo "wall/cpu seconds; load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
printf '%-22s %8s %10s %14s %10s\n' "implementation" "keys" "-L" "-a GLOB -y" "-F"
run_set "ours (release)" "$OURS" "$N_OURS" 'm-1*'
if [ -x "$VENV/bin/salt-key" ]; then
  [ "$N_SALT" != "$N_OURS" ] && run_set "ours (release)" "$OURS" "$N_SALT" 'm-1*'
  run_set "ours (release)" "$OURS" "$N_SALT" 'm-1?'
  run_set "salt-key 3007.17" "$VENV/bin/salt-key" "$N_SALT" 'm-1?'
  echo "note: real salt-key accepts only 'm-1?' (10 keys): without a running master each accepted key"
  echo "      waits ~1 s in its event-bus fire_event, so 'm-1*' (11% of the keys) would take hours"
  [ "$N_SALT" != "$N_OURS" ] && echo "note: real salt-key measured on $N_SALT keys, not $N_OURS (it takes minutes at that size)"
else
  echo "SKIPPED: no Salt venv at $VENV (only ours measured)"
fi
echo "startup (-L on an empty pki_dir):"
make_lab "$WORK/empty" 0
printf '  ours %ss' "$(t "$OURS" -c "$WORK/empty/conf" -L)"
[ -x "$VENV/bin/salt-key" ] && printf ', salt-key 3007.17 %ss' "$(t "$VENV/bin/salt-key" -c "$WORK/empty/conf" -L)"
echo
