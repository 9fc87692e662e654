#!/usr/bin/env python3
"""Scaling curve (run through scripts/bench-scale.sh): `test.ping` fan-out time and master RSS
at growing fleet sizes, ours and Salt 3007.17, written as a table, a CSV and one SVG chart.

One master per kind; swarms are added until each size is connected, then at each size:
`salt -t T 'fan-*' test.ping` BENCH_SCALE_PINGS times (median and best), the master's RSS
(whole process group) and its CPU over BENCH_SCALE_IDLE idle seconds, once the pings'
job-cache writes are done. Salt is measured only
up to BENCH_SCALE_SALT_MAX minions (its 10k fan-out alone takes ~90 s here, and signing 10k
minions in takes minutes); larger sizes are skipped with a note.
"""

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench as B  # noqa: E402  (Master, Swarm, wait, loadavg, keys)

SIZES = [int(x) for x in os.environ.get("BENCH_SCALE_SIZES", "1000 2000 5000 10000 15000").split()]
PINGS = int(os.environ.get("BENCH_SCALE_PINGS", "5"))
IDLE = float(os.environ.get("BENCH_SCALE_IDLE", "10"))
SALT_MAX = int(os.environ.get("BENCH_SCALE_SALT_MAX", "5000"))
OUT = Path(os.environ.get("BENCH_SCALE_OUT") or B.ROOT / "scale")
OUT.mkdir(parents=True, exist_ok=True)


def run(kind, sizes):
    """{size: dict(signed, pings, rss_mib, idle_cpu, load)} for one master."""
    extra = {"zmq_heartbeat_ivl": 0} if os.environ.get("BENCH_SCALE_NO_HB") == "1" else None
    m = B.Master(kind, f"scale-{kind}", extra=extra).start()
    time.sleep(3)
    out = {"idle_rss_mib": m.rss() / 1024}
    swarms, have = [], 0
    try:
        for size in sizes:
            while have < size:
                n = min(B.PER_PROC, size - have)
                swarms.append(B.Swarm(m, n, "fan-", have, ["--concurrency", "256"], interval=2))
                have += n
            B.wait("swarm keys loaded", lambda: all(s.keys_loaded() for s in swarms), 600, 0.1)
            budget = 900 if kind == "ours" else B.SALT_BUDGET
            try:
                B.wait(f"{size} signed in", lambda: all(s.all_in() for s in swarms), budget, 0.5)
            except TimeoutError:
                pass
            signed = sum((s.all_in() or (int(s.stat("signed_in") or 0),))[0] for s in swarms)
            time.sleep(2)
            la = B.loadavg()
            pings = []
            for _ in range(PINGS):
                secs, n_ret = m.ping("fan-*", 60 if kind == "ours" else 180)
                pings.append((secs, n_ret))
                time.sleep(0.5)
            rss = m.rss() / 1024
            # Idle once the pings' job-cache writes are done (as in bench.py's fan-out).
            settled, idle_cpu = B.idle_after_work(m, IDLE)
            out[size] = dict(signed=signed, pings=pings, rss_mib=rss, idle_cpu=idle_cpu, load=la)
            B.log(f"scale {kind} {size}: signed {signed}, pings {[(round(s, 3), n) for s, n in pings]}, "
                  f"rss {rss:.0f} MiB, idle cpu {idle_cpu:.1f}%, load {la} (idle after {settled:.0f} s)")
    finally:
        for s in swarms:
            s.stop()
        m.stop()
    return out


def median(pings):
    return statistics.median(p[0] for p in pings)


