#!/usr/bin/env bash
# The formula fidelity harness: per formula, our `salt-call --local` against a stock Python
# minion's (`salt-call --local`, Salt 3007.17 by default) on the community formulas of
# ../shared/formulas (or the folders given), each formula's pillar.example as pillar, for
# `state.show_sls`, `state.show_highstate` (a top file applying the formula to '*') and
# `state.apply test=True`. Answers are JSON, normalised (keys sorted; durations, start
# times, pids, the work directory and template-printed times blanked) and diffed; a
# summary table per formula and command. Time (s) and peak RSS (KiB) of each
# `state.apply test=True` are printed for docs/benchmarks.md (BENCH=1 adds them to the table).
#
#   scripts/formulas.sh [FORMULA_DIR ...]
#
# Env: SALT_VERSION (3007.17; 3006.30 and 3008.5 are in .venv too), SALT_VENV (overrides),
# SALT_CALL (ours, default target/debug/salt-call), KEEP=1 keeps the work directory,
# VERBOSE=1 prints the first lines of each diff.
# Not covered yet: our minion on our master, and a real `state.apply` in a throwaway root.
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

printf "%-10s %-14s %-14s %-14s\n" formula show_sls show_highstate "apply test"
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
    for cmd in show_sls show_highstate apply; do
        case $cmd in
            show_sls) args=(state.show_sls "$name") ;;
            show_highstate) args=(state.show_highstate) ;;
            apply) args=(state.apply "$name" test=True) ;;
        esac
        run py "$cmd" "${args[@]}"
        run rs "$cmd" "${args[@]}"
        total=$((total + 1))
        if cmp -s "$w/py.$cmd.json" "$w/rs.$cmd.json"; then
            same=$((same + 1))
            cell=equal
        else
            cell="DIFF($(diff "$w/py.$cmd.json" "$w/rs.$cmd.json" | grep -c '^[<>]'))"
            [ "${VERBOSE:-}" = 1 ] && diff "$w/py.$cmd.json" "$w/rs.$cmd.json" | head -30 >&2
        fi
        row=$(printf "%s %-14s" "$row" "$cell")
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
