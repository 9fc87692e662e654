//! salt-minion: the shared daemon start-up (`salt_daemon::start`), the minion's settings,
//! then [`salt_minion_core::driver::run`] until SIGTERM/SIGINT or the master says stop.
#![forbid(unsafe_code)]

mod settings;

use std::process::ExitCode;

use clap::Parser;
use salt_config::MinionConfig;
use salt_daemon::{exit, metrics_http};
use salt_minion_core::driver;
use salt_minion_core::startup::step;

/// The Salt minion (Rust implementation, wire-compatible with Salt 3006, 3007 and 3008).
#[derive(Debug, Parser)]
#[command(name = "salt-minion", version = salt_config::VERSION)]
struct Cli {
    #[command(flatten)]
    common: salt_daemon::start::CommonArgs,
    /// Accepted for compatibility; this minion does not fork a keepalive parent.
    #[arg(long = "disable-keepalive")]
    #[allow(dead_code)]
    disable_keepalive: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let zmq = salt_transport::zmq_version();
    let mut s = match salt_daemon::start::start::<MinionConfig>("salt-minion", &cli.common, zmq) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (cfg, mut pidfile) = (&s.cfg, s.pidfile.take());
    // Every step from here on is logged at debug; one that takes long is warned about.
    let Ok(settings) = settings::build(cfg, &s.config_dir).inspect_err(|e| tracing::error!("{e}"))
    else {
        return ExitCode::from(exit::USAGE);
    };
    step("start the runtime");
    let Ok(rt) = settings::runtime() else {
        return ExitCode::from(exit::GENERIC);
    };
    // -u USER: the minion binds no port, so it drops root before anything else runs.
    step("drop privileges");
    s.drop_privileges("salt-minion", &[&cfg.pki_dir, &cfg.cachedir]);
    tracing::info!("Setting up the Salt Minion \"{}\"", settings.id);
    let notifier = salt_daemon::Notifier::from_env();
    let masters: Vec<String> = cfg.master.addrs().iter().map(ToString::to_string).collect();
    let status = format!(
        "Running as {}; masters: {}",
        settings.id,
        masters.join(", ")
    );
    step("install signal handlers");
    let serve = salt_daemon::start::serve(&mut pidfile, notifier, |stop| async {
        // Opt-in Prometheus endpoint (metrics_port), on metrics_host (127.0.0.1 by default).
        let metrics = (settings.metrics.clone()).and_then(|m| {
            metrics_http::spawn(cfg.metrics_host, cfg.metrics_port, move || m.encode())
        });
        step("notify the service manager");
        notifier.ready(&status);
        let r = driver::run(settings, stop).await;
        metrics.inspect(tokio::task::JoinHandle::abort);
        r
    });
    let outcome = rt.block_on(serve);
    // Blocking start-up work (a key write stuck in fsync) must not hold up a SIGTERM exit.
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    drop(pidfile);
    settings::exit_code(outcome)
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
