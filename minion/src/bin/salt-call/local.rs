//! `salt-call --local` (or `file_client: local`): the minion's options from its config file
//! with the command line's overrides, and a masterless execution context.

use std::sync::{Arc, RwLock};

use rmpv::Value;
use salt_minion_core::masterless::Masterless;
use salt_minion_core::modules::ExecContext;

use crate::cli::Cli;

/// The minion config file as an options map (`{}` when there is none), with the command
/// line's `--local`, `--file-root`, `--pillar-root`, `--id` and `--master` applied as Salt's
/// `salt/cli/call.py` applies them.
pub fn read_conf(cli: &Cli) -> Result<Value, String> {
    let mut conf = crate::settings::file_opts(&cli.config_dir.join("minion"))?;
    let Value::Map(map) = &mut conf else {
        return Err("the minion config is not a map of options".to_owned());
    };
    let mut set = |k: &str, v: Value| match map.iter_mut().find(|(key, _)| key.as_str() == Some(k))
    {
        Some(slot) => slot.1 = v,
        None => map.push((Value::from(k), v)),
    };
    let base = |dir: &std::path::Path| -> Result<Value, String> {
        let abs = std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Value::Map(vec![(
            Value::from("base"),
            Value::Array(vec![Value::from(abs.display().to_string())]),
        )]))
    };
    if let Some(dir) = &cli.file_root {
        set("file_roots", base(dir)?);
    }
    if let Some(dir) = &cli.pillar_root {
        set("pillar_roots", base(dir)?);
    }
    if cli.local {
        set("file_client", Value::from("local"));
    }
    if let Some(id) = &cli.id {
        set("id", Value::from(id.as_str()));
    }
    if let Some(m) = &cli.master {
        set("master", Value::from(m.as_str()));
    }
    Ok(conf)
}

/// `--states-dir`: custom state modules are Python; a directory holding any is refused by
/// name rather than ignored.
fn check_states_dir(cli: &Cli) -> Result<(), String> {
    let Some(dir) = &cli.states_dir else {
        return Ok(());
    };
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("--states-dir {}: {e}", dir.display()))?;
    let py: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".py"))
        .collect();
    if py.is_empty() {
        return Ok(());
    }
    Err(format!(
        "--states-dir {}: custom state modules need Python and are not available in salt-rs: {}",
        dir.display(),
        py.join(", ")
    ))
}

/// The masterless context: grains, the pillar compiled from `pillar_roots` (with the
/// options' `saltenv`/`pillarenv`, as Salt's minion compiles it at start), `file_roots`.
pub fn context(cli: &Cli, conf: Value) -> Result<ExecContext, String> {
    check_states_dir(cli)?;
    let id = salt_states::get_str(&conf, "id")
        .map(str::to_owned)
        .unwrap_or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .map(|h| h.trim().to_owned())
                .unwrap_or_else(|_| "localhost".into())
        });
    let master = salt_compat::map_get(&conf, "master")
        .cloned()
        .unwrap_or_else(|| Value::from("salt"));
    let grains = Arc::new(salt_minion_core::grains::collect(&id, master));
    let local = Masterless::from_opts(&conf)?;
    let local = Arc::new(local);
    let mut ctx = ExecContext::new(&id, grains.clone());
    if let Some(dir) = salt_states::get_str(&conf, "cachedir") {
        ctx.cachedir = dir.into();
    }
    let (saltenv, pillarenv) = (
        salt_states::get_str(&conf, "saltenv").map(str::to_owned),
        salt_states::get_str(&conf, "pillarenv").map(str::to_owned),
    );
    ctx.opts = Arc::new(conf);
    ctx.local = Some(local.clone());
    // Salt renders the masterless pillar with the minion's modules in `salt[...]`.
    let pillar = local.pillar(
        &id,
        &grains,
        saltenv.as_deref(),
        pillarenv.as_deref(),
        Value::Map(Vec::new()),
        salt_minion_core::modules::state::salt_hook(&ctx),
    );
    ctx.pillar = Arc::new(RwLock::new(Some(pillar)));
    Ok(ctx)
}
