//! Wheel `key.*` in a master group on a real PostgreSQL (docs/group.md): a key accepted with
//! Salt's clear `wheel` (Salt 3007.17's Python `ReqChannel`, the root key) on master A is
//! accepted on master B too, and a key deleted through B's wheel is gone from A: the wheel
//! changes keys through the group's database, as `salt-key` does.
//!
//! Under `CI=true` a missing PostgreSQL or venv fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use salt_integration_tests::interop_support::venv_for;
use salt_integration_tests::pg::Postgres;
use salt_integration_tests::process::{Proc, ProcSpec};
use salt_integration_tests::root::TempRoot;
use salt_integration_tests::wait::wait_until;
use salt_integration_tests::{MasterConf, SaltVenv, bins, ports, run_with_timeout};
use salt_keystore::{KeyChanges, KeyState, KeyStore};
use serde_json::Value;

/// One clear `wheel` call with the root key; prints `RESULT <return>`.
const WHEEL: &str = r#"
import json, sys
import salt.config, salt.channel.client
conf, fun, kwarg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
opts = salt.config.client_config(conf)
key = open(opts["cachedir"] + "/.root_key").read()
chan = salt.channel.client.ReqChannel.factory(opts, crypt="clear")
r = chan.send(dict(cmd="wheel", key=key, fun=fun, **kwarg))
chan.close()
print("RESULT " + json.dumps(r["data"]["return"]), flush=True)
"#;

struct Member {
    proc: Proc,
    pki: PathBuf,
    client_conf: PathBuf,
}

fn member(root: &Path, name: &str, pg: &Postgres) -> Member {
    let (publish, ret) = ports::free_port_pair().unwrap();
    let conf = MasterConf::new(root.join(name))
        .id(name)
        .ports(publish, ret);
    let conf_dir = conf.write().unwrap();
    let file = conf_dir.join("master");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&pg.group_conf("g1"));
    std::fs::write(&file, text).unwrap();
    // What Salt's client reads (without the group's options, which Salt's config does not
    // know).
    let dir = conf.dir();
    let client_conf = dir.join("client");
    std::fs::write(
        &client_conf,
        format!(
            "interface: 127.0.0.1\nret_port: {ret}\nroot_dir: {d}\ncachedir: {d}/cache\n\
             pki_dir: {d}/pki\nsock_dir: {d}/sock\n",
            d = dir.display()
        ),
    )
    .unwrap();
    let proc = ProcSpec::new(name, &bins().unwrap().master, dir)
        .args(["-c".into(), conf_dir.into_os_string()])
        .args(["-l", "info"])
        .spawn()
        .unwrap();
    Member {
        proc,
        pki: conf.pki_dir(),
        client_conf,
    }
}

fn wheel(venv: &SaltVenv, work: &Path, m: &Member, fun: &str, kwarg: &Value) -> Value {
    let script = work.join("wheel.py");
    std::fs::write(&script, WHEEL).unwrap();
    let mut c = std::process::Command::new(venv.bin("python"));
    c.arg(&script)
        .arg(&m.client_conf)
        .arg(fun)
        .arg(kwarg.to_string());
    let out = run_with_timeout(c, Duration::from_secs(120)).unwrap();
    let line = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("{fun}: {out:?}\n{}", m.proc.tail(30)));
    serde_json::from_str(line).unwrap()
}

fn has(pki: &Path, state: KeyState, id: &str) -> bool {
    pki.join(state.dir_name()).join(id).exists()
}

#[test]
fn wheel_keys_through_the_group() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let root = TempRoot::new().unwrap();
    let Some(pg) = Postgres::start(&root.dir("pg").unwrap()).unwrap() else {
        return;
    };
    // Two pending keys recorded by a member in this process.
    let settings = salt_pgstore::Settings {
        cluster_id: "g1".into(),
        master: "writer".into(),
        host: pg.host().display().to_string(),
        port: pg.port(),
        user: "postgres".into(),
        pass: String::new(),
        db: "postgres".into(),
        tls: Default::default(),
        rotate_on_revoke: true,
    };
    let wstore = Arc::new(KeyStore::open(root.dir("writer").unwrap()).unwrap());
    let writer = salt_pgstore::Group::new(settings, wstore).unwrap();
    writer.sync().unwrap();
    let pem = salt_pki::PrivateKey::generate(2048)
        .unwrap()
        .public_key()
        .to_pem();
    for id in ["w1", "w2"] {
        writer.put(KeyState::Pending, id, &pem).unwrap();
    }
    let a = member(root.path(), "ma", &pg);
    let b = member(root.path(), "mb", &pg);
    let work = root.dir("work").unwrap();
    for m in [&a, &b] {
        assert!(
            wait_until("pending keys", Duration::from_secs(30), || has(
                &m.pki,
                KeyState::Pending,
                "w2"
            ) && m
                .pki
                .parent()
                .unwrap()
                .join("cache/.root_key")
                .exists())
            .is_ok(),
            "{}",
            m.proc.tail(30)
        );
    }
    // Accept on A: B has it accepted.
    let got = wheel(
        &venv,
        &work,
        &a,
        "key.accept",
        &serde_json::json!({"match": "w1"}),
    );
    assert_eq!(got, serde_json::json!({"minions": ["w1"]}));
    assert!(
        wait_until("accepted on B", Duration::from_secs(10), || has(
            &b.pki,
            KeyState::Accepted,
            "w1"
        ))
        .is_ok(),
        "{}",
        b.proc.tail(30)
    );
    let listed = wheel(&venv, &work, &b, "key.list_all", &serde_json::json!({}));
    assert_eq!(listed["minions"], serde_json::json!(["w1"]), "{listed}");
    assert_eq!(listed["minions_pre"], serde_json::json!(["w2"]), "{listed}");
    // Delete through B: gone from A.
    let got = wheel(
        &venv,
        &work,
        &b,
        "key.delete",
        &serde_json::json!({"match": "w2"}),
    );
    assert_eq!(got, serde_json::json!({}));
    assert!(
        wait_until("deleted on A", Duration::from_secs(10), || !has(
            &a.pki,
            KeyState::Pending,
            "w2"
        ))
        .is_ok(),
        "{}",
        a.proc.tail(30)
    );
    let mut a = a;
    let mut b = b;
    a.proc.stop(Duration::from_secs(10));
    b.proc.stop(Duration::from_secs(10));
}
