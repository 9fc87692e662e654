//! `salt-master`: the shared daemon start-up (`salt_daemon::start`), then the master core
//! until SIGTERM/SIGINT; the opt-in metrics endpoint is served here from the core's text.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use salt_config::MasterConfig;
use salt_daemon::{exit, metrics_http};

/// The Salt master (Rust implementation).
#[derive(Debug, Parser)]
#[command(name = "salt-master", version = salt_config::VERSION)]
struct Args {
    #[command(flatten)]
    common: salt_daemon::start::CommonArgs,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let zmq = salt_transport::zmq_version();
    let mut started =
        match salt_daemon::start::start::<MasterConfig>("salt-master", &args.common, zmq) {
            Ok(s) => s,
            Err(code) => return code,
        };
    let (mut pidfile, cfg) = (started.pidfile.take(), started.cfg.clone());
    let fail = |e: &dyn std::fmt::Display| {
        tracing::error!("{e}");
        eprintln!("salt-master: {e}");
        ExitCode::from(exit::GENERIC)
    };
    // Opt-in Prometheus endpoint (metrics_port), localhost unless metrics_host says else.
    let mut metrics = match metrics_http::bind(cfg.metrics_host, cfg.metrics_port) {
        Ok(l) => l,
        Err(e) => return fail(&e),
    };
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(cfg.worker_threads.max(1) as usize + 8)
        .thread_name("salt-master")
        .build()
        .inspect_err(|e| eprintln!("salt-master: cannot start the runtime: {e}"))
    else {
        return ExitCode::from(exit::GENERIC);
    };
    // systemd (Type=notify): READY=1 once keys are loaded and the ports are bound.
    let notifier = salt_daemon::Notifier::from_env();
    let c = &started.cfg;
    let dirs = [&*c.pki_dir, &c.cachedir, &c.sock_dir];
    let result = runtime.block_on(salt_daemon::start::serve(&mut pidfile, notifier, |stop| {
        salt_master_core::run_with_ready(cfg, stop, |ready| {
            let scrape = ready.metrics.clone();
            metrics
                .take()
                .map(|l| metrics_http::spawn_bound(l, move || scrape.render()));
            // -u USER: drop root only now, with the ports bound and the keys loaded.
            started.drop_privileges("salt-master", &dirs);
            let (p, r, n) = (&ready.publish, &ready.ret, ready.accepted);
            notifier.ready(&format!(
                "Serving: publisher {p}, request server {r}; {n} accepted minion keys"
            ));
        })
    }));
    drop(pidfile);
    result.map_or_else(|e| fail(&e), |()| ExitCode::from(exit::OK))
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
