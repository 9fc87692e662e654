//! Writers for master and minion config files, ours and real Salt's.
//!
//! Both daemons read Salt's keys (docs/configuration.md), so one builder serves both; the
//! [`Flavor::Salt`] flavour adds what real Salt needs to run unprivileged on loopback (the recipe
//! at the end of shared/docs/salt-wire-protocol.md: `user`, file/pillar roots, no
//! multiprocessing, no mine, no FQDN grains). Every path goes under the daemon's own directory,
//! `<root>/<name>/`: `conf/master` (or `conf/minion`), `pki/`, `cache/`, `sock/`, and the log
//! file `<name>.log`.
//!
//! Keys keep their insertion order; setting a key again replaces its value in place; any Salt
//! key can be set with `set`.

use std::path::{Path, PathBuf};

use crate::error::HarnessError;

/// A YAML value as Salt reads it (`True`/`False` booleans).
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    /// `True` / `False`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number with a fraction.
    Float(f64),
    /// A string (written single-quoted).
    Str(String),
    /// A flow list of strings.
    List(Vec<String>),
    /// Written as is (for maps and anything else).
    Raw(String),
}

impl Yaml {
    fn render(&self) -> String {
        match self {
            Self::Bool(true) => "True".into(),
            Self::Bool(false) => "False".into(),
            Self::Int(i) => i.to_string(),
            Self::Float(f) => format!("{f:?}"),
            Self::Str(s) => quote(s),
            Self::List(v) => {
                let items: Vec<String> = v.iter().map(|s| quote(s)).collect();
                format!("[{}]", items.join(", "))
            }
            Self::Raw(r) => r.clone(),
        }
    }
}

impl From<bool> for Yaml {
    fn from(b: bool) -> Self {
        Self::Bool(b)
    }
}
impl From<i64> for Yaml {
    fn from(i: i64) -> Self {
        Self::Int(i)
    }
}
impl From<u16> for Yaml {
    fn from(i: u16) -> Self {
        Self::Int(i64::from(i))
    }
}
impl From<u32> for Yaml {
    fn from(i: u32) -> Self {
        Self::Int(i64::from(i))
    }
}
impl From<f64> for Yaml {
    fn from(f: f64) -> Self {
        Self::Float(f)
    }
}
impl From<&str> for Yaml {
    fn from(s: &str) -> Self {
        Self::Str(s.into())
    }
}
impl From<String> for Yaml {
    fn from(s: String) -> Self {
        Self::Str(s)
    }
}
impl From<&Path> for Yaml {
    fn from(p: &Path) -> Self {
        Self::Str(p.display().to_string())
    }
}
impl From<Vec<String>> for Yaml {
    fn from(v: Vec<String>) -> Self {
        Self::List(v)
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Which implementation reads the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flavor {
    /// Our daemons.
    #[default]
    Ours,
    /// Real Salt (adds the keys its recipe needs).
    Salt,
}

/// Ordered key/value pairs rendered as a Salt YAML file.
#[derive(Debug, Clone, Default)]
struct Doc {
    items: Vec<(String, Yaml)>,
}

impl Doc {
    fn set(&mut self, key: &str, v: Yaml) {
        match self.items.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = v,
            None => self.items.push((key.to_string(), v)),
        }
    }
    fn get(&self, key: &str) -> Option<&Yaml> {
        self.items.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    fn render(&self) -> String {
        let mut s = String::from("# written by salt-integration-tests\n");
        for (k, v) in &self.items {
            s.push_str(k);
            s.push_str(": ");
            s.push_str(&v.render());
            s.push('\n');
        }
        s
    }
}

/// The name of the user running the tests (Salt's `user` must be it: no privilege drop).
pub fn current_user() -> String {
    nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "root".into())
}

fn write_file(path: &Path, text: &str) -> Result<(), HarnessError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| HarnessError::io(parent.display().to_string(), e))?;
    }
    std::fs::write(path, text).map_err(|e| HarnessError::io(path.display().to_string(), e))
}

fn base_paths(doc: &mut Doc, dir: &Path, kind: &str) {
    doc.set("user", current_user().into());
    doc.set("root_dir", dir.into());
    doc.set("pki_dir", dir.join("pki").as_path().into());
    doc.set("cachedir", dir.join("cache").as_path().into());
    doc.set("sock_dir", dir.join("sock").as_path().into());
    doc.set("pidfile", dir.join(format!("{kind}.pid")).as_path().into());
    doc.set("log_file", dir.join(format!("{kind}.log")).as_path().into());
    doc.set("log_level", "info".into());
    doc.set("log_level_logfile", "debug".into());
}

/// A master config: `MasterConf::new(dir)` then options, then [`MasterConf::write`].
#[derive(Debug, Clone)]
pub struct MasterConf {
    dir: PathBuf,
    flavor: Flavor,
    doc: Doc,
}

