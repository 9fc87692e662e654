#!/usr/bin/env python3
"""Highstate storms and the per-minion cost (issue #39 items 3 and 4), run by
scripts/bench-storm.sh (sections `hsstorm` and `cost` of scripts/bench.sh).

    bench_storm.py storm   # N swarm minions start a highstate at once, ours vs Salt 3007.17
    bench_storm.py cost    # ours at growing sizes: RSS, idle CPU, fan-out, CPU per highstate;
                           # a linear fit, its extrapolation to 25k/50k/100k, an SVG chart

The formula tree (51 files: `top.sls`, ten formulas of `init.sls` + `config.sls` (included by
`init.sls`) with three `salt://` sources each) and a small pillar are generated under
BENCH_ROOT; both masters serve the same tree. The swarm's highstate mode
(`examples/src/swarm/highstate.rs`) asks what a Python minion's `state.apply` asks:
`_pillar`, `_master_opts`, `_file_list`, per file `_file_hash` + `_serve_file` until the
empty chunk, then the `_return` of a 30-state highstate result. The storm is started with
`salt --async 'hs-*' state.apply`; it is over when every minion's `_return` was acknowledged
(or failed: an error reply, or one request unanswered for 180 s, a Python minion's three
tries of 60 s). Master CPU per highstate = the master's CPU (all its processes, user + system)
from the publish until it is idle again (its job cache written), ÷ highstates done.

Knobs: BENCH_STORM_N="1000" (sizes of the storm section; Salt runs only the sizes
<= BENCH_STORM_SALT_MAX=1000), BENCH_STORM_BUDGET=120 (s, ours), BENCH_STORM_SALT_BUDGET=600,
BENCH_COST_SIZES="1000 2000 4000 8000", BENCH_COST_PINGS=3, BENCH_COST_IDLE=10 (s),
BENCH_COST_SVG=<copy the chart there, e.g. docs/cost.svg>, and bench.py's (BENCH_WORKERS,
BENCH_SALT_SIGNIN_BUDGET, BENCH_SKIP_SALT, SALT_VENV, BENCH_ROOT, BENCH_BIN_DIR).
Rows go to $BENCH_ROOT/results.tsv (section `hsstorm` / `cost`) for the TARGETS table.
"""

import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench as B  # noqa: E402

STORM_N = [int(x) for x in os.environ.get("BENCH_STORM_N", "1000").split()]
STORM_SALT_MAX = int(os.environ.get("BENCH_STORM_SALT_MAX", "1000"))
BUDGET = {"ours": float(os.environ.get("BENCH_STORM_BUDGET", "120")),
          "salt": float(os.environ.get("BENCH_STORM_SALT_BUDGET", "600"))}
COST_SIZES = [int(x) for x in os.environ.get("BENCH_COST_SIZES", "1000 2000 4000 8000").split()]
COST_PINGS = int(os.environ.get("BENCH_COST_PINGS", "3"))
COST_IDLE = float(os.environ.get("BENCH_COST_IDLE", "10"))
# Minions per swarm process in highstate mode: a DEALER and a SUB per minion, 2 descriptors
# each, under the 20,000-descriptor limit.
PER_PROC = 2000
FORMULAS, SOURCES = 10, 3


def tree(root):
    """The formula tree and pillar; returns (file_roots dir, pillar dir, list file)."""
    srv, pil = root / "storm-srv", root / "storm-pillar"
    r = random.Random(39)
    files = ["top.sls"]
    srv.mkdir(parents=True, exist_ok=True)
    (srv / "top.sls").write_text("base:\n  '*':\n" + "".join(f"    - f{k}\n" for k in range(FORMULAS)))
    for k in range(FORMULAS):
        d = srv / f"f{k}"
        (d / "files").mkdir(parents=True, exist_ok=True)
        (d / "init.sls").write_text(f"include:\n  - f{k}.config\n")
        states = []
        for s in range(SOURCES):
            rel = f"f{k}/files/{s}.conf"
            (srv / rel).write_text("".join(f"key_{k}_{s}_{i} = {r.getrandbits(64):016x}\n"
                                           for i in range(r.randint(40, 250))))
            states.append(f"/srv/swarm/{rel}:\n  file.managed:\n    - source: salt://{rel}\n"
                          f"    - mode: '0644'\n")
        (d / "config.sls").write_text("".join(states))
        files += [f"f{k}/init.sls", f"f{k}/config.sls"] + [f"f{k}/files/{s}.conf" for s in range(SOURCES)]
    pil.mkdir(parents=True, exist_ok=True)
    (pil / "top.sls").write_text("base:\n  '*':\n    - common\n")
    (pil / "common.sls").write_text("".join(f"setting_{i}: value-{i}\n" for i in range(20)))
    lst = root / "storm-files.txt"
    lst.write_text("\n".join(files) + "\n")
    return srv, pil, lst


