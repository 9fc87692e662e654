#!/usr/bin/env bash
# Compare `salt-call --local state.show_sls <formula>` of our minion with the Python minion's
# on the community formulas of ../shared/formulas (or the folders given), each formula's
# pillar.example as pillar. Answers are JSON, keys sorted; a summary line per formula.
#
#   scripts/formulas-show-sls.sh [FORMULA_DIR ...]
#
# Env: SALT_VENV (default .venv/salt-3007.17), SALT_CALL (ours, default target/debug/salt-call),
# KEEP=1 keeps the work directory (printed) for the diffs.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${SALT_VENV:-$here/.venv/salt-3007.17}
ours=${SALT_CALL:-$here/target/debug/salt-call}
[ -x "$venv/bin/salt-call" ] || { echo "no Salt venv at $venv" >&2; exit 2; }
[ -x "$ours" ] || { echo "no salt-call at $ours (cargo build -p salt-minion)" >&2; exit 2; }
if [ $# -eq 0 ]; then
    set -- "$here"/../shared/formulas/*/
fi
work=$(mktemp -d)
[ "${KEEP:-}" = 1 ] || trap 'rm -rf "$work"' EXIT
same=0
total=0
for dir in "$@"; do
    dir=${dir%/}
    name=$(basename "$dir")
    [ -d "$dir/$name" ] || continue
    total=$((total + 1))
    w=$work/$name
    mkdir -p "$w/pillar" "$w/conf" "$w/root"
    cp "$dir/pillar.example" "$w/pillar/formula.sls" 2>/dev/null || : >"$w/pillar/formula.sls"
    printf "base:\n  '*':\n    - formula\n" >"$w/pillar/top.sls"
    cat >"$w/conf/minion" <<EOF
id: fm1
file_client: local
root_dir: $w/root
pki_dir: $w/root/pki
cachedir: $w/root/cache
sock_dir: $w/root/sock
log_file: $w/root/log
file_roots: {base: [$dir]}
pillar_roots: {base: [$w/pillar]}
EOF
    # Keys sorted; times of day a template printed (`status.time`) blanked.
    norm() { python3 -c 'import json,re,sys
try:
    d = json.load(sys.stdin)
except Exception as e:
    print("NOT JSON:", e); sys.exit()
text = json.dumps(d, sort_keys=True, indent=1)
print(re.sub(r"\d\d-\d\d-\d\d_\d\d:\d\d:\d\d", "YY-MM-DD_HH:MM:SS", text))'; }
    "$venv/bin/salt-call" -c "$w/conf" --local state.show_sls "$name" --out json 2>"$w/py.err" | norm >"$w/py.json"
    timeout 120 "$ours" -c "$w/conf" --local state.show_sls "$name" --out json 2>"$w/ours.err" | norm >"$w/ours.json"
    if cmp -s "$w/py.json" "$w/ours.json"; then
        same=$((same + 1))
        echo "$name: same"
    else
        echo "$name: DIFFERENT ($(diff "$w/py.json" "$w/ours.json" | grep -c '^[<>]') lines)"
        [ "${VERBOSE:-}" = 1 ] && diff "$w/py.json" "$w/ours.json" | head -40
    fi
done
echo "same: $same of $total"
[ "${KEEP:-}" = 1 ] && echo "work: $work"
exit 0
