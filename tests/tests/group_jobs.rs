//! The group's job cache on a real PostgreSQL (`master_job_cache: pgjsonb`, docs/group.md):
//! two of our masters on one database started by the harness (Debian's `postgresql`;
//! root; a failure under CI=true where missing, else a recorded skip).
//!
//! `group_jobs_one_view`: a job run on master A is listed and looked up on master B
//! (`salt-run jobs.list_jobs` / `jobs.lookup_jid` / `jobs.list_job`), stored once per
//! `(jid, id)` in Salt's `salt_returns`; B's `manage.present`/`manage.status` count the
//! minion A holds (presence); a `salt` command waiting on A gets the return that
//! another member stored (through LISTEN/NOTIFY), once.
//!
//! `group_jobs_failover_return_reaches_b`: our minion in a `master_type: failover` list
//! [A, B] runs a job published by A; A is SIGKILLed mid-job (and B frozen until the job
//! ended); the minion keeps the return until a master acknowledges it, fails over to B and
//! returns there: `salt-run
//! jobs.lookup_jid` on B shows it (Salt loses it: #43262).
//!
//! `group_jobs_database_down`: PostgreSQL SIGKILLed while jobs run: the masters keep serving
//! (the `salt` command gets its returns), returns spool to disk; PostgreSQL restarted: the
//! spool is replayed, every return is on B, none twice ("returns lost: 0").

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use salt_integration_tests::pg::Postgres;
use salt_integration_tests::process::{Proc, ProcSpec};
use salt_integration_tests::root::TempRoot;
use salt_integration_tests::wait::{wait_for_log, wait_until};
use salt_integration_tests::{MasterConf, MinionConf, bins, cli, ports};
use salt_keystore::{KeyChanges, KeyState, KeyStore};

struct Master {
    proc: Proc,
    conf: PathBuf,
    publish: u16,
    ret: u16,
}

#[allow(clippy::unwrap_used)] // test set-up: a failure is the test failing
fn master(root: &Path, name: &str, pg: &Postgres) -> Master {
    master_keyed(root, name, pg, None)
}

/// A member; `key_of`: another member's directory whose `master.pem`/`master.pub` it uses
/// (masters a failover minion moves between share their key, as in Salt's multi-master).
#[allow(clippy::unwrap_used)]
fn master_keyed(root: &Path, name: &str, pg: &Postgres, key_of: Option<&str>) -> Master {
    let (publish, ret) = ports::free_port_pair().unwrap();
    let conf = MasterConf::new(root.join(name))
        .id(name)
        .ports(publish, ret)
        .auto_accept(true);
    let conf_dir = conf.write().unwrap();
    let file = conf_dir.join("master");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&pg.group_conf("g1"));
    text.push_str("master_job_cache: pgjsonb\n");
    std::fs::write(&file, text).unwrap();
    if let Some(other) = key_of {
        std::fs::create_dir_all(conf.pki_dir()).unwrap();
        for f in ["master.pem", "master.pub"] {
            std::fs::copy(root.join(other).join("pki").join(f), conf.pki_dir().join(f)).unwrap();
        }
    }
    let b = bins().unwrap();
    let proc = ProcSpec::new(name, &b.master, conf.dir())
        .args(["-c".into(), conf_dir.clone().into_os_string()])
        .args(["-l", "info"])
        .spawn()
        .unwrap();
    wait_for_log(&proc, "worker threads", Duration::from_secs(60)).unwrap();
    Master {
        proc,
        conf: conf_dir,
        publish,
        ret,
    }
}

#[allow(clippy::unwrap_used)]
fn minion(root: &Path, id: &str, m: &Master) -> Proc {
    let b = bins().unwrap();
    let mconf = MinionConf::new(root.join(id), id)
        .master("127.0.0.1")
        .ports(m.publish, m.ret)
        .set("auth_timeout", 5u32)
        .set("acceptance_wait_time", 1u32);
    let mdir = mconf.write().unwrap();
    ProcSpec::new(id, &b.minion, mconf.dir())
        .args(["-c".into(), mdir.into_os_string()])
        .args(["-l", "info"])
        .spawn()
        .unwrap()
}

fn salt(m: &Master, args: &[&str]) -> cli::CmdOutput {
    let b = bins().expect("bins");
    cli::salt(&b.salt, None, &m.conf, args, Duration::from_secs(60)).expect("salt")
}

