//! CI smoke test of the swarm against our master: 50 simulated minions sign in
//! (auto_accept, master_sign_pubkey) and one `salt '*' test.ping` gets 50 returns.
//! Correctness only, no timing assertions.

use std::time::Duration;

use salt_integration_tests::bins::target_dir;
use salt_integration_tests::{MasterConf, ProcSpec, TempRoot, bins, free_port_pair, wait_until};

const N: usize = 50;

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
fn fifty_minions_sign_in_and_answer_one_ping() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().expect("temp root");
    let (publish, ret) = free_port_pair().expect("ports");
    let mconf = MasterConf::new(root.path().join("master"))
        .ports(publish, ret)
        .auto_accept(true)
        .master_sign_pubkey(true)
        .set("user", salt_integration_tests::config::current_user());
    let conf_dir = mconf.write().expect("master config");
    let master = ProcSpec::new("master", &b.master, mconf.dir())
        .args(["-c".as_ref(), conf_dir.as_os_str()])
        .spawn()
        .expect("start master");
    let sign_pub = mconf.pki_dir().join("master_sign.pub");
    wait_until("master_sign.pub", Duration::from_secs(30), || {
        sign_pub.is_file()
    })
    .expect("master up");

    // The key cache lives in the target dir, shared by runs (generated once).
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
        "--master-sign-pub".into(),
        sign_pub.display().to_string(),
        "--strict".into(),
        "--interval".into(),
        "0.2".into(),
        "--id-prefix".into(),
        "smoke-".into(),
    ])
    .spawn()
    .expect("start swarm");

    wait_until(
        "all 50 minions to sign in",
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
    assert_eq!(stat(&swarm.output(), "auth_failures"), Some(0));

    // "Signed in" does not mean "subscribed": a publish sent before a SUB socket has finished
    // connecting is lost (ZeroMQ's slow joiner, the same with Salt). So ping up to four times
    // and require every minion to have answered at least once.
    let mut answered = std::collections::BTreeSet::new();
    let mut last = String::new();
    for _ in 0..4 {
        let out = salt_integration_tests::cli::salt(
            &b.salt,
            None,
            &conf_dir,
            &["-t", "30", "smoke-*", "test.ping", "--out", "txt"],
            Duration::from_secs(60),
        )
        .expect("salt runs");
        answered.extend(
            out.stdout
                .lines()
                .filter(|l| l.ends_with(": True"))
                .map(str::to_owned),
        );
        last = format!("{}\n{}", out.stdout, out.stderr);
        if answered.len() == N {
            break;
        }
    }
    assert_eq!(answered.len(), N, "returns in salt's last output:\n{last}");
    for i in 0..N {
        let id = format!("smoke-{i:05}: True");
        assert!(answered.contains(&id), "{id} missing");
    }
    wait_until(
        "the swarm to count 50 acknowledged returns",
        Duration::from_secs(20),
        || stat(&swarm.output(), "returns_acked").is_some_and(|n| n >= N as u64),
    )
    .expect("returns acknowledged");
    assert_eq!(stat(&swarm.output(), "pubs_decrypted"), Some(N as u64));
    // Every `_return` was taken, none answered with an error string ("bad load").
    assert_eq!(stat(&swarm.output(), "returns_refused"), Some(0));
    drop(swarm);
    drop(master);
}
