//! One master and its minions, all ours, as real processes on loopback (`tests/e2e_ours.rs`).
//!
//! A [`Cluster`] owns a [`TempRoot`], two fresh ports and the master's config; it starts our
//! `salt-master`, starts minions pointed at it, runs `salt` against it and manages keys the
//! way an operator does: with `salt-key` when the built `salt-key` is the real one, else by
//! moving the key files exactly as `salt-key` would (and writing the AES rotation dropfile on
//! reject/delete, as `salt-key` does).
//!
//! `E2E_MINION_BIN=<path>` runs a different `salt-minion` build (for example
//! `target/release/salt-minion` for the start-up and memory figures).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::cli::{CmdOutput, run_with_timeout};
use crate::config::{MasterConf, MinionConf};
use crate::error::HarnessError;
use crate::process::{Proc, ProcSpec};
use crate::root::TempRoot;
use crate::{Bins, bins, free_port_pair, wait_for_log, wait_until};

/// What the master logs once it serves requests.
pub const MASTER_READY: &str = "worker threads";
/// What a minion logs once it signed in and subscribed.
pub const MINION_READY: &str = "Minion is ready to receive requests!";
/// Timeout for one `salt` or `salt-key` invocation (not scaled).
pub const CLI_LIMIT: Duration = Duration::from_secs(40);

/// Key directories under the master's `pki_dir`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyDir {
    /// `minions/`.
    Accepted,
    /// `minions_pre/`.
    Pending,
    /// `minions_rejected/`.
    Rejected,
}

impl KeyDir {
    fn name(self) -> &'static str {
        match self {
            Self::Accepted => "minions",
            Self::Pending => "minions_pre",
            Self::Rejected => "minions_rejected",
        }
    }
}

/// Whether the built `salt-key` is the real one (not the placeholder `fn main() {}`): it
/// prints its version.
pub fn has_salt_key(key_bin: &Path) -> bool {
    static REAL: OnceLock<bool> = OnceLock::new();
    *REAL.get_or_init(|| {
        let mut c = Command::new(key_bin);
        c.arg("--version");
        run_with_timeout(c, Duration::from_secs(20))
            .is_ok_and(|o| o.success() && o.stdout.contains("salt-key"))
    })
}

/// The minion program: `E2E_MINION_BIN` or ours from [`bins`].
pub fn minion_program(b: &Bins) -> PathBuf {
    std::env::var_os("E2E_MINION_BIN").map_or_else(|| b.minion.clone(), PathBuf::from)
}

