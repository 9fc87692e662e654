#!/usr/bin/env bash
# The local lab: two of our masters, on 127.0.0.1 and 127.0.0.2 (plain loopback, no namespace),
# sharing one master_sign pair (master_sign_pubkey: True), and one minion with both in a
# failover list (verify_master_pubkey_sign: True). The minion key is accepted on both masters
# with our salt-key, `salt '*' test.ping` runs through the first master, then the lab waits
# for Ctrl-C and stops everything it started (by process group, and by pid file for a master
# restarted with -d), saying what it stopped and removed.
#
#   scripts/lab.sh            run it (prints how to use it)
#   scripts/lab.sh --check    start, ping once, exit 0 on success (used by tests/tests/lab_script.rs)
#   scripts/lab.sh --group    the same two masters as a master group on one PostgreSQL
#                             (docs/group.md): keys and jobs in the database (cluster_id,
#                             keys.cache_driver: postgres, master_job_cache: pgjsonb); the key
#                             is accepted once, on m1. Needs root and Debian's postgresql
#                             (initdb/postgres under /usr/lib/postgresql/*/bin). With --check too.
#
# Env: LAB_BIN_DIR       take salt-master/salt/salt-minion/salt-key from here (no build)
#      LAB_PORT_BASE     publish port; return port is LAB_PORT_BASE+1 (default 4505/4506,
#                        or a free pair if those are busy)
#      LAB_ALIVE_INTERVAL  master_alive_interval of the minion (default 5)
#      LAB_KEEP=1        keep the temp root (configs, keys, logs) after exit
set -euo pipefail
set +m # no job control: `setsid cmd &` then runs cmd as its own session and group leader

CHECK=0
GROUP=0
for arg in "$@"; do
  case "$arg" in
    --check) CHECK=1 ;;
    --group) GROUP=1 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--check] [--group]" >&2; exit 64 ;;
  esac
done

REPO="$(cd "$(dirname "$0")/.." && pwd)"
ID=lab-minion
ALIVE="${LAB_ALIVE_INTERVAL:-5}"

say() { printf '%s\n' "$*"; }
die() { printf 'lab: %s\n' "$*" >&2; exit 1; }

# --- binaries ---------------------------------------------------------------------------------
if [ -n "${LAB_BIN_DIR:-}" ]; then
  BIN="$(cd "$LAB_BIN_DIR" && pwd)"
else
  say "== building (cargo build --release -p salt-master -p salt-cli -p salt-minion -p salt-key)"
  (cd "$REPO" && cargo build --release -p salt-master -p salt-cli -p salt-minion -p salt-key)
  BIN="${CARGO_TARGET_DIR:-$REPO/target}/release"
fi
for b in salt-master salt salt-minion salt-key; do
  [ -x "$BIN/$b" ] || die "$BIN/$b is missing"
done

# --- cleanup: every daemon is its own process group -------------------------------------------
T="$(mktemp -d /tmp/salt-lab.XXXXXX)"
PGIDS=()    # the process groups started here (one per daemon)
NAMES=()    # their names, same order
SLEEPER=""  # the idle `sleep` of the final wait loop
# pid_of NAME: the daemon's pid from its pid file (also after a restart with -d), else "".
pid_of() {
  local f
  case "$1" in m1|m2) f="$T/$1/master.pid" ;; minion) f="$T/n/minion.pid" ;; pg) f="$T/pg/postmaster.pid" ;; *) return 0 ;; esac
  if [ -s "$f" ]; then head -n1 "$f" 2>/dev/null || true; fi
}
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$SLEEPER" ]; then kill "$SLEEPER" 2>/dev/null || true; fi
  local i name pid stopped=()
  # Each daemon: by its pid file (a master restarted with -d has a new pid) and by the
  # process group started here.
  for i in "${!NAMES[@]}"; do
    name=${NAMES[$i]}
    pid=$(pid_of "$name")
    if alive "$pid"; then
      kill -TERM "$pid" 2>/dev/null || true
      kill -CONT "$pid" 2>/dev/null || true
      stopped+=("$name (pid $pid)")
    elif kill -0 -- "-${PGIDS[$i]}" 2>/dev/null; then
      stopped+=("$name (pid ${PGIDS[$i]})")
    fi
    kill -TERM -- "-${PGIDS[$i]}" 2>/dev/null || true
    kill -CONT -- "-${PGIDS[$i]}" 2>/dev/null || true
  done
  for i in "${!NAMES[@]}"; do
    pid=$(pid_of "${NAMES[$i]}")
    for _ in $(seq 50); do
      kill -0 -- "-${PGIDS[$i]}" 2>/dev/null || alive "$pid" || break
      sleep 0.1
    done
    kill -KILL -- "-${PGIDS[$i]}" 2>/dev/null || true
    if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
  done
  if [ "${#stopped[@]}" -gt 0 ]; then
    say "lab: stopped ${stopped[*]}"
  fi
  if [ "${LAB_KEEP:-0}" = 1 ] || { [ "$rc" != 0 ] && [ "$CHECK" = 1 ]; }; then
    say "lab: kept $T (configs, keys, logs)"
  else
    rm -rf "$T"
    say "lab: removed $T"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Starts "$@" in a new session (its own process group); logs to $1-named files in dir $LOGDIR.
