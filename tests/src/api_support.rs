//! A master, our minion and a salt-api on one side (Salt's master and Python salt-api, or
//! ours), for tests/tests/api_*.rs: the eauth `file` user `fred:secret` may run `test.*`,
//! `sys.list_functions` (for `local_subset`), `@runner` and `@wheel`; `tina:secret2` only `test.*` on the minion `apiminion`; the API
//! listens on loopback without TLS. As root, a real PAM user ([`PamUser`]) may run `test.*`
//! and, through its group, `@runner`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::interop_support::{Daemon, Side};
use crate::{
    HarnessError, MasterConf, MinionConf, Proc, ProcSpec, TempRoot, Yaml, free_port, free_port_pair,
};

/// A system user (password `Pam-secret1`) and its group, removed when dropped.
#[derive(Debug)]
pub struct PamUser {
    /// The user's name.
    pub name: String,
    /// Its group.
    pub group: String,
}

impl PamUser {
    /// Makes the user with `groupadd`, `useradd`, `chpasswd` (root only).
    ///
    /// # Errors
    /// A command failed.
    pub fn create(tag: &str) -> Result<Self, HarnessError> {
        use std::io::Write as _;
        let id = std::process::id();
        let (name, group) = (format!("sapi{tag}{id}"), format!("sapig{tag}{id}"));
        let run = |args: &[&str]| -> Result<(), HarnessError> {
            let st = std::process::Command::new(args[0])
                .args(&args[1..])
                .status()
                .map_err(|e| HarnessError::io(args[0], e))?;
            if st.success() {
                Ok(())
            } else {
                Err(HarnessError::io(
                    args[0],
                    std::io::Error::other(format!("{args:?}: {st}")),
                ))
            }
        };
        run(&["groupadd", &group])?;
        let user = Self { name, group };
        run(&["useradd", "-M", "-G", &user.group, &user.name])?;
        let mut child = std::process::Command::new("chpasswd")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| HarnessError::io("chpasswd", e))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(format!("{}:Pam-secret1\n", user.name).as_bytes())
                .map_err(|e| HarnessError::io("chpasswd", e))?;
        }
        child.wait().map_err(|e| HarnessError::io("chpasswd", e))?;
        Ok(user)
    }
}

impl Drop for PamUser {
    fn drop(&mut self) {
        let _ = std::process::Command::new("userdel")
            .arg(&self.name)
            .status();
        let _ = std::process::Command::new("groupdel")
            .arg(&self.group)
            .status();
    }
}

/// The running side; stopped on drop (each `Proc` is killed and reaped).
#[derive(Debug)]
pub struct ApiLab {
    /// The PAM user (root only).
    pub pam: Option<PamUser>,
    /// The API's base URL (`http://127.0.0.1:<port>`).
    pub base: String,
    /// The minion's id.
    pub mid: &'static str,
    /// salt-api.
    pub api: Proc,
    /// The minion.
    pub minion: Daemon,
    /// The Python minions attached besides ours ([`Self::start_full`]): id and daemon.
    pub py_minions: Vec<(String, Daemon)>,
    /// The master.
    pub master: Daemon,
    /// The scratch directory (kept until the lab is dropped).
    pub root: TempRoot,
}

impl ApiLab {
    /// Starts `side`'s master and salt-api, and `ours`'s minion; waits until the API listens.
    ///
    /// # Errors
    /// A daemon did not start.
    pub fn start(side: &Side, ours: &Side, clients: &str) -> Result<Self, HarnessError> {
        Self::start_with(side, ours, clients, None)
    }

    /// [`Self::start`], serving HTTPS with `tls`'s `(ssl_crt, ssl_key)` when given (the base
    /// URL is then `https://127.0.0.1:<port>`).
    ///
    /// # Errors
    /// A daemon did not start.
    pub fn start_with(
        side: &Side,
        ours: &Side,
        clients: &str,
        tls: Option<(&std::path::Path, &std::path::Path)>,
    ) -> Result<Self, HarnessError> {
        Self::start_full(side, ours, clients, tls, &[])
    }

