//! `salt TARGET FUN [ARG...]`: publish a job through the local master and print returns.
//!
//! Talks only to the master on this host, over `{sock_dir}/local_client.sock`; the master
//! identifies the caller by its uid. Exit status as Salt's CLI: 0 when every targeted minion
//! returned with retcode 0, 1 when one failed or did not return, 2 when nothing could be
//! published or nothing came back, or the master stopped answering (Salt's "Salt request
//! timed out. The master is not responding. ...", see `salt_client::session`).
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

#[path = "../cli/batch.rs"]
mod batch;
#[path = "../cli/eauth.rs"]
mod eauth;
#[path = "../cli/progress.rs"]
mod progress;
#[path = "../cli/unsupported.rs"]
mod unsupported;

use progress::Progress;
use unsupported::unsupported_flag;
#[path = "../cli/args.rs"]
mod cli_args;

use cli_args::parse_args;
use salt_client::local::{LocalEvent, LocalRequest, PublishRequest};
use salt_client::session::{Session, SessionError, TIMED_OUT};
use salt_config::{LoadOptions, MasterConfig};
use salt_output::{OutputFormat, render_colour, render_json};
use serde_json::{Map, Value, json};

/// Run a function on minions.
#[derive(Debug, Parser)]
// Python's optparse keeps the last of an option given twice (`-t 3 -t 7`: 7).
#[command(name = "salt", version = salt_config::VERSION, args_override_self = true)]
struct Args {
    /// Configuration directory of the master [default: /etc/salt]. Given explicitly,
    /// DIR/master must exist.
    #[arg(short = 'c', long = "config-dir")]
    config_dir: Option<PathBuf>,
    /// Seconds to wait for returns.
    #[arg(short = 't', long = "timeout", default_value_t = 5)]
    timeout: u64,
    /// TARGET is a comma-separated list of ids.
    #[arg(short = 'L', long = "list", group = "tgt")]
    list: bool,
    /// TARGET is a regular expression (anchored at the start).
    #[arg(short = 'E', long = "pcre", group = "tgt")]
    pcre: bool,
    /// TARGET is `grain:glob`, matched by the minions.
    #[arg(short = 'G', long = "grain", group = "tgt")]
    grain: bool,
    /// TARGET is `grain:regex`.
    #[arg(short = 'P', long = "grain-pcre", group = "tgt")]
    grain_pcre: bool,
    /// TARGET is `pillar:glob` (matched against the minion data cache and by the minions).
    #[arg(short = 'I', long = "pillar", group = "tgt")]
    pillar: bool,
    /// TARGET is `pillar:regex`.
    #[arg(short = 'J', long = "pillar-pcre", group = "tgt")]
    pillar_pcre: bool,
    /// TARGET is an IP address or CIDR network matched against the ipv4/ipv6 grains.
    #[arg(short = 'S', long = "ipcidr", group = "tgt")]
    ipcidr: bool,
    /// TARGET is a compound expression (`G@os:Debian and web*`, `and`/`or`/`not`, parens).
    #[arg(short = 'C', long = "compound", group = "tgt")]
    compound: bool,
    /// TARGET is a node group from the master's `nodegroups:`.
    #[arg(short = 'N', long = "nodegroup", group = "tgt")]
    nodegroup: bool,
    /// Output format: nested, json, yaml, txt, raw, highstate (default: the one each return
    /// names, as Salt's `state.*` returns name `highstate`, else nested).
    #[arg(long = "out", alias = "output")]
    out: Option<String>,
    /// highstate outputter: full, terse, mixed, changes (or their `_id` forms).
    #[arg(long = "state-output", alias = "state_output", default_value = "full")]
    state_output: String,
    /// highstate outputter: also show successful states without changes (`True`/`False`).
    #[arg(
        long = "state-verbose",
        alias = "state_verbose",
        default_value = "True"
    )]
    state_verbose: String,
    /// JSON indentation for `--out json` (negative: one line).
    #[arg(long = "out-indent", allow_negative_numbers = true)]
    out_indent: Option<i64>,
    /// Write the output to this file instead of stdout.
    #[arg(long = "out-file")]
    out_file: Option<PathBuf>,
    /// With --out-file: append instead of truncating.
    #[arg(long = "out-file-append")]
    out_file_append: bool,
    /// Never colour the output.
    #[arg(long = "no-color", alias = "no-colour")]
    no_color: bool,
    /// Colour the `nested` output even when stdout is not a terminal.
    #[arg(long = "force-color", alias = "force-colour")]
    force_color: bool,
    /// Print all returns at once at the end.
    #[arg(long = "static")]
    static_out: bool,
    /// Returner for the job.
    #[arg(long = "return", default_value = "")]
    returner: String,
    /// Seconds each `saltutil.find_job` round waits once the timeout passed (default: the
    /// master's `gather_job_timeout`).
    #[arg(long = "gather-job-timeout")]
    gather_job_timeout: Option<u64>,
    /// Comma-separated keyword argument names whose values stay text (not YAML-loaded)
    /// [default: $SALT_NO_PARSE].
    #[arg(long = "no-parse", value_name = "ARGNAME,...")]
    no_parse: Option<String>,
    /// Publish and print the job id without waiting for returns.
    #[arg(long = "async")]
    asynchronous: bool,
    /// Request that targeted minions fire a salt/job/<jid>/start/<minion_id> event when they
    /// accept the published job, before executing the function (Salt 3008).
    #[arg(long = "start-event")]
    start_event: bool,
    /// Print the job id and a rule before the returns.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// Print the job id before the returns.
    #[arg(long = "show-jid")]
    show_jid: bool,
    /// Show the `[returned/expected]` progress line on stderr even off a terminal.
    #[arg(short = 'p', long = "progress")]
    progress: bool,
    /// Run on this many minions at a time (a count or a percentage such as `10%`).
    #[arg(short = 'b', long = "batch-size", alias = "batch")]
    batch: Option<String>,
    /// With --batch: seconds to wait after a minion returns before filling its slot.
    #[arg(long = "batch-wait", default_value_t = 0.0)]
    batch_wait: f64,
    /// External authentication (`-a`, `-T`, `--username`, `--password`).
    #[command(flatten)]
    eauth: eauth::EauthArgs,
    /// Target expression.
    target: String,
    /// Function, e.g. test.ping.
    fun: String,
    /// Arguments; `key=value` becomes a keyword argument.
    args: Vec<String>,
}

