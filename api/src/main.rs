//! `salt-api`: Salt's `rest_cherrypy` HTTP API from the master's config (`rest_cherrypy`,
//! `netapi_enable_clients`, `api_logfile`, `api_pidfile`), as a client of the running master
//! (`salt_api_core`). The shared daemon start-up (`salt_daemon::start`) with salt-api's log
//! and pid files, then the server until SIGTERM/SIGINT; `READY=1` once the port is bound.
#![forbid(unsafe_code)]

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use salt_config::{ConfigErrors, LoadOptions, Loaded, LogFile, LogLevel, MasterConfig};
use salt_daemon::exit;
use salt_daemon::start::DaemonConfig;

/// Salt's HTTP API, rest_cherrypy (Rust implementation).
#[derive(Debug, Parser)]
#[command(name = "salt-api", version = salt_config::VERSION)]
struct Args {
    #[command(flatten)]
    common: salt_daemon::start::CommonArgs,
}

/// The master's config as salt-api reads it: its own log and pid files.
#[derive(Debug, Clone)]
struct ApiConfig(MasterConfig);

impl DaemonConfig for ApiConfig {
    const ROLE: &'static str = "master";
    const SERVICE: &'static str = "salt-api";
    fn load(opts: &LoadOptions) -> Result<Loaded<Self>, ConfigErrors> {
        MasterConfig::load(opts).map(|l| Loaded {
            config: ApiConfig(l.config),
            warnings: l.warnings,
            files: l.files,
        })
    }
    fn log_level(&self) -> LogLevel {
        self.0.log_level
    }
    fn log_level_logfile(&self) -> Option<LogLevel> {
        self.0.log_level_logfile
    }
    fn log_file(&self) -> &LogFile {
        &self.0.api.api_logfile
    }
    fn pidfile(&self) -> &Path {
        &self.0.api.api_pidfile
    }
    fn user(&self) -> &str {
        &self.0.user
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let zmq = salt_transport::zmq_version();
    let mut started = match salt_daemon::start::start::<ApiConfig>("salt-api", &args.common, zmq) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut pidfile = started.pidfile.take();
    let cfg = started.cfg.0.clone();
    let fail = |e: &dyn std::fmt::Display| {
        tracing::error!("{e}");
        eprintln!("salt-api: {e}");
        ExitCode::from(exit::GENERIC)
    };
    let Some(rc) = cfg.api.rest_cherrypy.clone() else {
        return fail(&"the master's config has no rest_cherrypy block: nothing to serve");
    };
    let tls = if rc.disable_ssl {
        None
    } else {
        // `rest_cherrypy.start`: both files are required unless `disable_ssl`.
        let (Some(crt), Some(key)) = (rc.ssl_crt.as_deref(), rc.ssl_key.as_deref()) else {
            return fail(
                &"Not starting 'salt.netapi.rest_cherrypy'. Options 'ssl_crt' and \
                 'ssl_key' are required if SSL is not disabled.",
            );
        };
        match salt_api_core::listener::tls_acceptor(crt, key) {
            Ok(a) => Some(a),
            Err(e) => return fail(&e),
        }
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("salt-api")
        .build()
        .inspect_err(|e| eprintln!("salt-api: cannot start the runtime: {e}"))
    else {
        return ExitCode::from(exit::GENERIC);
    };
    let notifier = salt_daemon::Notifier::from_env();
    let result = runtime.block_on(salt_daemon::start::serve(&mut pidfile, notifier, |stop| {
        let cfg = cfg.clone();
        async move {
            let addr = format!("{}:{}", rc.host, rc.port);
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
            let token = tokio_util::sync::CancellationToken::new();
            let listener = salt_api_core::listener::ApiListener::new(listener, tls, token.clone())
                .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
            let api = Arc::new(salt_api_core::Api::new(&cfg, token.clone())?);
            started.drop_privileges("salt-api", &[]);
            notifier.ready(&format!("Serving rest_cherrypy on {scheme}://{addr}"));
            tracing::info!("salt-api: serving rest_cherrypy on {scheme}://{addr}");
            let server = salt_api_core::serve(api, listener, token.clone());
            tokio::pin!(server);
            let r = tokio::select! {
                r = &mut server => r,
                () = stop => {
                    token.cancel();
                    server.await
                }
            };
            r.map_err(|e| e.to_string())
        }
    }));
    drop(pidfile);
    result.map_or_else(|e| fail(&e), |()| ExitCode::from(exit::OK))
}

#[cfg(test)]
mod tests {
    /// packaging/man/salt-api.1 is generated from these flags (UPDATE_MAN=1 rewrites it).
    #[test]
    fn man_page_is_current() {
        use clap::CommandFactory as _;
        salt_daemon::man::check(
            super::Args::command(),
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/man/salt-api.1"),
        );
    }
}
