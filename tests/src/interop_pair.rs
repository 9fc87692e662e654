//! Our master and Salt's side by side, each with one Python minion of its own: the fixture of
//! the interop tests that ask both the same `salt` / `salt-run` questions and compare the
//! answers (file server, gitfs, git_pillar, master_tops).
//!
//! [`Pair::start`] starts both masters at once (Salt's takes the longest), then one minion per
//! master, and returns when each master's minion answers `test.ping`. Dropping the pair stops
//! the minions first, then the masters.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::interop_support::{Daemon, SaltCli, Side};
use crate::{MasterConf, MinionConf, free_port_pair};

/// One side of a [`Pair`]: a master, the id of its minion, and its CLIs.
pub struct PairSide {
    /// The id of this master's minion.
    pub id: &'static str,
    /// `salt` / `salt-key` of this master's kind, on its config directory.
    pub cli: SaltCli,
    /// The master itself (its log: [`Daemon::count`]).
    pub master: Daemon,
    /// Its `(publish_port, ret_port)`, for more minions.
    pub ports: (u16, u16),
    run_bin: PathBuf,
}

impl PairSide {
    /// `salt <id> <args…> --out json`: the minion's answer; panics naming the side when the
    /// minion gave none within `timeout` seconds.
    pub fn salt(&self, args: &[&str], timeout: u32) -> Value {
        let mut full = vec![self.id];
        full.extend_from_slice(args);
        let (v, out) = self.cli.salt_json(&full, timeout).unwrap_or_else(|e| {
            panic!("{} salt {args:?}: {e}", self.cli.side.label());
        });
        let ret = v.get(self.id).cloned().unwrap_or(Value::Null);
        assert!(
            !ret.is_null(),
            "{} {args:?}: no answer\n{}\n{}",
            self.cli.side.label(),
            out.stdout,
            out.stderr
        );
        ret
    }

