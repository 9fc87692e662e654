//! The failover lab: several of our masters sharing one signing pair, inside a private network
//! namespace, and one minion (ours, another binary, or real Salt's) with all of them in its
//! failover list.
//!
//! Layout: master `i` listens on `127.0.0.<2+i>` ports 4505/4506 (Salt's defaults: the
//! namespace has its own port space, and real Salt's alive check needs every master on the same
//! `publish_port`), has its own `master.pem` and the shared `master_sign.pem`/`.pub` with
//! `master_sign_pubkey: True` and `auto_accept: True`. The minion has
//! `master_type: failover`, `verify_master_pubkey_sign: True` and `master_sign.pub` in its
//! `pki_dir`.
//!
//! Which master serves the minion is observed from outside, the way an operator would: only
//! the master the minion is subscribed to gets an answer to `salt '*' test.ping`.
//! [`Lab::first_answer`] starts such a ping on every candidate master every 200 ms
//! ([`POLL_EVERY`]), each ping in its own process, so a ping that went out before the minion
//! arrived does not hide one that goes out after; the time reported is when the first
//! successful ping *finished*. The measurement therefore overstates the failover by up to one
//! poll period plus one `salt` round trip ([`Lab::ping_rtt`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::bins::Bins;
use crate::cli::{CmdOutput, ping_answered, run_with_timeout};
use crate::config::{Flavor, MasterConf, MinionConf};
use crate::error::HarnessError;
use crate::keys::{copy_into, gen_keys_or_openssl};
use crate::netns::Netns;
use crate::process::{DROP_GRACE, Proc, ProcSpec};
use crate::root::TempRoot;
use crate::venv::SaltVenv;
use crate::wait::{scaled, wait_until};

/// How often a new `salt '*' test.ping` is started on each candidate master (default; env
/// `LAB_POLL_MS` overrides it, e.g. for real Salt's slow-starting `salt`).
pub const POLL_EVERY: Duration = Duration::from_millis(200);

/// The poll period in force ([`POLL_EVERY`] or `LAB_POLL_MS`).
pub fn poll_every() -> Duration {
    std::env::var("LAB_POLL_MS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map_or(POLL_EVERY, Duration::from_millis)
}
/// `--timeout` given to each polling `salt`.
pub const PING_TIMEOUT_SECS: u32 = 2;
/// A polling `salt` of ours still running after this is killed (real Salt's `salt`, a slow
/// Python start, gets [`PING_KILL_AFTER_SALT`]).
pub const PING_KILL_AFTER: Duration = Duration::from_secs(5);
/// A polling real-Salt `salt` still running after this is killed.
pub const PING_KILL_AFTER_SALT: Duration = Duration::from_secs(30);
/// Publish port of every lab master.
pub const PUBLISH_PORT: u16 = 4505;
/// Return port of every lab master.
pub const RET_PORT: u16 = 4506;

/// Which minion the lab runs (env `LAB_MINION`).
#[derive(Debug, Clone)]
pub enum MinionKind {
    /// Our `salt-minion` (the default).
    Ours,
    /// Another binary that reads our configs (`LAB_MINION=/path/to/salt-minion`).
    Binary(PathBuf),
    /// Real Salt's minion from a venv (`LAB_MINION=salt:VENV`; `salt:` alone = the default venv).
    Salt(SaltVenv),
}

impl MinionKind {
    /// From `LAB_MINION` (unset or `ours`: ours; `salt:VENV`; else a path).
    pub fn from_env() -> Result<Self, HarnessError> {
        let Ok(v) = std::env::var("LAB_MINION") else {
            return Ok(Self::Ours);
        };
        if v.is_empty() || v == "ours" {
            return Ok(Self::Ours);
        }
        if let Some(venv) = v.strip_prefix("salt:") {
            let dir = if venv.is_empty() {
                default_venv_dir()?
            } else {
                PathBuf::from(venv)
            };
            return SaltVenv::at(&dir).map(Self::Salt).ok_or_else(|| {
                HarnessError::Build(format!("LAB_MINION: no salt-minion in {}", dir.display()))
            });
        }
        let p = PathBuf::from(&v);
        if p.is_file() {
            Ok(Self::Binary(p))
        } else {
            Err(HarnessError::Build(format!(
                "LAB_MINION: {v} is not a file"
            )))
        }
    }

    /// A short label for tables.
    pub fn label(&self) -> String {
        match self {
            Self::Ours => "ours".into(),
            Self::Binary(p) => p.display().to_string(),
            Self::Salt(v) => format!(
                "Salt ({})",
                v.dir
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            ),
        }
    }

    /// Whether it is real Salt (whose freeze/black-hole failover is known not to happen).
    pub fn is_salt(&self) -> bool {
        matches!(self, Self::Salt(_))
    }
}

/// A fault injected into one master.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// SIGTERM: the master shuts down cleanly.
    Term,
    /// SIGKILL: the master vanishes; the kernel resets its connections.
    Kill,
    /// SIGSTOP: the master is frozen; connections stay up, nothing answers.
    Freeze,
    /// nftables drops every packet to/from the master's address: no RST, no ICMP.
    BlackHole,
}

