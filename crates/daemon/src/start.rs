//! The start-up block both daemons share: flags, config check and load, log levels, the
//! pid-file lock, `-d`, logging, config warnings. Each `main` then only builds its runtime
//! and runs its core.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use salt_config::{
    ConfigErrors, LoadOptions, Loaded, LogFile, LogLevel, MasterConfig, MinionConfig,
};
use tracing_subscriber::filter::LevelFilter;

use crate::exit;
use crate::logging::{LEVELS, level_filter};
use crate::process::{DaemonArgs, PidFile, ProcessError};

/// The flags every daemon takes (flatten into its clap struct).
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// Configuration directory (reads DIR/master or DIR/minion, and the .d/*.conf beside
    /// it) [default: /etc/salt]. Given explicitly, that config file must exist.
    #[arg(short = 'c', long = "config-dir")]
    pub config_dir: Option<PathBuf>,
    /// Console log level: all, garbage, trace, debug, profile, info, warning, error,
    /// critical, quiet (default: the config's log_level).
    #[arg(short = 'l', long = "log-level")]
    pub log_level: Option<String>,
    /// Log file (default: the config's log_file).
    #[arg(long = "log-file")]
    pub log_file: Option<PathBuf>,
    /// Log file level (default: the config's log_level_logfile, else log_level).
    #[arg(long = "log-file-level")]
    pub log_file_level: Option<String>,
    /// -d, -u, --pid-file, --versions-report.
    #[command(flatten)]
    pub process: DaemonArgs,
}

/// What the start-up needs to know of a daemon's configuration.
pub trait DaemonConfig: Sized {
    /// `master` or `minion`: the config file name and the program's role.
    const ROLE: &'static str;
    /// How Salt names the service in "An instance is already running" (`the Salt Master`).
    const SERVICE: &'static str;
    /// Load from `opts`.
    ///
    /// # Errors
    /// Every problem found.
    fn load(opts: &LoadOptions) -> Result<Loaded<Self>, ConfigErrors>;
    /// `log_level`.
    fn log_level(&self) -> LogLevel;
    /// `log_level_logfile`.
    fn log_level_logfile(&self) -> Option<LogLevel>;
    /// `log_file`.
    fn log_file(&self) -> &LogFile;
    /// `pidfile`.
    fn pidfile(&self) -> &Path;
    /// `user`.
    fn user(&self) -> &str;
}

macro_rules! daemon_config {
    ($t:ty, $role:literal, $service:literal) => {
        impl DaemonConfig for $t {
            const ROLE: &'static str = $role;
            const SERVICE: &'static str = $service;
            fn load(opts: &LoadOptions) -> Result<Loaded<Self>, ConfigErrors> {
                <$t>::load(opts)
            }
            fn log_level(&self) -> LogLevel {
                self.log_level
            }
            fn log_level_logfile(&self) -> Option<LogLevel> {
                self.log_level_logfile
            }
            fn log_file(&self) -> &LogFile {
                &self.log_file
            }
            fn pidfile(&self) -> &Path {
                &self.pidfile
            }
            fn user(&self) -> &str {
                &self.user
            }
        }
    };
}

daemon_config!(MasterConfig, "master", "the Salt Master");
daemon_config!(MinionConfig, "minion", "the Salt Minion");

/// A daemon after the shared start-up: configured, locked, (forked,) logging.
#[derive(Debug)]
pub struct Started<C> {
    /// The loaded configuration.
    pub cfg: C,
    /// The pid file, locked; write the pid once signals are handled.
    pub pidfile: Option<PidFile>,
    /// The log file in use, if any (hand it to the `-u` user).
    pub log_path: Option<PathBuf>,
    /// The user to run as (`-u`, else the config's `user`).
    pub user: String,
    /// The configuration directory read (`-c`, else Salt's default).
    pub config_dir: PathBuf,
}

impl<C> Started<C> {
    /// What Salt's `verify_env` hands over to the `-u` user: `dirs` and the log file.
    pub fn owned(&self, dirs: &[&Path]) -> Vec<PathBuf> {
        let dirs = dirs.iter().map(|d| d.to_path_buf());
        dirs.chain(self.log_path.clone()).collect()
    }

    /// Drop root for the `-u` user now ([`crate::process::drop_privileges_or_exit`]),
    /// handing it `dirs` and the log file.
    pub fn drop_privileges(&self, program: &str, dirs: &[&Path]) {
        crate::process::drop_privileges_or_exit(program, &self.user, &self.owned(dirs));
    }
}

