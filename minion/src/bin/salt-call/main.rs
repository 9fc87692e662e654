//! `salt-call` for the salt-rs minion: a thin CLI over the minion's one function registry
//! (`salt_minion_core::modules`), so every function answers as it does in the daemon.
//!
//! * Against a master (the default): signs in with the minion's keys as `salt-minion` does,
//!   takes the pillar from the master (`_pillar`), runs the function, sends the return to the
//!   master (`_return` with `jid: req`, as Salt's `salt-call`) and prints it ([`master`]).
//! * Masterless (`--local`, or `file_client: local`): `salt://` from `file_roots`, the
//!   pillar compiled here from `pillar_roots` ([`local`]); `--file-root` / `--pillar-root`
//!   replace the `base` roots as Salt's do.
//!
//! Output: every outputter of `salt-output` (`--out nested|json|yaml|txt|raw|highstate`,
//! `--out-indent`, `--out-file`); the default is the function's (`highstate` for state runs)
//! else `nested`, as Salt's. Exit code: Salt's (1 for a failed call, the call's own retcode
//! with `--retcode-passthrough`).

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser;
use rmpv::Value;
use salt_minion_core::modules::{self, ExecContext};

mod cli;
mod local;
mod master;
#[path = "../../settings.rs"]
#[allow(dead_code)]
mod settings;

use cli::Cli;

/// What a call returned: the return, Salt's retcode and the function's outputter.
struct Ran {
    ret: Value,
    retcode: i64,
    out: Option<&'static str>,
}

/// Salt's caller: a zero retcode with a false `result` or `success` in a dict return is 1.
fn retcode(ret: &Value, rc: i64) -> i64 {
    if rc != 0 {
        return rc;
    }
    let failed = ["result", "success"]
        .iter()
        .any(|k| salt_compat::map_get(ret, k).is_some_and(|v| !salt_states::truthy(v)));
    i64::from(failed)
}

/// Run the function of `cli` with the context of `ctx`. The job load is Salt's caller's
/// (`fun`, `pid`, `jid`, `tgt: salt-call`): `**kwargs` functions see it as `__pub_*`.
async fn call(cli: &Cli, ctx: &ExecContext) -> Ran {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let job = Value::Map(vec![
        (Value::from("fun"), Value::from(cli.fun())),
        (Value::from("pid"), Value::from(std::process::id())),
        (
            Value::from("jid"),
            Value::from(salt_proto::ids::format_jid(since_epoch)),
        ),
        (Value::from("tgt"), Value::from("salt-call")),
    ]);
    let out = modules::call(
        cli.fun(),
        &salt_render::args::parse_input(&cli.args, &[]),
        &job,
        ctx,
    )
    .await;
    Ran {
        retcode: retcode(&out.ret, out.retcode),
        ret: out.ret,
        out: out.out,
    }
}

async fn run(cli: &Cli) -> Result<Ran, String> {
    let conf = local::read_conf(cli)?;
    let masterless = cli.local || salt_states::get_str(&conf, "file_client") == Some("local");
    if !masterless {
        let ignored: Vec<&str> = [
            ("--file-root", cli.file_root.is_some()),
            ("--pillar-root", cli.pillar_root.is_some()),
            ("--states-dir", cli.states_dir.is_some()),
        ]
        .into_iter()
        .filter_map(|(f, given)| given.then_some(f))
        .collect();
        if !ignored.is_empty() {
            // Salt's warning (salt/cli/call.py), word for word.
            eprintln!(
                "Warning: {} {} ignored because --local was not specified; the remote file \
                 client retrieves these from the master. Re-run with --local to use the local \
                 override.",
                ignored.join(", "),
                if ignored.len() == 1 { "is" } else { "are" }
            );
        }
        return master::run(cli, conf).await;
    }
    let ctx = local::context(cli, conf)?;
    if cli.grains_run {
        return Ok(Ran {
            ret: (*ctx.grains).clone(),
            retcode: 0,
            out: None,
        });
    }
    Ok(call(cli, &ctx).await)
}