fn salt_run_json(m: &Master, args: &[&str]) -> serde_json::Value {
    let b = bins().expect("bins");
    let mut c = std::process::Command::new(b.salt.with_file_name("salt-run"));
    c.arg("-c").arg(&m.conf).args(args).args(["--out", "json"]);
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

fn jobdb(pg: &Postgres, root: &Path, who: &str) -> salt_pgstore::JobDb {
    let settings = salt_pgstore::Settings {
        cluster_id: "g1".into(),
        master: who.into(),
        host: pg.host().display().to_string(),
        port: pg.port(),
        user: "postgres".into(),
        pass: String::new(),
        db: "postgres".into(),
        tls: Default::default(),
        rotate_on_revoke: true,
    };
    let db = salt_pgstore::JobDb::new(settings, root.join(format!("{who}-spool"))).expect("db");
    db.connect().expect("connect");
    db
}

/// The jid of a `salt --show-jid` run.
fn show_jid(out: &cli::CmdOutput) -> String {
    out.stdout
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("jid: "))
        .unwrap_or_else(|| panic!("no jid: {}{}", out.stdout, out.stderr))
        .to_owned()
}

fn answers(m: &Master, id: &str) -> bool {
    cli::ping_answered(&salt(m, &[id, "test.ping", "-t", "5"]), id)
}

