//! `salt-run FUN [ARG...]`: run a runner on the local master (Salt's `salt-run`).
//!
//! The runner runs inside the master, reached over `{sock_dir}/local_client.sock` like `salt`;
//! the return is printed with the outputter (`nested` unless `--out`, or the one the runner
//! names, as Salt's `{"outputter": …, "data": …}` returns do). Exit status the return's `retcode`
//! when it has one (orchestrate), else 0, as Salt's, also for
//! `'x' is not available.`; 1 when the runner failed or was refused; 2 when the master could
//! not be reached or stopped answering (Salt's "Salt request timed out. ..."). `state.event [tagmatch] [count=N]` prints the master's events as they fire,
//! one `tag<TAB>json` line each, as Salt's.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

#[path = "../cli/args.rs"]
mod cli_args;
#[path = "../cli/eauth.rs"]
mod eauth;

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use salt_client::local::{LocalEvent, LocalRequest, RunnerRequest};
use salt_client::session::{Session, SessionError, TIMED_OUT};
use salt_config::{LoadOptions, MasterConfig};
use salt_output::{OutputFormat, render_colour, render_json};
use serde_json::Value;

/// Run a runner function on the master.
#[derive(Debug, Parser)]
// Python's optparse keeps the last of an option given twice (`-t 3 -t 7`: 7).
#[command(name = "salt-run", version = salt_config::VERSION, args_override_self = true)]
struct Args {
    /// Configuration directory of the master.
    #[arg(short = 'c', long = "config-dir", default_value = "/etc/salt")]
    config_dir: PathBuf,
    /// Seconds runners that publish jobs (`manage.*`, `jobs.active`) wait for returns.
    #[arg(short = 't', long = "timeout")]
    timeout: Option<u64>,
    /// Output format: nested, json, yaml, txt, raw.
    #[arg(long = "out", alias = "output")]
    out: Option<String>,
    /// JSON indentation for `--out json` (negative: one line).
    #[arg(long = "out-indent", allow_negative_numbers = true)]
    out_indent: Option<i64>,
    /// Write the output to this file instead of stdout.
    #[arg(long = "out-file")]
    out_file: Option<PathBuf>,
    /// Never colour the output.
    #[arg(long = "no-color", alias = "no-colour")]
    no_color: bool,
    /// Colour the `nested` output even when stdout is not a terminal.
    #[arg(long = "force-color", alias = "force-colour")]
    force_color: bool,
    /// Comma-separated keyword argument names whose values stay text (not YAML-loaded)
    /// [default: $SALT_NO_PARSE].
    #[arg(long = "no-parse", value_name = "ARGNAME,...")]
    no_parse: Option<String>,
    /// External authentication (`-a`, `-T`, `--username`, `--password`).
    #[command(flatten)]
    eauth: eauth::EauthArgs,
    /// Function, e.g. jobs.lookup_jid.
    fun: String,
    /// Arguments; `key=value` becomes a keyword argument.
    args: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let cfg = match MasterConfig::load(&LoadOptions::from_system(Some(args.config_dir.clone()))) {
        Ok(l) => l.config,
        Err(e) => {
            eprintln!("Invalid master configuration:\n{e}");
            return ExitCode::from(2);
        }
    };
    let arg = match cli_args::parse_args(&args.args, &cli_args::no_parse(args.no_parse.as_deref()))
    {
        Ok(a) => a,
        Err(e) => {
            eprintln!("salt-run: {e}");
            return ExitCode::from(2);
        }
    };
    let req = RunnerRequest {
        fun: args.fun.clone(),
        arg,
        timeout: args.timeout,
        auth: None,
    };
    let sock = cfg.sock_dir.join(salt_client::local::SOCKET_NAME);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("salt-run: {e}");
            return ExitCode::from(2);
        }
    };
    // Salt's `Runner.run`: with `-a`, a saved token (`token_file`) unless the root key is
    // readable, else the credentials (and `-T` makes a token of them); a backend that is not
    // available logs "Authentication failed" and returns nothing.
    let token = if args.eauth.eauth.is_empty() {
        None
    } else {
        eauth::saved_token(&cfg)
    };
    let req = match runtime.block_on(eauth::resolve(&args.eauth, &cfg, &sock, token)) {
        Ok(auth) => RunnerRequest { auth, ..req },
        Err(()) => {
            eprintln!("[ERROR   ] Authentication failed");
            return ExitCode::SUCCESS;
        }
    };
    let event = match runtime.block_on(ask(&sock, req)) {
        Ok(ev) => ev,
        Err(code) => return code,
    };
    let data = match event {
        LocalEvent::RunnerReturn { data } => data,
        LocalEvent::Error { message } => {
            println!("{message}");
            return ExitCode::from(1);
        }
        _ => {
            eprintln!("salt-run: unexpected answer from the master");
            return ExitCode::from(1);
        }
    };
    // Salt's `salt-run` exits with the return's `retcode` (orchestrate), else with
    // `data.retcode`.
    let retcode = retcode_of(&data);
    // A runner may name its outputter: {"outputter": "highstate", "data": {...}} is shown as
    // its `data`; with more keys (orchestrate's `retcode`) the whole return goes to it.
    let (named, data) = match &data {
        Value::Object(m) if m.contains_key("outputter") => {
            let named = m
                .get("outputter")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if m.len() == 2 && m.contains_key("data") {
                (named, m.get("data").cloned().unwrap_or(Value::Null))
            } else {
                (named, data)
            }
        }
        _ => (None, data),
    };
    let name = args
        .out
        .clone()
        .or(named)
        .unwrap_or_else(|| "nested".into());
    let format = OutputFormat::from_name(&name).unwrap_or(OutputFormat::Nested);
    let colour = args.force_color
        || (!args.no_color && args.out_file.is_none() && std::io::stdout().is_terminal());
    let text = match (format, args.out_indent) {
        (OutputFormat::Json, Some(n)) => render_json(&data, usize::try_from(n).ok()),
        _ => render_colour(format, &data, colour),
    };
    let written = match &args.out_file {
        None => writeln!(std::io::stdout(), "{text}"),
        Some(p) => std::fs::write(p, format!("{text}\n")),
    };
    if let Err(e) = written {
        eprintln!("salt-run: {e}");
        return ExitCode::from(2);
    }
    retcode
}

