//! A real PostgreSQL from Debian's packages for the master-group tests (docs/group.md):
//! `initdb` as the `postgres` user in a temp dir, the server on a Unix socket only
//! (`listen_addresses=''`, `fsync=off`), in its own process group, killed by pid with the
//! test. [`Postgres::start`] returns `None` after [`crate::require`] recorded what is missing
//! ([`prerequisites`]: PostgreSQL installed, root, `runuser`): under `CI=true` it fails the
//! test instead.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::Signal;
use salt_testkit::Missing;

use crate::error::HarnessError;
use crate::process::{Proc, ProcSpec};
use crate::wait::wait_until;

/// A running PostgreSQL server.
pub struct Postgres {
    proc: Proc,
    data: PathBuf,
    sock: PathBuf,
    port: u16,
}

/// Options of [`Postgres::start_with`] beyond the default Unix-socket-only server.
#[derive(Clone, Debug, Default)]
pub struct PgOptions {
    /// Also listen on 127.0.0.1 (TCP, the same port as the socket's).
    pub tcp: bool,
    /// `ssl = on` with this server certificate and key (PEM files, copied into the data
    /// directory).
    pub ssl: Option<(PathBuf, PathBuf)>,
    /// A `pg_hba.conf` replacing initdb's.
    pub hba: Option<String>,
}

/// `/usr/lib/postgresql/<newest>/bin`, if installed.
pub fn bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("postgres").exists() && p.join("initdb").exists())
        .collect();
    dirs.sort();
    dirs.pop()
}

/// What starting a server needs: Debian's `postgresql` (its `bin` directory is returned),
/// root (initdb runs as `postgres`) and `runuser`.
pub fn prerequisites() -> Result<PathBuf, Missing> {
    let bin = bin_dir().ok_or_else(|| {
        Missing::new("PostgreSQL is not installed (Debian's postgresql, /usr/lib/postgresql/*/bin)")
    })?;
    salt_testkit::root()?;
    salt_testkit::command("runuser")?;
    Ok(bin)
}

fn chown_postgres(path: &Path) -> Result<(), HarnessError> {
    let st = Command::new("chown")
        .arg("-R")
        .arg("postgres:postgres")
        .arg(path)
        .status()
        .map_err(|e| HarnessError::io("chown", e))?;
    if st.success() {
        Ok(())
    } else {
        Err(HarnessError::io(
            "chown",
            std::io::Error::other("chown failed"),
        ))
    }
}

impl Postgres {
    /// Start a server in `dir` (must be reachable by the `postgres` user). `Ok(None)`: a
    /// prerequisite is missing and the skip was recorded ([`crate::require`]).
    pub fn start(dir: &Path) -> Result<Option<Self>, HarnessError> {
        Self::start_with(dir, &PgOptions::default())
    }

    /// [`Self::start`] with TCP, TLS or a `pg_hba.conf` of the test's.
    pub fn start_with(dir: &Path, opts: &PgOptions) -> Result<Option<Self>, HarnessError> {
        let Some(bin) = crate::require(prerequisites()) else {
            return Ok(None);
        };
        use std::os::unix::fs::PermissionsExt as _;
        let mut p = dir.to_path_buf();
        // Every parent must be traversable by `postgres`.
        while let Some(parent) = p.parent() {
            if let Ok(m) = std::fs::metadata(&p) {
                let mut perm = m.permissions();
                if perm.mode() & 0o001 == 0 {
                    perm.set_mode(perm.mode() | 0o711);
                    let _ = std::fs::set_permissions(&p, perm);
                }
            }
            p = parent.to_path_buf();
        }
        let data = dir.join("pgdata");
        let sock = dir.join("pgsock");
        for d in [&data, &sock] {
            std::fs::create_dir_all(d).map_err(|e| HarnessError::io(d.display().to_string(), e))?;
        }
        chown_postgres(dir)?;
        let out = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(bin.join("initdb"))
            .args(["-A", "trust", "--no-sync", "-U", "postgres", "-D"])
            .arg(&data)
            .output()
            .map_err(|e| HarnessError::io("initdb", e))?;
        if !out.status.success() {
            return Err(HarnessError::io(
                "initdb",
                std::io::Error::other(String::from_utf8_lossy(&out.stderr).into_owned()),
            ));
        }
        let io = |what: &str, e| HarnessError::io(what.to_owned(), e);
        if let Some((cert, key)) = &opts.ssl {
            std::fs::copy(cert, data.join("server.crt")).map_err(|e| io("server.crt", e))?;
            std::fs::copy(key, data.join("server.key")).map_err(|e| io("server.key", e))?;
            std::fs::set_permissions(
                data.join("server.key"),
                std::fs::Permissions::from_mode(0o600),
            )
            .map_err(|e| io("server.key", e))?;
        }
        if let Some(hba) = &opts.hba {
            std::fs::write(data.join("pg_hba.conf"), hba).map_err(|e| io("pg_hba.conf", e))?;
        }
        chown_postgres(&data)?;
        let port = crate::ports::free_port()?;
        let mut extra: Vec<String> = Vec::new();
        if opts.ssl.is_some() {
            for kv in [
                "ssl=on",
                "ssl_cert_file=server.crt",
                "ssl_key_file=server.key",
            ] {
                extra.push("-c".to_owned());
                extra.push(kv.to_owned());
            }
        }
        let listen = if opts.tcp {
            "listen_addresses=127.0.0.1"
        } else {
            "listen_addresses="
        };
        let spec = ProcSpec::new("postgres", "runuser", dir).args(
            [
                "-u".to_owned(),
                "postgres".to_owned(),
                "--".to_owned(),
                bin.join("postgres").display().to_string(),
                "-D".to_owned(),
                data.display().to_string(),
                "-k".to_owned(),
                sock.display().to_string(),
                "-p".to_owned(),
                port.to_string(),
                "-c".to_owned(),
                listen.to_owned(),
                "-c".to_owned(),
                "fsync=off".to_owned(),
                "-c".to_owned(),
                "max_connections=200".to_owned(),
            ]
            .iter()
            .chain(extra.iter()),
        );
        let pg = Self {
            proc: Proc::spawn(spec)?,
            data,
            sock,
            port,
        };
        pg.wait_ready()?;
        Ok(Some(pg))
    }

