//! Chaos: the failover lab's three masters (ours, one shared signing pair, auto-accept, in a
//! private network namespace) and N of our `salt-minion`s with all three in a shuffled
//! `master_type: failover` list; for a while, a seeded random schedule kills (-9), freezes
//! (SIGSTOP), black-holes (nftables drop) and restarts (SIGTERM + start) masters, at most all
//! but one at a time, while `test.ping`s run in the background. Then every fault is healed and
//! the run checks what an operator would (issue 7, item 3):
//!
//! * **convergence**: every minion answers `test.ping` through some master within the bound
//!   ([`ChaosReport::bound`]: `master_alive_interval` + 1 s of detection, one `auth_timeout`
//!   for a sign-in that was in flight to a master when it was healed, one round backoff, and
//!   the measurement's own ping round), and no minion answers through two masters;
//! * **publish reach**: one ping round through all masters reaches all N;
//! * **jobs**: every job published after convergence has a return from each minion of its
//!   master, on the `salt` command's output *and* in that master's job cache, decoding as
//!   msgpack to the value sent;
//! * **pki**: in each master's `pki_dir` every key is in exactly one state and parses;
//! * **no unbounded growth**: each master's RSS and open descriptors (from `/proc`, sampled
//!   every tick) end within a bound linear in N, and every master that was not faulted and
//!   every minion is still running.
//!
//! Nothing fails early: every check is recorded in [`ChaosReport::failures`] and the report
//! (figures and failures) prints whole; the daemons go with the [`Chaos`] value.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::bins::Bins;
use crate::cli::run_with_timeout;
use crate::config::{Flavor, MinionConf};
use crate::e2e_support::vm_rss_kib;
use crate::error::HarnessError;
use crate::keys::copy_into;
use crate::lab::{
    Fault, LabMaster, PUBLISH_PORT, RET_PORT, kill_group, start_masters, wait_master_ready,
};
use crate::netns::Netns;
use crate::process::{DROP_GRACE, Proc, ProcSpec};
use crate::root::TempRoot;

/// `--timeout` of each convergence and reach ping.
const PING_SECS: u64 = 3;
/// `--timeout` of each job published after convergence.
const JOB_SECS: u64 = 5;
/// Jobs published through each master after convergence.
const JOBS_PER_MASTER: usize = 2;
/// How often the schedule acts and `/proc` is sampled.
const TICK: Duration = Duration::from_secs(1);
/// Chance per tick that a new fault starts (if a master may still be faulted).
const FAULT_CHANCE: f64 = 0.35;
/// `auth_timeout` of the minions (Salt's default).
const AUTH_TIMEOUT_SECS: u32 = 5;
/// The minions' round backoff (`acceptance_wait_time` 1 s, capped there).
const BACKOFF_SECS: u32 = 1;

/// Parameters (see [`ChaosOptions::from_env`]).
#[derive(Debug, Clone)]
pub struct ChaosOptions {
    /// Masters (3).
    pub masters: usize,
    /// Minions (`CHAOS_MINIONS`).
    pub minions: usize,
    /// How long faults are injected (`CHAOS_SECS`).
    pub duration: Duration,
    /// `master_alive_interval` of the minions (`CHAOS_ALIVE_INTERVAL`, default 3).
    pub alive_interval: u32,
    /// The schedule's seed (`CHAOS_SEED`, default: the clock).
    pub seed: u64,
}

fn env_num<T: std::str::FromStr>(key: &str) -> Option<T> {
    std::env::var(key).ok().and_then(|s| s.trim().parse().ok())
}

impl ChaosOptions {
    /// From the environment, with these defaults for `CHAOS_MINIONS` and `CHAOS_SECS`.
    pub fn from_env(minions: usize, secs: u64) -> Self {
        let seed = env_num("CHAOS_SEED").unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs())
        });
        Self {
            masters: 3,
            minions: env_num::<usize>("CHAOS_MINIONS")
                .filter(|n| *n > 0)
                .unwrap_or(minions),
            duration: Duration::from_secs(env_num("CHAOS_SECS").unwrap_or(secs)),
            alive_interval: env_num::<u32>("CHAOS_ALIVE_INTERVAL")
                .filter(|a| *a > 0)
                .unwrap_or(3),
            seed,
        }
    }
}