    /// [`Self::start_with`], with one Python minion of each of `py` (release, venv) attached
    /// too, all together: id `apipy<major>` (`apipy3007` for 3007.17).
    ///
    /// # Errors
    /// A daemon did not start.
    pub fn start_full(
        side: &Side,
        ours: &Side,
        clients: &str,
        tls: Option<(&std::path::Path, &std::path::Path)>,
        py: &[(String, crate::SaltVenv)],
    ) -> Result<Self, HarnessError> {
        let root = TempRoot::new()?;
        let ports = free_port_pair()?;
        let api_port = free_port()?;
        let users = root.path().join("eauth_users");
        std::fs::write(&users, "fred:secret\ntina:secret2\n")
            .map_err(|e| HarnessError::io("eauth_users", e))?;
        let pam = crate::require(crate::both(
            crate::root(),
            crate::both(crate::command("useradd"), crate::command("chpasswd")),
        ))
        .map(|_| {
            PamUser::create(if matches!(side, Side::Salt(_)) {
                "s"
            } else {
                "o"
            })
        })
        .transpose()?;
        let file = format!(
            "file: {{'^filename': '{}', '^filetype': text, fred: ['test.*', 'sys.list_functions', '@runner', '@wheel'], tina: [{{apiminion: ['test.*']}}]}}",
            users.display()
        );
        let eauth = match &pam {
            Some(p) => format!(
                "{{{file}, pam: {{{}: ['test.*'], '{}%': ['@runner']}}}}",
                p.name, p.group
            ),
            None => format!("{{{file}}}"),
        };
        let mdir: PathBuf = root.path().join("m");
        let path = |name: &str| Yaml::Raw(mdir.join(name).display().to_string());
        let ssl = match tls {
            Some((crt, key)) => {
                format!("ssl_crt: '{}', ssl_key: '{}'", crt.display(), key.display())
            }
            None => "disable_ssl: True".to_owned(),
        };
        let mconf = MasterConf::new(&mdir)
            .id("apimaster")
            .ports(ports.0, ports.1)
            .set("worker_threads", 2u32)
            .set("auto_accept", true)
            .set("external_auth", Yaml::Raw(eauth))
            .set(
                "rest_cherrypy",
                Yaml::Raw(format!("{{port: {api_port}, host: 127.0.0.1, {ssl}}}")),
            )
            .set("netapi_enable_clients", Yaml::Raw(clients.to_owned()))
            .set("api_logfile", path("api.log"))
            .set("api_pidfile", path("api.pid"));
        let mut master = Daemon::start_master(side, &mconf)?;
        master.wait_master_ready("127.0.0.1", ports.0, ports.1)?;
        let mid = "apiminion";
        let minion_conf = MinionConf::new(root.path().join(mid), mid).ports(ports.0, ports.1);
        let minion = Daemon::start_minion(ours, &minion_conf)?;
        // Each minion has its own directory under `root` (made before any starts).
        let mut py_minions = Vec::new();
        for (version, venv) in py {
            let id = format!("apipy{}", version.split('.').next().unwrap_or(version));
            let conf = MinionConf::new(root.path().join(&id), &id).ports(ports.0, ports.1);
            let d = Daemon::start_minion(&Side::Salt(venv.clone()), &conf)?;
            py_minions.push((id, d));
        }
        minion.wait_minion_ready()?;
        for (_, d) in &py_minions {
            d.wait_minion_ready()?;
        }
        let api_bin = match side {
            Side::Salt(v) => v.bin("salt-api"),
            Side::Ours(b) => b.master.with_file_name("salt-api"),
        };
        let api = ProcSpec::new("salt-api", api_bin, &mdir)
            .args([
                "-c".as_ref(),
                master.conf_dir.as_os_str(),
                "-l".as_ref(),
                "info".as_ref(),
            ])
            .spawn()?;
        let t0 = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", api_port)).is_err() {
            if t0.elapsed() > Duration::from_secs(60) {
                return Err(HarnessError::Timeout {
                    what: format!("salt-api on {api_port}: {}", api.tail(40)),
                    after: t0.elapsed(),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(Self {
            pam,
            base: format!(
                "{}://127.0.0.1:{api_port}",
                if tls.is_some() { "https" } else { "http" }
            ),
            mid,
            api,
            minion,
            py_minions,
            master,
            root,
        })
    }

    /// Stops the API, the minion and the master.
    pub fn stop(mut self) {
        self.api.stop(Duration::from_secs(10));
        self.minion.proc.stop(Duration::from_secs(10));
        for (_, d) in &mut self.py_minions {
            d.proc.stop(Duration::from_secs(10));
        }
        self.master.proc.stop(Duration::from_secs(15));
    }
}
