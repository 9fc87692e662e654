//! Process conventions shared by the daemons: `-d` (daemonize), `--pid-file`, and
//! `--versions-report`, as Salt's daemons offer them.

use std::path::{Path, PathBuf};

pub use crate::pidfile::PidFile;

/// The process flags both daemons take, as Salt's (`#[command(flatten)]` into a binary's
/// arguments).
#[derive(Debug, Clone, clap::Args)]
pub struct DaemonArgs {
    /// Run in the background (detached from the terminal).
    #[arg(short = 'd', long = "daemon")]
    pub daemon: bool,
    /// Run as this user (default: the config's `user`): the master after binding its
    /// ports, the minion before it starts (its commands then run as that user).
    #[arg(short = 'u', long = "user")]
    pub user: Option<String>,
    /// Pid file (default: the config's pidfile).
    #[arg(long = "pid-file")]
    pub pid_file: Option<PathBuf>,
    /// Print the versions of salt-rs, its libraries and the system, then exit.
    #[arg(long = "versions-report")]
    pub versions_report: bool,
}

/// Errors of the process helpers, naming the file involved.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The pid file could not be written.
    #[error("cannot write the pid file {path}: {source}")]
    PidFile {
        /// The pid file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Another process holds the pid file's lock: Salt's "An instance is already running".
    #[error(
        "An instance is already running{}: {} is locked. Exiting",
        pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
        path.display()
    )]
    AlreadyRunning {
        /// The pid file.
        path: PathBuf,
        /// The pid written in it, if readable.
        pid: Option<u32>,
    },
    /// Detaching from the terminal failed.
    #[error("cannot daemonize: {0}")]
    Daemonize(nix::Error),
}

/// Detach from the terminal as Salt's `-d` does: fork, new session, working directory `/`,
/// standard streams on `/dev/null`. The parent exits 0; the child returns. Call it before any
/// thread is started (logging, the tokio runtime): only the calling thread survives a fork.
/// Paths in the configuration must be absolute (the loader makes them so).
pub fn daemonize() -> Result<(), ProcessError> {
    nix::unistd::daemon(false, false).map_err(ProcessError::Daemonize)
}

pub use salt_config::{VERSION, check_config_file};

/// `--versions-report`, laid out as Salt's (`Salt Version:`, `Dependency Versions:`,
/// `System Versions:` with right-aligned names). `libzmq` is the version the binary links
/// (`salt_transport::zmq_version()`), handed in so this crate needs no transport.
pub fn versions_report(program: &str, libzmq: (i32, i32, i32)) -> String {
    let (a, b, c) = libzmq;
    let uname = nix::sys::utsname::uname().ok();
    let field = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
        uname
            .as_ref()
            .map(|u| f(u).to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let rows: [(&str, &[(&str, String)]); 3] = [
        (
            "Salt Version",
            &[
                ("salt-rs", env!("CARGO_PKG_VERSION").to_owned()),
                ("program", program.to_owned()),
                ("speaks Salt", "3006, 3007, 3008".to_owned()),
            ],
        ),
        (
            "Dependency Versions",
            &[
                ("libzmq", format!("{a}.{b}.{c}")),
                ("OpenSSL", openssl::version::version().to_owned()),
            ],
        ),
        (
            "System Versions",
            &[
                ("system", field(|u| u.sysname())),
                ("release", field(|u| u.release())),
                ("machine", field(|u| u.machine())),
            ],
        ),
    ];
    let mut out = String::new();
    for (title, fields) in rows {
        out.push_str(title);
        out.push_str(":\n");
        for (k, v) in fields {
            out.push_str(&format!("{k:>15}: {v}\n"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn versions_report_has_salts_sections() {
        let r = versions_report("salt-minion", (4, 3, 4));
        for needle in [
            "Salt Version:\n",
            "        salt-rs: ",
            "Dependency Versions:\n",
            "         libzmq: 4.",
            "        OpenSSL: OpenSSL",
            "System Versions:\n",
            "         system: Linux",
        ] {
            assert!(r.contains(needle), "{needle:?} in\n{r}");
        }
    }
}

/// Errors of [`drop_privileges`].
#[derive(Debug, thiserror::Error)]
pub enum PrivilegeError {
    /// No such user.
    #[error("user {0} not found")]
    NoUser(String),
    /// Looking the user up, changing owners or ids failed.
    #[error("cannot run as {user}: {what}: {source}")]
    Failed {
        /// The user.
        user: String,
        /// What failed.
        what: String,
        /// Why.
        source: nix::Error,
    },
}

/// [`drop_privileges`] for a daemon: log the switch, or on failure log, print and exit
/// with [`crate::exit::GENERIC`] (never keep serving as root when another user was asked for).
pub fn drop_privileges_or_exit(program: &str, user: &str, paths: &[std::path::PathBuf]) {
    let paths: Vec<&Path> = paths.iter().map(std::path::PathBuf::as_path).collect();
    match drop_privileges(user, &paths) {
        Ok(true) => tracing::info!("Running as user {user}"),
        Ok(false) => {}
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("{program}: {e}");
            std::process::exit(i32::from(crate::exit::GENERIC));
        }
    }
}

/// Become `user` (Salt's `-u USER` / `user:`) after the sockets are bound: chown `paths`
/// (recursively: pki_dir, cachedir, sock_dir, the log file — as Salt's `verify_env` does)
/// to the user, then set the supplementary groups, gid and uid (for every thread: glibc
/// applies setuid/setgid process-wide). Returns `Ok(false)` without doing anything when the
/// process already runs as `user`, or when it is not root (nothing to drop; the caller logs
/// it).
pub fn drop_privileges(user: &str, paths: &[&Path]) -> Result<bool, PrivilegeError> {
    use nix::unistd::{Gid, Uid, User, initgroups, setgid, setuid};
    let fail = |what: String| {
        let user = user.to_owned();
        move |source| PrivilegeError::Failed { user, what, source }
    };
    let u = User::from_name(user)
        .map_err(fail("look up".into()))?
        .ok_or_else(|| PrivilegeError::NoUser(user.to_owned()))?;
    let me = Uid::current();
    if me == u.uid || !me.is_root() {
        return Ok(false);
    }
    for p in paths {
        chown_tree(p, u.uid, u.gid).map_err(fail(format!("chown {}", p.display())))?;
    }
    let name = std::ffi::CString::new(user).map_err(|_| PrivilegeError::NoUser(user.to_owned()))?;
    initgroups(&name, u.gid).map_err(fail("initgroups".into()))?;
    setgid(u.gid).map_err(fail("setgid".into()))?;
    setuid(u.uid).map_err(fail("setuid".into()))?;
    // Root must not be regained.
    if Uid::effective().is_root() || Gid::effective() != u.gid {
        return Err(PrivilegeError::Failed {
            user: user.to_owned(),
            what: "verify".into(),
            source: nix::Error::EPERM,
        });
    }
    Ok(true)
}

fn chown_tree(p: &Path, uid: nix::unistd::Uid, gid: nix::unistd::Gid) -> nix::Result<()> {
    let Ok(md) = std::fs::symlink_metadata(p) else {
        return Ok(()); // absent: nothing to hand over
    };
    if md.file_type().is_symlink() {
        return Ok(());
    }
    nix::unistd::chown(p, Some(uid), Some(gid))?;
    if md.is_dir()
        && let Ok(rd) = std::fs::read_dir(p)
    {
        for e in rd.flatten() {
            chown_tree(&e.path(), uid, gid)?;
        }
    }
    Ok(())
}
