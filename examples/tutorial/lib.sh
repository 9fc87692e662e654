# shellcheck shell=bash
# Shared helpers of the tutorial scripts (examples/tutorial/NN-*.sh source this file).
#
# Every script builds its own world under a fresh temp root: keys, configs, logs, and daemons
# listening on loopback addresses 127.0.0.x only. Each daemon runs in its own process group
# (setsid); the EXIT trap stops every group the script started, by id, and removes the root.
#
# Environment (all optional):
#   BIN_DIR=<dir>          take salt-master, salt, salt-minion, salt-key from <dir>
#                          (default: target/debug, built with `cargo build` when missing)
#   TUTORIAL_PORT_BASE=<p> publish port p, return port p+1 (default: the script's own pair,
#                          or a random free pair when that one is busy)
#   TUTORIAL_QUICK=1       no pauses, shortest intervals (what tests/tests/examples_tutorial.rs uses)
#   TUTORIAL_KEEP=1        keep the temp root (configs, keys, logs) after the script exits
#   TMPDIR=<dir>           where the temp root is made (default /tmp)
#   TUTORIAL_PGID_FILE=<f> append the id of every process group started to <f> (for the test,
#                          which ends them itself should the script be killed)
set -euo pipefail
set +m # no job control: `setsid cmd &` then runs cmd as its own session and process group

TUT_HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$TUT_HERE/../.." && pwd)"
TUT_NAME="$(basename "$0" .sh)"
QUICK="${TUTORIAL_QUICK:-0}"
USER_NAME="$(id -un)"

say() { printf '%s\n' "$*"; }
step() { printf '\n== %s\n' "$*"; }
die() {
  printf '%s: FAILED: %s\n' "$TUT_NAME" "$*" >&2
  exit 1
}
# ok MESSAGE: the success line the integration test looks for.
ok() { printf '%s: OK: %s\n' "$TUT_NAME" "$*"; }
# pause: give a reader time to look (skipped in quick mode and when stdout is not a terminal).
pause() { if [ "$QUICK" != 1 ] && [ -t 1 ]; then sleep "${1:-2}"; fi; }

# --- binaries ---------------------------------------------------------------------------------
if [ -n "${BIN_DIR:-}" ]; then
  BIN="$(cd "$BIN_DIR" && pwd)"
else
  BIN="${CARGO_TARGET_DIR:-$REPO/target}/debug"
  for b in salt-master salt salt-minion salt-key; do
    if [ ! -x "$BIN/$b" ]; then
      say "== building the debug binaries (cargo build -p salt-master -p salt-cli -p salt-minion -p salt-key)"
      (cd "$REPO" && cargo build -p salt-master -p salt-cli -p salt-minion -p salt-key)
      break
    fi
  done
fi
for b in salt-master salt salt-minion salt-key; do
  [ -x "$BIN/$b" ] || die "$BIN/$b is missing (run cargo build, or set BIN_DIR)"
done

# --- temp root and cleanup --------------------------------------------------------------------
T="$(mktemp -d "${TMPDIR:-/tmp}/salt-tutorial-${TUT_NAME%%-*}.XXXXXX")" # short: Salt limits socket paths
PGIDS=()
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local g
  for g in "${PGIDS[@]}"; do
    kill -TERM -- "-$g" 2>/dev/null || true
    kill -CONT -- "-$g" 2>/dev/null || true # a frozen (SIGSTOP) daemon must see its TERM
  done
  for g in "${PGIDS[@]}"; do
    for _ in $(seq 100); do kill -0 -- "-$g" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$g" 2>/dev/null || true
    wait "$g" 2>/dev/null || true # reap it quietly (no "Killed" job message)
  done
  # Kept on request and after a failure (to read the logs), not after Ctrl-C / SIGTERM.
  if [ "${TUTORIAL_KEEP:-0}" = 1 ] || { [ "$rc" != 0 ] && [ "$rc" != 130 ] && [ "$rc" != 143 ]; }; then
    say "$TUT_NAME: kept $T (configs, keys, logs)"
  else
    rm -rf "$T"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME CMD...: run CMD as its own process group, console output in $T/NAME.out.
