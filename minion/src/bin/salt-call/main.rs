//! `salt-call` for the salt-rs minion: run a function locally and print its return.
//!
//! * Against a master (the default): signs in with the minion's keys as `salt-minion` does,
//!   takes the pillar from the master (`_pillar`), runs the function with the minion's
//!   execution modules (`state.*` through the remote file client, `cp.*`, `pillar.*` ...),
//!   sends the return to the master (`_return` with `jid: req`, as Salt's `salt-call`) and
//!   prints it.
//! * Masterless (`--local`, or `file_client: local`): SLS and `salt://` files from
//!   `file_roots`, the pillar compiled from `pillar_roots`.
//!
//! Output: every outputter of `salt-output` (`--out nested|json|yaml|txt|raw|highstate`);
//! the default is the function's (`highstate` for state runs) else `nested`, as Salt's.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use rmpv::Value;
use salt_compat::map_get;
use salt_states::{LocalFileClient, Opts};

mod master;
#[path = "../../settings.rs"]
#[allow(dead_code)]
mod settings;

const USAGE: &str = "usage: salt-call [-c CONFIG_DIR] [--local] [--out nested|json|yaml|txt|raw|highstate] [-l LEVEL] [--retcode-passthrough] [--id ID] FUNCTION [ARG ...]";

struct Cli {
    config_dir: PathBuf,
    local: bool,
    out: String,
    retcode_passthrough: bool,
    log_level: String,
    id: Option<String>,
    fun: String,
    args: Vec<String>,
}

fn parse_cli() -> Result<Cli, String> {
    let mut cli = Cli {
        config_dir: PathBuf::from("/etc/salt"),
        local: false,
        out: String::new(),
        retcode_passthrough: false,
        log_level: "warning".into(),
        id: None,
        fun: String::new(),
        args: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with('-') => (f.to_owned(), Some(v.to_owned())),
            _ => (a.clone(), None),
        };
        let mut val = |name: &str| {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-c" | "--config-dir" => cli.config_dir = PathBuf::from(val("--config-dir")?),
            "--local" => cli.local = true,
            "--out" | "--output" => cli.out = val("--out")?,
            "-l" | "--log-level" => cli.log_level = val("--log-level")?,
            "--retcode-passthrough" => cli.retcode_passthrough = true,
            "--no-color" | "--no-colour" => {}
            "--id" => cli.id = Some(val("--id")?),
            "-h" | "--help" => return Err(USAGE.into()),
            "-V" | "--version" => {
                println!(
                    "salt-call {} (salt-rs; wire-compatible with Salt 3006, 3007 and 3008)",
                    env!("CARGO_PKG_VERSION")
                );
                std::process::exit(0);
            }
            f if f.starts_with('-') && cli.fun.is_empty() => {
                return Err(format!("salt-call option {f} is not supported by salt-rs"));
            }
            _ => {
                if cli.fun.is_empty() {
                    cli.fun = a;
                } else {
                    cli.args.push(a);
                }
            }
        }
    }
    if cli.fun.is_empty() {
        return Err(USAGE.into());
    }
    if !cli.out.is_empty() && salt_output::OutputFormat::from_name(&cli.out).is_none() {
        return Err(format!(
            "outputter '{}' is not supported by salt-rs salt-call (supported: nested, json, yaml, txt, raw, highstate)",
            cli.out
        ));
    }
    Ok(cli)
}

fn roots(conf: &Value, key: &str, default: &str) -> Vec<(String, Vec<PathBuf>)> {
    match map_get(conf, key) {
        Some(Value::Map(envs)) => envs
            .iter()
            .map(|(e, dirs)| {
                let dirs = match dirs {
                    Value::Array(d) => d
                        .iter()
                        .map(|p| PathBuf::from(salt_compat::py_str(p)))
                        .collect(),
                    other => vec![PathBuf::from(salt_compat::py_str(other))],
                };
                (salt_compat::py_str(e), dirs)
            })
            .collect(),
        _ => vec![("base".into(), vec![PathBuf::from(default)])],
    }
}

/// The masterless pillar: `pillar_roots` and the pillar options of the minion config, compiled
/// by the master's pillar compiler (the same code our master runs for `_pillar`).
fn local_pillar(
    conf: &Value,
    cli: &Cli,
    id: &str,
    grains: &Value,
    saltenv: Option<String>,
    pillarenv: Option<String>,
    pillar_override: Value,
) -> Result<Value, String> {
    let mut text = String::new();
    for key in [
        "pillar_roots",
        "pillarenv",
        "pillarenv_from_saltenv",
        "pillar_source_merging_strategy",
        "pillar_merge_lists",
        "top_file_merging_strategy",
        "nodegroups",
    ] {
        if let Some(v) = map_get(conf, key) {
            text.push_str(&format!(
                "{key}: {}\n",
                salt_render::yaml_dump::safe_dump(v, true)
            ));
        }
    }
    let opts = salt_config::LoadOptions::new(&cli.config_dir);
    let cfg = salt_config::MasterConfig::from_yaml_str(&text, &opts)
        .map_err(|e| format!("pillar options: {e}"))?
        .config;
    let req = salt_master_core::pillar::Request {
        id: id.to_owned(),
        grains: grains.clone(),
        saltenv,
        pillarenv,
        pillar_override,
    };
    Ok(salt_master_core::pillar::compile(&cfg, &req))
}

