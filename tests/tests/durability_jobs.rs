//! Durability of the job cache under SIGKILL (issue 7, item 4, job-cache half): our master
//! with 24 of our minions (auto-accepted) is SIGKILLed at a random point while six
//! `test.echo` jobs are published one after the other and their returns stream in, ten times
//! over. After every kill:
//!
//! * every `.load.p` and `return.p` under `cachedir/jobs` decodes completely as msgpack and
//!   belongs where it lies (its `jid`, its minion `id`, no `tok`; an echo's return is the
//!   job's payload in full);
//! * there is no other file in a job's directory: nothing that could be taken for a return,
//!   nothing that would stay forever; only `jobs/.tmp/` may hold a temporary file a kill
//!   interrupted (see `salt_master_core::jobs`);
//! * every accepted key (`pki_dir/minions/*`) is still there with its exact text;
//!
//! and after each restart the master serves: every minion answers `test.ping`, the ping's job
//! has its load and all its returns in the job cache, and every temporary file the kill left
//! (plus one planted in the first round) is gone. Job directories without a load and minion
//! directories without a return (killed between `mkdir` and the write) are counted, not
//! failed: nothing reads them as a job or a return.
//!
//! `DURABILITY_JOBS_ROUNDS` and `DURABILITY_JOBS_PAYLOAD` (bytes per echo) change the run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use rand::distributions::Alphanumeric;
use rand::{Rng, SeedableRng};
use rmpv::Value;
use salt_integration_tests::cli::ping_answered;
use salt_integration_tests::e2e_support::{Cluster, KeyDir, MINION_READY};
use salt_integration_tests::{Proc, run_with_timeout, wait_for_log};

/// Minions (our `salt-minion`, one process each).
const MINIONS: usize = 24;
/// Jobs published per round, one right after the other.
const JOBS: usize = 6;

/// Limit for minions to start, sign in, reconnect and answer.
const START: Duration = Duration::from_secs(60);

/// `name` from the environment, else `default` (for longer runs by hand).
fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn ids() -> Vec<String> {
    (0..MINIONS).map(|i| format!("dj-{i:02}")).collect()
}

/// The whole file as one msgpack value, or why not (trailing bytes count as a failure).
fn decode_whole(path: &Path) -> Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut rest = bytes.as_slice();
    let v = rmpv::decode::read_value(&mut rest)
        .map_err(|e| format!("{}: not msgpack: {e}", path.display()))?;
    if !rest.is_empty() {
        return Err(format!(
            "{}: {} trailing bytes after the value",
            path.display(),
            rest.len()
        ));
    }
    Ok(v)
}

fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_map()?
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

fn get_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    get(v, key)?.as_str()
}

/// What a scan of `cachedir/jobs` found.
#[derive(Debug, Default)]
struct Scan {
    /// jid → (has a complete `.load.p`, minions with a complete `return.p`).
    jobs: BTreeMap<String, (bool, BTreeSet<String>)>,
    /// Minion directories without a `return.p` (created, then killed before the write).
    empty_minion_dirs: usize,
    /// Files in `jobs/.tmp` (temporary files a kill interrupted, or in flight).
    temps: Vec<PathBuf>,
}

impl Scan {
    fn returns(&self) -> usize {
        self.jobs.values().map(|(_, r)| r.len()).sum()
    }
}

