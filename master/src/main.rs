//! `salt-master`: parse flags, set up logging, load the config, run until SIGTERM/SIGINT.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use clap::Parser;
use salt_config::{LoadOptions, LogFile, MasterConfig};
use tracing_subscriber::filter::LevelFilter;

/// The Salt master (Rust implementation).
#[derive(Debug, Parser)]
#[command(name = "salt-master", version = salt_daemon::process::VERSION)]
struct Args {
    /// Configuration directory (reads DIR/master and DIR/master.d/*.conf) [default:
    /// /etc/salt]. Given explicitly, DIR/master must exist.
    #[arg(short = 'c', long = "config-dir")]
    config_dir: Option<PathBuf>,
    /// Console log level: all, garbage, trace, debug, profile, info, warning, error,
    /// critical, quiet (default: the config's log_level).
    #[arg(short = 'l', long = "log-level")]
    log_level: Option<String>,
    /// Log file (default: the config's log_file).
    #[arg(long = "log-file")]
    log_file: Option<PathBuf>,
    /// Log file level (default: the config's log_level_logfile, else log_level).
    #[arg(long = "log-file-level")]
    log_file_level: Option<String>,
    /// -d, -u, --pid-file, --versions-report.
    #[command(flatten)]
    process: salt_daemon::process::DaemonArgs,
}

/// `-l` / `--log-file-level`: a Salt level name, or exit 64 naming the accepted ones.
fn level_arg(flag: &str, name: &str) -> LevelFilter {
    salt_daemon::logging::level_filter(name).unwrap_or_else(|| {
        eprintln!(
            "salt-master: {flag}: unknown log level {name:?} (one of {})",
            salt_daemon::logging::LEVELS
        );
        std::process::exit(64);
    })
}

fn config_level(l: salt_config::LogLevel) -> LevelFilter {
    salt_daemon::logging::level_filter(l.as_str()).unwrap_or(LevelFilter::WARN)
}

fn main() {
    let args = Args::parse();
    if args.process.versions_report {
        print!("{}", salt_daemon::process::versions_report("salt-master"));
        return;
    }
    let config_dir = args
        .config_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(salt_config::DEFAULT_CONFIG_DIR));
    let config_note = match salt_daemon::process::check_config_file(
        &config_dir,
        "master",
        args.config_dir.is_some(),
    ) {
        Ok(note) => note,
        Err(e) => {
            eprintln!("salt-master: {e}");
            std::process::exit(78);
        }
    };
    let loaded = match MasterConfig::load(&LoadOptions::from_system(Some(config_dir))) {
        Ok(l) => l,
        Err(errors) => {
            eprintln!("Invalid master configuration:\n{errors}");
            std::process::exit(78);
        }
    };
    let cfg = loaded.config;
    let console = match &args.log_level {
        Some(l) => level_arg("-l", l),
        None => config_level(cfg.log_level),
    };
    let file_level = match &args.log_file_level {
        Some(l) => level_arg("--log-file-level", l),
        None => config_level(cfg.log_level_logfile.unwrap_or(cfg.log_level)),
    };
    // The pid file is the single-instance lock: taken before -d forks, so a second start is
    // refused on the terminal (Salt: "An instance is already running", exit code 1) and
    // never touches the running master's pid file.
    let pidfile = args
        .process
        .pid_file
        .clone()
        .unwrap_or_else(|| cfg.pidfile.clone());
    let mut pidfile = match salt_daemon::process::PidFile::lock(&pidfile) {
        Ok(p) => Some(p),
        Err(e @ salt_daemon::process::ProcessError::AlreadyRunning { .. }) => {
            eprintln!("salt-master: {e} the Salt Master");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("salt-master: warning: {e}");
            None
        }
    };
    if args.process.daemon {
        // Before any thread exists: only the forking thread survives.
        if let Err(e) = salt_daemon::process::daemonize() {
            eprintln!("salt-master: {e}");
            std::process::exit(1);
        }
    }
    let file_path = match (&args.log_file, &cfg.log_file) {
        (Some(p), _) => Some(p.clone()),
        (None, LogFile::Path(p)) => Some(p.clone()),
        _ => None,
    };
    if let Err(e) =
        salt_daemon::logging::init(console, file_path.as_deref().map(|p| (p, file_level)))
    {
        tracing::warn!("{e}");
    }
    for w in config_note.iter().chain(&loaded.warnings) {
        tracing::warn!("{w}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(cfg.worker_threads.max(1) as usize + 8)
        .thread_name("salt-master")
        .build()
        .unwrap_or_else(|e| {
            tracing::error!("cannot start the runtime: {e}");
            eprintln!("salt-master: cannot start the runtime: {e}");
            std::process::exit(1);
        });
    // systemd (Type=notify): READY=1 once keys are loaded and the ports are bound, STATUS=
    // lines, STOPPING=1 on SIGTERM, WATCHDOG=1 from the runtime when WatchdogSec= is set.
    let notifier = salt_daemon::Notifier::from_env();
    let result = runtime.block_on(async {
        let signals = salt_daemon::shutdown_signal();
        // The pid goes in once SIGTERM is handled: whoever reads it may signal at once.
        if let Some(p) = pidfile.as_mut()
            && let Err(e) = p.write_pid()
        {
            tracing::warn!("{e}");
        }
        let watchdog = tokio::spawn(notifier.watchdog());
        let shutdown = async {
            signals.await;
            notifier.stopping();
        };
        // What Salt's verify_env hands over to the user before dropping root.
        let user = args
            .process
            .user
            .clone()
            .unwrap_or_else(|| cfg.user.clone());
        let owned: Vec<PathBuf> = [
            cfg.pki_dir.clone(),
            cfg.cachedir.clone(),
            cfg.sock_dir.clone(),
        ]
        .into_iter()
        .chain(file_path.clone())
        .collect();
        let r = salt_master_core::run_with_ready(cfg, shutdown, |ready| {
            // -u USER: drop root only now, with the ports bound and the keys loaded.
            let paths: Vec<&std::path::Path> = owned.iter().map(PathBuf::as_path).collect();
            match salt_daemon::process::drop_privileges(&user, &paths) {
                Ok(true) => tracing::info!("Running as user {user}"),
                Ok(false) => {}
                Err(e) => {
                    // Never keep serving as root when another user was asked for.
                    tracing::error!("{e}");
                    eprintln!("salt-master: {e}");
                    std::process::exit(1);
                }
            }
            notifier.ready(&format!(
                "Serving: publisher {}, request server {}; {} accepted minion keys",
                ready.publish, ready.ret, ready.accepted
            ));
        })
        .await;
        watchdog.abort();
        r
    });
    drop(pidfile);
    if let Err(e) = result {
        tracing::error!("{e}");
        eprintln!("salt-master: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    /// packaging/man/salt-master.1 is generated from these flags (UPDATE_MAN=1 rewrites it).
    #[test]
    fn man_page_is_current() {
        use clap::CommandFactory as _;
        salt_daemon::man::check(
            super::Args::command(),
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../packaging/man/salt-master.1"),
        );
    }
}
