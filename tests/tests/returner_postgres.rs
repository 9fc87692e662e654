//! Salt's `postgres` returner on the master (`master_job_cache: postgres`,
//! `event_return: postgres`), on a real PostgreSQL started by the harness (Debian's
//! `postgresql`, root; a failure under CI=true where missing).
//!
//! `returner_postgres_rows_as_salt`: the same job load, returns and events written by our
//! store (`PostgresJobs`, `PgReturner::event_return`) into one database and by Salt
//! 3007.17's `salt/returners/postgres.py` (psycopg2, from `scripts/salt-venv.sh`) into
//! another give the same rows, byte for byte (`jids`, `salt_returns`, `salt_events` but
//! for `alter_time` and the event id); a second `save_load` of a jid is ignored on both;
//! Salt's `get_load`/`get_jid`/`get_jids` read our database as ours reads it.
//!
//! `returner_postgres_master`: our master with `master_job_cache: postgres`,
//! `event_return: postgres`, `event_return_queue: 2` and a whitelist of `salt/job/*`
//! runs a job on our minion: its load is in `jids`, its return in `salt_returns`, its
//! `new` and `ret` events in `salt_events` under the master's id (no `salt/auth`), and
//! `salt-run jobs.lookup_jid` / `jobs.list_jobs` answer from the tables.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmpv::Value;
use salt_integration_tests::pg::Postgres;
use salt_integration_tests::process::ProcSpec;
use salt_integration_tests::root::TempRoot;
use salt_integration_tests::venv_for;
use salt_integration_tests::wait::{wait_for_log, wait_until};
use salt_integration_tests::{MasterConf, MinionConf, bins, cli, ports};
use salt_master_core::job_cache::{JobStore, PostgresJobs};
use salt_pgstore::{PgReturner, Settings};

/// Salt's postgres returner driven from Python: writes the job of argv[2] (JSON) as Salt's
/// master would, prints what its readers answer.
const PY: &str = r#"
import json, sys
import salt.config
import salt.returners.postgres as pg
opts = salt.config.master_config(sys.argv[1])
pg.__opts__ = opts
pg.__salt__ = {}
job = json.loads(sys.argv[2])
jid = job["jid"]
pg.save_load(jid, job["load"])
pg.save_load(jid, {"fun": "ignored"})
for ret in job["returns"]:
    pg.returner(ret)
pg.event_return(job["events"])
print(json.dumps({"load": pg.get_load(jid), "jid": pg.get_jid(jid), "jids": sorted(pg.get_jids())}))
"#;

fn settings(pg: &Postgres, db: &str) -> Settings {
    Settings {
        cluster_id: String::new(),
        master: "pgmaster".into(),
        host: pg.host().display().to_string(),
        port: pg.port(),
        user: "postgres".into(),
        pass: String::new(),
        db: db.into(),
        tls: Default::default(),
        rotate_on_revoke: false,
    }
}

fn mp(j: &serde_json::Value) -> Value {
    salt_compat::json::json_to_msgpack(j)
}

/// The rows of the three tables, as text (`|`-separated by psql), without `alter_time` and
/// the event id.
fn rows(pg: &Postgres, db: &str) -> [String; 3] {
    [
        pg.psql(db, "SELECT jid, load FROM jids ORDER BY jid")
            .unwrap(),
        pg.psql(
            db,
            "SELECT fun, jid, return, id, success, full_ret FROM salt_returns ORDER BY id",
        )
        .unwrap(),
        pg.psql(
            db,
            "SELECT tag, data, master_id FROM salt_events ORDER BY id",
        )
        .unwrap(),
    ]
}

