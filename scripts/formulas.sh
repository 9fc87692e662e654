#!/usr/bin/env bash
# The formula fidelity harness: per formula, our `salt-call --local` against a stock Python
# minion's (`salt-call --local`, Salt 3007.17 by default) on the community formulas of
# ../shared/formulas (or the folders given), each formula's pillar.example as pillar, for
# `state.show_sls`, `state.show_highstate` (a top file applying the formula to '*') and
# `state.apply test=True`. Answers are JSON, normalised (keys sorted; durations, start
# times, pids, the work directory and template-printed times blanked; the failed
# requisites of "One or more requisite failed" sorted, as Salt lists a set) and diffed; a
# summary table per formula and command. Time (s) and peak RSS (KiB) of each
# `state.apply test=True` are printed for docs/benchmarks.md (BENCH=1 adds them to the table).
#
#   scripts/formulas.sh [FORMULA_DIR ...]
#
# Env: SALT_VERSION (3007.17; 3006.30 and 3008.5 are in .venv too), SALT_VENV (overrides),
# SALT_CALL (ours, default target/debug/salt-call), KEEP=1 keeps the work directory,
# VERBOSE=1 prints the first lines of each diff, CMDS (default "show_sls show_highstate
# apply") the comparisons to run, RESULTS=FILE writes one "formula command equal|DIFF(n)"
# line per comparison (tests/tests/formulas.rs reads it).
# `real` (needs root and unshare) is a real `state.apply` of the formula in a throwaway root
# (an overlay of / over a tmpfs in private mount and network namespaces, /proc/sys
# read-only): the answers and the files each side changed are compared.
# ALSO (e.g. "3006.30 3008.5", each VERSION or VERSION=VENV_DIR) compares the same answers with the Python minions of those
# versions too, for ALSO_CMDS (default "show_sls apply"; "real" may be one; our answers and 3007's are reused,
# run once if CMDS lacks them). Where such a version's answer differs from the main
# version's, the difference is Salt's own and the cell names the version ours matches:
# `ours=<main>` (ours follows the main version, as it claims: fine), `ours=<that version>`
# (ours left the main version: a failure), `DIFF(n)` (ours matches neither, n lines differ
# from that version). Where the two Salt versions agree the cell is `equal` or `DIFF(n)`.
# RESULTS lines for these are "formula command@version cell".
# Our minion on our master: scripts/formulas-master.sh.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
version=${SALT_VERSION:-3007.17}
venv=${SALT_VENV:-$here/.venv/salt-$version}
ours=${SALT_CALL:-$here/target/debug/salt-call}
[ -x "$venv/bin/salt-call" ] || { echo "no Salt venv at $venv" >&2; exit 2; }
[ -x "$ours" ] || { echo "no salt-call at $ours (cargo build -p salt-minion)" >&2; exit 2; }
if [ $# -eq 0 ]; then
    [ -d "$here/../shared/formulas" ] || { echo "no ../shared/formulas" >&2; exit 2; }
    set -- "$here"/../shared/formulas/*/
fi
work=$(mktemp -d)
[ "${KEEP:-}" = 1 ] || trap 'rm -rf "$work"' EXIT

norm() {
    python3 -c 'import json,re,sys
work = sys.argv[1]
try:
    d = json.load(sys.stdin)
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
print(re.sub(r"\d\d-\d\d-\d\d_\d\d:\d\d:\d\d", "YY-MM-DD_HH:MM:SS", text))' "$1"
}

# run SIDE NAME CMD... : stdout normalised into $w/SIDE.NAME.json, time and RSS recorded.
# SIDE is rs (ours), py (the main version) or py<version> (another of ALSO).
run() {
    local side=$1 name=$2 bin
    shift 2
    case $side in
        rs) bin=$ours ;;
        py) bin=$venv/bin/salt-call ;;
        py*) bin=${also_venv[${side#py}]}/bin/salt-call ;;
    esac
    /usr/bin/time -f "%e %M" -o "$w/$side.$name.time" \
        timeout 300 "$bin" -c "$w/conf" --local "$@" --out json 2>"$w/$side.$name.err" \
        | norm "$w" >"$w/$side.$name.json"
}

# The script run as root in a private mount and network namespace for a real apply: / as
# the lower layer of an overlay whose upper layer is a tmpfs, /proc/sys read-only (so the
# host's kernel settings stay as they are), the command chrooted into the overlay. Prints
# the command's stdout, then (into $LISTING) what changed in the overlay outside /tmp and
# /work: type, mode, owner, path, and each regular file's text (sha256 if binary);
# deletions show as 'c'. apt's partial/ download directories are left out: with no network
# (the namespace has none) what apt leaves there depends on timing, not on the formula.
# shellcheck disable=SC2016
throwaway='set -e
ov=$1
shift
mount --make-rprivate /
mount -t tmpfs tmpfs "$ov"
mkdir "$ov/u" "$ov/w" "$ov/m"
mount -t overlay overlay -o "lowerdir=/,upperdir=$ov/u,workdir=$ov/w" "$ov/m"
mount -t proc proc "$ov/m/proc"
mount --bind /proc/sys "$ov/m/proc/sys"
mount -o remount,bind,ro "$ov/m/proc/sys"
mount --rbind /dev "$ov/m/dev"
chroot "$ov/m" "$@" || :
cd "$ov/u"
find . \( -path ./tmp -o -path ./work -o -path ./root/.cache -o -path "./var/lib/apt/lists/partial" -o -path "./var/cache/apt/archives/partial" \) -prune -o ! -path . -printf "%y %m %u:%g %p\n" \
    | sort >"$LISTING"
find . \( -path ./tmp -o -path ./work -o -path ./root/.cache -o -path "./var/lib/apt/lists/partial" -o -path "./var/cache/apt/archives/partial" \) -prune -o -type f -print \
    | sort | while read -r f; do
        if grep -Iq . "$f" 2>/dev/null || [ ! -s "$f" ]; then
            echo "== $f"
            # crontab(1) names its temporary file and the time in a header comment.
            head -c 65536 "$f" | sed -E "s/^# \(.* installed on .*\)$/# (FILE installed on DATE)/"
        else
            sha256sum "$f"
        fi
    done >>"$LISTING"'

# real SIDE: a real `state.apply` of the formula in a throwaway root; the answer into
# $w/SIDE.real.json, the changes it made into $w/SIDE.real.files.
real() {
    local side=$1 bin
    case $side in
        rs) bin=$ours ;;
        py) bin=$venv/bin/salt-call ;;
        py*) bin=${also_venv[${side#py}]}/bin/salt-call ;;
    esac
    mkdir -p "$w/$side.ov"
    LISTING=$w/$side.real.files /usr/bin/time -f "%e %M" -o "$w/$side.real.time" \
        timeout 600 unshare -m -n bash -c "$throwaway" real "$w/$side.ov" \
        "$bin" -c "$w/conf" --local state.apply "$name" --out json 2>"$w/$side.real.err" \
        | norm "$w" >"$w/$side.real.json"
    cat "$w/$side.real.files" >>"$w/$side.real.json"
}

cmds=${CMDS:-show_sls show_highstate apply real}
also_cmds=${ALSO_CMDS:-show_sls apply}
also=""
declare -A also_venv
for entry in ${ALSO:-}; do
    v=${entry%%=*}
    also_venv[$v]=$here/.venv/salt-$v
    [ "$entry" = "$v" ] || also_venv[$v]=${entry#*=}
    also="$also $v"
    [ -x "${also_venv[$v]}/bin/salt-call" ] || { echo "no Salt venv at ${also_venv[$v]}" >&2; exit 2; }
done
results=${RESULTS:-/dev/null}
: >"$results"
printf "%-10s" formula
for cmd in $cmds; do printf " %-14s" "$cmd"; done
for v in $also; do for cmd in $also_cmds; do printf " %-16s" "$cmd@$v"; done; done
echo

# args_of CMD: the salt-call arguments of a comparison (into the array args).
args_of() {
    case $1 in
        show_sls) args=(state.show_sls "$name") ;;
        show_highstate) args=(state.show_highstate) ;;
        apply) args=(state.apply "$name" test=True) ;;
        real) args=() ;;
    esac
}

# cell A B: "equal", or "DIFF(n)" with n the differing lines (printed with VERBOSE=1).
# cell PY RS: equal, DIFF(lines), or NO-ANSWER when Python's side gave no JSON (two sides
# failing alike to answer prove nothing).
cell() {
    if [ ! -s "$1" ] || head -1 "$1" | grep -q '^NOT JSON'; then
        echo NO-ANSWER
        [ "${VERBOSE:-}" = 1 ] && head -5 "$1" >&2
    elif cmp -s "$1" "$2"; then
        echo equal
    else
        echo "DIFF($(diff "$1" "$2" | grep -c '^[<>]'))"
        [ "${VERBOSE:-}" = 1 ] && diff "$1" "$2" | head -30 >&2
    fi
}
same=0
total=0
for dir in "$@"; do
    dir=${dir%/}
    name=$(basename "$dir")
    [ -d "$dir/$name" ] || continue
    w=$work/$name
    mkdir -p "$w/pillar" "$w/conf" "$w/root" "$w/top"
    cp "$dir/pillar.example" "$w/pillar/formula.sls" 2>/dev/null || : >"$w/pillar/formula.sls"
    printf "base:\n  '*':\n    - formula\n" >"$w/pillar/top.sls"
    printf "base:\n  '*':\n    - %s\n" "$name" >"$w/top/top.sls"
    cat >"$w/conf/minion" <<CONF
id: fm1
file_client: local
root_dir: $w/root
pki_dir: $w/root/pki
cachedir: $w/root/cache
sock_dir: $w/root/sock
log_file: $w/root/log
file_roots: {base: [$dir, $w/top]}
pillar_roots: {base: [$w/pillar]}
CONF
    row=$name
    for cmd in $cmds; do
        args_of "$cmd"
        if [ "$cmd" = real ]; then
            real py
            real rs
        else
            run py "$cmd" "${args[@]}"
            run rs "$cmd" "${args[@]}"
        fi
        total=$((total + 1))
        cell=$(cell "$w/py.$cmd.json" "$w/rs.$cmd.json")
        [ "$cell" = equal ] && same=$((same + 1))
        row=$(printf "%s %-14s" "$row" "$cell")
        echo "$name $cmd $cell" >>"$results"
    done
    for v in $also; do
        for cmd in $also_cmds; do
            args_of "$cmd"
            if [ "$cmd" = real ]; then
                [ -e "$w/rs.real.json" ] || { real py; real rs; }
                real "py$v"
            else
                if [ ! -e "$w/rs.$cmd.json" ]; then
                    run py "$cmd" "${args[@]}"
                    run rs "$cmd" "${args[@]}"
                fi
                run "py$v" "$cmd" "${args[@]}"
            fi
            total=$((total + 1))
            if cmp -s "$w/py.$cmd.json" "$w/py$v.$cmd.json"; then
                cell=$(cell "$w/py$v.$cmd.json" "$w/rs.$cmd.json")
            elif cmp -s "$w/py.$cmd.json" "$w/rs.$cmd.json"; then
                cell=ours=$version
            elif cmp -s "$w/py$v.$cmd.json" "$w/rs.$cmd.json"; then
                cell=ours=$v
            else
                cell=$(cell "$w/py$v.$cmd.json" "$w/rs.$cmd.json")
            fi
            case $cell in equal | "ours=$version") same=$((same + 1)) ;; esac
            row=$(printf "%s %-16s" "$row" "$cell")
            echo "$name $cmd@$v $cell" >>"$results"
        done
    done
    if [ "${BENCH:-}" = 1 ]; then
        row="$row py $(tail -1 "$w/py.apply.time") ours $(tail -1 "$w/rs.apply.time")"
    fi
    printf "%-10s%s\n" "$name" "${row#"$name"}"
done
echo "equal: $same of $total (Salt $version${also:+, and$also where they agree with it}, salt-call --local)"
[ "${KEEP:-}" = 1 ] && echo "work: $work"
# BENCH=1 (scripts/bench.sh) reports; otherwise the exit code says whether all were equal.
[ "${BENCH:-}" = 1 ] || [ "$same" = "$total" ]
