#!/usr/bin/env bash
# Step 7 (beyond the seed): the docs/migration.md rehearsal. A real Python Salt master and a
# real Python minion; the Python master is replaced by ours on the SAME config directory and
# pki_dir (nothing copied, nothing converted), then rolled back to Python.
#
#   1. Python master (master_sign_pubkey: True) + Python minion (verify_master_pubkey_sign);
#      key accepted with Python's salt-key, test.ping with Python's salt
#   2. stop it; job cache aside; start OUR salt-master with the same -c; our salt-key -L lists
#      the same keys; the Python minion answers our salt (it re-authenticates by itself)
#   3. rollback: stop ours, start the Python master again; Python's salt gets an answer
#
# Needs real Salt: SALT_VENV=<venv> (default <repo>/.venv/salt-3007.17, which .ci/run
# creates); without it the step says SKIPPED.
# Env: see lib.sh.
source "$(dirname "$0")/lib.sh"

VENV="${SALT_VENV:-$REPO/.venv/salt-3007.17}"
if [ -z "$VENV" ] || [ ! -x "$VENV/bin/salt-master" ]; then
  say "$TUT_NAME: SKIPPED: no Salt venv (set SALT_VENV)"
  exit 0
fi
PY="$VENV/bin"
say "== real Salt from $VENV"
pick_ports 24560

# One master config, Salt's keys only: both daemons read it. file_roots/pillar_roots keep the
# Python master away from /srv (ours accepts and ignores them).
master_conf m 127.0.0.1 <<CONF
master_sign_pubkey: True
open_mode: False
file_roots: {base: [$T/m/srv/salt]}
pillar_roots: {base: [$T/m/srv/pillar]}
CONF
# A Python minion, set up as the salt-wire-protocol.md recipe runs it unprivileged.
minion_conf py1 127.0.0.1 <<CONF
verify_master_pubkey_sign: True
ipv6: False
acceptance_wait_time_max: 0
auth_timeout: 5
multiprocessing: False
mine_enabled: False
grains_cache: True
enable_fqdns_grains: False
enable_gpu_grains: False
CONF

# py_master_up PGID: wait for the Python master's ports and its publisher socket.
py_master_up() {
  for _ in $(seq 900); do
    listening 127.0.0.1 "$RET" && listening 127.0.0.1 "$PUB" && [ -e "$T/m/sock/master_event_pub.ipc" ] && return 0
    kill -0 "$1" 2>/dev/null || { tail -20 "$T/pym.out" >&2; die "the Python master exited"; }
    sleep 0.1
  done
  die "the Python master did not come up in 90 s"
}
# pyping: Python's salt until py1 answers True.
pyping() {
  local out=""
  for _ in $(seq 30); do
    if out="$("$PY/salt" -c "$T/m/conf" py1 test.ping --timeout 5 2>&1)" && grep -q True <<<"$out"; then
      sed 's/^/    /' <<<"$out"
      return 0
    fi
    sleep 1
  done
  printf '%s\n' "$out" >&2
  die "py1 did not answer Python's salt"
}

step "1. the Python fleet: Python salt-master + Python salt-minion"
start pym "$PY/salt-master" -c "$T/m/conf" -l info
PYM=$LAST_PGID
py_master_up "$PYM"
wait_file "$T/m/pki/master_sign.pub" 30 || die "the Python master made no master_sign.pub"
cp "$T/m/pki/master_sign.pub" "$T/py1/pki/"
start py1 "$PY/salt-minion" -c "$T/py1/conf" -l info --disable-keepalive
PY1=$LAST_PGID
wait_pending m py1 60
"$PY/salt-key" -c "$T/m/conf" -a py1 -y | sed 's/^/    /'
wait_log "$T/py1/minion.log" 'Minion is ready to receive requests' 60
pyping
"$PY/salt-key" -c "$T/m/conf" -L >"$T/keys-python.txt"
say "    Python's salt-key -L:"
sed 's/^/      /' "$T/keys-python.txt"

step "2. switch: stop the Python master, job cache aside, start ours on the same -c"
mark "$T/py1/minion.log"
stop_group "$PYM" TERM
mv "$T/m/cache/jobs" "$T/m/cache/jobs.python" 2>/dev/null || true
start_master m 127.0.0.1
OURS=$LAST_PGID
"$BIN/salt-key" -c "$T/m/conf" -L >"$T/keys-ours.txt"
say "    our salt-key -L:"
sed 's/^/      /' "$T/keys-ours.txt"
grep -A1 '^Accepted Keys:' "$T/keys-python.txt" | grep -qx py1 || die "py1 not accepted before"
grep -A1 '^Accepted Keys:' "$T/keys-ours.txt" | grep -qx py1 || die "our salt-key does not list py1 as accepted"
say "    our salt '*' test.ping (the minion re-authenticates with the new publish key by itself):"
ping m py1 60
say "    py1's log meanwhile (Salt's own lines):"
show_since "$T/py1/minion.log" 'Connection to master|Re-initialising|ready to receive|signed and verified|Authentication' \
  | sed -E 's/^ *[0-9-]+ [0-9:,]+ \[[^]]*\]/    /' | cut -c1-140

step "3. rollback: stop ours, start the Python master again"
stop_group "$OURS" TERM
mv "$T/m/cache/jobs" "$T/m/cache/jobs.salt-rs" 2>/dev/null || true
mv "$T/m/cache/jobs.python" "$T/m/cache/jobs" 2>/dev/null || true
mark "$T/py1/minion.log"
start pym2 "$PY/salt-master" -c "$T/m/conf" -l info
py_master_up "$LAST_PGID"
wait_since "$T/py1/minion.log" 'Minion is ready to receive requests' 60
pyping
# A Python minion can take a while to stop on SIGTERM; this one has nothing left to flush.
stop_group "$PY1" TERM 2

ok "Python master -> ours -> Python on one pki_dir: same keys, py1 answered each master"