    fn wait_ready(&self) -> Result<(), HarnessError> {
        let socket = self.sock.join(format!(".s.PGSQL.{}", self.port));
        if let Err(e) = wait_until("the PostgreSQL socket", Duration::from_secs(30), || {
            socket.exists()
        }) {
            eprintln!("postgres output:\n{}", self.proc.output());
            return Err(e);
        }
        // The socket appears a little before the server accepts queries.
        std::thread::sleep(Duration::from_millis(300));
        Ok(())
    }

    /// The socket directory (`postgres.host`).
    pub fn host(&self) -> &Path {
        &self.sock
    }

    /// `postgres.port`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Run `sql` with `psql` as `postgres` on the socket, in database `db`; its output
    /// (unaligned, tuples only).
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, HarnessError> {
        let bin = bin_dir().ok_or_else(|| {
            HarnessError::io("psql", std::io::Error::other("PostgreSQL not installed"))
        })?;
        let out = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(bin.join("psql"))
            .arg("-h")
            .arg(&self.sock)
            .arg("-p")
            .arg(self.port.to_string())
            .args(["-d", db, "-qAt", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .map_err(|e| HarnessError::io("psql", e))?;
        if !out.status.success() {
            return Err(HarnessError::io(
                "psql",
                std::io::Error::other(String::from_utf8_lossy(&out.stderr).into_owned()),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// The master config lines of a group member.
    pub fn group_conf(&self, cluster: &str) -> String {
        format!(
            "cluster_id: {cluster}\nkeys.cache_driver: postgres\npostgres.host: {}\n\
             postgres.port: {}\npostgres.user: postgres\npostgres.db: postgres\n",
            self.sock.display(),
            self.port
        )
    }

    /// SIGKILL the postmaster (pid from its `postmaster.pid`) and its children, by pid: a
    /// crash. (`runuser` may put the server in a session of its own, out of our group.)
    pub fn kill(&mut self) {
        let pid = std::fs::read_to_string(self.data.join("postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<i32>().ok()));
        if let Some(pid) = pid {
            let mut pids = vec![pid];
            pids.extend(children(pid));
            for p in &pids {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*p), Signal::SIGKILL);
            }
            let _ = wait_until("the postmaster to die", Duration::from_secs(10), || {
                !Path::new(&format!("/proc/{pid}")).exists()
                    || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                        .is_ok_and(|s| s.contains(") Z "))
            });
        }
        self.proc.signal(Signal::SIGKILL);
        let _ = self.proc.wait_exit(Duration::from_secs(10));
        // What a crash leaves: the socket, its lock, the postmaster's lock file (every
        // process of this server is gone, so removing them is safe).
        let sock = self.sock.join(format!(".s.PGSQL.{}", self.port));
        let _ = std::fs::remove_file(&sock);
        let _ = std::fs::remove_file(self.sock.join(format!(".s.PGSQL.{}.lock", self.port)));
        let _ = std::fs::remove_file(self.data.join("postmaster.pid"));
    }

    /// Start it again on the same data (crash recovery).
    pub fn restart(&mut self) -> Result<(), HarnessError> {
        self.proc.restart()?;
        self.wait_ready()
    }
}

/// Pids whose parent is `pid` (from /proc).
fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces, so split after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|s| s.parse::<i32>().ok());
        if ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.kill();
    }
}
