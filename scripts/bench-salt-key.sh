#!/usr/bin/env bash
# Benchmark salt-key (ours, release build) next to Salt's real salt-key on the same pki_dir:
# list (-L), glob accept (-a 'm-1*' -y: ~11% of the keys; Salt: 'm-1?', see the note it
# prints), fingerprints (-F), then accepting every key (-A -y and -a '*' -y) next to the
# kernel's floor for it (the renames alone) and to real salt-key -A -y under a time cap.
#
#   scripts/bench-salt-key.sh [N_OURS] [N_SALT]     defaults: 100000 100000
#
# Measured 2026-11-23 on the shared 2-core box (load average 1.2; wall/cpu seconds), one run:
#   ours 100k keys:  -L 0.18/0.17  -a 'm-1*' (11111 keys) 0.50/0.50  -a 'm-1?' (10) 0.14/0.13
#                    -F 0.83/1.28  -A -y (100000 keys) 3.81/3.94  -a '*' -y 3.65/3.74
#                    the renames alone (floor) 2.90/2.66
#   salt-key 3007.17 100k keys: -L 1.15/1.11  -a 'm-1?' (10 keys) 11.24/10.98  -F 3.92/3.90
#                    -A -y capped at 30 s: 29 keys accepted (1.03 s per key, ~29 h for 100k)
#   startup (empty pki_dir): ours 0.02, salt-key 0.75
#
# Ours runs on N_OURS keys; Salt on N_SALT keys (both 100k by default, about three minutes;
# pass a smaller N_SALT for a quicker run). Key files are copies of 8 real RSA-2048
# public keys (listing, globbing and fingerprinting do not care that they repeat).
# SALT_VENV selects the venv (default <repo>/.venv/salt-3007.17); without it only
# ours is measured. SALT_ACCEPT_CAP (default 30) caps real salt-key -A -y, in seconds:
# without a master it spends ~1 s per accepted key on its event bus (more than a day for 100k).
set -euo pipefail
N_OURS=${1:-100000}
N_SALT=${2:-100000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${SALT_VENV:-$ROOT/.venv/salt-3007.17}
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
  # (the last line: GNU time first notes a non-zero exit status, e.g. of `timeout`)
  tail -n 1 "$f" | awk '{printf "%.2f/%.2f", $1, $2 + $3}'
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
# accept_all NAME BIN N : -A -y, then -a '*' -y, each on a fresh layout of N pending keys
accept_all() {
  local name=$1 bin=$2 n=$3 d="$WORK/all" a s na ns
  make_lab "$d" "$n"
  a=$(t "$bin" -c "$d/conf" -A -y)
  na=$(find "$d/pki/minions" -type f | wc -l)
  rm -rf "$d"
  make_lab "$d" "$n"
  s=$(t "$bin" -c "$d/conf" -a '*' -y)
  ns=$(find "$d/pki/minions" -type f | wc -l)
  rm -rf "$d"
  printf '%-22s %8d %14s %14s   (%d and %d keys moved)\n' "$name" "$n" "$a" "$s" "$na" "$ns"
}

# The floor: the same renames with nothing else (no listing, validation or output), from
# Python between directories opened once, fsync every 2,000 like ours, timed around the
# loop (interpreter start-up excluded). It is what the kernel and the file system charge
# for moving N files between two directories, one rename(2) each.
rename_floor() {
  local n=$1 d="$WORK/floor" r
  make_lab "$d" "$n"
  r=$(python3 -c '
import os, sys, time
pki = sys.argv[1]
s = os.open(pki + "/minions_pre", os.O_RDONLY | os.O_DIRECTORY)
d = os.open(pki + "/minions", os.O_RDONLY | os.O_DIRECTORY)
names = sorted(n for n in os.listdir(s) if not n.startswith("."))
w, c = time.perf_counter(), time.process_time()
for i, n in enumerate(names, 1):
    os.rename(n, n, src_dir_fd=s, dst_dir_fd=d)
    if i % 2000 == 0:
        os.fsync(d); os.fsync(s)
os.fsync(d); os.fsync(s)
print("%.2f/%.2f" % (time.perf_counter() - w, time.process_time() - c), end="")
' "$d/pki")
  printf '%-22s %8d %14s %14s   (%d keys moved: the floor)\n' "renames alone" "$n" "$r" "-" \
    "$(find "$d/pki/minions" -type f | wc -l)"
  rm -rf "$d"
}

echo "accepting every pending key (wall/cpu seconds):"
printf '%-22s %8s %14s %14s\n' "implementation" "keys" "-A -y" "-a '*' -y"
accept_all "ours (release)" "$OURS" "$N_OURS"
rename_floor "$N_OURS"
if [ -x "$VENV/bin/salt-key" ]; then
  CAP=${SALT_ACCEPT_CAP:-30}
  make_lab "$WORK/salt-all" "$N_SALT"
  capped=$(t timeout "$CAP" "$VENV/bin/salt-key" -c "$WORK/salt-all/conf" -A -y)
  got=$(find "$WORK/salt-all/pki/minions" -type f | wc -l)
  printf '%-22s %8d %14s %14s   (capped at %s s: %d keys accepted' "salt-key 3007.17" \
    "$N_SALT" "$capped" "-" "$CAP" "$got"
  if [ "$got" -gt 0 ]; then
    awk -v w="${capped%%/*}" -v k="$got" -v n="$N_SALT" \
      'BEGIN { e = w / k * n; u = e >= 7200 ? sprintf("%.0f h", e / 3600) : sprintf("%.0f min", e / 60)
               printf "; %.2f s per key: ~%s for %d)\n", w / k, u, n }'
  else
    echo ")"
  fi
  rm -rf "$WORK/salt-all"
  echo "note: real salt-key -A -y is capped: without a master it spends ~1 s of CPU per accepted"
  echo "      key in its event-bus fire_event; '-a *' is the same code path as -A in both"
fi
# keys.cache_driver: mmap_key (Salt 3008's index files, default geometry): N pending keys
# stored by Salt 3008.5's own MmapCache.atomic_rebuild (one pass), then ours: -L, -a GLOB,
# -A, -L again; and Salt 3008.5's salt-key -L on the same store. Needs the 3008.5 venv.
VENV3008=${SALT_VENV_3008:-$ROOT/.venv/salt-3008.5}
mmap_set() { # N
  local n=$1 d="$WORK/mmap" l1 g a l2 sl
  make_lab "$d" 0
  echo "keys.cache_driver: mmap_key" >>"$d/conf/master"
  "$VENV3008/bin/python" - "$d/pki" "$WORK/gen/k0.pub" "$n" <<'PY'
import sys
import salt.utils.mmap_cache as mc
pki, pub, n = sys.argv[1], open(sys.argv[2], "rb").read(), int(sys.argv[3])
c = mc.MmapCache(pki + "/.mmap_keys.idx")
assert c.atomic_rebuild((f"minion-{i:06}", b"\x02" + pub) for i in range(n))
PY
  l1=$(t "$OURS" -c "$d/conf" -L)
  g=$(t "$OURS" -c "$d/conf" -a 'minion-01*' -y)
  a=$(t "$OURS" -c "$d/conf" -A -y)
  l2=$(t "$OURS" -c "$d/conf" -L)
  printf '%-22s %8d %10s %14s %10s %10s   (%s accepted)\n' "ours, mmap_key" "$n" "$l1" "$g" "$a" "$l2" \
    "$("$OURS" -c "$d/conf" -l acc | tail -n +2 | wc -l)"
  sl=$(t "$VENV3008/bin/salt-key" -c "$d/conf" -L)
  printf '%-22s %8d %10s   (-L on the same store)\n' "salt-key 3008.5" "$n" "$sl"
  rm -rf "$d"
}
if [ -x "$VENV3008/bin/python" ]; then
echo "keys.cache_driver: mmap_key (wall/cpu seconds):"
printf '%-22s %8s %10s %14s %10s %10s\n' "implementation" "keys" "-L" "-a minion-01*" "-A -y" "-L after"
mmap_set "$N_OURS"
else
  echo "SKIPPED: mmap_key (no Salt 3008.5 venv at $VENV3008)"
fi
echo "startup (-L on an empty pki_dir):"
make_lab "$WORK/empty" 0
printf '  ours %ss' "$(t "$OURS" -c "$WORK/empty/conf" -L)"
[ -x "$VENV/bin/salt-key" ] && printf ', salt-key 3007.17 %ss' "$(t "$VENV/bin/salt-key" -c "$WORK/empty/conf" -L)"
echo