fn yamlify(v: &str) -> Value {
    match salt_render::yaml::load(v) {
        Ok(Some(x)) if !matches!(x, Value::Map(_) | Value::Array(_)) => x,
        _ => Value::from(v),
    }
}

/// A return, its retcode and the function's outputter (`None`: nested).
type Ran = (Value, i32, Option<&'static str>);

async fn run(cli: Cli) -> Result<Ran, String> {
    let conf_path = cli.config_dir.join("minion");
    let conf = match std::fs::read_to_string(&conf_path) {
        Ok(t) => salt_render::yaml::load(&t)
            .map_err(|e| format!("{}: {}", conf_path.display(), e.0))?
            .unwrap_or(Value::Map(Vec::new())),
        Err(_) => Value::Map(Vec::new()),
    };
    let local = cli.local || salt_states::get_str(&conf, "file_client") == Some("local");
    if !local {
        return master::run(&cli.config_dir, cli.id.as_deref(), &cli.fun, &cli.args).await;
    }
    let id = cli
        .id
        .clone()
        .or_else(|| salt_states::get_str(&conf, "id").map(str::to_owned))
        .unwrap_or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .map(|h| h.trim().to_owned())
                .unwrap_or_else(|_| "localhost".into())
        });
    let grains = salt_minion_core::grains::collect(&id);
    let mut positional = Vec::new();
    let mut kwargs: Vec<(String, Value)> = Vec::new();
    for a in &cli.args {
        match a.split_once('=') {
            Some((k, v)) if !k.is_empty() && k.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                kwargs.push((k.to_owned(), yamlify(v)))
            }
            _ => positional.push(a.clone()),
        }
    }
    let kw = |k: &str| kwargs.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    let saltenv_kw = kw("saltenv").map(salt_compat::py_str);
    // `pillar=` on the command line: a YAML/JSON map merged last (Salt's pillar_override).
    let pillar_override = match cli.args.iter().find_map(|a| a.strip_prefix("pillar=")) {
        Some(text) => match salt_render::yaml::load(text) {
            Ok(Some(m @ Value::Map(_))) => m,
            _ => return Err(
                "Pillar data must be formatted as a dictionary, unless pillar_enc is specified."
                    .into(),
            ),
        },
        None => Value::Nil,
    };
    let pillar = local_pillar(
        &conf,
        &cli,
        &id,
        &grains,
        saltenv_kw.clone(),
        kw("pillarenv").map(salt_compat::py_str),
        pillar_override,
    )?;
    match cli.fun.as_str() {
        "pillar.items" | "pillar.raw" => return Ok((pillar, 0, None)),
        "pillar.get" => {
            let key = positional
                .first()
                .cloned()
                .or_else(|| kw("key").map(salt_compat::py_str))
                .unwrap_or_default();
            let default = positional
                .get(1)
                .map(|d| yamlify(d))
                .or_else(|| kw("default").cloned())
                .unwrap_or_else(|| Value::from(""));
            let mut cur = Some(&pillar);
            for part in key.split(':') {
                cur = cur.and_then(|c| map_get(c, part));
            }
            return Ok((cur.cloned().unwrap_or(default), 0, None));
        }
        _ => {}
    }
    if cli.fun.starts_with("state.") {
        // Salt refuses to apply states on a pillar that failed to render.
        if let Some(Value::Array(errs)) = map_get(&pillar, "_errors") {
            let mut lines = vec![Value::from(
                "Pillar failed to render with the following messages:",
            )];
            lines.extend(errs.iter().cloned());
            return Ok((Value::Array(lines), 5, Some("highstate")));
        }
        for (k, _) in &kwargs {
            if cli.fun != "state.single"
                && !matches!(
                    k.as_str(),
                    "test" | "saltenv" | "mods" | "pillar" | "pillarenv" | "exclude"
                )
            {
                return Err(format!(
                    "{}: argument '{k}' is not supported by salt-rs",
                    cli.fun
                ));
            }
        }
        let mut hook_ctx =
            salt_minion_core::modules::ExecContext::new(&id, Arc::new(grains.clone()));
        hook_ctx.pillar = Arc::new(std::sync::RwLock::new(Some(pillar.clone())));
        hook_ctx.opts = Arc::new(conf.clone());
        let opts = Opts {
            salt: salt_minion_core::modules::state::salt_hook(&hook_ctx),
            id: id.clone(),
            grains,
            pillar,
            test: kw("test").is_some_and(salt_states::truthy)
                || map_get(&conf, "test").is_some_and(salt_states::truthy),
            failhard: map_get(&conf, "failhard").is_some_and(salt_states::truthy),
            saltenv: kw("saltenv")
                .map(salt_compat::py_str)
                .unwrap_or_else(|| "base".into()),
            opts: conf.clone(),
            exclude: match kw("exclude") {
                None => Vec::new(),
                Some(Value::Array(a)) => a.clone(),
                Some(Value::String(x)) => match salt_render::yaml::load(x.as_str().unwrap_or("")) {
                    Ok(Some(Value::Array(a))) => a,
                    _ => x
                        .as_str()
                        .unwrap_or("")
                        .split(',')
                        .map(Value::from)
                        .collect(),
                },
                Some(other) => vec![other.clone()],
            },
        };
        let client = Arc::new(LocalFileClient {
            roots: roots(&conf, "file_roots", "/srv/salt"),
        });
        let mut mods: Vec<String> = positional
            .iter()
            .flat_map(|m| m.split(',').map(str::to_owned).collect::<Vec<_>>())
            .filter(|m| !m.is_empty())
            .collect();
        if let Some(m) = kw("mods") {
            mods.extend(salt_compat::py_str(m).split(',').map(str::to_owned));
        }
        let outcome = match cli.fun.as_str() {
            "state.apply" if mods.is_empty() => salt_states::highstate(client, &opts),
            "state.highstate" => salt_states::highstate(client, &opts),
            "state.apply" | "state.sls" => salt_states::sls(client, &opts, &mods),
            "state.show_sls" => salt_states::show_sls(client, &opts, &mods),
            "state.show_top" => salt_states::show_top(client, &opts),
            "state.show_lowstate" => salt_states::show_lowstate(client, &opts),
            "state.single" => {
                let Some(f) = positional.first() else {
                    return Err("state.single needs a state function (e.g. file.managed)".into());
                };
                let mut kw: Vec<(String, Value)> = kwargs
                    .iter()
                    .filter(|(k, _)| {
                        !matches!(k.as_str(), "test" | "saltenv" | "pillar" | "pillarenv")
                    })
                    .cloned()
                    .collect();
                if let Some(n) = positional.get(1)
                    && !kw.iter().any(|(k, _)| k == "name")
                {
                    kw.insert(0, ("name".into(), Value::from(n.as_str())));
                }
                salt_states::single(client, &opts, f, &kw)
            }
            other => return Err(format!("'{other}' is not available.")),
        };
        let show = cli.fun.starts_with("state.show");
        let out = (!show).then_some("highstate");
        return Ok(match outcome {
            Ok(v) => {
                let failed = !show && !salt_states::all_ok(&v);
                (v, if failed { 2 } else { 0 }, out)
            }
            Err(errs) => (
                Value::Array(errs.into_iter().map(Value::from).collect()),
                1,
                out,
            ),
        });
    }
    let mut ctx = salt_minion_core::modules::ExecContext::new(&id, Arc::new(grains));
    ctx.pillar = Arc::new(std::sync::RwLock::new(Some(pillar)));
    ctx.opts = Arc::new(conf.clone());
    let raw = master::raw_args(&cli.args);
    let out = salt_minion_core::modules::call(&cli.fun, &raw, &Value::Map(Vec::new()), &ctx).await;
    let rc = i32::try_from(out.retcode).unwrap_or(1);
    Ok((out.ret, rc, out.out))
}

