//! salt-minion: parse flags, load `/etc/salt/minion` (+ `minion.d/`), set up Salt-style
//! logging and signals, then hand over to [`salt_minion_core::driver::run`].
#![forbid(unsafe_code)]

mod settings;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use salt_config::{LoadOptions, LogFile, MinionConfig};
use salt_daemon::logging::level_filter;
use salt_minion_core::driver::{self, RunOutcome};
use salt_minion_core::startup::step;
use tracing_subscriber::filter::LevelFilter;

/// Salt's exit code for a configuration error (`EX_USAGE`).
const EX_USAGE: u8 = 64;

/// The Salt minion (Rust implementation, wire-compatible with Salt 3006, 3007 and 3008).
#[derive(Debug, Parser)]
#[command(name = "salt-minion", version = salt_daemon::process::VERSION)]
struct Cli {
    /// Configuration directory (holds `minion` and `minion.d/`) [default: /etc/salt].
    /// Given explicitly, DIR/minion must exist.
    #[arg(short = 'c', long = "config-dir")]
    config_dir: Option<PathBuf>,
    /// Console log level: all, garbage, trace, debug, profile, info, warning, error,
    /// critical, quiet.
    #[arg(short = 'l', long = "log-level")]
    log_level: Option<String>,
    /// Log file path (overrides `log_file`).
    #[arg(long = "log-file")]
    log_file: Option<PathBuf>,
    /// Log file level (overrides `log_level_logfile`).
    #[arg(long = "log-file-level")]
    log_file_level: Option<String>,
    /// Accepted for compatibility; this minion does not fork a keepalive parent.
    #[arg(long = "disable-keepalive")]
    disable_keepalive: bool,
    /// -d, -u, --pid-file, --versions-report.
    #[command(flatten)]
    process: salt_daemon::process::DaemonArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.process.versions_report {
        print!("{}", salt_daemon::process::versions_report("salt-minion"));
        return ExitCode::SUCCESS;
    }
    let config_dir = cli
        .config_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(salt_config::DEFAULT_CONFIG_DIR));
    let config_note = match salt_daemon::process::check_config_file(
        &config_dir,
        "minion",
        cli.config_dir.is_some(),
    ) {
        Ok(note) => note,
        Err(e) => {
            eprintln!("salt-minion: {e}");
            return ExitCode::from(EX_USAGE);
        }
    };
    let loaded = match MinionConfig::load(&LoadOptions::from_system(Some(config_dir))) {
        Ok(l) => l,
        Err(errors) => {
            eprintln!("{errors}");
            return ExitCode::from(EX_USAGE);
        }
    };
    let cfg = loaded.config;
    let config_level =
        |l: salt_config::LogLevel| level_filter(l.as_str()).unwrap_or(LevelFilter::WARN);
    let console = match cli.log_level.as_deref() {
        Some(l) => match level_filter(l) {
            Some(l) => l,
            None => {
                eprintln!(
                    "salt-minion: -l: unknown log level {l:?} (one of {})",
                    salt_daemon::logging::LEVELS
                );
                return ExitCode::from(EX_USAGE);
            }
        },
        None => config_level(cfg.log_level),
    };
    let file_level = match cli.log_file_level.as_deref() {
        Some(l) => match level_filter(l) {
            Some(l) => l,
            None => {
                eprintln!(
                    "salt-minion: --log-file-level: unknown log level {l:?} (one of {})",
                    salt_daemon::logging::LEVELS
                );
                return ExitCode::from(EX_USAGE);
            }
        },
        None => cfg.log_level_logfile.map_or(console, config_level),
    };
    // The pid file is the single-instance lock: taken before -d forks, so a second start is
    // refused on the terminal (Salt: "An instance is already running", exit code 1) before
    // it could sign in as the same id and run every job twice.
    let pidfile = cli
        .process
        .pid_file
        .clone()
        .unwrap_or_else(|| cfg.pidfile.clone());
    let mut pidfile = match salt_daemon::process::PidFile::lock(&pidfile) {
        Ok(p) => Some(p),
        Err(e @ salt_daemon::process::ProcessError::AlreadyRunning { .. }) => {
            eprintln!("salt-minion: {e} the Salt Minion");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("salt-minion: warning: {e}");
            None
        }
    };
    if cli.process.daemon {
        // Before any thread exists: only the forking thread survives.
        if let Err(e) = salt_daemon::process::daemonize() {
            eprintln!("salt-minion: {e}");
            return ExitCode::FAILURE;
        }
    }
    let log_path = match (&cli.log_file, &cfg.log_file) {
        (Some(p), _) => Some(p.clone()),
        (None, LogFile::Path(p)) => Some(p.clone()),
        _ => None,
    };
    if let Err(e) =
        salt_daemon::logging::init(console, log_path.as_deref().map(|p| (p, file_level)))
    {
        tracing::error!("{e}");
        eprintln!("salt-minion: {e}");
        return ExitCode::from(EX_USAGE);
    }
    for w in config_note.iter().chain(&loaded.warnings) {
        tracing::warn!("{w}");
    }
    let _ = cli.disable_keepalive;

    // Every step from here on is logged at debug; one that takes long is warned about.
    step("collect grains and build the settings");
    let settings = match settings::from_config(&cfg) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::from(EX_USAGE);
        }
    };
    step("prepare directories");
    if let Err(e) = settings::prepare_dirs(&cfg) {
        tracing::error!("{e}");
        return ExitCode::from(EX_USAGE);
    }

    step("start the runtime");
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // -u USER: hand pki_dir, cachedir and the log file over, then drop root (the minion
    // binds no port, so before anything else runs).
    let user = cli.process.user.clone().unwrap_or_else(|| cfg.user.clone());
    let owned: Vec<&std::path::Path> = [cfg.pki_dir.as_path(), cfg.cachedir.as_path()]
        .into_iter()
        .chain(log_path.as_deref())
        .collect();
    step("drop privileges");
    match salt_daemon::process::drop_privileges(&user, &owned) {
        Ok(true) => tracing::info!("Running as user {user}"),
        Ok(false) => {}
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    }
    tracing::info!("Setting up the Salt Minion \"{}\"", settings.id);
    // systemd (Type=notify): READY=1 once configured and running (as Salt's minion does at
    // start; signing in may take long while a key waits for acceptance), STOPPING=1 on
    // SIGTERM, WATCHDOG=1 from the runtime when WatchdogSec= is set.
    let notifier = salt_daemon::Notifier::from_env();
    let masters = cfg
        .master
        .addrs()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    step("install signal handlers");
    let outcome = rt.block_on(async {
        let signals = salt_daemon::shutdown_signal();
        // The pid goes in once SIGTERM is handled: whoever reads it may signal at once.
        if let Some(p) = pidfile.as_mut()
            && let Err(e) = p.write_pid()
        {
            tracing::warn!("{e}");
        }
        let watchdog = tokio::spawn(notifier.watchdog());
        // Opt-in Prometheus endpoint (metrics_port), on metrics_host (127.0.0.1 by default).
        let mut metrics_task = None;
        if let (Some(port), Some(m)) = (cfg.metrics_port, settings.metrics.clone()) {
            let addr = std::net::SocketAddr::new(cfg.metrics_host, port);
            match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => {
                    tracing::info!("Serving Prometheus metrics on http://{addr}/metrics");
                    metrics_task = Some(tokio::spawn(salt_daemon::metrics_http::serve(
                        l,
                        move || m.encode(),
                    )));
                }
                Err(e) => tracing::error!("cannot serve metrics on {addr}: {e}"),
            }
        }
        step("notify the service manager");
        notifier.ready(&format!("Running as {}; masters: {masters}", settings.id));
        let shutdown = async {
            signals.await;
            notifier.stopping();
        };
        let r = driver::run(settings, shutdown).await;
        watchdog.abort();
        if let Some(t) = metrics_task {
            t.abort();
        }
        r
    });
    // Blocking start-up work (a key write stuck in fsync) must not hold up a SIGTERM exit.
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    drop(pidfile);
    match outcome {
        Ok(RunOutcome::Shutdown) => ExitCode::SUCCESS,
        Ok(RunOutcome::Exit(code)) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    /// packaging/man/salt-minion.1 is generated from these flags (UPDATE_MAN=1 rewrites it).
    #[test]
    fn man_page_is_current() {
        use clap::CommandFactory as _;
        salt_daemon::man::check(
            super::Cli::command(),
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../packaging/man/salt-minion.1"),
        );
    }
}