/// A fault the schedule injects (a restart is [`Fault::Term`] healed at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Kill,
    Freeze,
    BlackHole,
    Restart,
}

impl Kind {
    const ALL: [Self; 4] = [Self::Kill, Self::Freeze, Self::BlackHole, Self::Restart];
    fn fault(self) -> Fault {
        match self {
            Self::Kill => Fault::Kill,
            Self::Freeze => Fault::Freeze,
            Self::BlackHole => Fault::BlackHole,
            Self::Restart => Fault::Term,
        }
    }
    fn label(self) -> &'static str {
        match self {
            Self::Kill => "kill -9 (restart later)",
            Self::Freeze => "freeze (SIGSTOP)",
            Self::BlackHole => "black hole (nft drop)",
            Self::Restart => "restart (SIGTERM + start)",
        }
    }
}

/// One `/proc` sample of a master.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    /// Resident set, KiB.
    pub rss_kib: u64,
    /// Open descriptors.
    pub fds: u64,
}

/// Reads `/proc/<pid>` (None if it is gone).
pub fn usage(pid: i32) -> Option<Usage> {
    let rss_kib = vm_rss_kib(pid)?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some(Usage { rss_kib, fds })
}

/// Per-master resource figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct MasterUsage {
    /// After the first convergence.
    pub start: Usage,
    /// The largest seen during the run (any incarnation).
    pub max: Usage,
    /// After the checks.
    pub end: Usage,
}

/// What a run measured and what it found wrong.
#[derive(Debug, Default)]
pub struct ChaosReport {
    /// Options summary line.
    pub header: String,
    /// Faults injected, by kind label.
    pub faults: BTreeMap<&'static str, usize>,
    /// Background pings started during the faults, and answers they got.
    pub background: (usize, usize),
    /// Seconds until every minion first answered after start.
    pub first_convergence: Option<f64>,
    /// Seconds from the last heal until every minion answered.
    pub convergence: Option<f64>,
    /// The convergence bound, seconds.
    pub bound: f64,
    /// Minions per master in the reach round.
    pub holders: Vec<usize>,
    /// Minions per master in the round that first reached them all, at start.
    pub holders_start: Vec<usize>,
    /// Jobs published after convergence, returns expected, returns found in the job caches.
    pub jobs: (usize, usize, usize),
    /// Sign-in requests each master logged over the run (all incarnations).
    pub sign_ins: Vec<usize>,
    /// Keys per master in `minions/` and in any other state.
    pub keys: Vec<(usize, usize)>,
    /// Resource figures per master.
    pub usage: Vec<MasterUsage>,
    /// Minions still running at the end.
    pub minions_running: usize,
    /// Minions started.
    pub minions: usize,
    /// Wall time of each phase (label, seconds).
    pub phases: Vec<(&'static str, f64)>,
    /// Everything that went wrong.
    pub failures: Vec<String>,
}

impl ChaosReport {
    /// The report as Markdown-ish text.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "\n{}", self.header);
        let secs = |v: Option<f64>| v.map_or_else(|| "—".into(), |v| format!("{v:.2} s"));
        let total: usize = self.faults.values().sum();
        let _ = writeln!(s, "| what | figure |\n|---|---|");
        let kinds: Vec<String> = self
            .faults
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(s, "| faults injected | {total}: {} |", kinds.join(", "));
        let _ = writeln!(
            s,
            "| background test.ping during faults | {} started, {} answers |",
            self.background.0, self.background.1
        );
        let _ = writeln!(
            s,
            "| sign-in requests logged per master | {:?} |",
            self.sign_ins
        );
        let _ = writeln!(
            s,
            "| first start: all minions answering after | {} |",
            secs(self.first_convergence)
        );
        let _ = writeln!(
            s,
            "| after the last heal: all minions answering after | {} (bound {:.1} s) |",
            secs(self.convergence),
            self.bound
        );
        let reached: usize = self.holders.iter().sum();
        let _ = writeln!(
            s,
            "| one ping round reaches | {reached}/{} (per master {:?}) |",
            self.minions, self.holders
        );
        let _ = writeln!(
            s,
            "| jobs after convergence | {} jobs, returns in job caches {}/{} |",
            self.jobs.0, self.jobs.2, self.jobs.1
        );
        let _ = writeln!(
            s,
            "| keys per master (accepted, other states) | {:?} |",
            self.keys
        );
        for (i, u) in self.usage.iter().enumerate() {
            let mib = |k: u64| k as f64 / 1024.0;
            let _ = writeln!(
                s,
                "| m{i} minions held start / end; RSS MiB start / max / end; fds start / max / end | {} / {}; {:.1} / {:.1} / {:.1}; {} / {} / {} |",
                self.holders_start.get(i).copied().unwrap_or_default(),
                self.holders.get(i).copied().unwrap_or_default(),
                mib(u.start.rss_kib),
                mib(u.max.rss_kib),
                mib(u.end.rss_kib),
                u.start.fds,
                u.max.fds,
                u.end.fds
            );
        }
        let _ = writeln!(
            s,
            "| minions still running | {}/{} |",
            self.minions_running, self.minions
        );
        let phases: Vec<String> = self
            .phases
            .iter()
            .map(|(p, t)| format!("{p} {t:.1}"))
            .collect();
        let _ = writeln!(s, "| phases (s) | {} |", phases.join(", "));
        if self.failures.is_empty() {
            let _ = writeln!(s, "\nchaos: all checks passed");
        } else {
            let _ = writeln!(s, "\nchaos: {} FAILED check(s):", self.failures.len());
            for f in &self.failures {
                let _ = writeln!(s, "- {f}");
            }
        }
        s
    }
}

