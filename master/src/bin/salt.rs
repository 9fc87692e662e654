//! `salt TARGET FUN [ARG...]`: publish a job through the local master and print returns.
//!
//! Talks only to the master on this host, over `{sock_dir}/local_client.sock`; the master
//! identifies the caller by its uid. Exit status as Salt's CLI: 0 when every targeted minion
//! returned with retcode 0, 1 when one failed or did not return, 2 when nothing could be
//! published or nothing came back.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use salt_config::{LoadOptions, MasterConfig};
use salt_master_core::local::{LocalEvent, LocalRequest, PublishRequest, read_frame, write_frame};
use salt_master_core::output::{OutputFormat, render_colour, render_json};
use serde_json::{Map, Value, json};

/// Run a function on minions.
#[derive(Debug, Parser)]
#[command(name = "salt", version)]
struct Args {
    /// Configuration directory of the master.
    #[arg(short = 'c', long = "config-dir", default_value = "/etc/salt")]
    config_dir: PathBuf,
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
    /// Output format: nested, json, yaml, txt, raw.
    #[arg(long = "out", alias = "output", default_value = "nested")]
    out: String,
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
    /// Target expression.
    target: String,
    /// Function, e.g. test.ping.
    fun: String,
    /// Arguments; `key=value` becomes a keyword argument.
    args: Vec<String>,
}

/// Salt's minimal YAML-ification of CLI arguments: ints, floats and booleans.
fn yamlify(s: &str) -> Value {
    if let Ok(i) = s.parse::<i64>() {
        return json!(i);
    }
    match s {
        "True" | "true" => return json!(true),
        "False" | "false" => return json!(false),
        "None" | "null" => return Value::Null,
        _ => {}
    }
    if s.contains('.')
        && !s.starts_with('.')
        && !s.ends_with('.')
        && let Some(f) = s.parse::<f64>().ok().filter(|f| f.is_finite())
    {
        return json!(f);
    }
    Value::String(s.to_owned())
}

/// Positional args and `key=value` kwargs (`salt.utils.args.parse_input`).
fn parse_args(args: &[String]) -> Vec<Value> {
    #[allow(clippy::unwrap_used)] // constant, valid expression
    let kw = regex::Regex::new(r"^([A-Za-z_][\w.-]*)=([^=].*|)$").unwrap();
    let mut out = Vec::new();
    let mut kwargs = Map::new();
    for a in args {
        match kw.captures(a) {
            Some(c) => {
                kwargs.insert(c[1].to_owned(), yamlify(&c[2]));
            }
            None => out.push(yamlify(a)),
        }
    }
    if !kwargs.is_empty() {
        kwargs.insert("__kwarg__".into(), json!(true));
        out.push(Value::Object(kwargs));
    }
    out
}

fn no_response(jid: &str) -> String {
    format!(
        "Minion did not return. [No response]\nThe minions may not have all finished running and \
         any remaining minions will return upon completion. To look up the return data for this \
         job later, run the following command:\n\nsalt-run jobs.lookup_jid {jid}"
    )
}