fn no_response(jid: &str) -> String {
    format!(
        "Minion did not return. [No response]\nThe minions may not have all finished running and \
         any remaining minions will return upon completion. To look up the return data for this \
         job later, run the following command:\n\nsalt-run jobs.lookup_jid {jid}"
    )
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if let Some(msg) = unsupported_flag(&argv) {
        eprintln!("{msg}");
        return ExitCode::from(2);
    }
    let args = Args::parse();
    let format = match args.out.as_deref().map(OutputFormat::from_name) {
        None => None,
        Some(Some(f)) => Some(f),
        Some(None) => {
            eprintln!(
                "salt: unknown outputter {:?} (nested, json, yaml, txt, raw, highstate)",
                args.out.as_deref().unwrap_or_default()
            );
            return ExitCode::from(2);
        }
    };
    let state_verbose = match args.state_verbose.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => true,
        "false" | "0" | "no" => false,
        other => {
            eprintln!("salt: --state-verbose takes True or False, not {other:?}");
            return ExitCode::from(2);
        }
    };
    let arg = match parse_args(&args.args, &cli_args::no_parse(args.no_parse.as_deref())) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("salt: {e}");
            return ExitCode::from(2);
        }
    };
    let json_indent = args.out_indent.map(|n| usize::try_from(n).ok());
    let sink: Box<dyn std::io::Write> = match &args.out_file {
        None => Box::new(std::io::stdout()),
        Some(path) => match std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(args.out_file_append)
            .truncate(!args.out_file_append)
            .open(path)
        {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("salt: cannot open {}: {e}", path.display());
                return ExitCode::from(2);
            }
        },
    };
    let config_dir = args
        .config_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(salt_config::DEFAULT_CONFIG_DIR));
    match salt_config::check_config_file(&config_dir, "master", args.config_dir.is_some()) {
        Ok(None) => {}
        Ok(Some(warning)) => eprintln!("salt: warning: {warning}"),
        Err(e) => {
            eprintln!("salt: {e}");
            return ExitCode::from(2);
        }
    }
    let cfg = match MasterConfig::load(&LoadOptions::from_system(Some(config_dir))) {
        Ok(l) => l.config,
        Err(e) => {
            eprintln!("Invalid master configuration:\n{e}");
            return ExitCode::from(2);
        }
    };
    let tgt_type = if args.list {
        "list"
    } else if args.pcre {
        "pcre"
    } else if args.grain {
        "grain"
    } else if args.grain_pcre {
        "grain_pcre"
    } else if args.pillar {
        "pillar"
    } else if args.pillar_pcre {
        "pillar_pcre"
    } else if args.ipcidr {
        "ipcidr"
    } else if args.compound {
        "compound"
    } else if args.nodegroup {
        "nodegroup"
    } else {
        "glob"
    };
    let req = PublishRequest {
        tgt: args.target.clone(),
        tgt_type: tgt_type.into(),
        fun: args.fun.clone(),
        arg,
        timeout: args.timeout,
        ret: args.returner.clone(),
        gather_job_timeout: args.gather_job_timeout,
        asynchronous: args.asynchronous,
        start_event: args.start_event,
        // Salt's `get_specific_user`: root under sudo publishes as `sudo_<SUDO_USER>` (the
        // master reads it from a root caller only).
        sudo_user: std::env::var("SUDO_USER").ok(),
        auth: None,
        jid: None,
    };
    let sock = cfg.sock_dir.join(salt_client::local::SOCKET_NAME);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("salt: {e}");
            return ExitCode::from(2);
        }
    };
    // Salt's `salt`: a saved token (`token_file`) is used unless the root key is readable;
    // without one, `-a` asks for the credentials (and `-T` makes a token of them).
    let token = eauth::saved_token(&cfg);
    let req = match runtime.block_on(eauth::resolve(&args.eauth, &cfg, &sock, token)) {
        Ok(auth) => PublishRequest { auth, ..req },
        Err(()) => {
            eprintln!("ERROR: Authentication failed");
            return ExitCode::from(2);
        }
    };
    // Salt's rule: colours on a terminal, unless --no-color; always with --force-color.
    let colour = args.force_color
        || (!args.no_color && args.out_file.is_none() && std::io::stdout().is_terminal());
    let states = salt_output::highstate::Options {
        state_output: args.state_output.clone(),
        state_verbose,
        colour,
        ..Default::default()
    };
    let style = Style {
        format,
        json_indent,
        colour,
        states: &states,
    };
    if let Some(size) = &args.batch {
        let mut sink = sink;
        let b = batch::Batch {
            sock: &sock,
            req,
            size,
            wait: args.batch_wait,
            user: cfg.user.clone(),
            gather_job_timeout: cfg.gather_job_timeout.as_secs(),
        };
        // Salt 3008: `--async -b` is handed to the master after its first group.
        if args.asynchronous {
            return runtime.block_on(batch::run_async(b));
        }
        return runtime.block_on(batch::run(b, &mut |ret, hint| {
            let _ = writeln!(sink, "{}", show(style, &ret, hint));
        }));
    }
    let header = if args.verbose {
        Header::Verbose
    } else if args.show_jid {
        Header::Jid
    } else {
        Header::None
    };
    runtime.block_on(run(
        sock,
        req,
        style,
        (args.static_out, header, args.progress),
        sink,
    ))
}