struct Slot {
    m: LabMaster,
    kind: Option<Kind>,
    /// The schedule tick at which the fault is undone.
    heal_at: u64,
}

/// The running set-up. Dropping it stops the minions, then the masters, then deletes the
/// namespace and the temp root.
pub struct Chaos {
    slots: Vec<Slot>,
    minions: Vec<Proc>,
    ids: Vec<String>,
    /// Minions whose exit is already in the report.
    reported_dead: BTreeSet<usize>,
    bins: Bins,
    opts: ChaosOptions,
    ns: Netns,
    root: TempRoot,
}

impl std::fmt::Debug for Chaos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chaos")
            .field("root", &self.root.path())
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl Chaos {
    /// Starts the masters and the minions (not yet waiting for them).
    pub fn start(ns: Netns, bins: Bins, opts: ChaosOptions) -> Result<Self, HarnessError> {
        Bins::require(&[&bins.master, &bins.salt, &bins.minion])?;
        let root = TempRoot::new()?;
        let (masters, sign_pub) = start_masters(&ns, &bins, &root, opts.masters, Flavor::Ours)?;
        let addrs: Vec<String> = masters.iter().map(|m| m.addr.clone()).collect();
        let slots = masters
            .into_iter()
            .map(|m| Slot {
                m,
                kind: None,
                heal_at: 0,
            })
            .collect();
        let mut minions = Vec::with_capacity(opts.minions);
        let mut ids = Vec::with_capacity(opts.minions);
        for i in 0..opts.minions {
            let id = format!("chaos-{i:04}");
            let conf = MinionConf::new(root.dir(&format!("n{i}"))?, &id)
                .masters(&addrs)
                .ports(PUBLISH_PORT, RET_PORT)
                .failover(opts.alive_interval)
                .verify_master_pubkey_sign(true)
                .set("random_master", true)
                .set("auth_timeout", AUTH_TIMEOUT_SECS)
                .set("log_level_logfile", "info");
            let conf_dir = conf.write()?;
            copy_into(&conf.pki_dir(), &[&sign_pub])?;
            let spec = ProcSpec::new("minion", &bins.minion, conf.dir())
                .args([
                    "-c".into(),
                    conf_dir.into_os_string(),
                    "-l".into(),
                    "warning".into(),
                ])
                .netns(Some(ns.name()))
                .log(conf.log_file());
            minions.push(spec.spawn()?);
            ids.push(id);
        }
        Ok(Self {
            slots,
            minions,
            ids,
            reported_dead: BTreeSet::new(),
            bins,
            opts,
            ns,
            root,
        })
    }

    /// The temp root (masters under `m<i>/`, minions under `n<i>/`).
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// Keeps the temp root after the run (for reading logs).
    pub fn keep_root(&mut self) -> PathBuf {
        self.root.keep()
    }

    /// The convergence bound in seconds.
    pub fn bound(&self) -> f64 {
        f64::from(self.opts.alive_interval) + 1.0 + f64::from(AUTH_TIMEOUT_SECS + BACKOFF_SECS)
            // one ping round of the measurement itself, and the `salt` command around it
            + PING_SECS as f64
            + 1.0
    }

    /// Runs the whole thing: first convergence, faults, heal, checks.
    pub fn run(&mut self) -> ChaosReport {
        let mut rep = ChaosReport {
            header: format!(
                "chaos: {} masters, {} minions, {} s of faults, master_alive_interval {} s, CHAOS_SEED={}",
                self.opts.masters,
                self.opts.minions,
                self.opts.duration.as_secs(),
                self.opts.alive_interval,
                self.opts.seed
            ),
            bound: self.bound(),
            minions: self.opts.minions,
            usage: vec![MasterUsage::default(); self.slots.len()],
            ..ChaosReport::default()
        };
        let t0 = Instant::now();
        let first_limit = Duration::from_secs(120 + self.opts.minions as u64 / 2);
        match self.converge(t0, first_limit) {
            Ok(per) => {
                rep.first_convergence = Some(t0.elapsed().as_secs_f64());
                rep.holders_start = per.iter().map(BTreeSet::len).collect();
            }
            Err(missing) => {
                rep.failures.push(format!(
                    "at start, {} minion(s) never answered within {} s: {}",
                    missing.len(),
                    first_limit.as_secs(),
                    self.describe_missing(&missing)
                ));
                self.finish(&mut rep);
                return rep;
            }
        }
        for (s, r) in self.slots.iter().zip(rep.usage.iter_mut()) {
            let u = usage(s.m.proc.pid()).unwrap_or_default();
            *r = MasterUsage {
                start: u,
                max: u,
                end: u,
            };
        }
        let mut mark = Instant::now();
        rep.phases.push(("start", t0.elapsed().as_secs_f64()));
        self.faults(&mut rep);
        rep.phases.push(("faults", mark.elapsed().as_secs_f64()));
        mark = Instant::now();
        self.heal_all(&mut rep);
        rep.phases.push(("heal", mark.elapsed().as_secs_f64()));
        let healed = Instant::now();
        let limit = Duration::from_secs_f64(rep.bound * 4.0);
        match self.converge(healed, limit) {
            Ok(_) => {
                let secs = healed.elapsed().as_secs_f64();
                rep.convergence = Some(secs);
                if secs > rep.bound {
                    rep.failures.push(format!(
                        "convergence after the last heal took {secs:.2} s, over the bound {:.1} s",
                        rep.bound
                    ));
                }
            }
            Err(missing) => rep.failures.push(format!(
                "after the last heal, {} minion(s) did not answer within {} s: {}",
                missing.len(),
                limit.as_secs(),
                self.describe_missing(&missing)
            )),
        }
        rep.phases
            .push(("converge", healed.elapsed().as_secs_f64()));
        mark = Instant::now();
        self.check_reach_and_jobs(&mut rep);
        rep.phases
            .push(("reach+jobs", mark.elapsed().as_secs_f64()));
        mark = Instant::now();
        self.finish(&mut rep);
        rep.phases.push(("checks", mark.elapsed().as_secs_f64()));
        rep
    }

    /// The fault schedule, for `opts.duration`.
    fn faults(&mut self, rep: &mut ChaosReport) {
        let mut rng = StdRng::seed_from_u64(self.opts.seed);
        // A fixed number of ticks, faults timed in ticks: the same seed makes the same choices
        // in the same order, however late a tick runs on a loaded machine.
        let ticks = self.opts.duration.as_secs().div_ceil(TICK.as_secs().max(1));
        let mut pings: Vec<(Child, Instant)> = Vec::new();
        let start = Instant::now();
        for tick in 1..=ticks {
            let at = start + TICK * u32::try_from(tick).unwrap_or(u32::MAX);
            if let Some(wait) = at.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            self.sample(rep);
            self.check_alive(rep);
            // Heal what is due.
            for i in 0..self.slots.len() {
                let due = self
                    .slots
                    .get(i)
                    .is_some_and(|s| s.kind.is_some() && s.heal_at <= tick);
                if due {
                    self.heal(i, rep);
                }
            }
            // Maybe a new fault, keeping one master healthy.
            let healthy: Vec<usize> = (0..self.slots.len())
                .filter(|i| self.slots.get(*i).is_some_and(|s| s.kind.is_none()))
                .collect();
            if healthy.len() > 1 && rng.gen_bool(FAULT_CHANCE) {
                let (Some(&i), Some(&kind)) =
                    (healthy.choose(&mut rng), Kind::ALL.choose(&mut rng))
                else {
                    continue;
                };
                let hold: u64 = rng.gen_range(2..=10);
                *rep.faults.entry(kind.label()).or_default() += 1;
                if let Some(s) = self.slots.get_mut(i) {
                    if let Err(e) = s.m.inject(&self.ns, kind.fault()) {
                        rep.failures
                            .push(format!("injecting {kind:?} into m{i}: {e}"));
                    }
                    s.kind = Some(kind);
                    s.heal_at = tick + hold;
                }
                if kind == Kind::Restart {
                    self.heal(i, rep);
                }
            }
            // Background load: a ping through a random healthy master every other tick.
            if rng.gen_bool(0.5) {
                let healthy: Vec<usize> = (0..self.slots.len())
                    .filter(|i| self.slots.get(*i).is_some_and(|s| s.kind.is_none()))
                    .collect();
                if let Some(&i) = healthy.choose(&mut rng) {
                    let mut c = self.salt_cmd(i, &["*", "test.ping", "-t", "2"]);
                    c.stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::null());
                    std::os::unix::process::CommandExt::process_group(&mut c, 0);
                    if let Ok(child) = c.spawn() {
                        rep.background.0 += 1;
                        pings.push((child, Instant::now()));
                    }
                }
            }
            reap(&mut pings, rep, false);
        }
        reap(&mut pings, rep, true);
    }

    fn heal(&mut self, i: usize, rep: &mut ChaosReport) {
        let Some(s) = self.slots.get_mut(i) else {
            return;
        };
        s.kind = None;
        if let Err(e) = s.m.heal(&self.ns) {
            rep.failures.push(format!("healing m{i}: {e}"));
        }
    }

    fn heal_all(&mut self, rep: &mut ChaosReport) {
        for i in 0..self.slots.len() {
            self.heal(i, rep);
        }
        for s in &mut self.slots {
            if let Err(e) = wait_master_ready(&self.ns, &mut s.m) {
                rep.failures
                    .push(format!("{} not ready after healing: {e}", s.m.addr));
            }
        }
    }

    /// Samples `/proc` of every master into the report's maxima.
    fn sample(&self, rep: &mut ChaosReport) {
        for (s, r) in self.slots.iter().zip(rep.usage.iter_mut()) {
            if let Some(u) = usage(s.m.proc.pid()) {
                r.max.rss_kib = r.max.rss_kib.max(u.rss_kib);
                r.max.fds = r.max.fds.max(u.fds);
            }
        }
    }

    /// Records any master that died without being killed, and any minion that died.
    fn check_alive(&mut self, rep: &mut ChaosReport) {
        for (i, s) in self.slots.iter_mut().enumerate() {
            let killed = matches!(s.kind, Some(Kind::Kill | Kind::Restart));
            if !killed && !s.m.proc.is_running() {
                rep.failures.push(format!(
                    "m{i} exited on its own ({:?}):\n{}",
                    s.m.proc.exit_status(),
                    s.m.proc.tail(20)
                ));
                // Bring it back so the run can go on; the failure stays recorded.
                let _ = s.m.proc.restart();
            }
        }
        for (i, p) in self.minions.iter_mut().enumerate() {
            if p.exit_status().is_some() && self.reported_dead.insert(i) {
                let id = self.ids.get(i).map_or("?", String::as_str);
                rep.failures
                    .push(format!("minion {id} exited:\n{}", p.tail(20)));
            }
        }
    }

    /// A `salt -c <m i conf> ARGS --static --out json` inside the namespace.
    fn salt_cmd(&self, i: usize, args: &[&str]) -> Command {
        let mut c = self.ns.command(&self.bins.salt);
        if let Some(s) = self.slots.get(i) {
            c.arg("-c").arg(s.m.conf.conf_dir());
        }
        c.args(args).args(["--static", "--out", "json"]);
        c
    }

    /// Runs `args` through every master at once; per master, the minions whose return is
    /// `want`.
    fn through_all(
        &self,
        args: &[&str],
        want: &serde_json::Value,
        secs: u64,
    ) -> Vec<BTreeSet<String>> {
        let timeout = Duration::from_secs(secs + 15);
        std::thread::scope(|scope| {
            let runs: Vec<_> = (0..self.slots.len())
                .map(|i| {
                    let c = self.salt_cmd(i, args);
                    scope.spawn(move || run_with_timeout(c, timeout))
                })
                .collect();
            runs.into_iter()
                .map(|h| match h.join() {
                    Ok(Ok(out)) => answered(&out.stdout, want),
                    _ => BTreeSet::new(),
                })
                .collect()
        })
    }

    /// Ping rounds through all masters until every minion has answered (Ok: who answered
    /// through each master in that round) or `limit` has passed since `since` (Err: who never
    /// answered in the last round).
    fn converge(
        &self,
        since: Instant,
        limit: Duration,
    ) -> Result<Vec<BTreeSet<String>>, Vec<String>> {
        let all: BTreeSet<String> = self.ids.iter().cloned().collect();
        let yes = serde_json::Value::Bool(true);
        let secs = PING_SECS.to_string();
        loop {
            let per = self.through_all(&["*", "test.ping", "-t", &secs], &yes, PING_SECS);
            let union: BTreeSet<String> = per.iter().flatten().cloned().collect();
            let missing: Vec<String> = all.difference(&union).cloned().collect();
            if missing.is_empty() {
                return Ok(per);
            }
            if since.elapsed() > limit {
                return Err(missing);
            }
        }
    }

    /// After convergence: one ping round must reach everyone, each through one master; then
    /// jobs through every master must have all their returns, also in the job caches.
    fn check_reach_and_jobs(&self, rep: &mut ChaosReport) {
        let yes = serde_json::Value::Bool(true);
        let secs = PING_SECS.to_string();
        let per = self.through_all(&["*", "test.ping", "-t", &secs], &yes, PING_SECS);
        rep.holders = per.iter().map(BTreeSet::len).collect();
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, set) in per.iter().enumerate() {
            for id in set {
                if let Some(j) = seen.insert(id, i) {
                    rep.failures
                        .push(format!("{id} answered through m{j} and m{i} at once"));
                }
            }
        }
        if seen.len() != self.ids.len() {
            let missing: Vec<&String> = self
                .ids
                .iter()
                .filter(|id| !seen.contains_key(id.as_str()))
                .collect();
            rep.failures.push(format!(
                "the reach round after convergence missed {} minion(s): {missing:?}",
                missing.len()
            ));
        }
        let job_secs = JOB_SECS.to_string();
        for j in 0..JOBS_PER_MASTER {
            let marker = format!("chaos-job-{}-{j}", self.opts.seed);
            let want = serde_json::Value::String(marker.clone());
            let got = self.through_all(
                &["*", "test.echo", &marker, "-t", &job_secs],
                &want,
                JOB_SECS,
            );
            for (i, (answered, holders)) in got.iter().zip(per.iter()).enumerate() {
                rep.jobs.0 += 1;
                rep.jobs.1 += holders.len();
                if answered != holders {
                    rep.failures.push(format!(
                        "job {marker} through m{i}: answered by {} of its {} minions (missing {:?}, extra {:?})",
                        answered.len(),
                        holders.len(),
                        holders.difference(answered).collect::<Vec<_>>(),
                        answered.difference(holders).collect::<Vec<_>>()
                    ));
                }
                let Some(s) = self.slots.get(i) else { continue };
                // The master writes its job cache behind the returns it streams (as Salt
                // fires a return's event before writing it): give the write a moment.
                let jobs_dir = s.m.conf.dir().join("cache/jobs");
                let until = Instant::now() + Duration::from_secs(10);
                let mut cached = cached_returns(&jobs_dir, &marker);
                while cached.as_ref().is_ok_and(|c| c != holders) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(50));
                    cached = cached_returns(&jobs_dir, &marker);
                }
                match cached {
                    Ok(on_disk) => {
                        rep.jobs.2 += on_disk.intersection(holders).count();
                        if &on_disk != holders {
                            rep.failures.push(format!(
                                "job {marker} on m{i}: {} returns in the job cache for {} minions (missing {:?})",
                                on_disk.len(),
                                holders.len(),
                                holders.difference(&on_disk).collect::<Vec<_>>()
                            ));
                        }
                    }
                    Err(e) => rep.failures.push(format!("job {marker} on m{i}: {e}")),
                }
            }
        }
    }

    /// Key-state consistency, sign-in counts, resource figures, survivors.
    fn finish(&mut self, rep: &mut ChaosReport) {
        self.sample(rep);
        for (i, s) in self.slots.iter().enumerate() {
            let end = usage(s.m.proc.pid()).unwrap_or_default();
            if let Some(r) = rep.usage.get_mut(i) {
                r.end = end;
            }
            // Bounded: a master's own state is well under a MiB per minion, and each minion
            // holds at most a few connections to it (SUB, REQ, an alive check).
            let n = self.opts.minions as u64;
            let rss_cap = 64 * 1024 + 256 * n;
            let fd_cap = 128 + 6 * n;
            if end.rss_kib > rss_cap || end.fds > fd_cap {
                rep.failures.push(format!(
                    "m{i} ends with {} KiB RSS and {} fds (caps {rss_cap} KiB, {fd_cap})",
                    end.rss_kib, end.fds
                ));
            }
            // Tighter, from what it holds at the end: ~43 descriptors idle plus ~2 per held
            // minion were measured (docs/reliability.md); a leak per fault or per reconnect
            // would pile up on top of that over the run.
            if let Some(&held) = rep.holders.get(i) {
                let held_cap = 64 + 4 * held as u64;
                if end.fds > held_cap {
                    rep.failures.push(format!(
                        "m{i} ends with {} fds holding {held} minions (cap {held_cap})",
                        end.fds
                    ));
                }
            }
            let log = std::fs::read_to_string(s.m.conf.log_file()).unwrap_or_default();
            rep.sign_ins
                .push(log.matches("Authentication request from ").count());
            let (accepted, other, problems) = key_states(&s.m.conf.pki_dir());
            rep.keys.push((accepted, other));
            rep.failures
                .extend(problems.into_iter().map(|p| format!("m{i} pki: {p}")));
        }
        self.check_alive(rep);
        rep.minions_running = self
            .minions
            .iter_mut()
            .map(|p| p.is_running())
            .filter(|r| *r)
            .count();
    }

    fn describe_missing(&self, missing: &[String]) -> String {
        let mut s = format!("{missing:?}");
        for id in missing.iter().take(3) {
            if let Some(p) = self
                .ids
                .iter()
                .position(|x| x == id)
                .and_then(|i| self.minions.get(i))
            {
                let _ = write!(s, "\n--- {id}:\n{}", p.tail(15));
            }
        }
        for (i, sl) in self.slots.iter().enumerate() {
            let _ = write!(s, "\n--- m{i} ({}):\n{}", sl.m.addr, sl.m.proc.tail(10));
        }
        s
    }
}

