//! Issue #39 item 5: grain, pillar and compound target lists at 100,000 cached minions.
//! Not a test (no assertion on time): run by `scripts/bench.sh` (`BENCH_ONLY=targets100k`),
//!
//! ```text
//! cargo test --release -p salt-master-core --lib -- --ignored --nocapture targets_100k
//! ```
//!
//! `BENCH_TARGETS_N` sets the number of minions (default 100,000).

use std::time::Instant;

use rmpv::Value;

use super::data::MinionCache;
use super::target::resolve;

/// A `data.p` of about 0.8 KiB: grains shaped like a real minion's, a small pillar.
fn data(i: usize) -> Value {
    let s = |v: &str| Value::from(v);
    let map = |kv: Vec<(&str, Value)>| {
        Value::Map(kv.into_iter().map(|(k, v)| (Value::from(k), v)).collect())
    };
    let (os, family) = [
        ("Debian", "Debian"),
        ("Ubuntu", "Debian"),
        ("Rocky", "RedHat"),
    ][i % 3];
    let role = ["web", "db", "cache", "queue", "batch"][i % 5];
    let grains = map(vec![
        ("id", Value::from(format!("m-{i}"))),
        ("os", s(os)),
        ("os_family", s(family)),
        (
            "osrelease",
            Value::from(format!("{}.{}", 10 + i % 3, i % 7)),
        ),
        ("kernel", s("Linux")),
        ("kernelrelease", s("6.1.0-27-amd64")),
        ("cpuarch", s("x86_64")),
        ("num_cpus", Value::from((i % 4 + 1) as i64 * 2)),
        ("mem_total", Value::from(2048 + (i % 8) as i64 * 1024)),
        (
            "fqdn",
            Value::from(format!("m-{i}.dc{}.example.com", i % 4)),
        ),
        ("host", Value::from(format!("m-{i}"))),
        ("domain", Value::from(format!("dc{}.example.com", i % 4))),
        (
            "ipv4",
            Value::Array(vec![
                s("127.0.0.1"),
                Value::from(format!("10.{}.{}.{}", i >> 16 & 255, i >> 8 & 255, i & 255)),
            ]),
        ),
        ("roles", Value::Array(vec![s(role), s("base")])),
        ("virtual", s("kvm")),
        ("saltversion", s("3007.17")),
        (
            "pythonversion",
            Value::Array(vec![3.into(), 11.into(), 2.into()]),
        ),
        (
            "locale_info",
            map(vec![
                ("defaultlanguage", s("en_US")),
                ("defaultencoding", s("UTF-8")),
            ]),
        ),
        (
            "selinux",
            map(vec![("enabled", false.into()), ("enforced", s("Disabled"))]),
        ),
        ("machine_id", Value::from(format!("{i:032x}"))),
        (
            "uuid",
            Value::from(format!("{i:08x}-0000-4000-8000-000000000000")),
        ),
        ("biosversion", s("1.16.3-debian-1.16.3-2")),
        ("manufacturer", s("QEMU")),
        ("productname", s("Standard PC (Q35 + ICH9, 2009)")),
        ("shell", s("/bin/sh")),
        ("init", s("systemd")),
        (
            "path",
            s("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
        ),
        (
            "dns",
            map(vec![
                ("nameservers", Value::Array(vec![s("10.0.0.2")])),
                ("search", Value::Array(vec![s("example.com")])),
            ]),
        ),
        (
            "gpus",
            Value::Array(vec![map(vec![
                ("model", s("Virtio GPU")),
                ("vendor", s("unknown")),
            ])]),
        ),
        ("zmqversion", s("4.3.4")),
    ]);
    let pillar = map(vec![
        ("tier", s(role)),
        ("dc", Value::from(format!("dc{}", i % 4))),
        (
            "app",
            map(vec![
                ("version", Value::from(format!("1.{}", i % 10))),
                ("port", 8080.into()),
            ]),
        ),
    ]);
    map(vec![("grains", grains), ("pillar", pillar)])
}

/// CPU time of the whole process (ns; every thread, the matching threads included): on a
/// loaded machine the wall time includes waiting for a core, this does not.
fn cpu_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

#[test]
#[ignore = "benchmark: scripts/bench.sh targets100k"]
fn targets_100k() {
    let n: usize = std::env::var("BENCH_TARGETS_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    // Written as another process (the master that ran before) would leave them: files only.
    let minions = dir.path().join("minions");
    let t = Instant::now();
    let mut bytes = 0;
    for i in 0..n {
        let d = minions.join(format!("m-{i}"));
        std::fs::create_dir_all(&d).unwrap();
        let b = salt_proto::encode(&data(i));
        bytes += b.len();
        std::fs::write(d.join("data.p"), b).unwrap();
    }
    println!(
        "targets100k: {n} cached minions written in {:.1} s ({} bytes of data.p each on average)",
        t.elapsed().as_secs_f64(),
        bytes / n.max(1)
    );
    // Let the directory's mtime settle, so the index trusts it (minions::index::SETTLE).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let ids: Vec<String> = (0..n).map(|i| format!("m-{i}")).collect();
    let cache = MinionCache::new(dir.path());
    let targets = [
        ("os:Debian", "grain"),
        ("roles:db", "grain"),
        ("os:^Ub", "grain_pcre"),
        ("tier:cache", "pillar"),
        ("G@os:Rocky and I@tier:web", "compound"),
        ("G@os_family:Debian and not G@roles:web or m-1*", "compound"),
    ];
    let rss0 = rss_kib();
    let mut first = true;
    let run = |label: &str, tgt: &str, ty: &str| {
        let target = resolve(tgt, ty, &[]).unwrap();
        let (t, c) = (Instant::now(), cpu_ns());
        let hit = target
            .expected(ids.iter().map(String::as_str), &cache, &[], true)
            .unwrap();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let cpu_ms = cpu_ns().saturating_sub(c) as f64 / 1e6;
        if !label.is_empty() {
            println!(
                "targets100k: {label}{ty:<10} {tgt:<48} {:>6} minions  wall {ms:>6.1} ms  \
                 CPU {cpu_ms:>6.1} ms",
                hit.len()
            );
        }
        (hit, ms, cpu_ms)
    };
    for round in 0..3 {
        for (tgt, ty) in targets {
            let (_, ms, cpu_ms) = run(if round > 0 { " " } else { "" }, tgt, ty);
            if first {
                let (minions, atoms) = cache.with_facts(|v| v.sizes());
                println!(
                    "targets100k: first target (fills the index: reads every data.p) \
                     wall {ms:.0} ms, CPU {cpu_ms:.0} ms, index RSS +{} MiB \
                     ({minions} minions, {atoms} distinct scalars)",
                    rss_kib().saturating_sub(rss0) / 1024
                );
                first = false;
            }
        }
    }
    // What the index costs without matching: one lookup per accepted id.
    let (t, c) = (Instant::now(), cpu_ns());
    let found = cache.with_facts(|v| ids.iter().filter(|id| v.get(id).is_some()).count());
    println!(
        "targets100k: index lookups alone ({found} found)  wall {:.1} ms  CPU {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3,
        cpu_ns().saturating_sub(c) as f64 / 1e6
    );
    // A minion's grains change (the master stores its new data.p): the next target sees it.
    let (before, ..) = run("", "os:Debian", "grain");
    let mut d = data(0);
    if let Value::Map(top) = &mut d
        && let Some((_, Value::Map(g))) = top.first_mut()
        && let Some((_, os)) = g.iter_mut().find(|(k, _)| k.as_str() == Some("os"))
    {
        *os = Value::from("Ubuntu");
    }
    cache.store("m-0", "data", &d).unwrap();
    let (after, ..) = run("after m-0's data.p changed: ", "os:Debian", "grain");
    assert_eq!(after.len() + 1, before.len());
    assert!(!after.iter().any(|id| id == "m-0"));
    let (ub, ..) = run("after m-0's data.p changed: ", "os:Ubuntu", "grain");
    assert!(ub.iter().any(|id| id == "m-0"));
    // The same data as rmpv values (the index before the compact form), for its size.
    let rss1 = rss_kib();
    type Cached = (String, (Option<Value>, Option<Value>));
    let values: Vec<Cached> = ids
        .iter()
        .map(|id| {
            let b = std::fs::read(minions.join(id).join("data.p")).unwrap();
            let d = salt_proto::decode(&b).unwrap();
            let f = |k| salt_compat::map_get(&d, k).cloned();
            (id.clone(), (f("grains"), f("pillar")))
        })
        .collect();
    println!(
        "targets100k: the same grains and pillar as rmpv values: RSS +{} MiB",
        rss_kib().saturating_sub(rss1) / 1024
    );
    // The compiled matchers over those rmpv values (the minion's own path).
    for (tgt, ty) in targets {
        let target = resolve(tgt, ty, &[]).unwrap();
        let compiled =
            salt_matcher::CompiledTarget::new(&target.tgt, &target.tgt_type, None, &[]).unwrap();
        let (t, c) = (Instant::now(), cpu_ns());
        let n = values
            .iter()
            .filter(|(id, (g, p))| compiled.eval(id, g.as_ref(), p.as_ref()) != Some(false))
            .count();
        println!(
            "targets100k: over rmpv values {ty:<10} {tgt:<48} {n:>6} minions  wall {:>6.1} ms  \
             CPU {:>6.1} ms",
            t.elapsed().as_secs_f64() * 1e3,
            cpu_ns().saturating_sub(c) as f64 / 1e6
        );
    }
}
