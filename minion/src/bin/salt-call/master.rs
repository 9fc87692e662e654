//! `salt-call` against a master: sign in with the minion's keys, pillar from the master,
//! the function through the minion's execution modules, the return sent back to the master
//! as Salt's `salt-call` does (`_return`, `jid: req`).

use std::sync::{Arc, RwLock};

use rmpv::Value;
use salt_minion_core::modules::ExecContext;

use crate::cli::Cli;
use crate::{Ran, settings};

/// Run the function of `cli` against the master of the minion config (`conf`: the config
/// file as an options map, for templates' `opts`).
pub async fn run(cli: &Cli, conf: Value) -> Result<Ran, String> {
    let opts = salt_config::LoadOptions::from_system(Some(cli.config_dir.clone()));
    let loaded = salt_config::MinionConfig::load(&opts).map_err(|e| e.to_string())?;
    let mut cfg = loaded.config;
    if let Some(id) = &cli.id {
        cfg.id = id.clone();
    }
    if let Some(m) = &cli.master {
        let addr = salt_config::MasterAddr::parse(m).map_err(|e| format!("--master {m}: {e}"))?;
        cfg.master = salt_config::Masters::One(addr);
    }
    settings::prepare_dirs(&cfg).map_err(|e| e.to_string())?;
    let s = settings::from_config(&cfg).map_err(|e| e.to_string())?;
    if cli.grains_run {
        return Ok(Ran {
            ret: (*s.grains).clone(),
            retcode: 0,
            out: None,
        });
    }
    let link = salt_minion_core::signin::sign_in(&s).await?;
    let pillar = link
        .pillar(&s.grains, None, None, Value::Map(Vec::new()))
        .await
        .map_err(|e| format!("{e} (the master did not compile a pillar for {})", s.id))?;
    let mut ctx = ExecContext::new(&s.id, s.grains.clone());
    ctx.master = Some(link.clone());
    ctx.pillar = Arc::new(RwLock::new(Some(pillar)));
    ctx.cachedir = cfg.cachedir.clone();
    ctx.opts = Arc::new(conf);
    let ran = crate::call(cli, &ctx).await;
    if cli.no_return_event {
        return Ok(ran);
    }
    // Salt's caller returns the job to the master (`jid: req`), ignoring failures.
    let mut load = vec![
        (Value::from("cmd"), Value::from("_return")),
        (Value::from("id"), Value::from(s.id.as_str())),
        (Value::from("jid"), Value::from("req")),
        (Value::from("return"), ran.ret.clone()),
        (Value::from("retcode"), Value::from(ran.retcode)),
    ];
    if let Some(o) = ran.out {
        load.push((Value::from("out"), Value::from(o)));
    }
    load.push((Value::from("fun"), Value::from(cli.fun())));
    load.push((
        Value::from("fun_args"),
        Value::Array(cli.args.iter().map(|a| Value::from(a.as_str())).collect()),
    ));
    if let Err(e) = link.send(&Value::Map(load)).await {
        tracing::debug!("Returning the job to the master failed: {e}");
    }
    Ok(ran)
}