fn main() -> ExitCode {
    let args = Args::parse();
    let Some(format) = OutputFormat::from_name(&args.out) else {
        eprintln!(
            "salt: unknown outputter {:?} (nested, json, yaml, txt, raw)",
            args.out
        );
        return ExitCode::from(2);
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
    let cfg = match MasterConfig::load(&LoadOptions::from_system(Some(args.config_dir.clone()))) {
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
        arg: parse_args(&args.args),
        timeout: args.timeout,
        ret: args.returner.clone(),
    };
    let sock = cfg.sock_dir.join(salt_master_core::local::SOCKET_NAME);
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
    // Salt's rule: colours on a terminal, unless --no-color; always with --force-color.
    let colour = args.force_color
        || (!args.no_color && args.out_file.is_none() && std::io::stdout().is_terminal());
    runtime.block_on(run(
        sock,
        req,
        (format, json_indent, colour),
        args.static_out,
        sink,
    ))
}

/// Render with `--out-indent` applied to `json`.
/// Outputter, `--out-indent` for json, colours.
type Style = (OutputFormat, Option<Option<usize>>, bool);

fn show(style: Style, data: &Value) -> String {
    let (format, json_indent, colour) = style;
    match (format, json_indent) {
        (OutputFormat::Json, Some(indent)) => render_json(data, indent),
        _ => render_colour(format, data, colour),
    }
}

async fn run(
    sock: PathBuf,
    req: PublishRequest,
    style: Style,
    static_out: bool,
    mut sink: Box<dyn std::io::Write>,
) -> ExitCode {
    let mut stream = match tokio::net::UnixStream::connect(&sock).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "Failed to connect to the Master, is the Salt Master running? ({}: {e})",
                sock.display()
            );
            return ExitCode::from(2);
        }
    };
    let timeout = req.timeout;
    if let Err(e) = write_frame(&mut stream, &LocalRequest::Publish(req)).await {
        eprintln!("salt: {e}");
        return ExitCode::from(2);
    }
    let mut jid = String::new();
    let mut progress = Progress::new(std::io::stderr().is_terminal());
    let mut all = Map::new();
    let mut failed = false;
    let mut any = false;
    // The master ends the stream at the timeout; allow it some slack.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout + 10);
    loop {
        let ev = match tokio::time::timeout_at(deadline, read_frame::<_, LocalEvent>(&mut stream))
            .await
        {
            Ok(Ok(Some(ev))) => ev,
            Ok(Ok(None)) | Err(_) => break,
            Ok(Err(e)) => {
                eprintln!("salt: {e}");
                return ExitCode::from(2);
            }
        };
        match ev {
            LocalEvent::Published { jid: j, minions } => {
                jid = j;
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
                if static_out {
                    all.insert(id, ret);
                } else {
                    let _ = writeln!(sink, "{}", show(style, &json!({ id: ret })));
                }
            }
            LocalEvent::Done { missing } => {
                progress.clear();
                for id in missing {
                    any = true;
                    failed = true;
                    let msg = Value::String(no_response(&jid));
                    if static_out {
                        all.insert(id, msg);
                    } else {
                        let _ = writeln!(sink, "{}", show(style, &json!({ id: msg })));
                    }
                }
                break;
            }
            LocalEvent::Error { message } => {
                println!("{message}");
                eprintln!("ERROR: No return received");
                return ExitCode::from(2);
            }
            _ => {}
        }
    }
    progress.clear();
    if static_out && !all.is_empty() {
        let _ = writeln!(sink, "{}", show(style, &Value::Object(all)));
    }
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

/// The progress line on a terminal, `[returned/expected] waiting for returns...` on stderr,
/// rewritten in place (`\r`) as returns arrive and erased before the final output; nothing
/// when stderr is not a terminal (pipes, files, tests).
struct Progress {
    on: bool,
    expected: Option<usize>,
    returned: usize,
    shown: bool,
}

impl Progress {
    fn new(on: bool) -> Self {
        Progress {
            on,
            expected: None,
            returned: 0,
            shown: false,
        }
    }

    fn expect(&mut self, n: Option<usize>) {
        self.expected = n;
        self.draw();
    }

    fn returned(&mut self) {
        self.returned += 1;
        self.draw();
    }

    fn line(&self) -> String {
        match self.expected {
            Some(n) => format!("[{}/{n}] waiting for returns...", self.returned),
            None => format!("[{}/?] waiting for returns...", self.returned),
        }
    }

    fn draw(&mut self) {
        if self.on {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{}", self.line());
            let _ = err.flush();
            self.shown = true;
        }
    }

    /// Erase the line so returns print on a clean line.
    fn clear(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.shown = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_counts_returns_and_stays_quiet_off_a_terminal() {
        let mut p = Progress::new(false);
        p.expect(Some(3));
        p.returned();
        assert_eq!(p.line(), "[1/3] waiting for returns...");
        assert!(!p.shown, "not drawn when off");
        p.expect(None);
        assert_eq!(p.line(), "[1/?] waiting for returns...");
    }

    #[test]
    fn args_like_salt() {
        let a: Vec<String> = ["echo a=b", "1", "x", "timeout=5", "name=web"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            parse_args(&a),
            vec![
                json!("echo a=b"),
                json!(1),
                json!("x"),
                json!({"timeout": 5, "name": "web", "__kwarg__": true})
            ]
        );
    }
}
