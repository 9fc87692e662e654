#!/usr/bin/env python3
"""Orchestrate: `salt-run state.orchestrate orch.bench`, an orchestration of N (default 50)
`salt.function` steps (`test.ping` to one minion, each requiring the one before), on our
master vs Salt 3007.17's master, both with the same kind of minion (a Python 3007.17 minion,
`multiprocessing: False`; BENCH_ORCH_MINION=ours gives ours to our master instead), same
machine, one after the other. Run by section `orch` of scripts/bench.sh; uses
scripts/bench.py's Master and minion helpers.

Usage: scripts/bench_orch.py [N]

Prints, per side, the wall time of each of BENCH_ORCH_ROUNDS (default 3) runs of `salt-run`,
the median, the steps with `result: true`, the steps' own time (the sum of their `duration`:
publication to return; the rest of the wall time is salt-run, rendering and the state engine),
and the master's CPU seconds over the runs.
"""

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench as b  # noqa: E402

ROUNDS = max(1, int(os.environ.get("BENCH_ORCH_ROUNDS", "3")))
MINION = os.environ.get("BENCH_ORCH_MINION", "python")


def tree(srv, n, mid):
    (srv / "orch").mkdir(parents=True, exist_ok=True)
    steps = []
    for i in range(n):
        req = f"    - require:\n      - salt: step-{i - 1}\n" if i else ""
        steps.append(
            f"step-{i}:\n  salt.function:\n    - name: test.ping\n    - tgt: {mid}\n{req}"
        )
    (srv / "orch" / "bench.sls").write_text("\n".join(steps))


def side(kind, n):
    srv = b.ROOT / f"orch-srv-{kind}"
    mid = f"orch-{kind}"
    tree(srv, n, mid)
    m = b.Master(kind, f"orch-{kind}", sign=False, extra={"file_roots": "{base: ['%s']}" % srv})
    m.start()
    d = m.dir / "minion"
    mkind = "ours" if (kind == "ours" and MINION == "ours") else "salt"
    b.minion_conf(d, m, mid, mkind)
    mbin = str(b.MINION_REL / "salt-minion") if mkind == "ours" else str(b.VENV / "bin" / "salt-minion")
    p = subprocess.Popen([mbin, "-c", str(d / "conf")], stdout=open(d / "stdout.log", "a"),
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        b.wait("minion answers", lambda: m.ping(mid, 5)[1] == 1, 180, 0.5)
        cpu0 = m.cpu()
        runs = []
        for _ in range(ROUNDS):
            t0 = time.time()
            r = subprocess.run([m.bin("salt-run"), "-c", str(m.conf), "--out", "json",
                                "state.orchestrate", "orch.bench"],
                               capture_output=True, text=True, timeout=900)
            secs = time.time() - t0
            try:
                data = json.loads(r.stdout)["data"]
                ret = next(iter(data.values()))
                ok = sum(1 for v in ret.values() if isinstance(v, dict) and v.get("result") is True)
                # The steps' own time (publication to return, as the state's `duration`).
                inside = sum(float(v.get("duration") or 0) for v in ret.values() if isinstance(v, dict)) / 1000
            except (ValueError, KeyError, AttributeError, StopIteration):
                ok, inside = 0, 0.0
            runs.append((secs, ok, r.returncode, inside))
        return runs, m.cpu() - cpu0, mkind
    finally:
        b.kill_group(p)
        m.stop()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    kinds = ["salt", "ours"] if not b.SKIP_SALT else ["ours"]
    medians = {}
    for kind in kinds:
        try:
            runs, cpu, mkind = side(kind, n)
        except Exception as e:  # keep the other side
            print(f"{kind:<5} master FAILED: {e!r}", flush=True)
            continue
        walls = [w for w, _, _, _ in runs]
        medians[kind] = statistics.median(walls)
        minion = "our minion" if mkind == "ours" else "Python minion"
        print(f"{kind:<5} master, {minion}: {n} salt.function steps, runs "
              + ", ".join(f"{w:.2f} s (ok {ok}/{n}, exit {rc}, steps' own {i:.2f} s)" for w, ok, rc, i in runs)
              + f"; median {medians[kind]:.2f} s; master CPU {cpu:.2f} s over {len(runs)} runs",
              flush=True)
    if "salt" in medians and "ours" in medians and medians["ours"] > 0:
        print(f"ratio (Salt / ours, median wall): {medians['salt'] / medians['ours']:.1f}x", flush=True)


if __name__ == "__main__":
    main()