impl Fault {
    /// Every fault, in table order.
    pub const ALL: [Self; 4] = [Self::Term, Self::Kill, Self::Freeze, Self::BlackHole];

    /// The table label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Term => "clean stop (SIGTERM)",
            Self::Kill => "SIGKILL",
            Self::Freeze => "freeze (SIGSTOP)",
            Self::BlackHole => "black hole (nft drop)",
        }
    }
}

/// Lab parameters (see [`LabOptions::from_env`]).
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Number of masters (env `LAB_MASTERS`, 2 to 9, default 3).
    pub masters: usize,
    /// `master_alive_interval` in seconds (env `LAB_ALIVE_INTERVAL`, default 3).
    pub alive_interval: u32,
    /// `master_failback_interval` when failback is on.
    pub failback: Option<u32>,
    /// The minion to run.
    pub minion: MinionKind,
    /// The minion id.
    pub minion_id: String,
    /// Run real Salt's masters (and `salt`, `salt-key`) from this venv instead of ours
    /// (env `LAB_MASTER=salt:VENV`; `salt:` alone = the default venv).
    pub master_venv: Option<SaltVenv>,
}

impl LabOptions {
    /// `LAB_MASTERS` masters (default 3), `LAB_ALIVE_INTERVAL` (default 3), no failback,
    /// `LAB_MINION`, `LAB_MASTER`.
    pub fn from_env() -> Result<Self, HarnessError> {
        let alive_interval = std::env::var("LAB_ALIVE_INTERVAL")
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|a| *a > 0)
            .unwrap_or(3);
        let masters = std::env::var("LAB_MASTERS")
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|n| (2..=9).contains(n))
            .unwrap_or(3);
        Ok(Self {
            masters,
            alive_interval,
            failback: None,
            minion: MinionKind::from_env()?,
            minion_id: "lab-minion".into(),
            master_venv: master_venv_from_env()?,
        })
    }
}

fn master_venv_from_env() -> Result<Option<SaltVenv>, HarnessError> {
    let Ok(v) = std::env::var("LAB_MASTER") else {
        return Ok(None);
    };
    if v.is_empty() || v == "ours" {
        return Ok(None);
    }
    let Some(venv) = v.strip_prefix("salt:") else {
        return Err(HarnessError::Build(format!(
            "LAB_MASTER: expected ours or salt:VENV, got {v}"
        )));
    };
    let dir = if venv.is_empty() {
        default_venv_dir()?
    } else {
        PathBuf::from(venv)
    };
    SaltVenv::at(&dir)
        .map(Some)
        .ok_or_else(|| HarnessError::Build(format!("LAB_MASTER: no Salt in {}", dir.display())))
}

