//! Salt Resources (Salt 3008, issue 38) with two stock 3008.5 minions, one managing two
//! resources of Salt's built-in `dummy` type through its pillar (as Salt's
//! `salt/resources/dummy` documents: `resources: {dummy: {resource_ids: [...]}}`), recorded on
//! Salt 3008.5's master and on ours and compared: the returns of `T@` targets and of the
//! glob, list, bare-id and grain targets that reach resources, `resource.*` runners,
//! `jobs.lookup_jid`, a `saltutil.refresh_pillar` that drops a resource, and the registry
//! after a master restart. A `salt -t 30` to resources must answer as soon as they return.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use salt_integration_tests::config::Yaml;
use salt_integration_tests::interop_support::{Daemon, SaltCli, Side, serial, venv_for};
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, bins, free_port_pair};
use serde_json::Value;

const VERSION: &str = "3008.5";

const TOP: &str = "base:\n  res1:\n    - res\n";

fn pillar(ids: &[&str]) -> String {
    let mut s = "resources:\n  dummy:\n    resource_ids:\n".to_owned();
    for id in ids {
        s.push_str(&format!("      - {id}\n"));
    }
    s
}

/// `salt-run -c DIR <args> --out json` of `side`: the parsed stdout.
fn salt_run(side: &Side, conf_dir: &Path, args: &[&str]) -> Value {
    let bin = side.salt_bin().with_file_name("salt-run");
    let mut c = salt_integration_tests::cli::command_in(None, &bin);
    c.arg("-c").arg(conf_dir).args(args).args(["--out", "json"]);
    let out = salt_integration_tests::cli::run_with_timeout(c, Duration::from_secs(90)).unwrap();
    serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("salt-run {args:?}: {e}\n{out:?}"))
}

/// What one master answered, by step.
type Record = BTreeMap<&'static str, Value>;

fn record(master_side: &Side, py: &Side) -> (Record, Duration) {
    let root = TempRoot::new().unwrap();
    let ports = free_port_pair().unwrap();
    let mdir = root.path().join("m");
    let pillar_dir = mdir.join("pillar");
    std::fs::create_dir_all(&pillar_dir).unwrap();
    std::fs::write(pillar_dir.join("top.sls"), TOP).unwrap();
    std::fs::write(
        pillar_dir.join("res.sls"),
        pillar(&["dummy-01", "dummy-02"]),
    )
    .unwrap();
    let mconf = MasterConf::new(&mdir)
        .ports(ports.0, ports.1)
        .auto_accept(true)
        .set(
            "pillar_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", pillar_dir.display())),
        );
    let mut master = Daemon::start_master(master_side, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let mut minions = Vec::new();
    for id in ["res1", "plain1"] {
        let conf = MinionConf::new(root.path().join(id), id).ports(ports.0, ports.1);
        let m = Daemon::start_minion(py, &conf).unwrap();
        m.wait_minion_ready().unwrap();
        minions.push(m);
    }
    let cli = SaltCli::new(master_side, &master.conf_dir);
    let long = Duration::from_secs(90);
    cli.until_answer("plain1", &["plain1", "test.ping"], long)
        .unwrap();
    // The resources answer once res1 has registered them.
    cli.until_answer("dummy-02", &["-C", "T@dummy", "test.ping"], long)
        .unwrap();
    let mut rec = Record::new();
    let mut salt = |key: &'static str, args: &[&str]| {
        let (v, out) = cli.salt_json(args, 30).unwrap();
        eprintln!("{} {key}: {}", master_side.label(), out.stdout);
        rec.insert(key, v);
    };
    salt("star", &["*", "test.ping"]);
    salt("type", &["-C", "T@dummy", "test.ping"]);
    salt("srn", &["-C", "T@dummy:dummy-02", "test.ping"]);
    salt("list", &["-L", "dummy-01,plain1", "test.ping"]);
    salt("bare_id", &["dummy-01", "test.ping"]);
    salt("glob_minion", &["res*", "test.ping"]);
    salt("grain", &["-G", "dummy_grain_1:one", "test.ping"]);
    salt(
        "compound",
        &["-C", "T@dummy and G@dummy_grain_1:one", "test.ping"],
    );
    // `-t 30` to resources: done when they have answered, not after 30 s.
    let t0 = Instant::now();
    let (v, _) = cli.salt_json(&["-C", "T@dummy", "test.ping"], 30).unwrap();
    let quick = t0.elapsed();
    assert_eq!(v.as_object().map(|m| m.len()), Some(2), "{v}");
    // One job's cache: every resource's return under its own id.
    let out = salt_integration_tests::cli::salt(
        &master_side.salt_bin(),
        None,
        &master.conf_dir,
        &["-C", "T@dummy", "test.ping", "--async"],
        Duration::from_secs(60),
    )
    .unwrap();
    let jid = regex::Regex::new(r"\d{20}")
        .unwrap()
        .find(&out.stdout)
        .unwrap_or_else(|| panic!("no jid: {out:?}"))
        .as_str()
        .to_owned();
    std::thread::sleep(Duration::from_secs(5));
    let conf = master.conf_dir.clone();
    rec.insert(
        "lookup_jid",
        salt_run(master_side, &conf, &["jobs.lookup_jid", &jid]),
    );
    rec.insert(
        "list_grains",
        salt_run(master_side, &conf, &["resource.list_grains"]),
    );
    rec.insert(
        "show_grains",
        salt_run(
            master_side,
            &conf,
            &["resource.show_grains", "type=dummy", "id=dummy-01"],
        ),
    );
    rec.insert(
        "show_missing",
        salt_run(
            master_side,
            &conf,
            &["resource.show_grains", "type=dummy", "id=nope"],
        ),
    );
    rec.insert(
        "refresh",
        salt_run(master_side, &conf, &["resource.refresh", "minion=res1"]),
    );
    // The pillar drops dummy-02: a refresh_pillar re-registers res1's resources.
    std::fs::write(pillar_dir.join("res.sls"), pillar(&["dummy-01"])).unwrap();
    let (v, _) = cli
        .salt_json(&["res1", "saltutil.refresh_pillar"], 30)
        .unwrap();
    assert_eq!(v["res1"], Value::Bool(true), "{v}");
    let t0 = Instant::now();
    let after = loop {
        std::thread::sleep(Duration::from_secs(2));
        let v = salt_run(master_side, &conf, &["resource.list_grains"]);
        if v.as_object().is_some_and(|m| m.len() == 1) || t0.elapsed() > long {
            break v;
        }
    };
    rec.insert("after_refresh_grains", after);
    let mut salt = |key: &'static str, args: &[&str]| {
        let (v, _) = cli.salt_json(args, 30).unwrap();
        rec.insert(key, v);
    };
    salt("after_refresh_type", &["-C", "T@dummy", "test.ping"]);
    // The registry survives a master restart (minions stopped: nobody registers again).
    for m in &mut minions {
        m.proc.stop(Duration::from_secs(15));
    }
    master.proc.stop(Duration::from_secs(30));
    master.proc.restart().unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    rec.insert(
        "restart_grains",
        salt_run(master_side, &conf, &["resource.list_grains"]),
    );
    (rec, quick)
}

