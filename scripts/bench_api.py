#!/usr/bin/env python3
"""salt-api at fleet scale (docs/benchmarks.md "salt-api at 100 minions", issue #34), ours vs
Salt 3007.17's Python salt-api, same run. Each side: its master (ours or Salt's), 100 swarm
minions (examples/src/swarm), its salt-api (rest_cherrypy on loopback, eauth `file` user).

  1. `POST /` `[{"client": "local", "tgt": "api-*", "fun": "test.ping"}]` from C keep-alive
     clients x N requests each; every answer must hold 100 `True`s.
  2. `POST /` runner `jobs.list_jobs`, C x N (then one more call: how many jobs it lists).
  3. `GET /events` with 50 clients; K events fired on the master's bus (Salt's own
     `MasterEvent.fire_event`, from the Salt venv, for both masters); events/s delivered to
     all clients together.

Knobs: BENCH_API_MINIONS (100), BENCH_API_C (8), BENCH_API_N (10), BENCH_API_SSE (50),
BENCH_API_EVENTS (200), BENCH_API_SIDES ("salt ours"), and bench.py's BENCH_BIN_DIR,
SALT_VENV, BENCH_ROOT. Prints one JSON line per measurement and a markdown table.
"""

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench as B  # noqa: E402

MINIONS = int(os.environ.get("BENCH_API_MINIONS", "100"))
C = int(os.environ.get("BENCH_API_C", "8"))
N = int(os.environ.get("BENCH_API_N", "10"))
SSE = int(os.environ.get("BENCH_API_SSE", "50"))
EVENTS = int(os.environ.get("BENCH_API_EVENTS", "200"))
SIDES = os.environ.get("BENCH_API_SIDES", "salt ours").split()

FIRE = """
import sys, salt.config, salt.utils.event
opts = salt.config.master_config(sys.argv[1])
ev = salt.utils.event.get_master_event(opts, opts["sock_dir"], listen=False)
for i in range(int(sys.argv[2])):
    ev.fire_event({"i": i}, "bench/sse")
ev.destroy()
"""


def start(kind):
    users = B.ROOT / f"users-{kind}"
    users.write_text("fred:secret\n")
    m = B.Master(kind, f"api-{kind}", sign=False, workers=4)
    port = B.free_port()
    conf = m.conf / "master"
    conf.write_text(
        conf.read_text()
        + f"external_auth: {{file: {{'^filename': '{users}', '^filetype': text, "
        + "fred: ['test.*', '@runner', '@wheel', '@jobs']}}\n"
        + f"rest_cherrypy: {{port: {port}, host: 127.0.0.1, disable_ssl: True}}\n"
        + "netapi_enable_clients: [local, runner]\n"
        + f"api_logfile: '{m.dir / 'api.log'}'\napi_pidfile: '{m.dir / 'api.pid'}'\n"
    )
    m.start()
    swarm = B.Swarm(m, MINIONS, "api-", 0, ["--concurrency", "64"], interval=2)
    B.wait("swarm keys loaded", swarm.keys_loaded, 600, 0.1)
    B.wait(f"{MINIONS} signed in", swarm.all_in, 600, 0.5)
    api_bin = str(B.REL / "salt-api") if kind == "ours" else str(B.VENV / "bin" / "salt-api")
    api = subprocess.Popen([api_bin, "-c", str(m.conf), "-l", "warning"],
                           stdout=open(m.dir / "api.stdout", "w"), stderr=subprocess.STDOUT,
                           start_new_session=True)
    B.wait(f"{kind} salt-api up", lambda: B.can_connect(port), 120)
    return m, swarm, api, port


def conn(port):
    return http.client.HTTPConnection("127.0.0.1", port, timeout=600)


def login(port):
    h = conn(port)
    h.request("POST", "/login", json.dumps({"username": "fred", "password": "secret",
                                             "eauth": "file"}),
              {"Content-Type": "application/json", "Accept": "application/json"})
    return json.loads(h.getresponse().read())["return"][0]["token"]