start() {
  local name=$1; shift
  setsid "$@" >"$T/$name.out" 2>&1 </dev/null &
  PGIDS+=("$!")
  NAMES+=("$name")
}

# --- ports ------------------------------------------------------------------------------------
busy() { ss -Hltn "( sport = :$1 )" 2>/dev/null | grep -q .; }
if [ -n "${LAB_PORT_BASE:-}" ]; then
  PUB=$LAB_PORT_BASE
  busy "$PUB" && die "LAB_PORT_BASE $PUB is busy"
else
  PUB=4505
  tries=0
  while busy "$PUB" || busy $((PUB + 1)); do
    tries=$((tries + 1)); [ $tries -lt 100 ] || die "no free port pair found"
    PUB=$((20000 + RANDOM % 40000))
  done
fi
RET=$((PUB + 1))
busy "$RET" && die "port $RET is busy"

# --- keys -------------------------------------------------------------------------------------
mkdir -p "$T/keys/conf" "$T/n/pki"
# gen_keys NAME DIR: DIR/NAME.pem + DIR/NAME.pub with our salt-key (openssl if that fails).
gen_keys() {
  if "$BIN/salt-key" -c "$T/keys/conf" --gen-keys "$1" --gen-keys-dir "$2" >/dev/null \
      && [ -s "$2/$1.pem" ] && [ -s "$2/$1.pub" ]; then
    return 0
  fi
  say "lab: note: salt-key --gen-keys $1 failed; generating it with openssl"
  openssl genrsa -traditional -out "$2/$1.pem" 2048 2>/dev/null
  openssl rsa -in "$2/$1.pem" -pubout -out "$2/$1.pub" 2>/dev/null
  chmod 400 "$2/$1.pem"
}
printf 'pki_dir: %s\ncachedir: %s\nlog_file: %s\n' "$T/keys/pki" "$T/keys/cache" "$T/keys/key.log" \
  >"$T/keys/conf/master"
gen_keys master_sign "$T/keys"
gen_keys minion "$T/n/pki"
cp "$T/keys/master_sign.pub" "$T/n/pki/"

# --- the group's PostgreSQL (--group) ---------------------------------------------------------
if [ "$GROUP" = 1 ]; then
  [ "$(id -u)" = 0 ] || die "--group needs root (it starts PostgreSQL as the postgres user)"
  PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
  [ -x "$PGBIN/initdb" ] && [ -x "$PGBIN/postgres" ] || die "--group needs Debian's postgresql (apt-get install postgresql)"
  id postgres >/dev/null 2>&1 || die "--group needs the postgres user"
  chmod 711 "$T"
  mkdir -p "$T/pg" "$T/pgsock"
  chown postgres "$T/pg" "$T/pgsock"
  runuser -u postgres -- "$PGBIN/initdb" -D "$T/pg" -A trust --no-sync >"$T/initdb.out" 2>&1 \
    || { cat "$T/initdb.out" >&2; die "initdb failed"; }
  say "== PostgreSQL ($PGBIN) on the Unix socket in $T/pgsock"
  start pg runuser -u postgres -- "$PGBIN/postgres" -D "$T/pg" -k "$T/pgsock" \
    -c listen_addresses= -c fsync=off
  for _ in $(seq 300); do [ -S "$T/pgsock/.s.PGSQL.5432" ] && break; sleep 0.1; done
  [ -S "$T/pgsock/.s.PGSQL.5432" ] || { tail -20 "$T/pg.out" >&2; die "PostgreSQL did not start"; }