# Sets LAST_PGID (the group id, which is also the pid of CMD).
start() {
  local name=$1
  shift
  setsid "$@" >"$T/$name.out" 2>&1 </dev/null &
  LAST_PGID=$!
  PGIDS+=("$LAST_PGID")
  if [ -n "${TUTORIAL_PGID_FILE:-}" ]; then echo "$LAST_PGID" >>"$TUTORIAL_PGID_FILE"; fi
}

# stop_group PGID [SIGNAL [GRACE]]: send SIGNAL (default TERM) to one group we started; with
# TERM, wait up to GRACE seconds (default 10) for it to be gone, then SIGKILL it.
stop_group() {
  local g=$1 sig=${2:-TERM} grace=${3:-10}
  kill "-$sig" -- "-$g" 2>/dev/null || true
  if [ "$sig" = TERM ]; then
    for _ in $(seq $((grace * 10))); do kill -0 -- "-$g" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL -- "-$g" 2>/dev/null || true
    wait "$g" 2>/dev/null || true
  fi
}

# --- ports ------------------------------------------------------------------------------------
busy() { ss -Hltn "( sport = :$1 )" 2>/dev/null | grep -q .; }
# pick_ports DEFAULT: sets PUB and RET (= PUB + 1).
pick_ports() {
  local tries=0
  PUB="${TUTORIAL_PORT_BASE:-$1}"
  if [ -n "${TUTORIAL_PORT_BASE:-}" ]; then
    { busy "$PUB" || busy $((PUB + 1)); } && die "TUTORIAL_PORT_BASE $PUB (or +1) is busy"
  fi
  while busy "$PUB" || busy $((PUB + 1)); do
    tries=$((tries + 1))
    [ $tries -lt 100 ] || die "no free port pair found"
    PUB=$((20000 + RANDOM % 40000))
  done
  RET=$((PUB + 1))
}

# --- keys -------------------------------------------------------------------------------------
# gen_pair NAME DIR: DIR/NAME.pem + DIR/NAME.pub with `salt-key --gen-keys`.
gen_pair() {
  mkdir -p "$T/keygen" "$2"
  printf 'pki_dir: %s\ncachedir: %s\n' "$T/keygen/pki" "$T/keygen/cache" >"$T/keygen/master"
  "$BIN/salt-key" -c "$T/keygen" --gen-keys "$1" --gen-keys-dir "$2" >/dev/null
  [ -s "$2/$1.pem" ] && [ -s "$2/$1.pub" ] || die "salt-key --gen-keys $1 wrote nothing"
}

# --- configs ----------------------------------------------------------------------------------
# master_conf NAME INTERFACE: writes $T/NAME/conf/master (extra lines are read from stdin).
master_conf() {
  local d="$T/$1"
  mkdir -p "$d/conf" "$d/pki"
  {
    cat <<EOF
id: $1
user: $USER_NAME
root_dir: $d
pki_dir: $d/pki
cachedir: $d/cache
sock_dir: $d/sock
pidfile: $d/master.pid
log_file: $d/master.log
key_logfile: $d/key.log
log_level_logfile: debug
interface: $2
publish_port: $PUB
ret_port: $RET
worker_threads: 2
auto_accept: False
EOF
    cat
  } >"$d/conf/master"
}