/// The exit status a runner's return asks for (`retcode`, or `data.retcode`), as Salt's
/// `SaltRun.run`; 0 otherwise.
fn retcode_of(data: &Value) -> ExitCode {
    let code = data
        .get("retcode")
        .or_else(|| data.get("data").and_then(|d| d.get("retcode")))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Seconds the master has to answer (`-t`, else Salt's default `timeout`, 5), tried
/// `REQUEST_TRIES` times; a runner that runs longer is fine while the master answers pings.
const DEFAULT_TIMEOUT: u64 = 5;

async fn ask(sock: &std::path::Path, req: RunnerRequest) -> Result<LocalEvent, ExitCode> {
    // `state.event` streams events until its count is reached, then `Done`; how they are
    // printed is the client's part (a call the master refuses gets its error instead).
    let (quiet, pretty) = match salt_client::args::bind(&salt_client::args::STATE_EVENT, &req.arg) {
        Ok(a) => (a.flag("quiet", false), a.flag("pretty", false)),
        Err(_) => (false, false),
    };
    let timeout = Duration::from_secs(req.timeout.unwrap_or(DEFAULT_TIMEOUT));
    let mut session = match Session::open(sock, &LocalRequest::Runner(req), timeout).await {
        Ok(s) => s,
        Err(e) => return Err(session_failed(sock, &e)),
    };
    loop {
        match session.next().await {
            Ok(Some(LocalEvent::Event { tag, data })) => {
                if !quiet {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{}", salt_client::event_line(&tag, &data, pretty));
                    let _ = out.flush();
                }
                continue;
            }
            // A line the runner printed (Salt's runner prints in `salt-run`'s process).
            Ok(Some(LocalEvent::Print { text })) => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{text}");
                let _ = out.flush();
                continue;
            }
            Ok(Some(LocalEvent::Done { .. })) => return Err(ExitCode::SUCCESS),
            // The runner started; its return follows (the master answers pings meanwhile).
            Ok(Some(LocalEvent::Published { .. })) => continue,
            other => return answer(other, sock),
        }
    }
}

fn answer(
    got: Result<Option<LocalEvent>, SessionError>,
    sock: &std::path::Path,
) -> Result<LocalEvent, ExitCode> {
    match got {
        Ok(Some(ev)) => Ok(ev),
        Ok(None) => {
            eprintln!("salt-run: the master closed the connection");
            Err(ExitCode::from(1))
        }
        Err(e) => Err(session_failed(sock, &e)),
    }
}

/// No answer from the master: exit 2, with Salt's "Salt request timed out. ..." on stdout
/// when it does not answer (Salt's `salt-run` prints it inside a traceback of the runner that
/// published, and exits 1).
fn session_failed(sock: &std::path::Path, e: &SessionError) -> ExitCode {
    match e {
        SessionError::Connect(e) => eprintln!(
            "Failed to connect to the Master, is the Salt Master running? ({}: {e})",
            sock.display()
        ),
        SessionError::TimedOut => println!("{TIMED_OUT}"),
        SessionError::Frame(e) => eprintln!("salt-run: {e}"),
    }
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An option given twice: the last one wins, as in Salt's optparse.
    #[test]
    fn the_last_of_a_repeated_option_wins() {
        let a = Args::try_parse_from(["salt-run", "-t", "3", "-t", "7", "manage.up"]).unwrap();
        assert_eq!(a.timeout, Some(7));
    }

    /// packaging/man/salt-run.1 is generated from these flags (UPDATE_MAN=1 rewrites it).
    #[test]
    fn man_page_is_current() {
        use clap::CommandFactory as _;
        salt_daemon::man::check(
            Args::command(),
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/man/salt-run.1"),
        );
    }
}