fi

USER_NAME="$(id -un)"
master_conf() { # $1 = name, $2 = interface
  local d="$T/$1"
  mkdir -p "$d/conf" "$d/pki/minions_pre"
  cp "$T/keys/master_sign.pem" "$T/keys/master_sign.pub" "$d/pki/"
  # The minion's key arrives as pending; the operator accepts it with salt-key below (in a
  # group it reaches the database when the minion signs in).
  [ "$GROUP" = 1 ] || cp "$T/n/pki/minion.pub" "$d/pki/minions_pre/$ID"
  cat >"$d/conf/master" <<EOF
id: lab-$1
user: $USER_NAME
root_dir: $d
pki_dir: $d/pki
cachedir: $d/cache
sock_dir: $d/sock
pidfile: $d/master.pid
log_file: $d/master.log
key_logfile: $d/key.log
log_level: info
log_level_logfile: debug
interface: $2
publish_port: $PUB
ret_port: $RET
worker_threads: 3
auto_accept: False
master_sign_pubkey: True
EOF
  if [ "$GROUP" = 1 ]; then
    cat >>"$d/conf/master" <<EOF
cluster_id: lab
keys.cache_driver: postgres
master_job_cache: pgjsonb
postgres.host: $T/pgsock
postgres.port: 5432
postgres.user: postgres
postgres.db: postgres
EOF
  fi
}
master_conf m1 127.0.0.1
master_conf m2 127.0.0.2

mkdir -p "$T/n/conf"
cat >"$T/n/conf/minion" <<EOF
id: $ID
user: $USER_NAME
root_dir: $T/n
pki_dir: $T/n/pki
cachedir: $T/n/cache
sock_dir: $T/n/sock
pidfile: $T/n/minion.pid
log_file: $T/n/minion.log
log_level: info
log_level_logfile: debug
master: [127.0.0.1, 127.0.0.2]
master_port: $RET
publish_port: $PUB
master_type: failover
master_alive_interval: $ALIVE
master_failback: True
master_failback_interval: $ALIVE
retry_dns: 0
verify_master_pubkey_sign: True
acceptance_wait_time: 1
random_reauth_delay: 0
EOF

# --- start ------------------------------------------------------------------------------------
say "== lab root $T (ports $PUB/$RET)"
start m1 "$BIN/salt-master" -c "$T/m1/conf" -l info
M1=${PGIDS[-1]}
start m2 "$BIN/salt-master" -c "$T/m2/conf" -l info
M2=${PGIDS[-1]}

listening() { ss -Hltn "( sport = :$2 )" 2>/dev/null | awk '{print $4}' | grep -qx "$1:$2"; }
for a in 127.0.0.1 127.0.0.2; do
  for _ in $(seq 300); do
    listening "$a" "$RET" && listening "$a" "$PUB" && break
    for g in "$M1" "$M2"; do kill -0 "$g" 2>/dev/null || { tail -20 "$T"/m?.out >&2; die "a master exited"; }; done
    sleep 0.1
  done
  listening "$a" "$RET" || { tail -20 "$T"/m?.out >&2; die "master on $a does not listen on $RET"; }
done

if [ "$GROUP" = 1 ]; then
  # One group: the minion signs in (pending in the database), salt-key on m1 accepts it
  # for both masters.
  start minion "$BIN/salt-minion" -c "$T/n/conf" -l info
  MINION=${PGIDS[-1]}
  for _ in $(seq 300); do
    "$BIN/salt-key" -c "$T/m1/conf" -l un 2>/dev/null | grep -qx "$ID" && break
    sleep 0.1
  done
  "$BIN/salt-key" -c "$T/m1/conf" -a "$ID" -y
  for _ in $(seq 100); do [ -e "$T/m2/pki/minions/$ID" ] && break; sleep 0.1; done
  [ -e "$T/m2/pki/minions/$ID" ] || die "accepted on m1, not on m2"
  say "== accepted once, on m1: m2 has it too"
else
  for m in m1 m2; do
    "$BIN/salt-key" -c "$T/$m/conf" -a "$ID" -y
  done
  start minion "$BIN/salt-minion" -c "$T/n/conf" -l info
  MINION=${PGIDS[-1]}