/// One lab master.
#[derive(Debug)]
pub struct LabMaster {
    /// Its address (`127.0.0.<2+i>`).
    pub addr: String,
    /// Its config.
    pub conf: MasterConf,
    /// The running daemon.
    pub proc: Proc,
    /// The fault in force, if any.
    pub fault: Option<Fault>,
}

impl LabMaster {
    /// Injects `fault`; returns the instant just before it took effect.
    pub fn inject(&mut self, ns: &Netns, fault: Fault) -> Result<Instant, HarnessError> {
        let t0 = Instant::now();
        match fault {
            Fault::Term => self.proc.signal(Signal::SIGTERM),
            Fault::Kill => self.proc.signal(Signal::SIGKILL),
            Fault::Freeze => self.proc.signal(Signal::SIGSTOP),
            Fault::BlackHole => ns.blackhole(&self.addr)?,
        }
        self.fault = Some(fault);
        Ok(t0)
    }

    /// Undoes the fault in force: restarts a stopped/killed master, SIGCONTs a frozen one,
    /// removes a black hole; waits until it listens again.
    pub fn heal(&mut self, ns: &Netns) -> Result<(), HarnessError> {
        match self.fault.take() {
            None => return Ok(()),
            Some(Fault::Term | Fault::Kill) => self.proc.restart()?,
            Some(Fault::Freeze) => self.proc.signal(Signal::SIGCONT),
            Some(Fault::BlackHole) => ns.heal(&self.addr)?,
        }
        wait_master_ready(ns, self)
    }
}

/// One failover measurement.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// The fault.
    pub fault: Fault,
    /// The master it hit.
    pub from: usize,
    /// The master that answered afterwards, if any did in time.
    pub to: Option<usize>,
    /// Seconds from the fault to the first answer through `to`.
    pub secs: Option<f64>,
}

/// The running lab. Dropping it stops the minion, then the masters (process groups), then
/// deletes the namespace and the temp root.
#[derive(Debug)]
pub struct Lab {
    minion: Proc,
    masters: Vec<LabMaster>,
    /// The namespace everything runs in.
    pub ns: Netns,
    /// Our binaries.
    pub bins: Bins,
    /// The options it was started with.
    pub opts: LabOptions,
    minion_conf: MinionConf,
    root: TempRoot,
}

impl Lab {
    /// Starts the masters and the minion inside `ns` and waits until the minion answers a
    /// `test.ping` through one of them.
    pub fn start(ns: Netns, mut bins: Bins, opts: LabOptions) -> Result<Self, HarnessError> {
        let master_flavor = match &opts.master_venv {
            Some(v) => {
                bins.master = v.master();
                bins.salt = v.salt();
                bins.key = v.key();
                Flavor::Salt
            }
            None => Flavor::Ours,
        };
        let minion_bin = match &opts.minion {
            MinionKind::Ours => bins.minion.clone(),
            MinionKind::Binary(p) => p.clone(),
            MinionKind::Salt(v) => v.minion(),
        };
        Bins::require(&[&bins.master, &bins.salt, &minion_bin])?;
        let root = TempRoot::new()?;
        let (masters, sign_pub) = start_masters(&ns, &bins, &root, opts.masters, master_flavor)?;
        let addrs: Vec<String> = masters.iter().map(|m| m.addr.clone()).collect();
        let flavor = if opts.minion.is_salt() {
            Flavor::Salt
        } else {
            Flavor::Ours
        };
        let mut mconf = MinionConf::new(root.dir("n")?, &opts.minion_id)
            .flavor(flavor)
            .masters(&addrs)
            .ports(PUBLISH_PORT, RET_PORT)
            .failover(opts.alive_interval)
            .verify_master_pubkey_sign(true);
        if let Some(fb) = opts.failback {
            mconf = mconf.failback(fb);
        }
        let conf_dir = mconf.write()?;
        copy_into(&mconf.pki_dir(), &[&sign_pub])?;
        let extra: &[&str] = if opts.minion.is_salt() {
            &["--disable-keepalive"]
        } else {
            &[]
        };
        let spec = ProcSpec::new("minion", minion_bin, mconf.dir())
            .args([
                "-c".into(),
                conf_dir.into_os_string(),
                "-l".into(),
                "info".into(),
            ])
            .args(extra.iter().copied())
            .netns(Some(ns.name()))
            .log(mconf.log_file());
        let minion = spec.spawn()?;
        let lab = Self {
            minion,
            masters,
            ns,
            bins,
            opts,
            minion_conf: mconf,
            root,
        };
        // Real Salt takes its time (grains, loaders) on a busy machine.
        let uses_salt = lab.opts.minion.is_salt() || lab.opts.master_venv.is_some();
        let first = Duration::from_secs(if uses_salt { 300 } else { 60 });
        if lab.current_master(first).is_none() {
            return Err(HarnessError::Timeout {
                what: format!(
                    "the minion to answer test.ping through any master\n{}",
                    lab.diagnostics()
                ),
                after: scaled(first),
            });
        }
        Ok(lab)
    }