/// `VmRSS` of `pid` in KiB, from `/proc/<pid>/status`.
pub fn vm_rss_kib(pid: i32) -> Option<u64> {
    proc_status_kib(pid, "VmRSS")
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `RssAnon`, `RssFile`, `VmHWM`...).
pub fn proc_status_kib(pid: i32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let prefix = format!("{field}:");
    s.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// A master of ours on fresh loopback ports in its own temp root, plus helpers for its
/// minions, keys and CLI.
#[derive(Debug)]
pub struct Cluster {
    root: TempRoot,
    bins: Bins,
    mconf: MasterConf,
    ports: (u16, u16),
    master: Option<Proc>,
}

impl Cluster {
    /// A cluster whose master config is `tweak(default)`; the default has the test ports,
    /// `loop_interval: 1` (dropfile checks every second) and `auto_accept: False`. The
    /// master is not started yet.
    pub fn new(tweak: impl FnOnce(MasterConf) -> MasterConf) -> Result<Self, HarnessError> {
        let bins = bins()?;
        let root = TempRoot::new()?;
        let ports = free_port_pair()?;
        let mconf = tweak(
            MasterConf::new(root.path().join("master"))
                .id("e2emaster")
                .ports(ports.0, ports.1)
                .set("loop_interval", 1u32),
        );
        mconf.write()?;
        Ok(Self {
            root,
            bins,
            mconf,
            ports,
            master: None,
        })
    }

    /// Makes the root readable by other users (for a non-root `salt` caller).
    pub fn open_root(&self) -> Result<(), HarnessError> {
        for p in [self.root.path(), self.mconf.dir(), &self.mconf.conf_dir()] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| HarnessError::io(p.display().to_string(), e))?;
        }
        let f = self.mconf.conf_dir().join("master");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644))
            .map_err(|e| HarnessError::io(f.display().to_string(), e))
    }

    /// Our binaries.
    pub fn bins(&self) -> &Bins {
        &self.bins
    }
    /// The temp root.
    pub fn root(&self) -> &Path {
        self.root.path()
    }
    /// The master's config builder.
    pub fn master_conf(&self) -> &MasterConf {
        &self.mconf
    }
    /// Replaces the master config (written now; takes effect on the next start).
    pub fn rewrite_master_conf(
        &mut self,
        tweak: impl FnOnce(MasterConf) -> MasterConf,
    ) -> Result<(), HarnessError> {
        self.mconf = tweak(self.mconf.clone());
        self.mconf.write()?;
        Ok(())
    }
    /// `(publish_port, ret_port)`.
    pub fn ports(&self) -> (u16, u16) {
        self.ports
    }
    /// The master's `pki_dir`.
    pub fn pki(&self) -> PathBuf {
        self.mconf.pki_dir()
    }
    /// The master's `cachedir`.
    pub fn cachedir(&self) -> PathBuf {
        self.mconf.dir().join("cache")
    }
    /// `pki_dir/<dir>/<id>`.
    pub fn key_path(&self, dir: KeyDir, id: &str) -> PathBuf {
        self.pki().join(dir.name()).join(id)
    }

    /// Starts the master (or restarts it) and waits until it serves.
    pub fn start_master(&mut self) -> Result<&mut Proc, HarnessError> {
        if let Some(m) = self.master.as_mut() {
            m.restart()?;
        } else {
            let spec = ProcSpec::new("master", &self.bins.master, self.mconf.dir())
                .args(["-c".into(), self.mconf.conf_dir().into_os_string()])
                .args(["-l", "debug"]);
            self.master = Some(spec.spawn()?);
        }
        let m = self
            .master
            .as_mut()
            .ok_or_else(|| HarnessError::Build("no master".into()))?;
        wait_for_log(m, MASTER_READY, Duration::from_secs(30))?;
        Ok(m)
    }

    /// Stops the master (SIGTERM, then SIGKILL after a grace).
    pub fn stop_master(&mut self) {
        if let Some(m) = self.master.as_mut() {
            m.stop(Duration::from_secs(10));
        }
    }

    /// The running master.
    pub fn master(&mut self) -> Result<&mut Proc, HarnessError> {
        self.master
            .as_mut()
            .ok_or_else(|| HarnessError::Build("the master was not started".into()))
    }

    /// A minion config for `id` in `root/<id>`, pointed at this master.
    pub fn minion_conf(&self, id: &str) -> MinionConf {
        MinionConf::new(self.root.path().join(id), id)
            .ports(self.ports.0, self.ports.1)
            .set("auth_timeout", 5u32)
    }

    /// Writes `conf` and starts the minion (console log at debug level).
    pub fn spawn_minion(&self, conf: &MinionConf) -> Result<Proc, HarnessError> {
        let dir = conf.write()?;
        let name = conf.dir().file_name().map_or_else(
            || "minion".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        ProcSpec::new(&name, minion_program(&self.bins), conf.dir())
            .args(["-c".into(), dir.into_os_string()])
            .args(["-l", "debug"])
            .spawn()
    }

    /// Starts minion `id` with the default config.
    pub fn minion(&self, id: &str) -> Result<Proc, HarnessError> {
        self.spawn_minion(&self.minion_conf(id))
    }

    /// Waits until the master holds `id`'s key in `dir`.
    pub fn wait_key(&self, dir: KeyDir, id: &str, timeout: Duration) -> Result<(), HarnessError> {
        let p = self.key_path(dir, id);
        wait_until(&format!("{}", p.display()), timeout, || p.is_file()).map(|_| ())
    }

    fn salt_key(&self, args: &[&str]) -> Result<CmdOutput, HarnessError> {
        crate::cli::salt_key(&self.bins.key, &self.mconf.conf_dir(), args, CLI_LIMIT)?.ok()
    }

    fn move_key(&self, id: &str, from: KeyDir, to: KeyDir) -> Result<(), HarnessError> {
        let (a, b) = (self.key_path(from, id), self.key_path(to, id));
        if let Some(parent) = b.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| HarnessError::io(parent.display().to_string(), e))?;
        }
        std::fs::rename(&a, &b).map_err(|e| HarnessError::io(format!("mv {}", a.display()), e))
    }

    /// Writes the AES rotation dropfile as `salt-key` does (`cachedir/.dfn`, 0400, master id).
    fn dropfile(&self) -> Result<(), HarnessError> {
        let dfn = self.cachedir().join(".dfn");
        if dfn.exists() {
            return Ok(());
        }
        std::fs::create_dir_all(self.cachedir())
            .map_err(|e| HarnessError::io(self.cachedir().display().to_string(), e))?;
        std::fs::write(&dfn, "e2emaster")
            .and_then(|()| std::fs::set_permissions(&dfn, std::fs::Permissions::from_mode(0o400)))
            .map_err(|e| HarnessError::io(dfn.display().to_string(), e))
    }

    /// Accepts the pending key of `id` (`salt-key -a ID -y`, or the file move it does).
    pub fn accept(&self, id: &str) -> Result<(), HarnessError> {
        if has_salt_key(&self.bins.key) {
            let out = self.salt_key(&["-a", id, "-y"])?;
            if !out
                .stdout
                .contains(&format!("Key for minion {id} accepted."))
            {
                return Err(HarnessError::Command {
                    cmd: out.cmd,
                    status: "succeeded".into(),
                    stderr: format!("but did not accept {id}: {}", out.stdout),
                });
            }
            return Ok(());
        }
        self.move_key(id, KeyDir::Pending, KeyDir::Accepted)
    }

    /// Rejects the pending key of `id` (`salt-key -r ID -y`, or its file move + dropfile).
    pub fn reject(&self, id: &str) -> Result<(), HarnessError> {
        if has_salt_key(&self.bins.key) {
            self.salt_key(&["-r", id, "-y"])?;
            return Ok(());
        }
        self.move_key(id, KeyDir::Pending, KeyDir::Rejected)?;
        self.dropfile()
    }

    /// Deletes every key of `id` (`salt-key -d ID -y`, or its file removal + dropfile).
    pub fn delete(&self, id: &str) -> Result<(), HarnessError> {
        if has_salt_key(&self.bins.key) {
            self.salt_key(&["-d", id, "-y"])?;
            return Ok(());
        }
        for d in [KeyDir::Accepted, KeyDir::Pending, KeyDir::Rejected] {
            let _ = std::fs::remove_file(self.key_path(d, id));
        }
        self.dropfile()
    }

    /// `salt -c <conf> ARGS...` with [`CLI_LIMIT`].
    pub fn salt(&self, args: &[&str]) -> Result<CmdOutput, HarnessError> {
        crate::cli::salt(
            &self.bins.salt,
            None,
            &self.mconf.conf_dir(),
            args,
            CLI_LIMIT,
        )
    }

    /// `salt-run -c <master conf> <args>` (our `salt-run`, beside `salt`).
    pub fn salt_run(&self, args: &[&str]) -> Result<CmdOutput, HarnessError> {
        crate::cli::salt(
            &self.bins.salt.with_file_name("salt-run"),
            None,
            &self.mconf.conf_dir(),
            args,
            CLI_LIMIT,
        )
    }

    /// `salt` run as user `nobody` (uid/gid 65534) through `setpriv`.
    pub fn salt_as_nobody(&self, args: &[&str]) -> Result<CmdOutput, HarnessError> {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&self.bins.salt)
            .arg("-c")
            .arg(self.mconf.conf_dir())
            .args(args);
        run_with_timeout(c, CLI_LIMIT)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Daemons first, then the root (field order would drop the root first).
        self.master.take();
    }
}