impl MasterConf {
    /// A master living in `dir` (created on write), listening on 127.0.0.1:4505/4506, keys not
    /// auto-accepted.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let mut doc = Doc::default();
        doc.set("id", "master".into());
        base_paths(&mut doc, &dir, "master");
        doc.set("key_logfile", dir.join("key.log").as_path().into());
        doc.set("interface", "127.0.0.1".into());
        doc.set("publish_port", 4505u16.into());
        doc.set("ret_port", 4506u16.into());
        doc.set("worker_threads", 3u32.into());
        doc.set("auto_accept", false.into());
        // After `-t`, `salt` asks missing minions `saltutil.find_job` and waits this long for
        // answers (Salt's default 10 s): short, so tests that probe unreachable minions (the
        // failover lab, chaos) pay 1 s per probe, not 10.
        doc.set("gather_job_timeout", 1u32.into());
        Self {
            dir,
            flavor: Flavor::Ours,
            doc,
        }
    }
    /// Which implementation will read it.
    pub fn flavor(mut self, f: Flavor) -> Self {
        self.flavor = f;
        self
    }
    /// The master's `id`.
    pub fn id(self, id: &str) -> Self {
        self.set("id", id)
    }
    /// `interface` (bind address).
    pub fn interface(self, addr: &str) -> Self {
        self.set("interface", addr)
    }
    /// `publish_port` and `ret_port`.
    pub fn ports(self, publish: u16, ret: u16) -> Self {
        self.set("publish_port", publish).set("ret_port", ret)
    }
    /// `auto_accept`.
    pub fn auto_accept(self, on: bool) -> Self {
        self.set("auto_accept", on)
    }
    /// `master_sign_pubkey` (the pair must be `pki/master_sign.pem`/`.pub`).
    pub fn master_sign_pubkey(self, on: bool) -> Self {
        self.set("master_sign_pubkey", on)
    }
    /// `max_minions`.
    pub fn max_minions(self, n: u32) -> Self {
        self.set("max_minions", n)
    }
    /// Any other key.
    pub fn set(mut self, key: &str, v: impl Into<Yaml>) -> Self {
        self.doc.set(key, v.into());
        self
    }
    /// The master's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// `dir/conf` (what `-c` takes).
    pub fn conf_dir(&self) -> PathBuf {
        self.dir.join("conf")
    }
    /// `dir/pki`.
    pub fn pki_dir(&self) -> PathBuf {
        self.dir.join("pki")
    }
    /// The log file (`dir/master.log`).
    pub fn log_file(&self) -> PathBuf {
        self.dir.join("master.log")
    }
    /// The rendered file text.
    pub fn render(&self) -> String {
        let mut doc = self.doc.clone();
        if self.flavor == Flavor::Salt {
            let srv = self.dir.join("srv");
            let roots = doc.get("file_roots").cloned();
            let pillar_roots = doc.get("pillar_roots").cloned();
            doc.set(
                "file_roots",
                Yaml::Raw(format!(
                    "{{base: [{}]}}",
                    quote(&srv.join("salt").display().to_string())
                )),
            );
            doc.set(
                "pillar_roots",
                Yaml::Raw(format!(
                    "{{base: [{}]}}",
                    quote(&srv.join("pillar").display().to_string())
                )),
            );
            doc.set("open_mode", false.into());
            // A test that serves files or pillar sets its own roots.
            if let Some(r) = roots {
                doc.set("file_roots", r);
            }
            if let Some(r) = pillar_roots {
                doc.set("pillar_roots", r);
            }
        }
        doc.render()
    }
    /// Writes `dir/conf/master` and creates `pki/`; returns the conf dir.
    pub fn write(&self) -> Result<PathBuf, HarnessError> {
        let conf = self.conf_dir();
        write_file(&conf.join("master"), &self.render())?;
        std::fs::create_dir_all(self.pki_dir())
            .map_err(|e| HarnessError::io(self.pki_dir().display().to_string(), e))?;
        Ok(conf)
    }
    /// The `ret_port` set on it.
    pub fn ret_port(&self) -> Option<i64> {
        match self.doc.get("ret_port") {
            Some(Yaml::Int(i)) => Some(*i),
            _ => None,
        }
    }
}

/// A minion config: `MinionConf::new(dir, id)` then options, then [`MinionConf::write`].
#[derive(Debug, Clone)]
pub struct MinionConf {
    dir: PathBuf,
    flavor: Flavor,
    doc: Doc,
}