/// Walks the job cache and checks every entry (panics on anything corrupt or misplaced).
fn scan(jobs_dir: &Path) -> Scan {
    let mut s = Scan::default();
    let Ok(rd) = std::fs::read_dir(jobs_dir) else {
        return s;
    };
    // Salt's local_cache layout: jobs/<h[:2]>/<h[2:]>/ (the `.tmp` directory at the top).
    let mut entries = Vec::new();
    for t in rd {
        let t = t.unwrap();
        let tname = t.file_name().to_string_lossy().into_owned();
        if tname.starts_with('.') || !t.file_type().unwrap().is_dir() {
            entries.push(t);
            continue;
        }
        assert_eq!(
            tname.len(),
            2,
            "not a hashed first level: {}",
            t.path().display()
        );
        entries.extend(std::fs::read_dir(t.path()).unwrap().map(Result::unwrap));
    }
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if e.file_type().unwrap().is_dir() && name.starts_with('.') {
            // The cache's own temp directory: anything in it is a leftover.
            for t in std::fs::read_dir(&path).unwrap() {
                s.temps.push(t.unwrap().path());
            }
            continue;
        }
        assert!(
            e.file_type().unwrap().is_dir(),
            "stray file in the job cache: {}",
            path.display()
        );
        let jid = std::fs::read_to_string(path.join("jid")).unwrap_or_else(|_| {
            decode_whole(&path.join(".load.p"))
                .ok()
                .and_then(|l| get_str(&l, "jid").map(str::to_owned))
                .unwrap_or(name)
        });
        let mut has_load = false;
        let mut returns = BTreeSet::new();
        for m in std::fs::read_dir(&path).unwrap() {
            let m = m.unwrap();
            let mname = m.file_name().to_string_lossy().into_owned();
            let mpath = m.path();
            if mname == ".load.p" {
                let load = decode_whole(&mpath).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(get_str(&load, "jid"), Some(jid.as_str()), "{load:?}");
                has_load = true;
            } else if mname == "jid" || mname == ".minions.p" {
                // Salt's prep_jid / save_minions files.
            } else if m.file_type().unwrap().is_dir() {
                let mut got = false;
                for f in std::fs::read_dir(&mpath).unwrap() {
                    let f = f.unwrap();
                    let fname = f.file_name().to_string_lossy().into_owned();
                    if fname == "return.p" {
                        let ret = decode_whole(&f.path()).unwrap_or_else(|e| panic!("{e}"));
                        // Salt's return.p: only return, retcode and success.
                        assert!(get(&ret, "return").is_some(), "{ret:?}");
                        assert!(get(&ret, "tok").is_none(), "tok stored: {ret:?}");
                        got = true;
                    } else if fname == "out.p" {
                        decode_whole(&f.path()).unwrap_or_else(|e| panic!("{e}"));
                    } else {
                        panic!(
                            "{}: a file other than return.p / out.p next to a return",
                            f.path().display()
                        );
                    }
                }
                if got {
                    returns.insert(mname);
                } else {
                    s.empty_minion_dirs += 1;
                }
            } else {
                panic!(
                    "{}: a file other than .load.p in a job directory",
                    mpath.display()
                );
            }
        }
        // An echo's return must be the job's payload, whole.
        let load_path = path.join(".load.p");
        if has_load {
            let load = decode_whole(&load_path).unwrap();
            if get_str(&load, "fun") == Some("test.echo") {
                let want = get(&load, "arg")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .cloned()
                    .expect("echo payload");
                for id in &returns {
                    let ret = decode_whole(&path.join(id).join("return.p")).unwrap();
                    assert_eq!(get(&ret, "return"), Some(&want), "{jid}/{id}: echo return");
                }
            }
        }
        s.jobs.insert(jid, (has_load, returns));
    }
    s
}