#[test]
fn group_jobs_one_view() {
    let root = TempRoot::new().unwrap();
    let Some(pg) = Postgres::start(&root.dir("pg").unwrap()).unwrap() else {
        return;
    };
    let a = master(root.path(), "ma", &pg);
    let b = master(root.path(), "mb", &pg);
    let mut m1 = minion(root.path(), "m1", &a);
    assert!(
        wait_until("m1 answers at A", Duration::from_secs(90), || answers(
            &a, "m1"
        ))
        .is_ok(),
        "m1 never answered at A:\n{}\n{}",
        a.proc.output(),
        m1.output()
    );

    // A job on A: listed, looked up and shown on B; one row in Salt's salt_returns.
    let out = salt(&a, &["--show-jid", "m1", "test.ping"]);
    let jid = show_jid(&out);
    let listed = salt_run_json(&b, &["jobs.list_jobs", "search_function=test.ping"]);
    assert_eq!(listed[&jid]["Function"], "test.ping", "{listed:#}");
    assert_eq!(listed[&jid]["Target"], "m1", "{listed:#}");
    let looked = salt_run_json(&b, &["jobs.lookup_jid", &jid]);
    assert_eq!(looked, serde_json::json!({"m1": true}), "lookup_jid on B");
    let job = salt_run_json(&b, &["jobs.list_job", &jid]);
    assert_eq!(job["Result"]["m1"]["return"], true, "{job:#}");
    let db = jobdb(&pg, root.path(), "reader");
    let rows = db.returns(&jid).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let full: serde_json::Value = serde_json::from_str(&rows[0].1).unwrap();
    assert_eq!(full["return"], true);
    assert_eq!(full["fun"], "test.ping");
    assert!(db.load(&jid).unwrap().is_some(), "jids row of {jid}");

    // Presence: B knows that A (alive) holds m1.
    let present = salt_run_json(&b, &["manage.present"]);
    assert_eq!(present, serde_json::json!(["m1"]), "manage.present on B");
    let status = salt_run_json(&b, &["manage.status", "timeout=2"]);
    assert_eq!(
        status["up"],
        serde_json::json!(["m1"]),
        "manage.status on B: {status}"
    );

    // The same return stored again (a minion resending to another master): still one row.
    let again = salt_pgstore::ReturnRow {
        jid: jid.clone(),
        id: "m1".into(),
        fun: "test.ping".into(),
        success: true,
        full_ret: rows[0].1.clone(),
    };
    assert_eq!(db.save_return(again).unwrap(), salt_pgstore::Stored::Db);
    assert_eq!(db.returns(&jid).unwrap().len(), 1);
    // Salt's pgjsonb `event_return` rows: the job's new event and its return, once each.
    let new = db.events(&format!("salt/job/{jid}/new")).unwrap();
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0].2, "ma");
    let new_data: serde_json::Value = serde_json::from_str(&new[0].1).unwrap();
    assert_eq!(new_data["fun"], "test.ping", "{new_data}");
    let ret = db.events(&format!("salt/job/{jid}/ret/")).unwrap();
    assert_eq!(ret.len(), 1, "{ret:?}");
    assert_eq!(ret[0].0, format!("salt/job/{jid}/ret/m1"));

    // A salt command waiting on A hears a return another member stores. "ghost" is a
    // known (accepted) minion that never connects to A; member "writer" stores its return.
    let kdir = root.dir("writer-keys").unwrap();
    let writer = salt_pgstore::Group::new(
        salt_pgstore::Settings {
            cluster_id: "g1".into(),
            master: "writer".into(),
            host: pg.host().display().to_string(),
            port: pg.port(),
            user: "postgres".into(),
            pass: String::new(),
            db: "postgres".into(),
            tls: Default::default(),
            rotate_on_revoke: false,
        },
        Arc::new(KeyStore::open(&kdir).unwrap()),
    )
    .unwrap();
    writer.sync().unwrap();
    let pem = salt_pki::PrivateKey::generate(2048)
        .unwrap()
        .public_key()
        .to_pem();
    writer
        .put(KeyState::Accepted, "ghost", pem.as_str())
        .unwrap();
    let auth = db.events("salt/auth").unwrap();
    assert!(
        auth.iter().any(|(_, d, m)| m == "writer"
            && d.contains("\"id\": \"ghost\"")
            && d.contains("\"act\": \"accept\"")),
        "{auth:?}"
    );
    let a_pki = root.path().join("ma").join("pki");
    let _ = wait_until("ghost at A", Duration::from_secs(10), || {
        a_pki.join("minions/ghost").exists()
    });
    let before: Vec<String> = db.jobs().unwrap().into_iter().map(|(j, _)| j).collect();
    let conf_a = a.conf.clone();
    let started = Instant::now();
    let waiting = std::thread::spawn(move || {
        let b = bins().expect("bins");
        cli::salt(
            &b.salt,
            None,
            &conf_a,
            &["-L", "m1,ghost", "test.ping", "-t", "30", "--out", "json"],
            Duration::from_secs(90),
        )
        .expect("salt")
    });
    let mut new_jid = None;
    let found = wait_until("the job in jids", Duration::from_secs(20), || {
        new_jid = db
            .jobs()
            .unwrap_or_default()
            .into_iter()
            .map(|(j, _)| j)
            .find(|j| !before.contains(j));
        new_jid.is_some()
    });
    assert!(found.is_ok(), "A never saved the job's load");
    let new_jid = new_jid.unwrap();
    let other = jobdb(&pg, root.path(), "writer");
    let ghost_ret = serde_json::json!({
        "id": "ghost", "jid": new_jid, "fun": "test.ping", "return": "from-another-master",
        "success": true, "retcode": 0
    });
    other
        .save_return(salt_pgstore::ReturnRow {
            jid: new_jid.clone(),
            id: "ghost".into(),
            fun: "test.ping".into(),
            success: true,
            full_ret: ghost_ret.to_string(),
        })
        .unwrap();
    let out = waiting.join().unwrap();
    let took = started.elapsed();
    println!(
        "group jobs: a salt command on A got a return stored by another member; done in {took:?}"
    );
    assert!(
        out.stdout.contains("from-another-master") && out.stdout.contains("\"m1\""),
        "salt on A: {}{}\n{}",
        out.stdout,
        out.stderr,
        a.proc.output()
    );
    assert_eq!(
        out.stdout.matches("from-another-master").count(),
        1,
        "{}",
        out.stdout
    );
    assert!(
        took < Duration::from_secs(25),
        "the command waited for its timeout: {took:?}"
    );
    m1.stop(Duration::from_secs(10));
    let (mut pa, mut pb) = (a.proc, b.proc);
    pa.stop(Duration::from_secs(10));
    pb.stop(Duration::from_secs(10));
}