#[test]
fn resources_match_salt_3008() {
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        return;
    };
    let _guard = serial();
    let py = Side::Salt(venv);
    let (theirs, their_quick) = record(&py, &py);
    let (ours, our_quick) = record(&Side::Ours(bins().unwrap()), &py);
    eprintln!("salt -t 30 to resources: Salt {their_quick:?}, ours {our_quick:?}");
    for (side, q) in [("salt", their_quick), ("ours", our_quick)] {
        assert!(q < Duration::from_secs(20), "{side}: -t 30 took {q:?}");
    }
    let t = |ids: &[&str]| -> Value {
        Value::Object(
            ids.iter()
                .map(|i| ((*i).to_owned(), Value::Bool(true)))
                .collect(),
        )
    };
    // What Salt 3008.5's master answers (checked here so a change in Salt shows as such).
    assert_eq!(
        theirs["star"],
        t(&["res1", "plain1", "dummy-01", "dummy-02"])
    );
    assert_eq!(theirs["type"], t(&["dummy-01", "dummy-02"]));
    assert_eq!(theirs["srn"], t(&["dummy-02"]));
    assert_eq!(theirs["list"], t(&["dummy-01", "plain1"]));
    assert_eq!(theirs["bare_id"], t(&["dummy-01"]));
    assert_eq!(theirs["glob_minion"], t(&["res1", "dummy-01", "dummy-02"]));
    assert_eq!(theirs["grain"], t(&["dummy-01", "dummy-02"]));
    assert_eq!(theirs["compound"], t(&["dummy-01", "dummy-02"]));
    assert_eq!(theirs["after_refresh_type"], t(&["dummy-01"]));
    assert_eq!(theirs["refresh"], Value::Bool(true));
    // Salt's `salt-run --out json` prints a runner's `None` as `{}`, ours as `null` (salt-run's
    // printing, not the runner): both are "no grains".
    let mut ours = ours;
    if ours["show_missing"] == Value::Null {
        ours.insert("show_missing", Value::Object(serde_json::Map::new()));
    }
    for (step, want) in &theirs {
        assert_eq!(
            ours.get(step),
            Some(want),
            "{step}: ours differs from Salt 3008.5"
        );
    }
}
