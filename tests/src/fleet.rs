//! The start-up lab: many of our minions started in the same second against several healthy
//! masters in a private network namespace ([`crate::lab`]'s layout: master `i` on
//! `127.0.0.<2+i>`, ports 4505/4506, one shared `master_sign` pair, `auto_accept`).
//!
//! Each round starts `n` fresh minions (ids `r<round>-<i>`, all masters in a
//! `master_type: failover` list, `verify_master_pubkey_sign`, debug log file) at once, waits
//! until every one of them logs `Minion is ready to receive requests!`, then asks every master
//! which of them answer `test.ping` and reads every minion's log. A round is clean when every
//! minion was ready within the limit, signed in exactly once, answers through exactly one master,
//! never considered a master lost and never gave up on a master ("could not be reached").
//!
//! Minion keys are made once per fleet (`salt-key --gen-keys`, or openssl) and copied into each
//! round's minions, so the round measures sign-in and not 20 RSA key generations on two cores.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::bins::Bins;
use crate::cli::run_with_timeout;
use crate::config::{Flavor, MinionConf};
use crate::error::HarnessError;
use crate::keys::{copy_into, gen_keys_or_openssl};
use crate::lab::{LabMaster, PUBLISH_PORT, RET_PORT, start_masters};
use crate::netns::Netns;
use crate::process::{Proc, ProcSpec};
use crate::root::TempRoot;
use crate::wait::scaled;

/// The log line of a minion that is signed in and subscribed.
pub const READY_LINE: &str = "Minion is ready to receive requests!";
/// The log line of a master declared lost (a spurious leave when the master is healthy).
pub const LOST_LINE: &str = "considered lost";
/// The log line of a sign-in that timed out or failed.
pub const UNREACHABLE_LINE: &str = "could not be reached";
/// The log line of a publish channel (SUB) that dropped: on a healthy master, issue #15's
/// shape 2.
pub const SUB_DROP_LINE: &str = "disconnected; confirming with an alive check";
/// The log line of a successful sign-in.
pub const SIGNED_IN_LINE: &str = "Authentication with master at ";

/// Masters and a namespace that minions are started against, round after round.
#[derive(Debug)]
pub struct Fleet {
    masters: Vec<LabMaster>,
    sign_pub: PathBuf,
    keys: Vec<(PathBuf, PathBuf)>,
    bins: Bins,
    root: TempRoot,
    /// The namespace everything runs in (dropped last).
    pub ns: Netns,
}

/// What one minion did in a round.
#[derive(Debug, Clone)]
pub struct MinionReport {
    /// Its id.
    pub id: String,
    /// Seconds from its start to its ready line (`None`: never ready).
    pub ready_secs: Option<f64>,
    /// Masters (their addresses) it answered `test.ping` through at the end of the round.
    pub answered_via: Vec<String>,
    /// "Authentication with master at X successful!" lines.
    pub sign_ins: usize,
    /// "considered lost" lines.
    pub losses: usize,
    /// "could not be reached" lines.
    pub unreachable: usize,
    /// Publish channel drops ([`SUB_DROP_LINE`]).
    pub sub_drops: usize,
    /// Its log file.
    pub log: PathBuf,
}

impl MinionReport {
    /// Ready within `limit`, one sign-in, one master answering for it, no loss, no timeout.
    pub fn clean(&self, limit: f64) -> bool {
        self.ready_secs.is_some_and(|s| s <= limit)
            && self.sign_ins == 1
            && self.answered_via.len() == 1
            && self.losses == 0
            && self.unreachable == 0
    }
}

/// One round's reports.
#[derive(Debug, Clone)]
pub struct RoundReport {
    /// The round number.
    pub round: usize,
    /// One per minion.
    pub minions: Vec<MinionReport>,
}

impl RoundReport {
    /// Total "considered lost" lines.
    pub fn losses(&self) -> usize {
        self.minions.iter().map(|m| m.losses).sum()
    }