def load(port, tok, chunk, check):
    """C clients x N requests of `chunk`: requests/s, p50/p99 ms, failures."""
    body = json.dumps([chunk])
    hdrs = {"Content-Type": "application/json", "Accept": "application/json",
            "X-Auth-Token": tok}
    lat, bad, lock = [], [0], threading.Lock()

    def worker():
        k = conn(port)
        for _ in range(N):
            t = time.perf_counter()
            k.request("POST", "/", body, hdrs)
            r = k.getresponse()
            data = r.read()
            d = time.perf_counter() - t
            ok = r.status == 200 and check(json.loads(data)["return"][0])
            with lock:
                lat.append(d)
                bad[0] += 0 if ok else 1

    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(C)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    wall = time.perf_counter() - t0
    lat.sort()
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000  # noqa: E731
    return {"requests": len(lat), "failed": bad[0], "rps": len(lat) / wall,
            "p50_ms": p(0.5), "p99_ms": p(0.99), "max_ms": lat[-1] * 1000 if lat else 0.0}


def jobs_listed(port, tok):
    """How many jobs one more `jobs.list_jobs` lists (the cache the measured calls read)."""
    k = conn(port)
    k.request("POST", "/", json.dumps([{"client": "runner", "fun": "jobs.list_jobs"}]),
              {"Content-Type": "application/json", "Accept": "application/json",
               "X-Auth-Token": tok})
    return len(json.loads(k.getresponse().read())["return"][0])


def sse(m, port, tok):
    """SSE clients each wait for EVENTS `bench/sse` events: events/s delivered in all."""
    ready, done, got = threading.Barrier(SSE + 1), [], []
    lock = threading.Lock()

    def client():
        k = conn(port)
        k.request("GET", "/events", headers={"X-Auth-Token": tok, "Accept": "text/event-stream"})
        r = k.getresponse()
        r.fp.readline()  # retry: 400
        ready.wait()
        n = 0
        while n < EVENTS:
            line = r.fp.readline()
            if not line:
                break
            if line.startswith(b"tag: bench/sse"):
                n += 1
        with lock:
            done.append(time.perf_counter())
            got.append(n)

    ts = [threading.Thread(target=client, daemon=True) for _ in range(SSE)]
    [t.start() for t in ts]
    ready.wait()
    time.sleep(2)  # every stream subscribed to the bus
    t0 = time.perf_counter()
    subprocess.run([str(B.VENV / "bin" / "python"), "-c", FIRE, str(m.conf / "master"),
                    str(EVENTS)], check=True, timeout=600)
    [t.join(timeout=300) for t in ts]
    wall = max(done) - t0 if done else float("nan")
    delivered = sum(got)
    return {"clients": SSE, "events": EVENTS, "delivered": delivered,
            "complete_clients": sum(1 for g in got if g == EVENTS),
            "events_per_s": delivered / wall if wall == wall and wall > 0 else 0.0,
            "wall_s": wall}


def main():
    B.NKEYS = B.count_keys()
    if B.NKEYS < MINIONS:
        sys.exit(f"need {MINIONS} swarm keys in {B.KEYS} (have {B.NKEYS}): see bench_scale.py")
    B.log(f"salt-api bench root {B.ROOT}; load {B.loadavg()}; bins {B.REL}")
    rows = {}
    for kind in SIDES:
        m, swarm, api, port = start(kind)
        try:
            tok = login(port)
            ping = {"client": "local", "tgt": "api-*", "fun": "test.ping"}
            r = {"load_before": B.loadavg()}
            r["ping"] = load(port, tok, ping,
                             lambda v: sum(1 for x in v.values() if x is True) == MINIONS)
            r["list_jobs"] = load(port, tok, {"client": "runner", "fun": "jobs.list_jobs"},
                                  lambda v: isinstance(v, dict))
            r["list_jobs"]["jobs_listed"] = jobs_listed(port, tok)
            r["sse"] = sse(m, port, tok)
            r["load_after"] = B.loadavg()
            print("RESULT " + json.dumps({kind: r}), flush=True)
            rows[kind] = r
        finally:
            B.kill_group(api, 5)
            swarm.stop()
            m.stop()
    print(f"\n{MINIONS} swarm minions, {C} clients x {N} requests; SSE {SSE} clients x "
          f"{EVENTS} events")
    print("| side | ping req/s | ping p50 / p99 ms | list_jobs req/s | list_jobs p50 / p99 ms | "
          "SSE events/s |\n|---|---|---|---|---|---|")
    for kind, r in rows.items():
        print(f"| {kind} | {r['ping']['rps']:.1f} | {r['ping']['p50_ms']:.0f} / "
              f"{r['ping']['p99_ms']:.0f} | {r['list_jobs']['rps']:.1f} | "
              f"{r['list_jobs']['p50_ms']:.0f} / {r['list_jobs']['p99_ms']:.0f} | "
              f"{r['sse']['events_per_s']:.0f} |")


if __name__ == "__main__":
    main()