    /// The temp root (logs are under `m<i>/` and `n/`).
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// Keeps the temp root after the test.
    pub fn keep_root(&mut self) -> PathBuf {
        self.root.keep()
    }

    /// The masters.
    pub fn masters(&self) -> &[LabMaster] {
        &self.masters
    }

    /// The minion daemon.
    pub fn minion(&mut self) -> &mut Proc {
        &mut self.minion
    }

    /// The minion's config.
    pub fn minion_conf(&self) -> &MinionConf {
        &self.minion_conf
    }

    /// Masters with no fault in force.
    pub fn healthy(&self) -> Vec<usize> {
        (0..self.masters.len())
            .filter(|i| self.masters.get(*i).is_some_and(|m| m.fault.is_none()))
            .collect()
    }

    /// One `salt '*' test.ping` through master `idx`.
    pub fn ping_via(&self, idx: usize, timeout: Duration) -> Result<CmdOutput, HarnessError> {
        let m = self.master(idx)?;
        let mut c = self.ping_command(m);
        c.stdin(Stdio::null());
        run_with_timeout(c, timeout + Duration::from_secs(3))
    }

    /// The time one successful ping through `idx` takes (for the poll allowance).
    pub fn ping_rtt(&self, idx: usize) -> Option<Duration> {
        let out = self
            .ping_via(idx, Duration::from_secs(u64::from(PING_TIMEOUT_SECS)))
            .ok()?;
        ping_answered(&out, &self.opts.minion_id).then_some(out.elapsed)
    }

    /// The master the minion answers through now, waiting up to `timeout` (scaled).
    pub fn current_master(&self, timeout: Duration) -> Option<usize> {
        self.first_answer(&self.healthy(), scaled(timeout))
            .map(|(i, _)| i)
    }

    /// Injects `fault` into master `idx`; returns the instant just before it took effect.
    pub fn inject(&mut self, idx: usize, fault: Fault) -> Result<Instant, HarnessError> {
        let m = self
            .masters
            .get_mut(idx)
            .ok_or_else(|| HarnessError::Netns(format!("no master {idx}")))?;
        m.inject(&self.ns, fault)
    }

    /// Undoes the fault on `idx`: restarts a stopped/killed master, SIGCONTs a frozen one,
    /// removes a black hole; waits until it listens again.
    pub fn heal(&mut self, idx: usize) -> Result<(), HarnessError> {
        let m = self
            .masters
            .get_mut(idx)
            .ok_or_else(|| HarnessError::Netns(format!("no master {idx}")))?;
        m.heal(&self.ns)
    }