impl MinionConf {
    /// A minion `id` living in `dir`, master 127.0.0.1:4506 (publish 4505), quick retries.
    pub fn new(dir: impl Into<PathBuf>, id: &str) -> Self {
        let dir = dir.into();
        let mut doc = Doc::default();
        doc.set("id", id.into());
        base_paths(&mut doc, &dir, "minion");
        doc.set("master", "127.0.0.1".into());
        doc.set("master_port", 4506u16.into());
        doc.set("publish_port", 4505u16.into());
        doc.set("acceptance_wait_time", 1u32.into());
        doc.set("acceptance_wait_time_max", 0u32.into());
        doc.set("random_reauth_delay", 0u32.into());
        doc.set("recon_default", 100u32.into());
        doc.set("recon_max", 1000u32.into());
        doc.set("recon_randomize", false.into());
        doc.set("ipv6", false.into());
        Self {
            dir,
            flavor: Flavor::Ours,
            doc,
        }
    }
    /// Which implementation will read it.
    pub fn flavor(mut self, f: Flavor) -> Self {
        self.flavor = f;
        self
    }
    /// One master.
    pub fn master(self, addr: &str) -> Self {
        self.set("master", addr)
    }
    /// A master list.
    pub fn masters<S: AsRef<str>>(self, addrs: &[S]) -> Self {
        let v: Vec<String> = addrs.iter().map(|s| s.as_ref().to_string()).collect();
        self.set("master", v)
    }
    /// `master_port` and `publish_port`.
    pub fn ports(self, publish: u16, ret: u16) -> Self {
        self.set("publish_port", publish).set("master_port", ret)
    }
    /// `master_type: failover` with `master_alive_interval` seconds.
    pub fn failover(self, alive_interval: u32) -> Self {
        self.set("master_type", "failover")
            .set("master_alive_interval", alive_interval)
            .set("retry_dns", 0u32)
    }
    /// `master_failback: True` with `master_failback_interval` seconds.
    pub fn failback(self, interval: u32) -> Self {
        self.set("master_failback", true)
            .set("master_failback_interval", interval)
    }
    /// `verify_master_pubkey_sign` (the minion needs `pki/master_sign.pub`).
    pub fn verify_master_pubkey_sign(self, on: bool) -> Self {
        self.set("verify_master_pubkey_sign", on)
    }
    /// Any other key.
    pub fn set(mut self, key: &str, v: impl Into<Yaml>) -> Self {
        self.doc.set(key, v.into());
        self
    }
    /// The minion's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// `dir/conf` (what `-c` takes).
    pub fn conf_dir(&self) -> PathBuf {
        self.dir.join("conf")
    }
    /// `dir/pki`.
    pub fn pki_dir(&self) -> PathBuf {
        self.dir.join("pki")
    }
    /// The log file (`dir/minion.log`).
    pub fn log_file(&self) -> PathBuf {
        self.dir.join("minion.log")
    }
    /// The rendered file text.
    pub fn render(&self) -> String {
        let mut doc = self.doc.clone();
        if self.flavor == Flavor::Salt {
            doc.set("multiprocessing", false.into());
            doc.set("mine_enabled", false.into());
            doc.set("grains_cache", true.into());
            doc.set("enable_fqdns_grains", false.into());
            doc.set("enable_gpu_grains", false.into());
        }
        doc.render()
    }
    /// Writes `dir/conf/minion` and creates `pki/`; returns the conf dir.
    pub fn write(&self) -> Result<PathBuf, HarnessError> {
        let conf = self.conf_dir();
        write_file(&conf.join("minion"), &self.render())?;
        std::fs::create_dir_all(self.pki_dir())
            .map_err(|e| HarnessError::io(self.pki_dir().display().to_string(), e))?;
        Ok(conf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn master_yaml_has_options_once_and_in_order() {
        let m = MasterConf::new("/tmp/x/m0")
            .interface("127.0.0.2")
            .auto_accept(true)
            .auto_accept(false)
            .master_sign_pubkey(true)
            .max_minions(2);
        let y = m.render();
        assert!(y.contains("interface: '127.0.0.2'\n"));
        assert_eq!(y.matches("auto_accept").count(), 1);
        assert!(y.contains("auto_accept: False\n"));
        assert!(y.contains("master_sign_pubkey: True\n"));
        assert!(y.contains("max_minions: 2\n"));
        assert!(y.contains("pki_dir: '/tmp/x/m0/pki'\n"));
        assert!(!y.contains("file_roots"));
        assert!(
            m.flavor(Flavor::Salt)
                .render()
                .contains("file_roots: {base: ['/tmp/x/m0/srv/salt']}")
        );
    }

    #[test]
    fn minion_yaml_failover_list() {
        let y = MinionConf::new("/tmp/x/n0", "it's")
            .masters(&["127.0.0.2", "127.0.0.3"])
            .failover(3)
            .failback(5)
            .verify_master_pubkey_sign(true)
            .render();
        assert!(y.contains("id: 'it''s'\n"));
        assert!(y.contains("master: ['127.0.0.2', '127.0.0.3']\n"));
        assert!(y.contains("master_type: 'failover'\n"));
        assert!(y.contains("master_alive_interval: 3\n"));
        assert!(y.contains("master_failback: True\n"));
        assert!(y.contains("master_failback_interval: 5\n"));
        assert!(y.contains("verify_master_pubkey_sign: True\n"));
    }
}