impl Drop for Chaos {
    fn drop(&mut self) {
        for s in &self.slots {
            s.m.proc.signal(Signal::SIGCONT);
        }
        // Minions first (SIGTERM to all, then one grace period for all), then the masters.
        for p in &self.minions {
            p.signal(Signal::SIGTERM);
        }
        let deadline = Instant::now() + DROP_GRACE;
        for p in &mut self.minions {
            let left = deadline.saturating_duration_since(Instant::now());
            p.wait_exit(left);
            p.stop(Duration::ZERO);
        }
        for s in &mut self.slots {
            s.m.proc.stop(DROP_GRACE);
        }
    }
}

/// Reaps finished background pings (all of them, killing the rest, when `all`).
fn reap(pings: &mut Vec<(Child, Instant)>, rep: &mut ChaosReport, all: bool) {
    let mut k = 0;
    while let Some((child, started)) = pings.get_mut(k) {
        match child.try_wait() {
            Ok(Some(_)) => {
                let mut text = String::new();
                if let Some(mut out) = child.stdout.take() {
                    let _ = out.read_to_string(&mut text);
                }
                rep.background.1 += answered(&text, &serde_json::Value::Bool(true)).len();
                pings.swap_remove(k);
            }
            Ok(None) if all || started.elapsed() > Duration::from_secs(15) => {
                kill_group(child);
                pings.swap_remove(k);
            }
            Ok(None) => k += 1,
            Err(_) => {
                pings.swap_remove(k);
            }
        }
    }
}