    /// Injects `fault` into `idx` and measures the time until the minion answers through
    /// another healthy master; gives up after `limit` (not scaled).
    pub fn fault_and_measure(
        &mut self,
        idx: usize,
        fault: Fault,
        limit: Duration,
    ) -> Result<Measurement, HarnessError> {
        let candidates: Vec<usize> = self.healthy().into_iter().filter(|i| *i != idx).collect();
        let t0 = self.inject(idx, fault)?;
        let ans = self.first_answer(&candidates, limit);
        Ok(Measurement {
            fault,
            from: idx,
            to: ans.map(|(i, _)| i),
            secs: ans.map(|(_, t)| t.saturating_duration_since(t0).as_secs_f64()),
        })
    }

    /// Polls `salt '*' test.ping` on each of `candidates` every [`POLL_EVERY`] until one shows
    /// the minion answering, or `limit` has passed (pings in flight then may still finish).
    /// Returns that master and when its ping finished.
    pub fn first_answer(&self, candidates: &[usize], limit: Duration) -> Option<(usize, Instant)> {
        struct Poll {
            idx: usize,
            child: Child,
            started: Instant,
        }
        let t0 = Instant::now();
        let mut polls: Vec<Poll> = Vec::new();
        let mut next_launch = t0;
        let mut found = None;
        let every = poll_every();
        let kill_after = if self.opts.master_venv.is_some() {
            PING_KILL_AFTER_SALT
        } else {
            PING_KILL_AFTER
        };
        loop {
            let now = Instant::now();
            let launching = now.saturating_duration_since(t0) < limit;
            if launching && now >= next_launch {
                for &i in candidates {
                    let Ok(m) = self.master(i) else { continue };
                    let mut c = self.ping_command(m);
                    c.stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::null());
                    std::os::unix::process::CommandExt::process_group(&mut c, 0);
                    if let Ok(child) = c.spawn() {
                        polls.push(Poll {
                            idx: i,
                            child,
                            started: now,
                        });
                    }
                }
                next_launch = (next_launch + every).max(now);
            }
            let mut k = 0;
            while let Some(p) = polls.get_mut(k) {
                match p.child.try_wait() {
                    Ok(Some(_)) => {
                        let done_at = Instant::now();
                        let mut p = polls.swap_remove(k);
                        let mut text = String::new();
                        if let Some(mut out) = p.child.stdout.take() {
                            let _ = out.read_to_string(&mut text);
                        }
                        let fake = CmdOutput {
                            cmd: String::new(),
                            status: None,
                            stdout: text,
                            stderr: String::new(),
                            elapsed: Duration::ZERO,
                        };
                        if found.is_none() && ping_answered(&fake, &self.opts.minion_id) {
                            found = Some((p.idx, done_at));
                        }
                    }
                    Ok(None) if p.started.elapsed() > kill_after => {
                        kill_group(&mut p.child);
                        polls.swap_remove(k);
                    }
                    Ok(None) => k += 1,
                    Err(_) => {
                        polls.swap_remove(k);
                    }
                }
            }
            if found.is_some() || (!launching && polls.is_empty()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        for mut p in polls {
            kill_group(&mut p.child);
        }
        found
    }

    /// Tails of every daemon's output, for failure messages.
    pub fn diagnostics(&self) -> String {
        let mut s = format!("lab root: {}\n", self.root.path().display());
        s.push_str(&format!(
            "--- minion ({}):\n{}\n",
            self.opts.minion.label(),
            self.minion.tail(40)
        ));
        for (i, m) in self.masters.iter().enumerate() {
            s.push_str(&format!(
                "--- master {i} ({}, fault {:?}):\n{}\n",
                m.addr,
                m.fault,
                m.proc.tail(15)
            ));
        }
        let holes = self.ns.holes();
        if !holes.is_empty() {
            s.push_str(&format!("black holes: {holes:?}\n"));
        }
        s
    }

    fn master(&self, idx: usize) -> Result<&LabMaster, HarnessError> {
        self.masters
            .get(idx)
            .ok_or_else(|| HarnessError::Netns(format!("no master {idx}")))
    }

    fn ping_command(&self, m: &LabMaster) -> Command {
        let mut c = self.ns.command(&self.bins.salt);
        c.arg("-c").arg(m.conf.conf_dir()).args([
            "*",
            "test.ping",
            "--timeout",
            &PING_TIMEOUT_SECS.to_string(),
        ]);
        c
    }
}

/// SIGKILLs `child`'s process group (it was started as a group leader) and reaps it.
pub(crate) fn kill_group(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
    let _ = child.wait();
}

/// Starts `n` masters inside `ns` (master `i` on `127.0.0.<2+i>`, directory `m<i>` of `root`,
/// auto-accept, one shared `master_sign` pair) and waits until each listens. Returns them and
/// the signing pair's public half, for the minions' `pki_dir`.
pub fn start_masters(
    ns: &Netns,
    bins: &Bins,
    root: &TempRoot,
    n: usize,
    flavor: Flavor,
) -> Result<(Vec<LabMaster>, PathBuf), HarnessError> {
    let keys = root.dir("keys")?;
    let (sign_pem, sign_pub) = gen_keys_or_openssl(&bins.key, &keys, "master_sign")?;
    let mut masters = Vec::with_capacity(n);
    for i in 0..n {
        let addr = format!("127.0.0.{}", 2 + i);
        ns.add_addr(&addr)?;
        let conf = MasterConf::new(root.dir(&format!("m{i}"))?)
            .id(&format!("lab-m{i}"))
            .interface(&addr)
            .ports(PUBLISH_PORT, RET_PORT)
            .auto_accept(true)
            .master_sign_pubkey(true)
            .flavor(flavor);
        let conf_dir = conf.write()?;
        copy_into(&conf.pki_dir(), &[&sign_pem, &sign_pub])?;
        let spec = ProcSpec::new(&format!("m{i}"), &bins.master, conf.dir())
            .args([
                "-c".into(),
                conf_dir.into_os_string(),
                "-l".into(),
                "info".into(),
            ])
            .netns(Some(ns.name()))
            .log(conf.log_file());
        let proc = spec.spawn()?;
        masters.push(LabMaster {
            addr,
            conf,
            proc,
            fault: None,
        });
    }
    for m in &mut masters {
        wait_master_ready(ns, m)?;
    }
    Ok((masters, sign_pub))
}

/// Waits until master `m` listens on its publish and return ports (and is still running).
pub fn wait_master_ready(ns: &Netns, m: &mut LabMaster) -> Result<(), HarnessError> {
    let addr = m.addr.clone();
    let res = wait_until(
        &format!("master {addr} to listen on {PUBLISH_PORT} and {RET_PORT}"),
        Duration::from_secs(30),
        || {
            !m.proc.is_running()
                || (ns.listening(&addr, RET_PORT) && ns.listening(&addr, PUBLISH_PORT))
        },
    );
    m.proc.check_running()?;
    res.map(|_| ()).map_err(|e| HarnessError::Timeout {
        what: format!("{e}\n{}", m.proc.tail(20)),
        after: scaled(Duration::from_secs(30)),
    })
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Frozen masters must be able to act on SIGTERM; black holes go with the namespace.
        for m in &self.masters {
            m.proc.signal(Signal::SIGCONT);
        }
        self.minion.stop(DROP_GRACE);
        for m in &mut self.masters {
            m.proc.stop(DROP_GRACE);
        }
    }
}

/// Seconds with one decimal, or `—`.
pub fn fmt_secs(s: Option<f64>) -> String {
    s.map_or_else(|| "—".to_string(), |v| format!("{v:.2}"))
}

/// `salt:` alone: the default Salt venv, or what is missing.
fn default_venv_dir() -> Result<PathBuf, HarnessError> {
    crate::venv::salt_venv()
        .map(|v| v.dir)
        .map_err(|m| HarnessError::Build(m.to_string()))
}
