#!/bin/sh
# Regenerates tests/data/fileserver-golden.json: the replies of a real Salt master
# (SALT_VENV, default .venv/salt-3007.17) to the file-server requests of
# scripts/fileserver-requests.py, sent through Salt's own request channel by a signed-in
# minion identity. tests/tests/fileserver_golden.rs sends the same requests to our master and
# compares. The master config is fileserver_master_conf below (the test writes the same).
set -eu
cd "$(dirname "$0")/.."
VENV=${SALT_VENV:-$PWD/.venv/salt-3007.17}
T=$(mktemp -d /tmp/fsgolden.XXXXXX)
MPID=
cleanup() {
    if [ -n "$MPID" ]; then
        kill -TERM "-$MPID" 2>/dev/null || true
        sleep 2
        kill -KILL "-$MPID" 2>/dev/null || true
    fi
    rm -rf "$T"
}
trap cleanup EXIT
PUB=${FS_PUB_PORT:-34505}
RET=${FS_RET_PORT:-34506}
"$VENV/bin/python" scripts/fileserver-requests.py tree "$T/tree"
mkdir -p "$T/m/conf"
cat > "$T/m/conf/master" <<CONF
id: fsgolden_master
interface: 127.0.0.1
publish_port: $PUB
ret_port: $RET
root_dir: $T/m
pki_dir: $T/m/pki
cachedir: $T/m/cache
sock_dir: $T/m/sock
pidfile: $T/m/master.pid
log_file: $T/m/log
user: $(id -un)
auto_accept: True
worker_threads: 2
file_buffer_size: 4096
file_ignore_regex: ['/\.hidden']
file_roots:
  base: [$T/tree/base]
  dev: [$T/tree/dev]
CONF
setsid "$VENV/bin/salt-master" -c "$T/m/conf" -l info >"$T/m.out" 2>&1 &
MPID=$!
i=0
until grep -q "Worker binding to socket" "$T/m.out" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 180 ] || { tail -20 "$T/m.out"; exit 1; }; sleep 1
done
sleep 2
"$VENV/bin/python" scripts/fileserver-requests.py ask --port "$RET" --pub "$PUB" \
    --dir "$T/minion" --tree "$T/tree" > tests/data/fileserver-golden.json
echo "wrote tests/data/fileserver-golden.json ($(wc -l < tests/data/fileserver-golden.json) lines)"