def master(kind, name):
    srv, pil, lst = tree(B.ROOT)
    extra = {"file_roots": "{base: ['%s']}" % srv, "pillar_roots": "{base: ['%s']}" % pil,
             "hash_type": "sha256"}
    return B.Master(kind, name, sign=False, extra=extra).start(), lst


def grow(m, swarms, have, size, lst):
    """Add swarm processes until `size` minions run; returns the new count."""
    while have < size:
        n = min(PER_PROC, size - have)
        swarms.append(B.Swarm(m, n, "hs-", have, ["--concurrency", "256", "--highstate", str(lst),
                                                  "--highstate-timeout", "180"], interval=0.2))
        have += n
    return have


def sign_in(m, swarms, kind):
    B.wait("swarm keys loaded", lambda: all(s.keys_loaded() for s in swarms), 600, 0.1)
    t0 = time.time()
    try:
        B.wait("all signed in", lambda: all(s.all_in() for s in swarms),
               900 if kind == "ours" else B.SALT_BUDGET, 0.5)
    except TimeoutError:
        pass
    signed = sum((s.all_in() or (int(s.stat("signed_in") or 0),))[0] for s in swarms)
    return signed, time.time() - t0


def total(swarms, key):
    return sum(int(s.stat(key) or 0) for s in swarms)


def settle(m, limit=120):
    """Wait (at most `limit` s) until the master uses < 5% of a core over 2 s."""
    t0 = time.time()
    while time.time() < t0 + limit:
        c = m.cpu()
        time.sleep(2)
        if (m.cpu() - c) / 2 * 100 < 5:
            return


def highstate(m, swarms, signed, kind):
    """One storm: dict(done, failed, timeouts, refused, wall_s, span_s, cpu_s, ms_per_hs,
    requests)."""
    base = {k: total(swarms, k) for k in ("hs_done", "hs_failed", "hs_timeouts", "returns_refused",
                                          "hs_requests")}
    settle(m, 60)
    c0, t0 = m.cpu(), time.time()
    _, out, err = m.salt(["--async", "hs-*", "state.apply"], 120)
    if "jid" not in (out + err).lower():
        B.log(f"storm {kind}: salt --async said: {out.strip()} {err.strip()}")

    def finished():
        return total(swarms, "hs_done") + total(swarms, "hs_failed") - base["hs_done"] - base["hs_failed"] >= signed

    try:
        B.wait("highstates done", finished, BUDGET[kind], 0.2)
    except TimeoutError:
        pass
    wall = time.time() - t0
    rss = m.rss() / 1024
    settle(m)
    cpu = m.cpu() - c0
    r = {k: total(swarms, k) - base[k] for k in base}
    span = max((s.stat("hs_span_s") or 0.0) for s in swarms)
    done = r["hs_done"]
    return dict(done=done, failed=r["hs_failed"], timeouts=r["hs_timeouts"], refused=r["returns_refused"],
                wall_s=wall, span_s=span, cpu_s=cpu, ms_per_hs=1000 * cpu / done if done else None,
                requests=r["hs_requests"] / done if done else None, rss_mib=rss, load=B.loadavg())