#[test]
fn group_jobs_database_down() {
    let root = TempRoot::new().unwrap();
    let Some(mut pg) = Postgres::start(&root.dir("pg").unwrap()).unwrap() else {
        return;
    };
    let a = master(root.path(), "ma", &pg);
    let b = master(root.path(), "mb", &pg);
    let mut m1 = minion(root.path(), "m1", &a);
    assert!(
        wait_until("m1 answers at A", Duration::from_secs(90), || answers(
            &a, "m1"
        ))
        .is_ok(),
        "m1 never answered at A:\n{}\n{}",
        a.proc.output(),
        m1.output()
    );
    let mut jids = Vec::new();
    for _ in 0..3 {
        let out = salt(&a, &["--show-jid", "m1", "test.ping"]);
        assert!(cli::ping_answered(&out, "m1"), "{}", out.stdout);
        jids.push(show_jid(&out));
    }
    pg.kill();
    // The database is down: the masters keep serving, returns spool.
    for _ in 0..5 {
        let out = salt(&a, &["--show-jid", "m1", "test.ping"]);
        assert!(
            cli::ping_answered(&out, "m1"),
            "A with the database down: {}{}\n{}",
            out.stdout,
            out.stderr,
            a.proc.output()
        );
        jids.push(show_jid(&out));
    }
    let spool = root.path().join("ma").join("cache").join("pgjsonb_spool");
    let spooled = std::fs::read_dir(&spool).map(|d| d.count()).unwrap_or(0);
    println!("group jobs: {spooled} item(s) spooled at A while the database was down");
    assert!(spooled >= 5, "nothing spooled in {}", spool.display());
    let t = Instant::now();
    pg.restart().unwrap();
    let db = jobdb(&pg, root.path(), "reader");
    let drained = wait_until("the spool replayed", Duration::from_secs(30), || {
        std::fs::read_dir(&spool)
            .map(|d| {
                d.flatten()
                    .all(|e| e.file_name().to_string_lossy().ends_with(".bad"))
            })
            .unwrap_or(true)
    });
    assert!(drained.is_ok(), "spool not replayed:\n{}", a.proc.output());
    println!(
        "group jobs: spool replayed {:?} after the restart",
        t.elapsed()
    );
    let mut lost = 0;
    for jid in &jids {
        let rows = db.returns(jid).unwrap();
        assert!(rows.len() <= 1, "{jid}: {} rows", rows.len());
        if rows.len() != 1 {
            lost += 1;
            continue;
        }
        let looked = salt_run_json(&b, &["jobs.lookup_jid", jid]);
        assert_eq!(looked, serde_json::json!({"m1": true}), "{jid} on B");
    }
    println!("group jobs: {} jobs, returns lost: {lost}", jids.len());
    assert_eq!(lost, 0);
    // And the masters still serve.
    assert!(answers(&a, "m1"));
    m1.stop(Duration::from_secs(10));
    let (mut pa, mut pb) = (a.proc, b.proc);
    pa.stop(Duration::from_secs(10));
    pb.stop(Duration::from_secs(10));
}