/// `pki_dir/minions`: id → key text, dotfiles (temporary files) left out.
fn accepted_keys(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The minion's log line when its publish channel is connected again.
const RECONNECTED: &str = "Publish channel to master 127.0.0.1 reconnected";

/// Publish channels back: a SUB that reconnected, or (a minion that took the killed master for
/// lost, as a refused alive check says at once) a new sign-in and subscription.
fn reconnects(minions: &[Proc]) -> Vec<usize> {
    minions
        .iter()
        .map(|m| {
            let out = m.output();
            out.matches(RECONNECTED).count() + out.matches(MINION_READY).count()
        })
        .collect()
}

/// Waits until every minion's publish channel has reconnected since `before` (a publish sent
/// earlier is lost, as with Salt's ZeroMQ transport).
fn wait_reconnected(minions: &[Proc], before: &[usize]) {
    let t0 = Instant::now();
    loop {
        let now = reconnects(minions);
        if now.iter().zip(before).all(|(n, b)| n > b) {
            return;
        }
        assert!(
            t0.elapsed() < START,
            "publish channels not reconnected after {:?}",
            t0.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `salt '*' test.ping` until every minion answers in one run; the runs it took.
fn ping_until_all_answer(c: &Cluster, ids: &[String]) -> usize {
    let t0 = Instant::now();
    for attempt in 1.. {
        let out = c
            .salt(&["-t", "10", "--out", "json", "*", "test.ping"])
            .unwrap();
        if ids.iter().all(|id| ping_answered(&out, id)) {
            return attempt;
        }
        let missing: Vec<_> = ids.iter().filter(|id| !ping_answered(&out, id)).collect();
        assert!(
            t0.elapsed() < START,
            "minions still not answering after {:?}: {missing:?}\n{}",
            t0.elapsed(),
            out.stderr
        );
    }
    unreachable!()
}

#[test]
fn sigkilled_master_never_leaves_a_torn_job_cache_entry() {
    // Kill rounds, and the size of each `test.echo` payload (every return is a sizeable
    // write): `DURABILITY_JOBS_ROUNDS`, `DURABILITY_JOBS_PAYLOAD`.
    let rounds = knob("DURABILITY_JOBS_ROUNDS", 10);
    let payload_len = knob("DURABILITY_JOBS_PAYLOAD", 16 * 1024);
    let mut c = Cluster::new(|m| m.auto_accept(true)).unwrap();
    let t_all = Instant::now();
    c.start_master().unwrap();
    let ids = ids();
    let minions: Vec<Proc> = ids
        .iter()
        .map(|id| {
            c.spawn_minion(
                &c.minion_conf(id)
                    .set("recon_default", 100u32)
                    .set("recon_max", 1000u32)
                    .set("recon_randomize", false)
                    // A return sent to the master just killed is lost; the minion's next
                    // returns wait behind it until it times out (Salt: 10 s).
                    .set("return_retry_timer", 1u32)
                    .set("return_retry_timer_max", 2u32),
            )
            .unwrap()
        })
        .collect();
    for (id, m) in ids.iter().zip(&minions) {
        c.wait_key(KeyDir::Accepted, id, START).unwrap();
        wait_for_log(m, MINION_READY, START).unwrap();
    }
    let keys = accepted_keys(&c.pki().join("minions"));
    assert_eq!(
        keys.keys().cloned().collect::<Vec<_>>(),
        ids,
        "auto-accepted keys"
    );
    ping_until_all_answer(&c, &ids);
    let setup = t_all.elapsed();
    let jobs_dir = c.cachedir().join("jobs");

    let mut rng = rand::rngs::StdRng::seed_from_u64(0x10b5);
    let (mut mid_stream, mut before_returns, mut after_all) = (0, 0, 0);
    let (mut max_temps, mut max_empty, mut half_jobs, mut swept) = (0, 0, 0, 0);
    let mut restart_pings = Vec::new();
    for round in 0..rounds {
        let before: BTreeSet<String> = scan(&jobs_dir).jobs.into_keys().collect();
        let recon_before = reconnects(&minions);
        // Publish JOBS echo jobs one after the other, a few ms apart (each `salt` waits on
        // its returns in its own thread), and SIGKILL the master at a random point meanwhile.
        let kill_after = Duration::from_millis(rng.gen_range(0..350));
        let mut cmds = Vec::new();
        for _ in 0..JOBS {
            let payload: String = std::iter::once('p')
                .chain(
                    (&mut rng)
                        .sample_iter(Alphanumeric)
                        .take(payload_len)
                        .map(char::from),
                )
                .collect();
            let mut cmd = Command::new(&c.bins().salt);
            cmd.arg("-c")
                .arg(c.master_conf().conf_dir())
                .args(["-t", "5", "*", "test.echo"])
                .arg(payload);
            cmds.push((cmd, Duration::from_millis(rng.gen_range(5..50))));
        }
        let t0 = Instant::now();
        let publisher = std::thread::spawn(move || {
            let mut runs = Vec::new();
            for (cmd, gap) in cmds {
                runs.push(std::thread::spawn(move || {
                    run_with_timeout(cmd, Duration::from_secs(30))
                }));
                std::thread::sleep(gap);
            }
            for r in runs {
                r.join().unwrap().unwrap();
            }
        });
        std::thread::sleep(kill_after);
        let master = c.master().unwrap();
        let killed_pid = master.pid();
        master.signal(Signal::SIGKILL);
        let killed_at = t0.elapsed();
        assert!(
            master.wait_exit(Duration::from_secs(10)).is_some(),
            "master survived SIGKILL"
        );
        publisher.join().unwrap();

        // The cache as the kill left it.
        let s = scan(&jobs_dir);
        let new: Vec<_> = s
            .jobs
            .iter()
            .filter(|(j, _)| !before.contains(*j))
            .collect();
        let loads = new.iter().filter(|(_, (l, _))| *l).count();
        let rets: usize = new.iter().map(|(_, (_, r))| r.len()).sum();
        half_jobs += new.iter().filter(|(_, (l, _))| !*l).count();
        if rets == 0 {
            before_returns += 1;
        } else if rets < loads * MINIONS {
            mid_stream += 1;
        } else {
            after_all += 1;
        }
        max_temps = max_temps.max(s.temps.len());
        let mut left_by_kill = s.temps.clone();
        if round == 0 {
            // One more in the first round, whatever the kill hit, so the sweep at restart is
            // exercised every run: a temporary file named for the killed master's pid.
            let planted = jobs_dir.join(".tmp").join(format!("{killed_pid}.999999"));
            std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
            std::fs::write(&planted, b"\x81").unwrap();
            left_by_kill.push(planted);
        }
        max_empty = max_empty.max(s.empty_minion_dirs);
        eprintln!(
            "round {round}: killed after {killed_at:.0?}: {} new jobs ({loads} with a load), \
             {rets} of {} returns on disk; {} temp files, {} empty minion dirs",
            new.len(),
            loads * MINIONS,
            s.temps.len(),
            s.empty_minion_dirs
        );
        assert_eq!(
            accepted_keys(&c.pki().join("minions")),
            keys,
            "round {round}: an accepted key was lost or changed"
        );

        // Restart: it serves, a job after the restart has all its returns on disk, and the
        // kill's temporary files are gone.
        let t1 = Instant::now();
        c.start_master().unwrap();
        wait_reconnected(&minions, &recon_before);
        let before: BTreeSet<String> = scan(&jobs_dir).jobs.into_keys().collect();
        let attempts = ping_until_all_answer(&c, &ids);
        restart_pings.push((t1.elapsed(), attempts));
        // The job cache is written behind the returns `salt` printed (as Salt fires a
        // return's event before writing it): wait a bounded moment for the last ones.
        let newest = |s: &Scan| {
            s.jobs
                .iter()
                .filter(|(j, _)| !before.contains(*j))
                .max_by_key(|(j, _)| (*j).clone())
                .map(|(j, v)| (j.clone(), v.clone()))
        };
        let until = Instant::now() + Duration::from_secs(10);
        let mut s = scan(&jobs_dir);
        while newest(&s).is_some_and(|(_, (_, rets))| rets.len() < ids.len())
            && Instant::now() < until
        {
            std::thread::sleep(Duration::from_millis(50));
            s = scan(&jobs_dir);
        }
        let (jid, (has_load, rets)) = newest(&s).expect("the ping's job");
        assert!(has_load, "{jid}: no load");
        assert_eq!(
            rets.iter().cloned().collect::<Vec<_>>(),
            ids,
            "{jid}: returns on disk"
        );
        let stale: Vec<_> = left_by_kill.iter().filter(|p| p.exists()).collect();
        assert!(
            stale.is_empty(),
            "round {round}: temp files of the killed master not swept at restart: {stale:?}"
        );
        swept += left_by_kill.len();
    }

    let s = scan(&jobs_dir);
    let t_restart: Vec<_> = restart_pings.iter().map(|(d, _)| *d).collect();
    eprintln!(
        "durability_jobs: {MINIONS} minions, {rounds} rounds of {JOBS} x test.echo \
         ({payload_len} B): kills mid-stream {mid_stream}, before any return {before_returns}, \
         after all returns {after_all}; on disk at the end: {} jobs, {} returns, all complete; \
         leftovers after a kill: at most {max_temps} temp files, {max_empty} empty minion dirs, \
         {half_jobs} job dirs without a load; swept at restart: {swept} temp files; all {MINIONS} \
         answered within {:?} (max; ping runs {:?}); setup {setup:.1?}, total {:.1?}",
        s.jobs.len(),
        s.returns(),
        t_restart.iter().max().unwrap(),
        restart_pings.iter().map(|(_, a)| *a).collect::<Vec<_>>(),
        t_all.elapsed()
    );
    assert!(mid_stream > 0, "no kill landed while returns streamed in");
    drop(minions);
}