    /// Total publish channel drops.
    pub fn sub_drops(&self) -> usize {
        self.minions.iter().map(|m| m.sub_drops).sum()
    }

    /// The slowest ready time (`None` if a minion never got ready).
    pub fn max_ready(&self) -> Option<f64> {
        self.minions
            .iter()
            .map(|m| m.ready_secs)
            .try_fold(0f64, |acc, s| s.map(|s| acc.max(s)))
    }

    /// Minions that are not [`MinionReport::clean`].
    pub fn unclean(&self, limit: f64) -> Vec<&MinionReport> {
        self.minions.iter().filter(|m| !m.clean(limit)).collect()
    }

    /// How many minions each master serves.
    pub fn per_master(&self) -> BTreeMap<String, usize> {
        let mut per = BTreeMap::new();
        for m in &self.minions {
            for a in &m.answered_via {
                *per.entry(a.clone()).or_insert(0) += 1;
            }
        }
        per
    }
}

impl Fleet {
    /// Starts `masters` of our masters in `ns` and makes `keys` minion key pairs (0: every
    /// minion generates its own key at start).
    pub fn start(ns: Netns, bins: Bins, masters: usize, keys: usize) -> Result<Self, HarnessError> {
        Bins::require(&[&bins.master, &bins.salt, &bins.minion, &bins.key])?;
        let root = TempRoot::new()?;
        let (masters, sign_pub) = start_masters(&ns, &bins, &root, masters, Flavor::Ours)?;
        let kdir = root.dir("minion-keys")?;
        let keys = (0..keys)
            .map(|i| {
                let dir = kdir.join(i.to_string());
                std::fs::create_dir_all(&dir)
                    .map_err(|e| HarnessError::io(dir.display().to_string(), e))?;
                gen_keys_or_openssl(&bins.key, &dir, "minion")
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            masters,
            sign_pub,
            keys,
            bins,
            root,
            ns,
        })
    }

    /// The masters.
    pub fn masters(&self) -> &[LabMaster] {
        &self.masters
    }

    /// The temp root.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// Keeps the temp root after the run (for a failed round's logs).
    pub fn keep_root(&mut self) -> PathBuf {
        self.root.keep()
    }