/// Print `{"local": ret}` as Salt's `display_output` does.
fn print(cli: &Cli, ran: &Ran) -> Result<(), String> {
    let name = cli.out.as_deref().or(ran.out).unwrap_or("nested");
    let format =
        salt_output::OutputFormat::from_name(name).unwrap_or(salt_output::OutputFormat::Nested);
    let whole = Value::Map(vec![(Value::from("local"), ran.ret.clone())]);
    let colour = cli.force_color
        || (!cli.no_color
            && cli.out_file.is_none()
            && std::io::IsTerminal::is_terminal(&std::io::stdout()));
    let text = match format {
        // Salt's json outputter: `salt.utils.json.dumps(data, indent=4)` (or --out-indent),
        // the return's order and non-ASCII kept.
        salt_output::OutputFormat::Json => {
            let indent = match cli.out_indent {
                None => Some(4),
                Some(n) => usize::try_from(n).ok(),
            };
            let opts = salt_render::JsonOpts {
                indent,
                ..salt_render::JsonOpts::SALT
            };
            salt_render::py_json(&whole, opts)
        }
        salt_output::OutputFormat::Highstate => {
            let opts = salt_output::highstate::Options {
                state_output: cli.state_output.clone(),
                state_verbose: cli.state_verbose()?,
                colour,
                ..Default::default()
            };
            salt_output::highstate::render(&salt_compat::json::msgpack_to_json(&whole), &opts)
        }
        other => {
            salt_output::render_colour(other, &salt_compat::json::msgpack_to_json(&whole), colour)
        }
    };
    match &cli.out_file {
        None => {
            println!("{text}");
            Ok(())
        }
        Some(path) => std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(cli.out_file_append)
            .truncate(!cli.out_file_append)
            .open(path)
            .and_then(|mut f| writeln!(f, "{text}"))
            .map_err(|e| format!("{}: {e}", path.display())),
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if let Some(msg) = cli::unsupported_flag(&argv) {
        eprintln!("salt-call: {msg}");
        return ExitCode::from(2);
    }
    let cli = Cli::parse_from(&argv);
    if let Err(e) = cli.check() {
        eprintln!("salt-call: error: {e}");
        return ExitCode::from(2);
    }
    let filter = tracing_subscriber::EnvFilter::try_new(cli::tracing_level(&cli.log_level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
    // Multi-thread: a template's `salt[...]` blocks in place (salt_minion_core::blocking).
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("salt-call: {e}");
            return ExitCode::from(1);
        }
    };
    if !cli.grains_run && !modules::is_known(cli.fun()) {
        // Salt's caller: the message on stderr and exit -1.
        eprintln!("'{}' is not available.", cli.fun());
        return ExitCode::from(255);
    }
    let ran = match rt.block_on(run(&cli)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("Error: {e}");
            return ExitCode::from(1);
        }
    };
    if let Err(e) = print(&cli, &ran) {
        eprintln!("salt-call: {e}");
        return ExitCode::from(1);
    }
    let code = match (ran.retcode, cli.retcode_passthrough) {
        (0, _) => 0,
        (r, true) => r,
        _ => 1,
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    /// packaging/man/salt-call.1 is generated from these flags (UPDATE_MAN=1 rewrites it).
    #[test]
    fn man_page_is_current() {
        use clap::CommandFactory as _;
        salt_daemon::man::check(
            super::Cli::command(),
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/man/salt-call.1"),
        );
    }

    #[test]
    fn retcode_follows_salts_caller() {
        use rmpv::Value;
        let m = |k: &str, v: Value| Value::Map(vec![(Value::from(k), v)]);
        assert_eq!(super::retcode(&m("result", Value::Boolean(false)), 0), 1);
        assert_eq!(super::retcode(&m("success", Value::Nil), 0), 1);
        assert_eq!(super::retcode(&m("result", Value::Boolean(true)), 0), 0);
        assert_eq!(super::retcode(&Value::from("x"), 2), 2);
    }
}
