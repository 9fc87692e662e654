#!/usr/bin/env python3
"""Highstate through a master: `salt 'hs-*' state.apply` of N file states, our master + our
minion vs Salt 3007.17's master + a Python minion (`multiprocessing: False`), same tree,
same machine, one after the other. Run by scripts/bench-states.sh (section `states` of
scripts/bench.sh); uses scripts/bench.py's Master and minion helpers.

Usage: scripts/bench_highstate.py N

Prints, per side, the wall time of the `salt` command for the first apply (every file new)
and the second (nothing to change), the number of states with `result: true`, and the
minion's peak RSS (VmHWM of its process group) after both runs.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench as b  # noqa: E402


def tree(srv, n, out):
    srv.mkdir(parents=True, exist_ok=True)
    (srv / "top.sls").write_text("base:\n  '*':\n    - many\n")
    (srv / "many.sls").write_text(
        f"{{% set out = '{out}' %}}\n"
        f"{{% for i in range({n}) %}}\n"
        "{{ out }}/f{{ i }}.conf:\n"
        "  file.managed:\n"
        "    - contents: 'value {{ i }}'\n"
        "    - mode: '0640'\n"
        "    - makedirs: True\n"
        "{% endfor %}\n"
    )


def side(kind, n):
    srv = b.ROOT / f"hs-srv-{kind}"
    tree(srv, n, b.ROOT / f"hs-out-{kind}")
    m = b.Master(kind, f"hs-{kind}", sign=False, extra={"file_roots": "{base: ['%s']}" % srv})
    m.start()
    d = m.dir / "minion"
    mid = f"hs-{kind}"
    b.minion_conf(d, m, mid, kind)
    mbin = str(b.MINION_REL / "salt-minion") if kind == "ours" else str(b.VENV / "bin" / "salt-minion")
    p = subprocess.Popen([mbin, "-c", str(d / "conf")], stdout=open(d / "stdout.log", "a"),
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        b.wait("minion answers", lambda: m.ping(mid, 5)[1] == 1, 180, 0.5)
        out = []
        for _ in ("first", "second"):
            t0 = time.time()
            _, stdout, _ = m.salt(["-t", "300", mid, "state.apply", "--out", "json"], 400)
            secs = time.time() - t0
            try:
                ret = json.loads(stdout)[mid]
                ok = sum(1 for v in ret.values() if isinstance(v, dict) and v.get("result") is True)
            except (ValueError, KeyError, AttributeError):
                ok = 0
            out.append((secs, ok))
        hwm = b.minion_detail(p.pid)[1] / 1024
        return out, hwm
    finally:
        b.kill_group(p)
        m.stop()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    name = {"ours": "ours", "salt": "python"}
    kinds = ["salt", "ours"] if not b.SKIP_SALT else ["ours"]
    for kind in kinds:
        try:
            runs, hwm = side(kind, n)
        except Exception as e:  # keep the other side
            print(f"{name[kind]:<7} master FAILED: {e!r}")
            continue
        for (secs, ok), label in zip(runs, ("master", "master2")):
            print(f"{name[kind]:<7} {label:<7} wall {secs:6.2f} s  peak RSS {hwm:7.1f} MiB  states ok {ok}/{n}"
                  f"  (salt '{'*'}' state.apply through {kind}'s master; RSS of the minion)", flush=True)


if __name__ == "__main__":
    main()