def storm_side(kind, n):
    m, lst = master(kind, f"hsstorm-{kind}-{n}")
    swarms = []
    try:
        grow(m, swarms, 0, n, lst)
        signed, su = sign_in(m, swarms, kind)
        B.log(f"storm {kind} {n}: {signed} signed in in {su:.0f} s")
        r = highstate(m, swarms, signed, kind)
        r["signed"] = signed
        B.log(f"storm {kind} {n}: {r}")
        return r
    finally:
        for s in swarms:
            s.stop()
        m.stop()


def bench_storm():
    for n in STORM_N:
        o = storm_side("ours", n)
        s = storm_side("salt", n) if not B.SKIP_SALT and n <= STORM_SALT_MAX else None
        sec = f"hsstorm {n}"
        note_s = "" if s else ("Salt skipped (BENCH_SKIP_SALT)" if B.SKIP_SALT
                               else f"Salt runs only at <= BENCH_STORM_SALT_MAX={STORM_SALT_MAX}")
        g = lambda r, k: None if r is None or r.get(k) is None else r[k]  # noqa: E731
        B.add(sec, "minions signed in", o["signed"], g(s, "signed"))
        B.add(sec, "highstates done (_return acknowledged)", o["done"], g(s, "done"), note_s)
        B.add(sec, "highstates failed / of which timed out", f"{o['failed']}/{o['timeouts']}",
              None if s is None else f"{s['failed']}/{s['timeouts']}",
              "refused replies: ours %d%s" % (o["refused"], "" if s is None else f", Salt {s['refused']}"))
        B.add(sec, "seconds from publish until all done", round(o["wall_s"], 2),
              None if s is None else round(s["wall_s"], 2),
              f"swarm's first start to last ack: ours {o['span_s']:.2f} s"
              + ("" if s is None else f", Salt {s['span_s']:.2f} s"))
        B.add(sec, "master CPU ms per highstate", round(o["ms_per_hs"] or 0, 2),
              None if s is None or s["ms_per_hs"] is None else round(s["ms_per_hs"], 2),
              f"{o['requests']:.0f} requests per highstate; master CPU s: ours {o['cpu_s']:.1f}"
              + ("" if s is None else f", Salt {s['cpu_s']:.1f}") + f"; load {o['load']}")
        B.add(sec, "master RSS MiB at the end of the storm", round(o["rss_mib"]),
              None if s is None else round(s["rss_mib"]))


# ------------------------------------------------------------------ per-minion cost
def fit(xs, ys):
    """Least squares y = a + b x; (a, b)."""
    n = len(xs)
    if n < 2:
        return (ys[0] if ys else 0.0), 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b


def swarm_cpu(swarms):
    """CPU seconds used so far by every swarm process."""
    return sum(B.cpu_s(s.proc.pid) for s in swarms)


def bench_cost():
    m, lst = master("ours", "cost-ours")
    time.sleep(2)
    rows, swarms, have = [], [], 0
    empty = m.rss() / 1024
    try:
        for size in COST_SIZES:
            have = grow(m, swarms, have, size, lst)
            signed, su = sign_in(m, swarms, "ours")
            settle(m, 60)
            rss_settled = m.rss() / 1024
            _, idle = B.idle_after_work(m, COST_IDLE)
            # RSS of the idle master: after the idle window (our master gives its heap's free
            # pages back after 5 s without a request; the RSS right after the burst is logged).
            rss = m.rss() / 1024
            B.log(f"cost {size}: RSS {rss_settled:.1f} MiB once settled, {rss:.1f} MiB after "
                  f"{COST_IDLE:g} s idle")
            # CPU of the master and of the swarm over the fan-outs: on this box the minions
            # share the master's two cores; with them on other hosts, a fan-out is bound by
            # the master's own work (the publish to every connection, a return from each).
            c0, s0 = m.cpu(), swarm_cpu(swarms)
            pings = [m.ping("hs-*", 60) for _ in range(COST_PINGS)]
            fan_cpu = (m.cpu() - c0) / COST_PINGS
            swarm_fan_cpu = (swarm_cpu(swarms) - s0) / COST_PINGS
            hs = highstate(m, swarms, signed, "ours")
            row = dict(size=size, signed=signed, rss_mib=rss, idle_pct=idle,
                       fanout_s=statistics.median(p[0] for p in pings),
                       fanout_cpu_s=fan_cpu, swarm_fanout_cpu_s=swarm_fan_cpu,
                       returns=min(p[1] for p in pings), hs_ms=hs["ms_per_hs"], hs_wall=hs["wall_s"],
                       hs_done=hs["done"], hs_failed=hs["failed"], load=B.loadavg())
            rows.append(row)
            B.log(f"cost {size}: {row}")
    finally:
        for s in swarms:
            s.stop()
        m.stop()
    report_cost(rows, empty)