#[test]
fn group_jobs_failover_return_reaches_b() {
    let root = TempRoot::new().unwrap();
    let Some(pg) = Postgres::start(&root.dir("pg").unwrap()).unwrap() else {
        return;
    };
    let a = master(root.path(), "ma", &pg);
    let b = master_keyed(root.path(), "mb", &pg, Some("ma"));
    let bn = bins().unwrap();
    let list = [
        format!("127.0.0.1:{}", a.ret),
        format!("127.0.0.1:{}", b.ret),
    ];
    let mconf = MinionConf::new(root.path().join("m1"), "m1")
        .masters(&list)
        .failover(1)
        // 4506: take each master's publish port from its sign-in reply (as Salt).
        .set("publish_port", 4506u32)
        .set("auth_timeout", 3u32)
        .set("acceptance_wait_time", 1u32)
        .set("return_retry_timer", 1u32)
        .set("return_retry_timer_max", 1u32)
        .set("return_retry_tries", 2u32);
    let mdir = mconf.write().unwrap();
    let mut m1 = ProcSpec::new("m1", &bn.minion, mconf.dir())
        .args(["-c".into(), mdir.into_os_string()])
        .args(["-l", "info"])
        .spawn()
        .unwrap();
    assert!(
        wait_until("m1 answers at A", Duration::from_secs(90), || answers(
            &a, "m1"
        ))
        .is_ok(),
        "m1 never answered at A:\n{}\n{}",
        a.proc.output(),
        m1.output()
    );
    let out = salt(&a, &["--async", "m1", "test.sleep", "4"]);
    let jid = out
        .stdout
        .trim()
        .strip_prefix("Executed command with job ID: ")
        .unwrap_or_else(|| panic!("salt --async: {}{}", out.stdout, out.stderr))
        .to_owned();
    // The minion runs the job; its master dies before the return.
    assert!(
        wait_for_log(&m1, &format!("with jid {jid}"), Duration::from_secs(20)).is_ok(),
        "m1 never ran {jid}:\n{}",
        m1.output()
    );
    let (mut pa, mut pb) = (a.proc, b.proc);
    // B frozen too, so the job ends with no master to take its return: the minion keeps it
    // (the path under test), then B wakes up and the minion fails over to it.
    pb.signal(nix::sys::signal::Signal::SIGSTOP);
    let killed = Instant::now();
    pa.signal(nix::sys::signal::Signal::SIGKILL);
    let kept = wait_for_log(
        &m1,
        &format!("Keeping the return of job {jid}"),
        Duration::from_secs(30),
    );
    pb.signal(nix::sys::signal::Signal::SIGCONT);
    assert!(kept.is_ok(), "the return was not kept:\n{}", m1.output());
    let mut looked = serde_json::Value::Null;
    let got = wait_until("the return on B", Duration::from_secs(60), || {
        let mut c = std::process::Command::new(bn.salt.with_file_name("salt-run"));
        c.arg("-c")
            .arg(&b.conf)
            .args(["jobs.lookup_jid", &jid, "--out", "json"]);
        looked = cli::run_with_timeout(c, Duration::from_secs(30))
            .ok()
            .and_then(|o| serde_json::from_str(&o.stdout).ok())
            .unwrap_or(serde_json::Value::Null);
        looked.get("m1").is_some()
    });
    assert!(
        got.is_ok(),
        "the return of {jid} never reached B: {looked}\nminion:\n{}\nB:\n{}",
        m1.output(),
        pb.output()
    );
    println!(
        "group jobs: master A killed mid-job; the return reached B and shows in \
         jobs.lookup_jid there {:?} after the kill",
        killed.elapsed()
    );
    assert_eq!(looked["m1"], true, "{looked}");
    let db = jobdb(&pg, root.path(), "reader");
    assert_eq!(db.returns(&jid).unwrap().len(), 1);
    m1.stop(Duration::from_secs(10));
    pb.stop(Duration::from_secs(10));
    let _ = pa.wait_exit(Duration::from_secs(5));
}

/// The (minion, jid) pairs a minion's log says it executed.
fn executed(id: &str, log: &str) -> Vec<(String, String)> {
    let re = regex::Regex::new(r"Executing command \S+ with jid (\d+)").expect("regex");
    re.captures_iter(log)
        .map(|c| (id.to_owned(), c[1].to_owned()))
        .collect()
}