# minion_conf NAME MASTER...: writes $T/NAME/conf/minion with id NAME and the master list
# (one master: a plain string); extra lines are read from stdin.
minion_conf() {
  local name=$1 d="$T/$1" m
  shift
  mkdir -p "$d/conf" "$d/pki"
  {
    cat <<EOF
id: $name
user: $USER_NAME
root_dir: $d
pki_dir: $d/pki
cachedir: $d/cache
sock_dir: $d/sock
pidfile: $d/minion.pid
log_file: $d/minion.log
log_level_logfile: debug
master_port: $RET
publish_port: $PUB
acceptance_wait_time: 1
random_reauth_delay: 0
EOF
    if [ $# = 1 ]; then
      say "master: $1"
    else
      say "master:"
      for m in "$@"; do say "  - $m"; done
    fi
    cat
  } >"$d/conf/minion"
}

# --- waiting ----------------------------------------------------------------------------------
listening() { ss -Hltn "( sport = :$2 )" 2>/dev/null | awk '{print $4}' | grep -qx "$1:$2"; }

# start_master NAME INTERFACE: starts it (-l info on the console) and waits for both ports.
# Sets LAST_PGID.
start_master() {
  start "$1" "$BIN/salt-master" -c "$T/$1/conf" -l info
  local g=$LAST_PGID
  for _ in $(seq 300); do
    listening "$2" "$RET" && listening "$2" "$PUB" && { LAST_PGID=$g; return 0; }
    kill -0 "$g" 2>/dev/null || { tail -20 "$T/$1.out" >&2; die "master $1 exited"; }
    sleep 0.1
  done
  tail -20 "$T/$1.out" >&2
  die "master $1 does not listen on $2:$RET/$PUB"
}

# wait_log FILE REGEX SECONDS: wait until a line of FILE matches REGEX (grep -E).
wait_log() {
  local f=$1 re=$2 n=$(($3 * 10))
  for _ in $(seq "$n"); do
    grep -qE -- "$re" "$f" 2>/dev/null && return 0
    sleep 0.1
  done
  say "--- last lines of $f:" >&2
  tail -30 "$f" >&2 || true
  die "no line matching /$re/ in $f after $3 s"
}

# show_log FILE REGEX: print the lines of FILE matching REGEX (the lines the tutorial shows).
show_log() { grep -E -- "$2" "$1" | sed 's/^/    /' || true; }

# accept NAME ID: accept minion ID's pending key on master NAME with salt-key.
accept() {
  "$BIN/salt-key" -c "$T/$1/conf" -a "$2" -y | sed 's/^/    /'
}

# ping MASTER TARGET SECONDS: `salt -c MASTER TARGET test.ping` until TARGET answers True.
ping() {
  local out="" end=$((SECONDS + $3))
  while [ $SECONDS -lt $end ]; do
    if out="$("$BIN/salt" -c "$T/$1/conf" "$2" test.ping -t 3 2>&1)" && grep -q True <<<"$out"; then
      sed 's/^/    /' <<<"$out"
      return 0
    fi
    sleep 0.5
  done
  printf '%s\n' "$out" >&2
  die "no True from $2 to test.ping through $1 within $3 s"
}

# wait_pending MASTER ID SECONDS: wait until minion ID's key is pending on MASTER.
wait_pending() {
  wait_file "$T/$1/pki/minions_pre/$2" "$3" || die "the key of $2 never reached $1's minions_pre"
}

# wait_file PATH SECONDS: wait until PATH exists (status 1 on timeout).
wait_file() {
  for _ in $(seq $(($2 * 10))); do
    [ -e "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

# The minion console lines the seed tutorial shows for a sign-in (grep -E).
SIGNIN_LINES='Attempting to authenticate|Loaded minion key|verify_signature|verified signature|signed and verified|Decrypting the current|Authentication with master|Failed to verify|did not authenticate'

# conf_show FILE KEYS: print the lines of config FILE whose key matches KEYS (grep -E).
conf_show() { grep -E "^($2):" "$1" | sed 's/^/    /' || true; }

# mark FILE: remember how many lines FILE has; show_since FILE REGEX prints the matching
# lines written after the mark.
mark() { MARK=$(wc -l <"$1" 2>/dev/null || echo 0); }
show_since() { tail -n +"$((MARK + 1))" "$1" | grep -E -- "$2" | sed 's/^/    /' || true; }
# wait_since FILE REGEX SECONDS: like wait_log, for lines written after the mark.
wait_since() {
  for _ in $(seq $(($3 * 10))); do
    tail -n +"$((MARK + 1))" "$1" 2>/dev/null | grep -qE -- "$2" && return 0
    sleep 0.1
  done
  tail -30 "$1" >&2 || true
  die "no new line matching /$2/ in $1 after $3 s"
}

# The minion console lines the seed tutorial shows for a failover (grep -E).
FAILOVER_LINES="Connection to master|Trying to tune|Removing possibly|ip address changed|$SIGNIN_LINES"