/// A session that ended without the master's answer: the message and exit status.
///
/// A master that does not answer prints Salt's "Salt request timed out. The master is not
/// responding. ..." on stdout, as Salt's `salt` does; Salt then exits 0, we exit 2 as for a
/// master that cannot be reached (docs/cli.md).
fn session_failed(sock: &std::path::Path, e: &SessionError) -> ExitCode {
    match e {
        SessionError::Connect(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            eprintln!(
                "salt: permission denied on the master's socket {}: run salt as the master's \
                 user (or root), or let this user in as Salt's publisher_acl allows ({e})",
                sock.display()
            );
        }
        SessionError::Connect(e) => {
            eprintln!(
                "Failed to connect to the Master, is the Salt Master running? ({}: {e})",
                sock.display()
            );
        }
        SessionError::TimedOut => println!("{TIMED_OUT}"),
        SessionError::Frame(e) => eprintln!("salt: {e}"),
    }
    ExitCode::from(2)
}

/// What is printed once the job id is known (`-v`, `--show-jid`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Header {
    None,
    Jid,
    Verbose,
}

/// Salt's message for a minion that never answered `find_job` and is not connected.
const NOT_CONNECTED: &str = "Minion did not return. [Not connected]";

/// How returns are printed: `--out` (or `None`: the outputter each return names), JSON
/// indentation, colours, the highstate options.
#[derive(Clone, Copy)]
struct Style<'a> {
    format: Option<OutputFormat>,
    json_indent: Option<Option<usize>>,
    colour: bool,
    states: &'a salt_output::highstate::Options,
}

/// Render `data`; `hint` is the `out` a return names (Salt's CLI uses it without `--out`).
fn show(style: Style<'_>, data: &Value, hint: Option<&str>) -> String {
    let format = style
        .format
        .or_else(|| hint.and_then(OutputFormat::from_name))
        .unwrap_or(OutputFormat::Nested);
    match (format, style.json_indent) {
        (OutputFormat::Json, Some(indent)) => render_json(data, indent),
        (OutputFormat::Highstate, _) => salt_output::highstate::render(data, style.states),
        _ => render_colour(format, data, style.colour),
    }
}

