#!/usr/bin/env bash
# The formula fidelity harness through a master (the masterless side is scripts/formulas.sh):
# our salt-master on loopback serving the formulas of ../shared/formulas (or the folders
# given), each formula's pillar.example in a pillar environment of its name, our salt-minion and a stock
# Python minion (Salt 3007.17 by default) connected to it, and per formula
# `salt <minion> state.show_sls <formula> pillarenv=<formula>` and `state.apply <formula>
# test=True pillarenv=<formula>`, then one `state.show_highstate` of a top applying every
# formula (pillarenv=base: an empty pillar). Answers are `--out json` with
# the minion id key removed, normalised as formulas.sh does, and diffed per formula.
#
#   scripts/formulas-master.sh [FORMULA_DIR ...]
#
# Env: SALT_VERSION / SALT_VENV (the Python minion), BIN (our binaries, default
# target/debug), KEEP=1, VERBOSE=1, RESULTS=FILE (one "formula command cell" line each).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
version=${SALT_VERSION:-3007.17}
venv=${SALT_VENV:-$here/.venv/salt-$version}
bin=${BIN:-$here/target/debug}
for b in salt-master salt-minion salt; do
    [ -x "$bin/$b" ] || { echo "no $b in $bin (cargo build -p salt-master -p salt-minion -p salt-cli)" >&2; exit 2; }
done
[ -x "$venv/bin/salt-minion" ] || { echo "no Salt venv at $venv" >&2; exit 2; }
if [ $# -eq 0 ]; then
    [ -d "$here/../shared/formulas" ] || { echo "no ../shared/formulas" >&2; exit 2; }
    set -- "$here"/../shared/formulas/*/
fi
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
    sleep 1
    for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done
    [ "${KEEP:-}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
results=${RESULTS:-/dev/null}
: >"$results"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
pub=$(port)
ret=$(port)
names=()
roots=""
mkdir -p "$work/pillar/base" "$work/top" "$work/master/conf"
printf "base: {}\n" >"$work/pillar/base/top.sls"
printf "base:\n  '*':\n" >"$work/top/top.sls"
penvs="base: [$work/pillar/base]"
for dir in "$@"; do
    dir=${dir%/}
    name=$(basename "$dir")
    [ -d "$dir/$name" ] || continue
    names+=("$name")
    roots="$roots, $dir"
    # Each formula's pillar in its own pillar environment (pillarenv=<formula>).
    mkdir -p "$work/pillar/$name"
    cp "$dir/pillar.example" "$work/pillar/$name/formula.sls" 2>/dev/null || : >"$work/pillar/$name/formula.sls"
    printf "%s:\n  '*':\n    - formula\n" "$name" >"$work/pillar/$name/top.sls"
    penvs="$penvs, $name: [$work/pillar/$name]"
    printf "    - %s\n" "$name" >>"$work/top/top.sls"
done
m=$work/master
cat >"$m/conf/master" <<CONF
interface: 127.0.0.1
publish_port: $pub
ret_port: $ret
root_dir: $m
pki_dir: $m/pki
cachedir: $m/cache
sock_dir: $m/sock
pidfile: $m/master.pid
log_file: $m/master.log
user: $(id -un)
auto_accept: True
file_roots: {base: [$work/top$roots]}
pillar_roots: {$penvs}
CONF
setsid "$bin/salt-master" -c "$m/conf" >"$m.out" 2>&1 &
pids+=($!)
for side in rs py; do
    d=$work/$side
    mkdir -p "$d/conf"
    cat >"$d/conf/minion" <<CONF
id: fm-$side
master: 127.0.0.1
master_port: $ret
publish_port: $pub
root_dir: $d
pki_dir: $d/pki
cachedir: $d/cache
sock_dir: $d/sock
pidfile: $d/minion.pid
log_file: $d/minion.log
user: $(id -un)
CONF
    if [ "$side" = py ]; then exe=$venv/bin/salt-minion; else exe=$bin/salt-minion; fi
    setsid "$exe" -c "$d/conf" >"$d.out" 2>&1 &
    pids+=($!)
done
salt() { timeout 300 "$bin/salt" -c "$m/conf" --out json --timeout 120 "$@"; }
for _ in $(seq 120); do
    up=$(salt -L fm-rs,fm-py test.ping 2>/dev/null | grep -c true)
    [ "$up" = 2 ] && break
    sleep 1
done
[ "${up:-0}" = 2 ] || { echo "minions did not answer test.ping (work: $work)" >&2; KEEP=1; exit 1; }

# norm SIDE: the answer without its minion-id key, normalised as formulas.sh's.
norm() {
    python3 -c 'import json,re,sys
work, mid = sys.argv[1], sys.argv[2]
try:
    d = json.load(sys.stdin)[mid]
except Exception as e:
    print("NOT JSON:", e); sys.exit()
def walk(v):
    if isinstance(v, dict):
        return {k: ("X" if k in ("start_time", "duration", "pid") else walk(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [walk(x) for x in v]
    # Salt lists failed requisites from a Python set (order varies by run): sorted.
    pre = "One or more requisite failed: "
    if isinstance(v, str) and v.startswith(pre):
        return pre + ", ".join(sorted(v[len(pre):].split(", ")))
    return v
text = json.dumps(walk(d), sort_keys=True, indent=1).replace(work, "WORK")
print(re.sub(r"\d\d-\d\d-\d\d_\d\d:\d\d:\d\d", "YY-MM-DD_HH:MM:SS", text))' "$work" "fm-$1"
}

same=0
total=0
compare() { # formula cmd args...
    local name=$1 cmd=$2 cell
    shift 2
    for side in py rs; do
        salt "fm-$side" "$@" 2>"$work/$side.$name.$cmd.err" | norm "$side" >"$work/$side.$name.$cmd.json"
    done
    total=$((total + 1))
    if [ ! -s "$work/py.$name.$cmd.json" ] || head -1 "$work/py.$name.$cmd.json" | grep -q '^NOT JSON'; then
        # Two sides failing alike to answer prove nothing.
        cell=NO-ANSWER
    elif cmp -s "$work/py.$name.$cmd.json" "$work/rs.$name.$cmd.json"; then
        same=$((same + 1))
        cell=equal
    else
        cell="DIFF($(diff "$work/py.$name.$cmd.json" "$work/rs.$name.$cmd.json" | grep -c '^[<>]'))"
        [ "${VERBOSE:-}" = 1 ] && diff "$work/py.$name.$cmd.json" "$work/rs.$name.$cmd.json" | head -30 >&2
    fi
    echo "$name $cmd $cell" >>"$results"
    printf " %-14s" "$cell"
}
printf "%-10s %-14s %-14s\n" formula show_sls "apply test"
for name in "${names[@]}"; do
    printf "%-10s" "$name"
    compare "$name" show_sls state.show_sls "$name" "pillarenv=$name"
    compare "$name" apply state.apply "$name" test=True "pillarenv=$name"
    echo
done
printf "%-10s" "(all)"
compare all show_highstate state.show_highstate pillarenv=base
echo
echo "equal: $same of $total (our minion vs Python $version's, both on our master)"
[ "${KEEP:-}" = 1 ] && echo "work: $work"
[ "$same" = "$total" ]