#[test]
fn returner_postgres_rows_as_salt() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let py = venv.dir.join("bin/python");
    let has_psycopg2 = std::process::Command::new(&py)
        .args(["-c", "import psycopg2"])
        .status()
        .is_ok_and(|s| s.success());
    if salt_integration_tests::require(if has_psycopg2 {
        Ok(())
    } else {
        Err(salt_integration_tests::Missing::new(
            "psycopg2 in the Salt 3007.17 venv (scripts/salt-venv.sh installs psycopg2-binary)",
        ))
    })
    .is_none()
    {
        return;
    }
    let root = TempRoot::new().unwrap();
    let Some(pg) = Postgres::start(&root.dir("pg").unwrap()).unwrap() else {
        return;
    };
    pg.psql("postgres", "CREATE DATABASE ours").unwrap();
    pg.psql("postgres", "CREATE DATABASE salt").unwrap();
    // Salt's returner expects its tables (its documentation's DDL); ours creates them.
    pg.psql("salt", salt_pgstore::RETURNER_DDL).unwrap();

    let jid = "20261128014500123456";
    let load = serde_json::json!({
        "fun": "test.arg", "arg": ["a1", {"k": "vé", "__kwarg__": true}], "tgt": "*",
        "jid": jid, "ret": "", "tgt_type": "glob", "user": "root"
    });
    let returns = [
        serde_json::json!({"success": true, "return": {"args": ["a1"], "n": 1.5},
            "retcode": 0, "jid": jid, "fun": "test.arg", "fun_args": ["a1"], "id": "m1"}),
        serde_json::json!({"return": "boom", "retcode": 1, "success": false, "jid": jid,
            "fun": "test.arg", "id": "m2"}),
        serde_json::json!({"return": ["x"], "jid": jid, "fun": "test.arg", "id": "m3"}),
    ];
    let events = [
        serde_json::json!({"tag": format!("salt/job/{jid}/new"),
            "data": {"jid": jid, "tgt": "*", "minions": ["m1", "m2"],
                     "_stamp": "2026-11-28T01:45:00.123456"}}),
        serde_json::json!({"tag": "salt/auth",
            "data": {"result": true, "act": "accept", "id": "m1", "pub": "-----"}}),
    ];

    // Ours.
    let db = Arc::new(PgReturner::new(settings(&pg, "ours")).unwrap());
    db.connect().unwrap();
    let store = PostgresJobs::new(db.clone());
    store.save_load(jid, &mp(&load)).unwrap();
    store
        .save_load(jid, &mp(&serde_json::json!({"fun": "ignored"})))
        .unwrap();
    for r in &returns {
        store
            .save_return(jid, r["id"].as_str().unwrap(), &mp(r))
            .unwrap();
    }
    let texts: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            // As the master's event returner: `json.dumps(data)`.
            let data = salt_master_core::job_cache::salt_json(&mp(&e["data"]));
            (e["tag"].as_str().unwrap().to_owned(), data)
        })
        .collect();
    db.event_return(texts).unwrap();

    // Salt's.
    let conf = root.dir("saltconf").unwrap();
    std::fs::write(
        conf.join("master"),
        format!(
            "id: pgmaster\nroot_dir: {r}\nreturner.postgres.host: {h}\n\
             returner.postgres.port: {p}\nreturner.postgres.user: postgres\n\
             returner.postgres.passwd: ''\nreturner.postgres.db: salt\n",
            r = conf.display(),
            h = pg.host().display(),
            p = pg.port()
        ),
    )
    .unwrap();
    std::fs::write(conf.join("pg.py"), PY).unwrap();
    let job = serde_json::json!({"jid": jid, "load": load, "returns": returns, "events": events});
    let out = std::process::Command::new(&py)
        .arg(conf.join("pg.py"))
        .arg(conf.join("master"))
        .arg(job.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "pg.py: {out:?}");

    let (ours, salts) = (rows(&pg, "ours"), rows(&pg, "salt"));
    assert_eq!(ours[0], salts[0], "jids");
    assert_eq!(ours[1], salts[1], "salt_returns");
    assert_eq!(ours[2], salts[2], "salt_events");
    assert!(ours[1].contains("|true|"), "{}", ours[1]);
    assert_eq!(ours[2].lines().count(), 2, "{}", ours[2]);

    // Salt's readers over our database answer as ours.
    std::fs::write(
        conf.join("read.py"),
        "import json, sys\nimport salt.config\nimport salt.returners.postgres as pg\n\
         pg.__opts__ = salt.config.master_config(sys.argv[1])\npg.__salt__ = {}\n\
         jid = sys.argv[2]\n\
         print(json.dumps({'load': pg.get_load(jid), 'jid': pg.get_jid(jid)}))\n",
    )
    .unwrap();
    let text = std::fs::read_to_string(conf.join("master"))
        .unwrap()
        .replace("returner.postgres.db: salt", "returner.postgres.db: ours");
    std::fs::write(conf.join("master"), text).unwrap();
    let out = std::process::Command::new(&py)
        .arg(conf.join("read.py"))
        .arg(conf.join("master"))
        .arg(jid)
        .output()
        .unwrap();
    assert!(out.status.success(), "read.py: {out:?}");
    let salt_read: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let our_load = salt_compat::json::msgpack_to_json(&store.load(jid).unwrap().unwrap());
    assert_eq!(salt_read["load"], our_load);
    assert_eq!(our_load, load);
    let our_rets: serde_json::Map<String, serde_json::Value> = store
        .returns(jid)
        .unwrap()
        .into_iter()
        .map(|(id, v)| (id, salt_compat::json::msgpack_to_json(&v)))
        .collect();
    assert_eq!(salt_read["jid"], serde_json::Value::Object(our_rets));
    assert_eq!(store.jobs().unwrap().len(), 1);
}

fn salt_run_json(conf: &Path, args: &[&str]) -> serde_json::Value {
    let b = bins().expect("bins");
    let mut c = std::process::Command::new(b.salt.with_file_name("salt-run"));
    c.arg("-c").arg(conf).args(args).args(["--out", "json"]);
    let out = cli::run_with_timeout(c, Duration::from_secs(60)).expect("salt-run");
    assert!(
        out.success(),
        "salt-run {args:?}: {}{}",
        out.stdout,
        out.stderr
    );
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("salt-run {args:?}: {e}: {}", out.stdout))
}