    /// `salt-run <args…> --out json` on this master, parsed; panics naming the side when the
    /// output is not JSON.
    pub fn salt_run(&self, args: &[&str]) -> Value {
        let out = Command::new(&self.run_bin)
            .arg("-c")
            .arg(&self.master.conf_dir)
            .args(args)
            .args(["--out", "json"])
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", self.run_bin.display()));
        let text = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(text.trim()).unwrap_or_else(|e| {
            panic!(
                "{} salt-run {args:?}: not JSON ({e}): {text}\n{}",
                self.cli.side.label(),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// `cp.list_master` once it lists `path` (retried for up to 90 s: Salt's master keeps
    /// its file list for `fileserver_list_cache_time`, 20 s), or the last listing.
    pub fn list_master_until(&self, path: &str) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        loop {
            let l = self.salt(&["cp.list_master"], 60);
            let listed = l
                .as_array()
                .is_some_and(|a| a.iter().any(|p| p.as_str() == Some(path)));
            if listed || std::time::Instant::now() > deadline {
                return l;
            }
            std::thread::sleep(Duration::from_secs(2));
        }
    }
}

/// Our master and Salt's, each with one Python minion.
pub struct Pair {
    // Held for their lifetime only; declared first, so dropped first (the minions before
    // their masters).
    _minions: Vec<Daemon>,
    /// Our master and its minion.
    pub ours: PairSide,
    /// Salt's master and its minion.
    pub salt: PairSide,
}

impl Pair {
    /// Starts our master (`ours`) and Salt's (`py_master`) under `root`, each with
    /// `auto_accept`, `worker_threads: 2` and what `conf` adds, then one `py_minion` per master
    /// (`ids`: ours first), and waits until each minion answers `test.ping`.
    pub fn start(
        root: &Path,
        ours: &Side,
        py_master: &Side,
        py_minion: &Side,
        ids: [&'static str; 2],
        conf: impl Fn(MasterConf) -> MasterConf,
    ) -> Pair {
        Self::start_each(root, ours, py_master, py_minion, ids, |_, c| conf(c))
    }

    /// [`Pair::start`] with a config per side (`conf` is given the side: `ours` or Salt's).
    pub fn start_each(
        root: &Path,
        ours: &Side,
        py_master: &Side,
        py_minion: &Side,
        ids: [&'static str; 2],
        conf: impl Fn(&Side, MasterConf) -> MasterConf,
    ) -> Pair {
        Self::start_with_minions(root, ours, py_master, py_minion, ids, conf, |_, c| c)
    }

    /// [`Pair::start_each`] with what `minion` adds to each minion's config (given its id).
    pub fn start_with_minions(
        root: &Path,
        ours: &Side,
        py_master: &Side,
        py_minion: &Side,
        ids: [&'static str; 2],
        conf: impl Fn(&Side, MasterConf) -> MasterConf,
        minion: impl Fn(&str, MinionConf) -> MinionConf,
    ) -> Pair {
        let mut started = Vec::new();
        for (side, id) in [(ours, ids[0]), (py_master, ids[1])] {
            let ports = free_port_pair().expect("free ports");
            let mconf = conf(
                side,
                MasterConf::new(root.join(format!("m-{}", side.label())))
                    .ports(ports.0, ports.1)
                    .auto_accept(true)
                    .set("worker_threads", 2u32),
            );
            let master = Daemon::start_master(side, &mconf)
                .unwrap_or_else(|e| panic!("{} master: {e}", side.label()));
            started.push((side, id, ports, master));
        }
        let mut minions = Vec::new();
        let mut sides = Vec::new();
        for (side, id, ports, mut master) in started {
            master
                .wait_master_ready("127.0.0.1", ports.0, ports.1)
                .unwrap_or_else(|e| panic!("{} master not ready: {e}", side.label()));
            let n = minion(
                id,
                MinionConf::new(root.join(id), id)
                    .ports(ports.0, ports.1)
                    .set("auth_timeout", 10u32),
            );
            minions.push(Daemon::start_minion(py_minion, &n).expect("minion"));
            let run_bin = match side {
                Side::Ours(b) => b.salt.with_file_name("salt-run"),
                Side::Salt(v) => v.bin("salt-run"),
            };
            let cli = SaltCli::new(side, &master.conf_dir);
            sides.push(PairSide {
                id,
                cli,
                master,
                ports,
                run_bin,
            });
        }
        for m in &minions {
            m.wait_minion_ready().expect("minion ready");
        }
        for s in &sides {
            s.cli
                .until_answer(s.id, &[s.id, "test.ping"], Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("{}: no test.ping answer: {e}", s.cli.side.label()));
        }
        let salt = sides.pop().expect("two sides");
        let ours = sides.pop().expect("two sides");
        Pair {
            _minions: minions,
            ours,
            salt,
        }
    }

    /// The same `salt` call on both sides, each answer through [`normalize`] with its minion's
    /// id and `drop_keys`; panics when they differ, else returns ours.
    pub fn both(&self, args: &[&str], timeout: u32, drop_keys: &[&str]) -> Value {
        let a = normalize(&self.ours.salt(args, timeout), self.ours.id, drop_keys);
        let b = normalize(&self.salt.salt(args, timeout), self.salt.id, drop_keys);
        assert_eq!(
            a, b,
            "{args:?}: ours (left) and Salt's master (right) differ"
        );
        a
    }
}

/// What differs per run in a state return: durations and start times.
pub const UNTIMED: &[&str] = &["duration", "start_time"];

/// `v` with the minion id replaced by `ID` in every string and key, and every map entry
/// whose key is in `drop_keys` left out.
pub fn normalize(v: &Value, id: &str, drop_keys: &[&str]) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace(id, "ID")),
        Value::Array(a) => Value::Array(a.iter().map(|x| normalize(x, id, drop_keys)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !drop_keys.contains(&k.as_str()))
                .map(|(k, x)| (k.replace(id, "ID"), normalize(x, id, drop_keys)))
                .collect(),
        ),
        other => other.clone(),
    }
}