TARGET_N = (25000, 50000, 100000)


def report_cost(rows, empty):
    xs = [r["signed"] for r in rows]
    series = {
        "rss_mib": ("master RSS MiB", 1536, "<="),
        "idle_pct": ("idle master CPU % of a core", 2.0, "<="),
        "fanout_s": ("test.ping fan-out s (median)", 5.0, "<"),
        "fanout_cpu_s": ("master CPU s per test.ping fan-out", 5.0, "<"),
        "hs_ms": ("master CPU ms per highstate", None, None),
    }
    fits = {}
    for k, (label, limit, op) in series.items():
        pts = [(x, r[k]) for x, r in zip(xs, rows) if r[k] is not None]
        a, b = fit([p[0] for p in pts], [p[1] for p in pts])
        fits[k] = (a, b)
        pred = {n: a + b * n for n in TARGET_N}
        per = f"{b * 1024:.1f} KiB per minion" if k == "rss_mib" else f"{b * 1000:.4g} per 1,000 minions"
        B.add("cost", f"{label}: fit a + b*n", f"a={a:.4g} b={b:.4g}", None,
              f"{per}; points " + ", ".join(f"{x}:{y:.4g}" for x, y in pts))
        for n in TARGET_N:
            B.add("cost", f"{label} at {n:,} (extrapolated)", f"{pred[n]:.4g}", None,
                  "" if limit is None else f"target {op} {limit:g} at 100,000")
    print()
    print("| minions | master RSS MiB | idle CPU % of a core | fan-out s (median of "
          f"{COST_PINGS}) | CPU s per fan-out: master / swarm | returns | master CPU ms per highstate | "
          "storm wall s | done/failed | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['signed']:,} | {r['rss_mib']:.0f} | {r['idle_pct']:.2f} | {r['fanout_s']:.3f} | "
              f"{r['fanout_cpu_s']:.3f} / {r['swarm_fanout_cpu_s']:.3f} | "
              f"{r['returns']} | {r['hs_ms'] or 0:.2f} | {r['hs_wall']:.1f} | {r['hs_done']}/{r['hs_failed']} | "
              f"{r['load']} |")
    print()
    print(f"(master RSS with no minion: {empty:.0f} MiB)")
    print("| fitted y = a + b·n | a | b (per minion) | 25,000 | 50,000 | 100,000 | 100k target |")
    print("|---|---|---|---|---|---|---|")
    for k, (label, limit, op) in series.items():
        a, b = fits[k]
        t = "-" if limit is None else f"{op} {limit:g}: " + (
            "met" if (a + b * 100000 <= limit if op == "<=" else a + b * 100000 < limit) else "NOT MET")
        print(f"| {label} | {a:.4g} | {b:.4g} | {a + b * 25000:.4g} | {a + b * 50000:.4g} | "
              f"{a + b * 100000:.4g} | {t} |")
    out = B.ROOT / "cost"
    out.mkdir(parents=True, exist_ok=True)
    (out / "cost.csv").write_text("size,rss_mib,idle_pct,fanout_s,fanout_cpu_s,swarm_fanout_cpu_s,hs_ms,"
                                  "hs_wall_s\n" + "".join(
        f"{r['signed']},{r['rss_mib']:.1f},{r['idle_pct']:.3f},{r['fanout_s']:.4f},{r['fanout_cpu_s']:.4f},"
        f"{r['swarm_fanout_cpu_s']:.4f},{r['hs_ms'] or 0:.3f},"
        f"{r['hs_wall']:.2f}\n" for r in rows))
    svg(rows, fits, series, out / "cost.svg")
    dest = os.environ.get("BENCH_COST_SVG")
    if dest:
        Path(dest).write_text((out / "cost.svg").read_text())
        B.log(f"chart copied to {dest}")
    B.log(f"wrote {out / 'cost.csv'} and {out / 'cost.svg'}")