    /// Starts `n` minions at once, waits up to `wait` for all of them to be ready, keeps them
    /// running `hold` longer (so a spurious leave shortly after joining shows), checks which
    /// masters they answer through, stops them, and reports.
    pub fn round(
        &mut self,
        round: usize,
        n: usize,
        alive_interval: u32,
        wait: Duration,
        hold: Duration,
    ) -> Result<RoundReport, HarnessError> {
        let addrs: Vec<String> = self.masters.iter().map(|m| m.addr.clone()).collect();
        let mut specs = Vec::with_capacity(n);
        for i in 0..n {
            let id = format!("r{round}-{i}");
            let dir = self.root.dir(&format!("r{round}/{id}"))?;
            let conf = MinionConf::new(&dir, &id)
                .masters(&addrs)
                .ports(PUBLISH_PORT, RET_PORT)
                .failover(alive_interval)
                .verify_master_pubkey_sign(true);
            let conf_dir = conf.write()?;
            // Without pre-made keys each minion makes its own at start.
            match self.keys.get(i % self.keys.len().max(1)) {
                Some((pem, pubk)) => copy_into(&conf.pki_dir(), &[pem, pubk, &self.sign_pub])?,
                None => copy_into(&conf.pki_dir(), &[&self.sign_pub])?,
            }
            let spec = ProcSpec::new("minion", &self.bins.minion, conf.dir())
                .args([
                    "-c".into(),
                    conf_dir.into_os_string(),
                    "-l".into(),
                    "warning".into(),
                ])
                .netns(Some(self.ns.name()))
                .log(conf.log_file());
            specs.push((id, conf.log_file(), spec));
        }
        // Everything is written: start them back to back.
        let mut procs: Vec<(String, PathBuf, Proc, f64)> = Vec::with_capacity(n);
        for (id, log, spec) in specs {
            let at = unix_secs();
            procs.push((id, log, spec.spawn()?, at));
        }
        let deadline = Instant::now() + scaled(wait);
        while Instant::now() < deadline {
            if procs.iter().all(|(_, log, _, _)| log_has(log, READY_LINE)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(hold);
        let ids: Vec<&str> = procs.iter().map(|(id, ..)| id.as_str()).collect();
        let answered = self.who_answers(&ids);
        let mut minions = Vec::with_capacity(n);
        for (id, log, mut proc, started) in procs {
            proc.stop(Duration::from_secs(3));
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let ready_secs = text
                .lines()
                .find(|l| l.contains(READY_LINE))
                .and_then(log_time)
                .map(|t| (t - started).max(0.0));
            let answered_via = answered
                .iter()
                .filter(|(_, ids)| ids.contains(&id))
                .map(|(addr, _)| addr.clone())
                .collect();
            minions.push(MinionReport {
                ready_secs,
                answered_via,
                sign_ins: count(&text, SIGNED_IN_LINE),
                losses: count(&text, LOST_LINE),
                unreachable: count(&text, UNREACHABLE_LINE),
                sub_drops: count(&text, SUB_DROP_LINE),
                log,
                id,
            });
        }
        Ok(RoundReport { round, minions })
    }

    /// For each master, the ids among `ids` that answer `test.ping` through it (all masters
    /// asked at once).
    fn who_answers(&self, ids: &[&str]) -> Vec<(String, Vec<String>)> {
        let list = ids.join(",");
        let children: Vec<_> = self
            .masters
            .iter()
            .map(|m| {
                let mut c = self.ns.command(&self.bins.salt);
                c.arg("-c")
                    .arg(m.conf.conf_dir())
                    .args(["-L", &list, "test.ping", "--timeout", "3"])
                    .stdin(Stdio::null());
                (m.addr.clone(), c)
            })
            .map(|(addr, c)| {
                std::thread::spawn(move || {
                    let out = run_with_timeout(c, Duration::from_secs(20))
                        .map(|o| o.stdout)
                        .unwrap_or_default();
                    (addr, out)
                })
            })
            .collect();
        children
            .into_iter()
            .filter_map(|h| h.join().ok())
            .map(|(addr, out)| {
                let fake = crate::cli::CmdOutput {
                    cmd: String::new(),
                    status: None,
                    stdout: out,
                    stderr: String::new(),
                    elapsed: Duration::ZERO,
                };
                let who = ids
                    .iter()
                    .filter(|id| crate::cli::ping_answered(&fake, id))
                    .map(|id| (*id).to_string())
                    .collect();
                (addr, who)
            })
            .collect()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for m in &mut self.masters {
            m.proc.stop(crate::process::DROP_GRACE);
        }
    }
}

fn unix_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn log_has(path: &Path, needle: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle))
}

fn count(text: &str, needle: &str) -> usize {
    text.lines().filter(|l| l.contains(needle)).count()
}

/// The unix time of a log-file line `2026-11-22 02:50:41,123 [...` (UTC).
pub fn log_time(line: &str) -> Option<f64> {
    let date = line.get(0..10)?;
    let time = line.get(11..23)?;
    let mut d = date.split('-').map(str::parse::<i64>);
    let (y, mo, da) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, ms) = time.split_once(',')?;
    let mut t = hms.split(':').map(str::parse::<i64>);
    let (h, mi, s) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    let ms: i64 = ms.parse().ok()?;
    // Days from civil (Howard Hinnant).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + da - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + s;
    Some(secs as f64 + ms as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_time_parses_salt_log_lines() {
        // date -u -d '2026-11-22 02:50:41' +%s == 1795315841
        let t = log_time("2026-11-22 02:50:41,123 [salt.minion ][INFO ][1] x");
        assert_eq!(t, Some(1_795_315_841.123));
        assert_eq!(log_time("garbage"), None);
    }
}