async fn run(
    sock: PathBuf,
    req: PublishRequest,
    style: Style<'_>,
    (static_out, header, force_progress): (bool, Header, bool),
    sink: Box<dyn std::io::Write>,
) -> ExitCode {
    let asynchronous = req.asynchronous;
    let timeout = Duration::from_secs(req.timeout);
    let mut session = match Session::open(&sock, &LocalRequest::Publish(req), timeout).await {
        Ok(s) => s,
        Err(e) => return session_failed(&sock, &e),
    };
    // The output is written once per run of frames that arrived together (a fan-out's returns
    // come in batches), not one system call per frame and per line; it is flushed before
    // every wait for more.
    let mut sink = std::io::BufWriter::with_capacity(1 << 16, sink);
    let mut jid = String::new();
    let mut progress = Progress::new(force_progress || std::io::stderr().is_terminal());
    let mut all = Map::new();
    // The outputter the returns name (static output prints them all with the first's).
    let mut hint: Option<String> = None;
    let mut failed = false;
    let mut any = false;
    // The master ends the stream: after the timeout, or later while minions still run the job
    // (`saltutil.find_job`); the session gives up only when the master stops answering.
    loop {
        if !session.has_more() {
            let _ = sink.flush();
        }
        let ev = match session.next().await {
            Ok(Some(ev)) => ev,
            Ok(None) => break,
            Err(e) => {
                let _ = sink.flush();
                progress.clear();
                return session_failed(&sock, &e);
            }
        };
        match ev {
            LocalEvent::Published { jid: j, minions } => {
                jid = j;
                if asynchronous {
                    println!("Executed command with job ID: {jid}");
                    return ExitCode::SUCCESS;
                }
                match header {
                    Header::Verbose => {
                        let msg = format!("Executing job with jid {jid}");
                        let _ = writeln!(sink, "{msg}\n{}\n", "-".repeat(msg.len()));
                    }
                    Header::Jid => {
                        let _ = writeln!(sink, "jid: {jid}");
                    }
                    Header::None => {}
                }
                progress.expect(minions.map(|m| m.len()));
            }
            LocalEvent::Return { id, data } => {
                any = true;
                progress.returned();
                let retcode = data.get("retcode").and_then(Value::as_i64).unwrap_or(0);
                if retcode != 0 {
                    failed = true;
                }
                let ret = data.get("return").cloned().unwrap_or(Value::Null);
                let out = data.get("out").and_then(Value::as_str);
                if static_out {
                    if hint.is_none() {
                        hint = out.map(str::to_owned);
                    }
                    all.insert(id, ret);
                } else {
                    let _ = writeln!(sink, "{}", show(style, &json!({ id: ret }), out));
                }
            }
            LocalEvent::Done {
                missing,
                not_connected,
            } => {
                progress.clear();
                let mut all_missing: Vec<(String, String)> = missing
                    .into_iter()
                    .map(|id| (id, no_response(&jid)))
                    .chain(
                        not_connected
                            .into_iter()
                            .map(|id| (id, NOT_CONNECTED.into())),
                    )
                    .collect();
                all_missing.sort();
                for (id, msg) in all_missing {
                    any = true;
                    failed = true;
                    let msg = Value::String(msg);
                    if static_out {
                        all.insert(id, msg);
                    } else {
                        let _ = writeln!(sink, "{}", show(style, &json!({ id: msg }), None));
                    }
                }
                break;
            }
            LocalEvent::Error { message } => {
                let _ = sink.flush();
                println!("{message}");
                eprintln!("ERROR: No return received");
                return ExitCode::from(2);
            }
            _ => {}
        }
    }
    let _ = sink.flush();
    progress.clear();
    if static_out && !all.is_empty() {
        let _ = writeln!(
            sink,
            "{}",
            show(style, &Value::Object(all), hint.as_deref())
        );
    }
    let _ = sink.flush();
    if !any {
        eprintln!("ERROR: No return received");
        return ExitCode::from(2);
    }
    if failed {
        eprintln!("ERROR: Minions returned with non-zero exit code");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// packaging/man/salt.1 is generated from these flags (UPDATE_MAN=1 rewrites it).
    #[test]
    fn man_page_is_current() {
        use clap::CommandFactory as _;
        salt_daemon::man::check(
            Args::command(),
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/man/salt.1"),
        );
    }

    /// An option given twice: the last one wins, as in Salt's optparse.
    #[test]
    fn the_last_of_a_repeated_option_wins() {
        let a = Args::try_parse_from(["salt", "-t", "3", "-t", "7", "*", "test.ping"]).unwrap();
        assert_eq!(a.timeout, 7);
        let a = Args::try_parse_from([
            "salt",
            "--out",
            "json",
            "--out=yaml",
            "-v",
            "-v",
            "*",
            "x.y",
        ])
        .unwrap();
        assert_eq!((a.out.as_deref(), a.verbose), (Some("yaml"), true));
    }

    #[test]
    fn args_like_salt() {
        let a: Vec<String> = ["echo a=b", "1", "x", "timeout=5", "name=web"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            parse_args(&a, &[]).unwrap(),
            vec![
                json!("echo a=b"),
                json!(1),
                json!("x"),
                json!({"timeout": 5, "name": "web", "__kwarg__": true})
            ]
        );
    }
}
