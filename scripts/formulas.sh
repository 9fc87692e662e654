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
# Not covered yet: our minion on our master.
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
run() {
    local side=$1 name=$2 bin
    shift 2
    if [ "$side" = py ]; then bin=$venv/bin/salt-call; else bin=$ours; fi
    /usr/bin/time -f "%e %M" -o "$w/$side.$name.time" \
        timeout 300 "$bin" -c "$w/conf" --local "$@" --out json 2>"$w/$side.$name.err" \
        | norm "$w" >"$w/$side.$name.json"
}

# The script run as root in a private mount and network namespace for a real apply: / as
# the lower layer of an overlay whose upper layer is a tmpfs, /proc/sys read-only (so the
# host's kernel settings stay as they are), the command chrooted into the overlay. Prints
# the command's stdout, then (into $LISTING) what changed in the overlay outside /tmp and
# /work: type, mode, owner, path, and each regular file's text (sha256 if binary);
# deletions show as 'c'.
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
find . \( -path ./tmp -o -path ./work -o -path ./root/.cache \) -prune -o ! -path . -printf "%y %m %u:%g %p\n" \
    | sort >"$LISTING"
find . \( -path ./tmp -o -path ./work -o -path ./root/.cache \) -prune -o -type f -print \
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
    if [ "$side" = py ]; then bin=$venv/bin/salt-call; else bin=$ours; fi
    mkdir -p "$w/$side.ov"
    LISTING=$w/$side.real.files /usr/bin/time -f "%e %M" -o "$w/$side.real.time" \
        timeout 600 unshare -m -n bash -c "$throwaway" real "$w/$side.ov" \
        "$bin" -c "$w/conf" --local state.apply "$name" --out json 2>"$w/$side.real.err" \
        | norm "$w" >"$w/$side.real.json"
    cat "$w/$side.real.files" >>"$w/$side.real.json"
}

cmds=${CMDS:-show_sls show_highstate apply real}
results=${RESULTS:-/dev/null}
: >"$results"
printf "%-10s" formula
for cmd in $cmds; do printf " %-14s" "$cmd"; done
echo
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
        case $cmd in
            show_sls) args=(state.show_sls "$name") ;;
            show_highstate) args=(state.show_highstate) ;;
            apply) args=(state.apply "$name" test=True) ;;
            real) args=() ;;
        esac
        if [ "$cmd" = real ]; then
            real py
            real rs
        else
            run py "$cmd" "${args[@]}"
            run rs "$cmd" "${args[@]}"
        fi
        total=$((total + 1))
        if cmp -s "$w/py.$cmd.json" "$w/rs.$cmd.json"; then
            same=$((same + 1))
            cell=equal
        else
            cell="DIFF($(diff "$w/py.$cmd.json" "$w/rs.$cmd.json" | grep -c '^[<>]'))"
            [ "${VERBOSE:-}" = 1 ] && diff "$w/py.$cmd.json" "$w/rs.$cmd.json" | head -30 >&2
        fi
        row=$(printf "%s %-14s" "$row" "$cell")
        echo "$name $cmd $cell" >>"$results"
    done
    if [ "${BENCH:-}" = 1 ]; then
        row="$row py $(tail -1 "$w/py.apply.time") ours $(tail -1 "$w/rs.apply.time")"
    fi
    printf "%-10s%s\n" "$name" "${row#"$name"}"
done
echo "equal: $same of $total (Salt $version, salt-call --local)"
[ "${KEEP:-}" = 1 ] && echo "work: $work"
# BENCH=1 (scripts/bench.sh) reports; otherwise the exit code says whether all were equal.
[ "${BENCH:-}" = 1 ] || [ "$same" = "$total" ]
