# Sourced by the master benchmarks that drive our master and Salt's side by side
# (bench-fileserver.sh, bench-gitfs.sh): a temp root removed at exit with every master
# stopped, the master config both sides share, and starting a master until its ret port
# answers. Not run on its own.

# bench_init <name>: T (a temp dir /tmp/salt-<name>.XXXXXX), PIDS, the cleanup at exit.
bench_init() {
    T=$(mktemp -d "/tmp/salt-$1.XXXXXX")
    PIDS=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
    sleep 2
    for p in "${PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
    rm -rf "$T"
}

# bench_conf <dir> <id> <publish_port> <ret_port>: <dir>/conf/master on loopback under <dir>,
# auto_accept, worker_threads $WORKERS; the backend's lines are read from stdin.
bench_conf() {
    mkdir -p "$1/conf"
    {
        cat <<CONF
id: $2
interface: 127.0.0.1
publish_port: $3
ret_port: $4
root_dir: $1
pki_dir: $1/pki
cachedir: $1/cache
sock_dir: $1/sock
pidfile: $1/master.pid
log_file: $1/master.log
log_level: warning
user: $(id -un)
auto_accept: True
worker_threads: $WORKERS
CONF
        cat
    } > "$1/conf/master"
}

# bench_start <name> <salt-master binary> <dir> <ret_port> [settle seconds, 1]: runs it in its
# own process group (added to PIDS), waits for its ret port, then settles.
bench_start() {
    setsid "$2" -c "$3/conf" -l warning >"$3.out" 2>&1 &
    PIDS+=($!)
    local i=0
    until (exec 3<>"/dev/tcp/127.0.0.1/$4") 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 240 ] || { echo "$1 did not start"; tail "$3.out"; exit 1; }
        sleep 0.5
    done
    sleep "${5:-1}"
}
