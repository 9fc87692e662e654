//! The salt-api benchmark (scripts/bench-api.sh, docs/benchmarks.md "salt-api"): `POST /`
//! lowstate `local` `test.ping` to one minion (ours) from C concurrent keep-alive clients,
//! requests/s and p99 latency, ours (our master + our salt-api) vs Salt 3007.17's (Salt's
//! master + Python salt-api), same run. Ignored by default (minutes); knobs:
//! `BENCH_API_N` (requests per client, default 50), `BENCH_API_C` (clients, default 8).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use salt_integration_tests::api_support::ApiLab;
use salt_integration_tests::interop_support::{Side, serial, venv_for};
use salt_integration_tests::{bins, run_with_timeout};

const LOAD: &str = r#"
import json, sys, time, threading, http.client, urllib.parse
base, mid, n, c = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
u = urllib.parse.urlparse(base)
def conn():
    return http.client.HTTPConnection(u.hostname, u.port, timeout=120)
h = conn()
h.request("POST", "/login", json.dumps({"username": "fred", "password": "secret", "eauth": "file"}),
          {"Content-Type": "application/json", "Accept": "application/json"})
r = h.getresponse(); tok = json.loads(r.read())["return"][0]["token"]
body = json.dumps([{"client": "local", "tgt": mid, "fun": "test.ping"}])
hdrs = {"Content-Type": "application/json", "Accept": "application/json", "X-Auth-Token": tok}
lat, bad = [], [0]
lock = threading.Lock()
def worker():
    k = conn()
    for _ in range(n):
        t = time.perf_counter()
        k.request("POST", "/", body, hdrs)
        r = k.getresponse(); data = r.read()
        d = time.perf_counter() - t
        ok = r.status == 200 and json.loads(data)["return"][0].get(mid) is True
        with lock:
            lat.append(d)
            if not ok: bad[0] += 1
t0 = time.perf_counter()
ts = [threading.Thread(target=worker) for _ in range(c)]
[t.start() for t in ts]; [t.join() for t in ts]
wall = time.perf_counter() - t0
lat.sort()
p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000
print("RESULT " + json.dumps({"requests": len(lat), "failed": bad[0], "rps": len(lat) / wall,
                              "p50_ms": p(0.50), "p99_ms": p(0.99)}), flush=True)
"#;

fn knob(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
#[ignore = "benchmark: scripts/bench-api.sh"]
fn api_bench() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = Side::Ours(bins().unwrap());
    let py = Side::Salt(venv.clone());
    let (n, c) = (knob("BENCH_API_N", 50), knob("BENCH_API_C", 8));
    let mut rows = Vec::new();
    for side in [&py, &ours] {
        let lab = ApiLab::start(side, &ours, "[local]").unwrap();
        let script = lab.root.path().join("load.py");
        std::fs::write(&script, LOAD).unwrap();
        let mut cmd = std::process::Command::new(venv.bin("python"));
        cmd.arg(&script)
            .arg(&lab.base)
            .arg(lab.mid)
            .arg(n.to_string())
            .arg(c.to_string());
        let out = run_with_timeout(cmd, Duration::from_secs(1200)).unwrap();
        let line = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("RESULT "))
            .unwrap_or_else(|| panic!("{}: {out:?}\n{}", side.label(), lab.api.tail(40)));
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["failed"], 0, "{}: {r}", side.label());
        println!("{} salt-api: {r}", side.label());
        rows.push((side.label(), r));
        lab.stop();
    }
    println!("\nsalt-api POST / local test.ping, 1 minion, {c} clients x {n} requests");
    println!("| side | requests/s | p50 ms | p99 ms |\n|---|---|---|---|");
    for (label, r) in &rows {
        println!(
            "| {label} | {:.1} | {:.1} | {:.1} |",
            r["rps"].as_f64().unwrap_or_default(),
            r["p50_ms"].as_f64().unwrap_or_default(),
            r["p99_ms"].as_f64().unwrap_or_default()
        );
    }
}
