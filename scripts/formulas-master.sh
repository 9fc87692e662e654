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
# ALSO (e.g. "3006.30 3008.5", each VERSION or VERSION=VENV_DIR) connects Python minions of
# those versions too and compares them as formulas.sh does (cells `equal`, `ours=<main>`
# where that version differs from the main one and ours follows the main one, `ours=<v>`,
# `DIFF(n)`; RESULTS lines "formula command@version cell").
# MASTER=salt serves them from Salt's own master (the main version's salt-master and salt
# CLI) instead of ours: our minion on Salt's master.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
version=${SALT_VERSION:-3007.17}
venv=${SALT_VENV:-$here/.venv/salt-$version}
bin=${BIN:-$here/target/debug}
for b in salt-master salt-minion salt; do
    [ -x "$bin/$b" ] || { echo "no $b in $bin (cargo build -p salt-master -p salt-minion -p salt-cli)" >&2; exit 2; }
done
[ -x "$venv/bin/salt-minion" ] || { echo "no Salt venv at $venv" >&2; exit 2; }
# The master and CLI: ours, or Salt's (MASTER=salt).
mbin=$bin
[ "${MASTER:-}" = salt ] && mbin=$venv/bin
also=""
declare -A also_venv
for entry in ${ALSO:-}; do
    v=${entry%%=*}
    also_venv[$v]=$here/.venv/salt-$v
    [ "$entry" = "$v" ] || also_venv[$v]=${entry#*=}
    also="$also $v"
    [ -x "${also_venv[$v]}/bin/salt-minion" ] || { echo "no Salt venv at ${also_venv[$v]}" >&2; exit 2; }
done
sides="rs py"
for v in $also; do sides="$sides py$v"; done
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
setsid "$mbin/salt-master" -c "$m/conf" >"$m.out" 2>&1 &
pids+=($!)
for side in $sides; do
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
    case $side in
        rs) exe=$bin/salt-minion ;;
        py) exe=$venv/bin/salt-minion ;;
        py*) exe=${also_venv[${side#py}]}/bin/salt-minion ;;
    esac
    setsid "$exe" -c "$d/conf" >"$d.out" 2>&1 &
    pids+=($!)
done
salt() { timeout 300 "$mbin/salt" -c "$m/conf" --out json --timeout 120 "$@"; }
ids=$(for side in $sides; do printf "fm-%s," "$side"; done)
n=$(echo $sides | wc -w)
for _ in $(seq 120); do
    up=$(salt -L "${ids%,}" test.ping 2>/dev/null | grep -c true)
    [ "$up" = "$n" ] && break
    sleep 1
done
[ "${up:-0}" = "$n" ] || { echo "minions did not answer test.ping (work: $work)" >&2; KEEP=1; exit 1; }

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
# cell A B: equal, DIFF(n) (printed with VERBOSE=1), or NO-ANSWER when Python's side (A)
# gave no JSON: two sides failing alike to answer prove nothing.
cell() {
    if [ ! -s "$1" ] || head -1 "$1" | grep -q '^NOT JSON'; then
        echo NO-ANSWER
    elif cmp -s "$1" "$2"; then
        echo equal
    else
        echo "DIFF($(diff "$1" "$2" | grep -c '^[<>]'))"
        [ "${VERBOSE:-}" = 1 ] && diff "$1" "$2" | head -30 >&2
    fi
}
compare() { # formula cmd args...
    local name=$1 cmd=$2 c
    shift 2
    for side in $sides; do
        salt "fm-$side" "$@" 2>"$work/$side.$name.$cmd.err" | norm "$side" >"$work/$side.$name.$cmd.json"
    done
    f() { echo "$work/$1.$name.$cmd.json"; }
    total=$((total + 1))
    c=$(cell "$(f py)" "$(f rs)")
    [ "$c" = equal ] && same=$((same + 1))
    echo "$name $cmd $c" >>"$results"
    printf " %-14s" "$c"
    # The other versions, as formulas.sh judges them.
    for v in $also; do
        total=$((total + 1))
        if cmp -s "$(f py)" "$(f "py$v")"; then
            c=$(cell "$(f "py$v")" "$(f rs)")
        elif cmp -s "$(f py)" "$(f rs)"; then
            c=ours=$version
        elif cmp -s "$(f "py$v")" "$(f rs)"; then
            c=ours=$v
        else
            c=$(cell "$(f "py$v")" "$(f rs)")
        fi
        case $c in equal | "ours=$version") same=$((same + 1)) ;; esac
        echo "$name $cmd@$v $c" >>"$results"
        printf " %-16s" "$c"
    done
}
printf "%-10s" formula
for cmd in show_sls apply; do
    printf " %-14s" "$cmd"
    for v in $also; do printf " %-16s" "$cmd@$v"; done
done
echo
for name in "${names[@]}"; do
    printf "%-10s" "$name"
    compare "$name" show_sls state.show_sls "$name" "pillarenv=$name"
    compare "$name" apply state.apply "$name" test=True "pillarenv=$name"
    echo
done
printf "%-10s" "(all)"
compare all show_highstate state.show_highstate pillarenv=base
echo
echo "equal: $same of $total (our minion vs Python $version's${also:+ (and$also where they agree with it)}, all on ${MASTER:-our} master)"
[ "${KEEP:-}" = 1 ] && echo "work: $work"
[ "$same" = "$total" ]
