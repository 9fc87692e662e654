//! CI smoke test of the swarm's highstate mode against our master: 10 simulated minions get
//! `salt 'hs-*' state.apply` and each asks `_pillar`, `_master_opts`, `_file_list`, then
//! `_file_hash` + `_serve_file` of every file of a small formula tree, and returns. Every
//! reply must open (no error string, no timeout) and every minion's return reach `salt`.
//! Correctness only, no timing assertions.

use std::collections::BTreeSet;
use std::time::Duration;

use salt_integration_tests::bins::target_dir;
use salt_integration_tests::config::Yaml;
use salt_integration_tests::{MasterConf, ProcSpec, TempRoot, bins, free_port_pair, wait_until};

const N: usize = 10;

/// The last `swarm ...` stats line's value of `key`.
fn stat(out: &str, key: &str) -> Option<u64> {
    out.lines()
        .rev()
        .find(|l| l.starts_with("swarm t="))?
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .and_then(|v| v.parse().ok())
}

#[test]
fn ten_minions_fetch_a_highstate_and_return() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().expect("temp root");
    let srv = root.dir("srv").expect("srv");
    let pillar = root.dir("pillar").expect("pillar");
    let write = |p: std::path::PathBuf, t: &str| {
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, t).expect("write");
    };
    write(srv.join("top.sls"), "base:\n  '*':\n    - web\n");
    write(srv.join("web/init.sls"), "include:\n  - web.config\n");
    let mut states = String::new();
    let mut files = vec!["top.sls", "web/init.sls", "web/config.sls"];
    for (k, f) in ["web/files/a.conf", "web/files/b.conf"].iter().enumerate() {
        // b.conf spans more than one 1 KiB chunk of `file_buffer_size`.
        write(srv.join(f), &format!("line {k}\n").repeat(200 * (k + 1)));
        states.push_str(&format!(
            "/tmp/{f}:\n  file.managed:\n    - source: salt://{f}\n"
        ));
        files.push(f);
    }
    write(srv.join("web/config.sls"), &states);
    write(pillar.join("top.sls"), "base:\n  '*':\n    - common\n");
    write(pillar.join("common.sls"), "role: web\n");
    let list = root.path().join("files.txt");
    std::fs::write(&list, files.join("\n")).expect("file list");

    let (publish, ret) = free_port_pair().expect("ports");
    let roots = |d: &std::path::Path| Yaml::Raw(format!("{{base: ['{}']}}", d.display()));
    let mconf = MasterConf::new(root.path().join("master"))
        .ports(publish, ret)
        .auto_accept(true)
        .set("file_roots", roots(&srv))
        .set("pillar_roots", roots(&pillar))
        .set("file_buffer_size", Yaml::Int(1024))
        .set("user", salt_integration_tests::config::current_user());
    let conf_dir = mconf.write().expect("master config");
    let master = ProcSpec::new("master", &b.master, mconf.dir())
        .args(["-c".as_ref(), conf_dir.as_os_str()])
        .spawn()
        .expect("start master");
    let master_pub = mconf.pki_dir().join("master.pub");
    wait_until("master.pub", Duration::from_secs(30), || {
        master_pub.is_file()
    })
    .expect("master up");

    let cache = target_dir().join("swarm-keys");
    let swarm = ProcSpec::new(
        "swarm",
        env!("CARGO_BIN_EXE_swarm"),
        root.dir("swarm").expect("dir"),
    )
    .args([
        "-n".to_string(),
        N.to_string(),
        "--master".into(),
        "127.0.0.1".into(),
        "--ret-port".into(),
        ret.to_string(),
        "--publish-port".into(),
        publish.to_string(),
        "--key-cache".into(),
        cache.display().to_string(),
        "--interval".into(),
        "0.2".into(),
        "--id-prefix".into(),
        "hs-".into(),
        "--highstate".into(),
        list.display().to_string(),
    ])
    .spawn()
    .expect("start swarm");
    wait_until(
        "all 10 minions to sign in",
        Duration::from_secs(240),
        || stat(&swarm.output(), "signed_in") == Some(N as u64),
    )
    .unwrap_or_else(|e| {
        panic!(
            "{e}\nswarm:\n{}\nmaster:\n{}",
            swarm.tail(20),
            master.tail(20)
        )
    });

    // A publish sent before a SUB socket has connected is lost (ZeroMQ's slow joiner): apply
    // up to four times, until every minion has returned once.
    let mut answered = BTreeSet::new();
    let mut last = String::new();
    for _ in 0..4 {
        let out = salt_integration_tests::cli::salt(
            &b.salt,
            None,
            &conf_dir,
            &["-t", "60", "hs-*", "state.apply", "--out", "txt"],
            Duration::from_secs(120),
        )
        .expect("salt runs");
        answered.extend(
            out.stdout
                .lines()
                .filter_map(|l| l.split_once(": ").map(|(id, _)| id.to_owned()))
                .filter(|id| id.starts_with("hs-")),
        );
        last = format!("{}\n{}", out.stdout, out.stderr);
        if answered.len() == N {
            break;
        }
    }
    assert_eq!(answered.len(), N, "returns in salt's last output:\n{last}");
    // The swarm counts a highstate done once the master acknowledged its `_return`; its
    // stats line comes every 0.2 s.
    wait_until(
        "the swarm to count 10 highstates done",
        Duration::from_secs(30),
        || stat(&swarm.output(), "hs_done").is_some_and(|n| n >= N as u64),
    )
    .unwrap_or_else(|e| panic!("{e}\nswarm:\n{}", swarm.tail(20)));
    let out = swarm.output();
    assert_eq!(
        stat(&out, "hs_failed"),
        Some(0),
        "swarm:\n{}",
        swarm.tail(20)
    );
    assert_eq!(stat(&out, "returns_refused"), Some(0));
    let done = stat(&out, "hs_done").unwrap_or(0);
    assert!(done >= N as u64, "hs_done {done}");
    // Per highstate: _pillar, _master_opts, _file_list, a hash per file, a `_serve_file` per
    // 1 KiB chunk plus the empty one ending each file, the return.
    let chunks: usize = files
        .iter()
        .map(|f| {
            let len = std::fs::metadata(srv.join(f)).expect("stat").len();
            usize::try_from(len.div_ceil(1024)).expect("size") + 1
        })
        .sum();
    let per = 3 + files.len() + chunks + 1;
    let requests = stat(&out, "hs_requests").unwrap_or(0);
    assert!(
        requests >= done * per as u64,
        "{requests} requests for {done} highstates (want {per} each)"
    );
    drop(swarm);
    drop(master);
}