fi

say "== salt '*' test.ping (through m1, 127.0.0.1)"
ok=0
for _ in $(seq 30); do
  kill -0 "$MINION" 2>/dev/null || { tail -20 "$T/minion.out" >&2; die "the minion exited"; }
  if out="$("$BIN/salt" -c "$T/m1/conf" '*' test.ping -t 3 2>&1)" && grep -q True <<<"$out"; then
    ok=1; break
  fi
  sleep 1
done
printf '%s\n' "$out"
[ "$ok" = 1 ] || { tail -20 "$T/minion.out" >&2; die "no answer to test.ping through m1"; }

if [ "$GROUP" = 1 ]; then
  jid=$("$BIN/salt" -c "$T/m1/conf" --show-jid '*' test.ping -t 3 2>&1 | sed -n 's/^jid: //p' | head -n1)
  say "== salt-run jobs.lookup_jid $jid on m2 (the job ran through m1)"
  "$BIN/salt-run" -c "$T/m2/conf" jobs.lookup_jid "$jid" || die "jobs.lookup_jid on m2 failed"
fi

if [ "$CHECK" = 1 ]; then
  say "lab: check passed"
  exit 0
fi

# $T/salt: `salt` on the master the minion is on (it is on one at a time): m1, else m2.
cat >"$T/salt" <<EOF
#!/usr/bin/env bash
# salt through the lab master the minion is connected to: m1 first, then m2.
for m in m1 m2; do
  out=\$("$BIN/salt" -c "$T/\$m/conf" "\$@" 2>&1); rc=\$?
  if ! grep -q -e 'Minion did not return' -e 'No return received' -e 'Failed to connect to the Master' <<<"\$out"; then
    printf '(through %s)\\n%s\\n' "\$m" "\$out"; exit \$rc
  fi
done
printf '%s\\n' "\$out"; exit \$rc
EOF
chmod +x "$T/salt"

cat <<EOF

The lab is running (Ctrl-C stops it and removes $T; LAB_KEEP=1 keeps it).

  masters   m1 = 127.0.0.1 (pid $M1)   m2 = 127.0.0.2 (pid $M2)   ports $PUB (publish) / $RET (return)
  minion    $ID (pid $MINION), failover list [127.0.0.1, 127.0.0.2], master_alive_interval $ALIVE s,
            failback on; both masters sign their key with the shared master_sign pair

  run jobs      $T/salt '*' test.ping
                $T/salt '*' cmd.run 'uname -a'
                ($T/salt runs salt on the master the minion is on: m1, else m2; one master
                directly: $BIN/salt -c $T/m1/conf '*' test.ping)
  keys          $BIN/salt-key -c $T/m1/conf -L        (or -f $ID, -d $ID -y, -a ID -y)
  see failover  kill -STOP $M1     (freeze m1), then within ~$((ALIVE + 1)) s the minion is on m2:
                $T/salt '*' test.ping
                kill -CONT $M1     (unfreeze: the minion fails back to m1 within ~$((2 * ALIVE)) s)
  stop, restart kill -TERM $M1     (stop m1), then start it again in the background:
                $BIN/salt-master -c $T/m1/conf -d
                (its pid is then in $T/m1/master.pid; Ctrl-C here stops it too)
  logs          $T/m1/master.log  $T/m2/master.log  $T/n/minion.log
                (console output: $T/m1.out $T/m2.out $T/minion.out)
EOF
if [ "$GROUP" = 1 ]; then
  cat <<EOF
  group         both masters share keys and jobs in PostgreSQL (socket $T/pgsock, db postgres):
                $BIN/salt-key -c $T/m2/conf -L              (what m1 accepted)
                $BIN/salt-run -c $T/m2/conf jobs.list_jobs  (jobs run through either master)
                $BIN/salt-run -c $T/m2/conf manage.present  (who holds the minion)
                runuser -u postgres -- $PGBIN/psql -h $T/pgsock -d postgres \\
                    -c 'select jid, id, return from salt_returns'
EOF
fi

# Idle until Ctrl-C; the cleanup ends this `sleep` too (a background job of a script ignores
# SIGINT, so it would outlive the lab).
while true; do
  sleep 3600 &
  SLEEPER=$!
  wait "$SLEEPER" || true
done