/// Minion ids whose return in `salt --static --out json` output equals `want`.
pub fn answered(text: &str, want: &serde_json::Value) -> BTreeSet<String> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(text.trim())
    else {
        return BTreeSet::new();
    };
    map.into_iter()
        .filter(|(_, v)| v == want)
        .map(|(k, _)| k)
        .collect()
}

/// The minions with a complete `return.p` holding `marker` for the job (under `jobs`) whose
/// `.load.p` mentions `marker`.
pub fn cached_returns(jobs: &Path, marker: &str) -> Result<BTreeSet<String>, String> {
    let rd = std::fs::read_dir(jobs).map_err(|e| format!("{}: {e}", jobs.display()))?;
    let needle = marker.as_bytes();
    let mut found = None;
    // Salt's local_cache layout: jobs/<h[:2]>/<h[2:]>/.
    let job_dirs = rd
        .flatten()
        .filter(|t| !t.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|t| std::fs::read_dir(t.path()).ok())
        .flat_map(|rd| rd.flatten());
    for entry in job_dirs {
        let load = std::fs::read(entry.path().join(".load.p")).unwrap_or_default();
        if load.windows(needle.len()).any(|w| w == needle) {
            if found.is_some() {
                return Err(format!("two jobs carry {marker}"));
            }
            found = Some(entry.path());
        }
    }
    let dir = found.ok_or_else(|| format!("no job carrying {marker} in {}", jobs.display()))?;
    let mut ids = BTreeSet::new();
    for entry in std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let path = entry.path().join("return.p");
        if !path.is_file() {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut rd = bytes.as_slice();
        let v = rmpv::decode::read_value(&mut rd)
            .map_err(|e| format!("{}: not msgpack: {e}", path.display()))?;
        if !rd.is_empty() {
            return Err(format!("{}: {} trailing bytes", path.display(), rd.len()));
        }
        let ret = v
            .as_map()
            .and_then(|m| m.iter().find(|(k, _)| k.as_str() == Some("return")))
            .and_then(|(_, r)| r.as_str());
        if ret != Some(marker) {
            return Err(format!(
                "{}: return is {ret:?}, not {marker}",
                path.display()
            ));
        }
        ids.insert(entry.file_name().to_string_lossy().into_owned());
    }
    Ok(ids)
}

/// `(accepted, in other states, problems)` of a master `pki_dir`: every id in at most one of
/// Salt's state directories, every key file a parsable public key.
pub fn key_states(pki: &Path) -> (usize, usize, Vec<String>) {
    let mut state_of: BTreeMap<String, &str> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut counts = (0, 0);
    for state in [
        "minions",
        "minions_pre",
        "minions_rejected",
        "minions_denied",
    ] {
        let dir = pki.join(state);
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in rd.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let text = std::fs::read(entry.path()).unwrap_or_default();
            if salt_pki::PublicKey::from_pem(&text).is_err() {
                problems.push(format!("{state}/{name} is not a public key"));
            }
            if let Some(other) = state_of.insert(name.clone(), state) {
                problems.push(format!("{name} is in both {other} and {state}"));
            }
            if state == "minions" {
                counts.0 += 1;
            } else {
                counts.1 += 1;
            }
        }
    }
    (counts.0, counts.1, problems)
}