def svg(rows, fits, series, path):
    """One panel per measure: measured points, the fitted line to 100k, the 100k target."""
    H, PW, PH, L, T = 330, 190, 200, 55, 60
    W = L + len(series) * (PW + 55)
    el = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
          f'font-size="11">', f'<rect width="{W}" height="{H}" fill="white"/>',
          f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">salt-rs master: '
          'cost per connected minion, measured (dots) and fitted to 100,000 (line)</text>']
    for i, (k, (label, limit, _op)) in enumerate(series.items()):
        x0 = L + i * (PW + 55)
        a, b = fits[k]
        pts = [(r["signed"], r[k]) for r in rows if r[k] is not None]
        ymax = max([a + b * 100000] + [y for _, y in pts] + ([limit] if limit else [])) * 1.1 or 1
        fx = lambda n: x0 + n / 100000 * PW  # noqa: E731
        fy = lambda v: T + PH - max(v, 0) / ymax * PH  # noqa: E731
        el.append(f'<text x="{x0 + PW / 2}" y="{T - 10}" text-anchor="middle" font-weight="bold">{label}</text>')
        el.append(f'<rect x="{x0}" y="{T}" width="{PW}" height="{PH}" fill="none" stroke="#888"/>')
        for t in range(5):
            v = ymax * t / 4
            el.append(f'<line x1="{x0}" x2="{x0 + PW}" y1="{fy(v):.1f}" y2="{fy(v):.1f}" stroke="#eee"/>')
            el.append(f'<text x="{x0 - 4}" y="{fy(v) + 4:.1f}" text-anchor="end">{v:.3g}</text>')
        for n in (0, 25000, 50000, 100000):
            el.append(f'<text x="{fx(n):.1f}" y="{T + PH + 15}" text-anchor="middle">{n // 1000}k</text>')
        el.append(f'<line x1="{fx(0):.1f}" y1="{fy(a):.1f}" x2="{fx(100000):.1f}" y2="{fy(a + b * 100000):.1f}" '
                  'stroke="#1f77b4" stroke-dasharray="5 3" stroke-width="1.5"/>')
        for x, y in pts:
            el.append(f'<circle cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="3" fill="#1f77b4"/>')
        el.append(f'<text x="{fx(100000) - 2:.1f}" y="{fy(a + b * 100000) - 5:.1f}" text-anchor="end" '
                  f'fill="#1f77b4">{a + b * 100000:.3g}</text>')
        if limit:
            el.append(f'<line x1="{x0}" x2="{x0 + PW}" y1="{fy(limit):.1f}" y2="{fy(limit):.1f}" stroke="#d62728" '
                      'stroke-dasharray="2 2"/>')
            el.append(f'<text x="{x0 + 3}" y="{fy(limit) - 3:.1f}" fill="#d62728">target {limit:g}</text>')
        el.append(f'<text x="{x0 + PW / 2}" y="{T + PH + 30}" text-anchor="middle">minions</text>')
    el.append("</svg>")
    path.write_text("\n".join(el) + "\n")


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else "storm"
    B.log(f"{what} bench root {B.ROOT}; load {B.loadavg()}")
    have = B.count_keys()
    want = int(os.environ.get("BENCH_KEYS", "0")) or max(have, 300)
    if have < want:
        import subprocess
        B.log(f"generating {want - have} minion keys into {B.KEYS} (once)")
        subprocess.run([str(B.REL / "swarm"), "-n", str(want), "--key-cache", str(B.KEYS), "--exit-after-signin",
                        "--run-time", "0.1", "--ret-port", "1", "--publish-port", "1"], check=False,
                       stdout=subprocess.DEVNULL)
        have = B.count_keys()
    B.NKEYS = have
    if what == "storm":
        bench_storm()
    elif what == "cost":
        bench_cost()
    else:
        sys.exit(f"bench_storm.py: unknown mode {what!r} (storm or cost)")


if __name__ == "__main__":
    main()