/// Chaos over a 3-master group: 3 failover minions, jobs published on every live master
/// every second; mid-run PostgreSQL is SIGKILLed and restarted, then a master is
/// SIGKILLed and restarted. Every return a minion produced must end up in `salt_returns`
/// once ("returns lost: 0"). `GROUP_CHAOS_SECS` (default 24) sets the length
/// (scripts/group-chaos.sh runs a long one).
#[test]
fn group_jobs_chaos() {
    let root = TempRoot::new().unwrap();
    let Some(mut pg) = Postgres::start(&root.dir("pg").unwrap()).unwrap() else {
        return;
    };
    let secs: u64 = std::env::var("GROUP_CHAOS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24)
        .max(12);
    let mut masters = vec![master(root.path(), "ma", &pg)];
    masters.push(master_keyed(root.path(), "mb", &pg, Some("ma")));
    masters.push(master_keyed(root.path(), "mc", &pg, Some("ma")));
    let bn = bins().unwrap();
    let rets: Vec<String> = masters
        .iter()
        .map(|m| format!("127.0.0.1:{}", m.ret))
        .collect();
    let mut minions = Vec::new();
    for i in 0..3 {
        let mut order = rets.clone();
        order.rotate_left(i);
        let id = format!("c{i}");
        let mconf = MinionConf::new(root.path().join(&id), &id)
            .masters(&order)
            .failover(1)
            .set("publish_port", 4506u32)
            .set("auth_timeout", 3u32)
            .set("acceptance_wait_time", 1u32)
            .set("return_retry_timer", 1u32)
            .set("return_retry_timer_max", 1u32)
            .set("return_retry_tries", 2u32);
        let mdir = mconf.write().unwrap();
        let p = ProcSpec::new(&id, &bn.minion, mconf.dir())
            .args(["-c".into(), mdir.into_os_string()])
            .args(["-l", "info"])
            .spawn()
            .unwrap();
        minions.push((id, p));
    }
    for (i, (id, p)) in minions.iter().enumerate() {
        assert!(
            wait_until("minion up", Duration::from_secs(90), || answers(
                &masters[i],
                id
            ))
            .is_ok(),
            "{id} never answered:\n{}",
            p.output()
        );
    }
    let t0 = Instant::now();
    let third = Duration::from_secs(secs / 4);
    let (mut pg_down, mut pg_back, mut m_down, mut m_back) = (false, false, false, false);
    let mut published = 0;
    while t0.elapsed() < Duration::from_secs(secs) {
        let e = t0.elapsed();
        if !pg_down && e >= third {
            pg.kill();
            pg_down = true;
            println!("chaos: {e:.1?} PostgreSQL killed");
        } else if pg_down && !pg_back && e >= third + Duration::from_secs(4) {
            pg.restart().unwrap();
            pg_back = true;
            println!("chaos: {e:.1?} PostgreSQL restarted");
        } else if !m_down && e >= third * 2 {
            masters[0].proc.signal(nix::sys::signal::Signal::SIGKILL);
            let _ = masters[0].proc.wait_exit(Duration::from_secs(5));
            m_down = true;
            println!("chaos: {e:.1?} master ma killed");
        } else if m_down && !m_back && e >= third * 3 {
            masters[0].proc.restart().unwrap();
            m_back = true;
            println!("chaos: {e:.1?} master ma restarted");
        }
        for (i, m) in masters.iter().enumerate() {
            if i == 0 && m_down && !m_back {
                continue;
            }
            let out = salt(m, &["--async", "*", "test.sleep", "1"]);
            if out.stdout.contains("Executed command") {
                published += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(700));
    }
    // Let the last jobs finish, kept returns and spools drain.
    let db = jobdb(&pg, root.path(), "reader");
    let count_lost = || {
        let mut lost = Vec::new();
        let mut total = 0;
        for (id, p) in &minions {
            for (id, jid) in executed(id, &p.output()) {
                total += 1;
                let stored = db.returns(&jid).unwrap_or_default();
                let n = stored.iter().filter(|(m, _)| *m == id).count();
                assert!(n <= 1, "{id} {jid} stored {n} times");
                if n == 0 {
                    lost.push(format!("{id}/{jid}"));
                }
            }
        }
        (total, lost)
    };
    let mut last = (0, vec![]);
    let settled = wait_until("every return stored", Duration::from_secs(30), || {
        last = count_lost();
        last.1.is_empty()
    });
    let (total, lost) = last;
    println!(
        "chaos: {secs} s, 3 masters, 3 minions, {published} publications, {total} returns \
         executed, returns lost: {} (database and a master restarted mid-run)",
        lost.len()
    );
    assert!(
        settled.is_ok(),
        "returns lost: {lost:?}\n{}",
        minions
            .iter()
            .map(|(id, p)| format!("--- {id}\n{}", p.output()))
            .collect::<String>()
    );
    for (_, mut p) in minions {
        p.stop(Duration::from_secs(10));
    }
    for mut m in masters {
        m.proc.stop(Duration::from_secs(10));
    }
}

/// `scripts/lab.sh --group --check`: the newcomer's two-master lab on one PostgreSQL starts,
/// accepts the key once (on m1), pings, looks the job up on m2, and cleans up.
#[test]
fn group_lab_script_check() {
    let Some(_) = salt_integration_tests::require(salt_integration_tests::pg::prerequisites())
    else {
        return;
    };
    let bins = bins().expect("building our binaries");
    let bin_dir = bins.master.parent().expect("binary dir").to_path_buf();
    let (publish, _ret) = ports::free_port_pair().expect("free ports");
    let mut c = std::process::Command::new("bash");
    c.arg(salt_integration_tests::workspace_root().join("scripts/lab.sh"))
        .args(["--group", "--check"])
        .env("LAB_BIN_DIR", &bin_dir)
        .env("LAB_PORT_BASE", publish.to_string());
    let out = cli::run_with_timeout(c, Duration::from_secs(180)).expect("running lab.sh");
    assert!(
        out.success(),
        "lab.sh --group --check failed ({:?})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        out.stdout,
        out.stderr
    );
    assert!(out.stdout.contains("m2 has it too"), "{}", out.stdout);
    assert!(out.stdout.contains("jobs.lookup_jid"), "{}", out.stdout);
    assert!(out.stdout.contains("lab: removed"), "{}", out.stdout);
}
