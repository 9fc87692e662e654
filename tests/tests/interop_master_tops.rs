//! Interop: `master_tops: {ext_nodes: <command>}`. Our master and Salt 3007.17's run the same
//! script (classes and environment as YAML, per minion id) for a real Python 3007.17 minion;
//! `state.show_top` (the top file merged with `_master_tops`) and `state.show_lowstate`
//! must be identical, with the script's classes in `base` (as a list) and then in `prod` (as a
//! mapping, with `environment`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use salt_integration_tests::interop_support::{
    Daemon, SaltCli, Side, assert_no_leftovers, serial, venv_for,
};
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, Yaml, bins, free_port_pair};
use salt_testkit::write_file as write;
use serde_json::{Value, json};

const VERSION: &str = "3007.17";

struct Run {
    id: &'static str,
    cli: SaltCli,
    run_bin: PathBuf,
    conf_dir: PathBuf,
}

impl Run {
    fn salt(&self, args: &[&str]) -> Value {
        let mut full = vec![self.id];
        full.extend_from_slice(args);
        let (v, out) = self.cli.salt_json(&full, 60).unwrap();
        let ret = v.get(self.id).cloned().unwrap_or(Value::Null);
        assert!(
            !ret.is_null(),
            "{} {args:?}: no answer\n{}\n{}",
            self.cli.side.label(),
            out.stdout,
            out.stderr
        );
        normalize(&ret, self.id)
    }

    #[allow(dead_code)]
    fn salt_run(&self, args: &[&str]) -> Value {
        let out = Command::new(&self.run_bin)
            .arg("-c")
            .arg(&self.conf_dir)
            .args(args)
            .args(["--out", "json"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(text.trim()).unwrap_or_else(|e| {
            panic!(
                "{} salt-run {args:?}: not JSON ({e}): {text}\n{}",
                self.cli.side.label(),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }
}

/// The minion id replaced by `ID`.
fn normalize(v: &Value, id: &str) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace(id, "ID")),
        Value::Array(a) => Value::Array(a.iter().map(|x| normalize(x, id)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.replace(id, "ID"), normalize(x, id)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[test]
fn master_tops_ext_nodes_3007() {
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        return;
    };
    let _guard = serial();
    let t0 = Instant::now();
    let step = |what: &str| println!("[{:6.1}s] {what}", t0.elapsed().as_secs_f64());
    let root = TempRoot::new().unwrap();
    let srv = root.path().join("srv");
    let prod = root.path().join("prod");
    write(&srv, "top.sls", "base:\n  '*':\n    - common\n");
    for (dir, name) in [
        (&srv, "common"),
        (&srv, "web"),
        (&srv, "db"),
        (&prod, "web"),
    ] {
        write(
            dir,
            &format!("{name}.sls"),
            &format!("{name}-ok:\n  test.succeed_without_changes: []\n"),
        );
    }
    // The ENC: classes as a list, no environment (`base`).
    let script = root.path().join("enc");
    write(
        root.path(),
        "enc",
        "#!/bin/sh\necho 'classes: [web, db]'\necho 'parameters: {a: 1}'\n",
    );
    Command::new("chmod")
        .arg("755")
        .arg(&script)
        .status()
        .unwrap();
    let py_master = Side::Salt(venv.clone());
    let py_minion = Side::Salt(venv.clone());
    let ours = Side::Ours(bins().unwrap());
    let mut started = Vec::new();
    for (side, id) in [(&ours, "tops-ours"), (&py_master, "tops-salt")] {
        let ports = free_port_pair().unwrap();
        let conf = MasterConf::new(root.path().join(format!("m-{}", side.label())))
            .ports(ports.0, ports.1)
            .auto_accept(true)
            .set("worker_threads", 2u32)
            .set(
                "file_roots",
                Yaml::Raw(format!(
                    "{{base: ['{}'], prod: ['{}']}}",
                    srv.display(),
                    prod.display()
                )),
            )
            .set(
                "master_tops",
                Yaml::Raw(format!("{{ext_nodes: '{}'}}", script.display())),
            );
        started.push((side, id, ports, Daemon::start_master(side, &conf).unwrap()));
    }
    let mut masters = Vec::new();
    let mut minions = Vec::new();
    for (side, id, ports, mut m) in started {
        m.wait_master_ready("127.0.0.1", ports.0, ports.1).unwrap();
        let n = MinionConf::new(root.path().join(id), id)
            .ports(ports.0, ports.1)
            .set("auth_timeout", 10u32);
        minions.push(Daemon::start_minion(&py_minion, &n).unwrap());
        let run_bin = match side {
            Side::Ours(b) => b.salt.with_file_name("salt-run"),
            Side::Salt(v) => v.bin("salt-run"),
        };
        let cli = SaltCli::new(side, &m.conf_dir);
        let conf_dir = m.conf_dir.clone();
        masters.push((
            m,
            Run {
                id,
                cli,
                run_bin,
                conf_dir,
            },
        ));
    }
    for m in &minions {
        m.wait_minion_ready().unwrap();
    }
    for (_, r) in &masters {
        r.cli
            .until_answer(r.id, &[r.id, "test.ping"], Duration::from_secs(60))
            .unwrap();
    }
    step("both masters and minions up");
    let (o, s) = (&masters[0].1, &masters[1].1);
    let both = |args: &[&str]| {
        let (a, b) = (o.salt(args), s.salt(args));
        assert_eq!(
            a, b,
            "{args:?}: ours (left) and Salt's master (right) differ"
        );
        a
    };

    let top = both(&["state.show_top"]);
    assert_eq!(top["base"], json!(["common", "web", "db"]), "{top:#}");
    let low = both(&["state.show_lowstate"]);
    assert_eq!(low.as_array().map(Vec::len), Some(3), "{low:#}");
    step("state.show_top, state.show_lowstate (base)");

    // The environment from the ENC.
    write(
        root.path(),
        "enc",
        "#!/bin/sh\nprintf 'classes:\\n  web: {}\\nenvironment: prod\\n'\n",
    );
    let top = both(&["state.show_top"]);
    assert_eq!(top["prod"], json!(["web"]), "{top:#}");
    both(&["state.show_lowstate"]);
    step("state.show_top, state.show_lowstate (prod)");

    drop(minions);
    drop(masters);
    assert_no_leftovers(root.path());
}
