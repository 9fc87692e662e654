"""`jobclean` section of scripts/bench.py: request latency while the master removes 100k old
jobs (`keep_jobs_seconds`), ours vs Salt 3007.17 in the same run.

Each master starts on a job cache holding BENCH_JOBCLEAN_N (default 100,000) jobs two hours
old, in Salt's local_cache layout (both masters read and write it:
`jobs/<sha256[:2]>/<sha256[2:]>/jid`), with `keep_jobs_seconds: 3600`; both clean on their
first maintenance tick. A prober sends clear `ping` requests back to back over a REQ socket
(pyzmq from the Salt venv) until the cache is empty, and reports the latency percentiles
during the clean-up and how long the clean-up took.
"""

import hashlib
import json
import os
import subprocess
import time

N = int(os.environ.get("BENCH_JOBCLEAN_N", "100000"))
LIMIT = 300  # seconds a clean-up may take before the section gives up

PROBER = r"""
import json, sys, time, zmq, msgpack
port, stop_file, limit = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
ctx = zmq.Context()
lat = []
t_end = time.time() + limit
req = msgpack.packb({"enc": "clear", "load": {"cmd": "ping"}})
def sock():
    s = ctx.socket(zmq.REQ); s.setsockopt(zmq.LINGER, 0)
    s.connect(f"tcp://127.0.0.1:{port}"); return s
s = sock()
import os
s.send(req)  # the first reply says the master answers: latencies count from then on
while not s.poll(1000):
    if time.time() > t_end or os.path.exists(stop_file):
        print("[]"); sys.exit(0)
s.recv()
while time.time() < t_end and not os.path.exists(stop_file):
    t0 = time.perf_counter()
    s.send(req)
    if s.poll(10000):
        s.recv(); lat.append(time.perf_counter() - t0)
    else:
        lat.append(10.0); s.close(); s = sock()
print(json.dumps(lat))
"""


def populate(kind, jobs_dir, n):
    old = time.time() - 7200
    jobs_dir.mkdir(parents=True, exist_ok=True)
    base = 20250101000000000000
    for i in range(n):
        jid = str(base + i)
        h = hashlib.sha256(jid.encode()).hexdigest()
        d = jobs_dir / h[:2] / h[2:]
        d.mkdir(parents=True, exist_ok=True)
        f = d / "jid"
        f.write_text(jid)
        os.utime(f, (old, old))


def count(kind, jobs_dir):
    return sum(
        len(os.listdir(jobs_dir / t))
        for t in os.listdir(jobs_dir)
        if not t.startswith(".") and (jobs_dir / t).is_dir()
    )


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))] * 1000 if v else None


def run_one(b, kind):
    m = b.Master(kind, f"jobclean-{kind}", extra={"keep_jobs_seconds": 3600, "loop_interval": 5})
    jobs = m.dir / "cache" / "jobs"
    b.log(f"[jobclean] {kind}: writing {N} old jobs")
    populate(kind, jobs, N)
    stop = m.dir / "prober.stop"
    try:
        m.start()
        t0 = time.time()
        prober = subprocess.Popen(
            [str(b.VENV / "bin" / "python"), "-c", PROBER, str(m.ret_port), str(stop), str(LIMIT)],
            stdout=subprocess.PIPE,
            text=True,
        )
        done = None
        while time.time() - t0 < LIMIT:
            if count(kind, jobs) == 0:
                done = time.time() - t0
                break
            time.sleep(0.2)
        stop.touch()
        lat = json.loads(prober.communicate(timeout=60)[0] or "[]")
        return done, lat
    finally:
        m.stop()


def bench(b):
    res = {}
    for kind in ("ours", "salt"):
        if kind == "salt" and b.SKIP_SALT:
            continue
        res[kind] = run_one(b, kind)
    o, s = res.get("ours", (None, [])), res.get("salt", (None, []))
    b.add("jobclean", f"{N:,} old jobs removed (s)", o[0], s[0], "from master start")
    b.add("jobclean", "ping requests during clean-up", len(o[1]), len(s[1]) if s[1] else None)
    for p in (50, 99):
        b.add("jobclean", f"ping latency p{p} (ms)", pct(o[1], p), pct(s[1], p))
    b.add("jobclean", "ping latency max (ms)", max(o[1]) * 1000 if o[1] else None,
          max(s[1]) * 1000 if s[1] else None)