/// Run the shared start-up of `program` (`salt-master`, `salt-minion`). `Err` is the exit
/// code to leave with (the reason was printed): `--versions-report` done ([`exit::OK`]),
/// a bad flag or config ([`exit::USAGE`]), another instance or a failed fork
/// ([`exit::GENERIC`]).
///
/// # Errors
/// See above.
/// `libzmq` is `salt_transport::zmq_version()`, for `--versions-report`.
pub fn start<C: DaemonConfig>(
    program: &str,
    args: &CommonArgs,
    libzmq: (i32, i32, i32),
) -> Result<Started<C>, ExitCode> {
    if args.process.versions_report {
        print!("{}", crate::process::versions_report(program, libzmq));
        return Err(ExitCode::from(exit::OK));
    }
    let usage = |msg: String| {
        eprintln!("{program}: {msg}");
        ExitCode::from(exit::USAGE)
    };
    let config_dir = args
        .config_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(salt_config::DEFAULT_CONFIG_DIR));
    let config_note =
        crate::process::check_config_file(&config_dir, C::ROLE, args.config_dir.is_some())
            .map_err(|e| usage(e.to_string()))?;
    let loaded =
        C::load(&LoadOptions::from_system(Some(config_dir.clone()))).map_err(|errors| {
            eprintln!("Invalid {} configuration:\n{errors}", C::ROLE);
            ExitCode::from(exit::USAGE)
        })?;
    let cfg = loaded.config;
    let level = |flag: &str, name: &Option<String>, default: LogLevel| match name {
        Some(n) => level_filter(n)
            .ok_or_else(|| usage(format!("{flag}: unknown log level {n:?} (one of {LEVELS})"))),
        None => Ok(level_filter(default.as_str()).unwrap_or(LevelFilter::WARN)),
    };
    let console = level("-l", &args.log_level, cfg.log_level())?;
    let file_level = match (&args.log_file_level, cfg.log_level_logfile()) {
        (None, None) => console,
        (name, l) => level("--log-file-level", name, l.unwrap_or(cfg.log_level()))?,
    };
    // The pid file is the single-instance lock: taken before -d forks, so a second start is
    // refused on the terminal (Salt: "An instance is already running", exit code 1) and
    // never touches the running daemon's pid file.
    let pid_path = args
        .process
        .pid_file
        .clone()
        .unwrap_or_else(|| cfg.pidfile().to_owned());
    let pidfile = match PidFile::lock(&pid_path) {
        Ok(p) => Some(p),
        Err(e @ ProcessError::AlreadyRunning { .. }) => {
            eprintln!("{program}: {e} {}", C::SERVICE);
            return Err(ExitCode::from(exit::GENERIC));
        }
        Err(e) => {
            eprintln!("{program}: warning: {e}");
            None
        }
    };
    if args.process.daemon {
        // Before any thread exists: only the forking thread survives.
        if let Err(e) = crate::process::daemonize() {
            eprintln!("{program}: {e}");
            return Err(ExitCode::from(exit::GENERIC));
        }
    }
    let log_path = match (&args.log_file, cfg.log_file()) {
        (Some(p), _) => Some(p.clone()),
        (None, LogFile::Path(p)) => Some(p.clone()),
        _ => None,
    };
    if let Err(e) = crate::logging::init(console, log_path.as_deref().map(|p| (p, file_level))) {
        return Err(usage(e));
    }
    for w in config_note.iter().chain(&loaded.warnings) {
        tracing::warn!("{w}");
    }
    let user = args
        .process
        .user
        .clone()
        .unwrap_or_else(|| cfg.user().to_owned());
    Ok(Started {
        cfg,
        pidfile,
        log_path,
        user,
        config_dir,
    })
}

/// What a daemon's core gets to stop on: SIGTERM or SIGINT (then `STOPPING=1` is sent).
pub type Shutdown = std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;

/// Inside the daemon's runtime: install the signal handlers, write the pid (only now:
/// whoever reads it may signal at once), keep the systemd watchdog fed, and run `core`
/// with the [`Shutdown`] future until it returns.
pub async fn serve<T, Fut>(
    pidfile: &mut Option<PidFile>,
    notifier: crate::Notifier,
    core: impl FnOnce(Shutdown) -> Fut,
) -> T
where
    Fut: std::future::Future<Output = T>,
{
    let signals = crate::shutdown_signal();
    if let Some(Err(e)) = pidfile.as_mut().map(PidFile::write_pid) {
        tracing::warn!("{e}");
    }
    let watchdog = tokio::spawn(notifier.watchdog());
    let r = core(Box::pin(async move {
        signals.await;
        notifier.stopping();
    }))
    .await;
    watchdog.abort();
    r
}