#[test]
fn returner_postgres_master() {
    let root = TempRoot::new().unwrap();
    let Some(pg) = Postgres::start(&root.dir("pg").unwrap()).unwrap() else {
        return;
    };
    let b = bins().unwrap();
    let (publish, ret) = ports::free_port_pair().unwrap();
    let conf = MasterConf::new(root.path().join("ma"))
        .id("pgmaster")
        .ports(publish, ret)
        .auto_accept(true);
    let conf_dir = conf.write().unwrap();
    let file = conf_dir.join("master");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&format!(
        "master_job_cache: postgres\nevent_return: postgres\nevent_return_queue: 2\n\
         event_return_whitelist: ['salt/job/*']\nreturner.postgres.host: {}\n\
         returner.postgres.port: {}\nreturner.postgres.user: postgres\n\
         returner.postgres.db: postgres\n",
        pg.host().display(),
        pg.port()
    ));
    std::fs::write(&file, text).unwrap();
    let master = ProcSpec::new("ma", &b.master, conf.dir())
        .args(["-c".into(), conf_dir.clone().into_os_string()])
        .args(["-l", "info"])
        .spawn()
        .unwrap();
    wait_for_log(&master, "worker threads", Duration::from_secs(60)).unwrap();
    let mconf = MinionConf::new(root.path().join("m1"), "m1")
        .master("127.0.0.1")
        .ports(publish, ret)
        .set("auth_timeout", 5u32)
        .set("acceptance_wait_time", 1u32);
    let mdir = mconf.write().unwrap();
    let minion = ProcSpec::new("m1", &b.minion, mconf.dir())
        .args(["-c".into(), mdir.into_os_string()])
        .args(["-l", "info"])
        .spawn()
        .unwrap();
    let salt = |args: &[&str]| {
        cli::salt(&b.salt, None, &conf_dir, args, Duration::from_secs(60)).expect("salt")
    };
    assert!(
        wait_until(
            "m1 answers",
            Duration::from_secs(90),
            || cli::ping_answered(&salt(&["m1", "test.ping", "-t", "5"]), "m1")
        )
        .is_ok(),
        "m1 never answered:\n{}\n{}",
        master.output(),
        minion.output()
    );
    let out = salt(&["--show-jid", "m1", "test.echo", "hello"]);
    let jid = out
        .stdout
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("jid: "))
        .unwrap_or_else(|| panic!("no jid: {}{}", out.stdout, out.stderr))
        .to_owned();

    let load = pg
        .psql(
            "postgres",
            &format!("SELECT load FROM jids WHERE jid = '{jid}'"),
        )
        .unwrap();
    let load: serde_json::Value = serde_json::from_str(&load).unwrap();
    assert_eq!(load["fun"], "test.echo", "{load}");
    assert_eq!(load["arg"], serde_json::json!(["hello"]), "{load}");
    let ret = pg
        .psql(
            "postgres",
            &format!("SELECT fun, return, id, success FROM salt_returns WHERE jid = '{jid}'"),
        )
        .unwrap();
    assert_eq!(ret, "test.echo|\"hello\"|m1|true");

    // The job's events (queued by two; the ret event fills the queue of the job's pair).
    let tags = || {
        pg.psql(
            "postgres",
            &format!(
                "SELECT tag || ' ' || master_id FROM salt_events \
                 WHERE tag LIKE 'salt/job/{jid}/%' AND tag NOT LIKE '%/publish' ORDER BY id"
            ),
        )
        .unwrap()
    };
    let want = format!("salt/job/{jid}/new pgmaster\nsalt/job/{jid}/ret/m1 pgmaster");
    // Each ping adds a `new`/`ret` pair: whatever the queue held is written by then.
    assert!(
        wait_until("the job's events stored", Duration::from_secs(30), || {
            tags() == want || {
                salt(&["m1", "test.ping"]);
                false
            }
        })
        .is_ok(),
        "{}\n{}",
        tags(),
        master.output()
    );
    let auth = pg
        .psql(
            "postgres",
            "SELECT count(*) FROM salt_events WHERE tag NOT LIKE 'salt/job/%'",
        )
        .unwrap();
    assert_eq!(auth, "0", "only whitelisted tags");

    let looked = salt_run_json(&conf_dir, &["jobs.lookup_jid", &jid]);
    assert_eq!(looked, serde_json::json!({"m1": "hello"}));
    let listed = salt_run_json(&conf_dir, &["jobs.list_jobs", "search_function=test.echo"]);
    assert_eq!(listed[&jid]["Function"], "test.echo", "{listed:#}");
    drop(minion);
    drop(master);
}