def svg(res, path):
    """Two panels: fan-out seconds (log scale) and master RSS (MiB), vs minions."""
    W, H, PAD_L, PAD_B, PAD_T, GAP = 900, 400, 60, 45, 60, 90
    pw = (W - 2 * PAD_L - GAP) // 2
    ph = H - PAD_T - PAD_B
    xs = sorted({s for k in res for s in res[k] if isinstance(s, int)})
    xmax = max(xs) if xs else 1
    colors = {"ours": "#1f77b4", "salt": "#d62728"}
    names = {"ours": "salt-rs", "salt": "Salt 3007.17"}
    el = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
          f'font-family="sans-serif" font-size="12">',
          f'<rect width="{W}" height="{H}" fill="white"/>']
    import math

    def panel(x0, title, getter, log_scale, unit):
        vals = [getter(res[k][s]) for k in res for s in res[k] if isinstance(s, int)]
        vals = [v for v in vals if v and v > 0]
        if not vals:
            return
        if log_scale:
            lo = 10 ** math.floor(math.log10(min(vals)))
            hi = 10 ** math.ceil(math.log10(max(vals)))
            ticks = []
            t = lo
            while t <= hi * 1.0001:
                ticks.append(t)
                t *= 10
            fy = lambda v: PAD_T + ph - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * ph
        else:
            hi = max(vals) * 1.1
            step = 10 ** math.floor(math.log10(hi))
            if hi / step < 4:
                step /= 2
            ticks = [i * step for i in range(int(hi / step) + 1)]
            hi = max(hi, ticks[-1])
            fy = lambda v: PAD_T + ph - v / hi * ph
        fx = lambda s: x0 + s / xmax * pw
        el.append(f'<text x="{x0 + pw / 2}" y="{PAD_T - 12}" text-anchor="middle" font-weight="bold">{title}</text>')
        el.append(f'<rect x="{x0}" y="{PAD_T}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
        for t in ticks:
            y = fy(t)
            el.append(f'<line x1="{x0}" x2="{x0 + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
            lab = f"{t:g}"
            el.append(f'<text x="{x0 - 5}" y="{y + 4:.1f}" text-anchor="end">{lab}</text>')
        for s in xs:
            x = fx(s)
            el.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{PAD_T + ph}" y2="{PAD_T + ph + 5}" stroke="#888"/>')
            el.append(f'<text x="{x:.1f}" y="{PAD_T + ph + 18}" text-anchor="middle">{s // 1000}k</text>')
        el.append(f'<text x="{x0 + pw / 2}" y="{H - 10}" text-anchor="middle">minions</text>')
        el.append(f'<text x="{x0 - 45}" y="{PAD_T + ph / 2}" text-anchor="middle" '
                  f'transform="rotate(-90 {x0 - 45} {PAD_T + ph / 2})">{unit}</text>')
        for k in res:
            pts = [(s, getter(res[k][s])) for s in sorted(x for x in res[k] if isinstance(x, int))]
            pts = [(s, v) for s, v in pts if v and v > 0]
            if not pts:
                continue
            d = " ".join(f"{fx(s):.1f},{fy(v):.1f}" for s, v in pts)
            dash = '' if k == "ours" else ' stroke-dasharray="6 4"'
            el.append(f'<polyline points="{d}" fill="none" stroke="{colors[k]}" stroke-width="2"{dash}/>')
            for s, v in pts:
                el.append(f'<circle cx="{fx(s):.1f}" cy="{fy(v):.1f}" r="3" fill="{colors[k]}"/>')
                el.append(f'<text x="{fx(s) + 5:.1f}" y="{fy(v) - 5:.1f}" fill="{colors[k]}" font-size="10">'
                          f'{v:.3g}</text>')

    panel(PAD_L, "test.ping fan-out: seconds until all returned (median)",
          lambda r: median(r["pings"]), True, "seconds (log scale)")
    panel(PAD_L * 2 + pw + GAP - PAD_L, "master RSS holding the minions",
          lambda r: r["rss_mib"], False, "MiB")
    ly = 16
    for i, k in enumerate(res):
        x = PAD_L + 10 + i * 170
        dash = '' if k == "ours" else ' stroke-dasharray="6 4"'
        el.append(f'<line x1="{x}" x2="{x + 30}" y1="{ly}" y2="{ly}" stroke="{colors[k]}" stroke-width="2"{dash}/>')
        el.append(f'<text x="{x + 35}" y="{ly + 4}">{names[k]}</text>')
    el.append("</svg>")
    path.write_text("\n".join(el) + "\n")


def from_log(path):
    """Results re-read from a run's printed lines (`scale KIND SIZE: ...`)."""
    import ast
    import re
    res = {}
    pat = re.compile(r"scale (\w+) (\d+): signed (\d+), pings (\[.*?\]), rss ([0-9.]+) MiB, "
                     r"idle cpu ([0-9.]+)%, load (.*?)(?: \(idle after .*\))?$")
    for line in Path(path).read_text().splitlines():
        m = pat.search(line)
        if m:
            res.setdefault(m.group(1), {})[int(m.group(2))] = dict(
                signed=int(m.group(3)), pings=ast.literal_eval(m.group(4)), rss_mib=float(m.group(5)),
                idle_cpu=float(m.group(6)), load=m.group(7))
    return res


def report(res):
    sizes = sorted({s for k in res for s in res[k] if isinstance(s, int)})
    rows = ["size,kind,signed,returns,median_s,best_s,rss_mib,idle_cpu_pct,load"]
    print()
    print("| minions | ours: fan-out median (best) s, returns | Salt: fan-out median (best) s, returns | "
          "ours: RSS MiB | Salt: RSS MiB | ours: idle CPU % | Salt: idle CPU % | load (ours) |")
    print("|---|---|---|---|---|---|---|---|")
    for s in sizes:
        for k in ("ours", "salt"):
            r = res.get(k, {}).get(s)
            if r:
                rows.append(f"{s},{k},{r['signed']},{max(p[1] for p in r['pings'])},{median(r['pings']):.3f},"
                            f"{min(p[0] for p in r['pings']):.3f},{r['rss_mib']:.1f},{r['idle_cpu']:.2f},{r['load']}")
        o, sl = res.get("ours", {}).get(s), res.get("salt", {}).get(s)

        def f(r):
            if not r:
                return "not run"
            return (f"{median(r['pings']):.2f} ({min(p[0] for p in r['pings']):.2f}), "
                    f"{max(p[1] for p in r['pings'])}/{r['signed']}")

        def g(r, key, fmt):
            return format(r[key], fmt) if r else "-"

        print(f"| {s:,} | {f(o)} | {f(sl)} | {g(o, 'rss_mib', '.0f')} | {g(sl, 'rss_mib', '.0f')} | "
              f"{g(o, 'idle_cpu', '.1f')} | {g(sl, 'idle_cpu', '.1f')} | {o['load'] if o else '-'} |")
    (OUT / "scale.csv").write_text("\n".join(rows) + "\n")
    svg(res, OUT / "scale.svg")
    B.log(f"wrote {OUT / 'scale.csv'} and {OUT / 'scale.svg'}")
    dest = os.environ.get("BENCH_SCALE_SVG")
    if dest:
        Path(dest).write_text((OUT / "scale.svg").read_text())
        B.log(f"chart copied to {dest}")


def main():
    if sys.argv[1:2] == ["--from-log"]:
        report(from_log(sys.argv[2]))
        return
    B.log(f"scale bench root {B.ROOT}; sizes {SIZES}; load {B.loadavg()}")
    have = B.count_keys()
    want = int(os.environ.get("BENCH_KEYS", "0")) or max(have, 300)
    if have < want:
        B.log(f"generating {want - have} minion keys into {B.KEYS} (once)")
        import subprocess
        subprocess.run([str(B.REL / "swarm"), "-n", str(want), "--key-cache", str(B.KEYS), "--exit-after-signin",
                        "--run-time", "0.1", "--ret-port", "1", "--publish-port", "1"], check=False,
                       stdout=subprocess.DEVNULL)
        have = B.count_keys()
    B.NKEYS = have
    res = {"ours": run("ours", SIZES)}
    salt_sizes = [s for s in SIZES if s <= SALT_MAX]
    if not B.SKIP_SALT and salt_sizes:
        skipped = [s for s in SIZES if s > SALT_MAX]
        if skipped:
            B.log(f"Salt skipped at {skipped} (BENCH_SCALE_SALT_MAX={SALT_MAX}: its 10k fan-out "
                  f"takes ~90 s and its sign-ins minutes)")
        res["salt"] = run("salt", salt_sizes)
    report(res)


if __name__ == "__main__":
    main()