fn main() -> ExitCode {
    let cli = match parse_cli() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_new(match cli.log_level.as_str() {
        "garbage" | "trace" | "all" => "trace",
        "debug" | "profile" => "debug",
        "info" => "info",
        "error" | "critical" | "quiet" => "error",
        _ => "warn",
    })
    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
    let passthrough = cli.retcode_passthrough;
    let cli_out = cli.out.clone();
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
    match rt.block_on(run(cli)) {
        Ok((ret, rc, fun_out)) => {
            let out = if cli_out.is_empty() {
                fun_out.unwrap_or("nested")
            } else {
                cli_out.as_str()
            };
            let whole = Value::Map(vec![(Value::from("local"), ret)]);
            if out == "json" {
                // Salt's json outputter: `salt.utils.json.dumps(data, indent=4)`, the return's
                // order and non-ASCII kept.
                let opts = salt_render::JsonOpts {
                    indent: Some(4),
                    ..salt_render::JsonOpts::SALT
                };
                println!("{}", salt_render::py_json(&whole, opts));
            } else {
                let format = salt_output::OutputFormat::from_name(out)
                    .unwrap_or(salt_output::OutputFormat::Nested);
                let json = salt_compat::json::msgpack_to_json(&whole);
                println!("{}", salt_output::render(format, &json));
            }
            // Salt: a failed state is retcode 2 with --retcode-passthrough, 1 otherwise.
            let code = match (rc, passthrough) {
                (0, _) => 0,
                (r, true) => r,
                _ => 1,
            };
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::from(1)
        }
    }
}
