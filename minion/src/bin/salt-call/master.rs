//! `salt-call` against a master: sign in with the minion's keys, pillar from the master,
//! the function through the minion's execution modules, the return sent back to the master
//! as Salt's `salt-call` does (`_return`, `jid: req`).

use std::path::Path;
use std::sync::{Arc, RwLock};

use rmpv::Value;
use salt_minion_core::modules::{self, ExecContext};

use super::Ran;
use crate::settings;

/// Salt's `parse_input`: `key=value` strings become one `__kwarg__` map (values YAML-loaded,
/// maps and lists included), the others stay positional strings.
pub fn raw_args(args: &[String]) -> Vec<Value> {
    let mut raw = Vec::new();
    let mut kw: Vec<(Value, Value)> = Vec::new();
    for a in args {
        match a.split_once('=') {
            Some((k, v))
                if !k.is_empty()
                    && !v.starts_with('=')
                    && k.chars()
                        .next()
                        .is_some_and(|c| c.is_alphabetic() || c == '_')
                    && k.chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '-') =>
            {
                let val = match salt_render::yaml::load(v) {
                    Ok(Some(x)) => x,
                    Ok(None) => Value::Nil,
                    Err(_) => Value::from(v),
                };
                kw.push((Value::from(k), val));
            }
            _ => raw.push(Value::from(a.as_str())),
        }
    }
    if !kw.is_empty() {
        kw.push((Value::from("__kwarg__"), Value::Boolean(true)));
        raw.push(Value::Map(kw));
    }
    raw
}

/// Salt's caller: a zero retcode with a `result`/`success` of False in a dict return is 1.
fn retcode(ret: &Value, rc: i64) -> i64 {
    if rc != 0 {
        return rc;
    }
    let failed = ["result", "success"]
        .iter()
        .any(|k| salt_compat::map_get(ret, k) == Some(&Value::Boolean(false)));
    i64::from(failed)
}

/// Run `fun` with `args` against the master of the minion config in `config_dir`.
pub async fn run(
    config_dir: &Path,
    id: Option<&str>,
    fun: &str,
    args: &[String],
) -> Result<Ran, String> {
    let opts = salt_config::LoadOptions::from_system(Some(config_dir.to_path_buf()));
    let loaded = salt_config::MinionConfig::load(&opts).map_err(|e| e.to_string())?;
    let mut cfg = loaded.config;
    if let Some(id) = id {
        cfg.id = id.to_owned();
    }
    settings::prepare_dirs(&cfg).map_err(|e| e.to_string())?;
    let s = settings::from_config(&cfg).map_err(|e| e.to_string())?;
    let link = salt_minion_core::signin::sign_in(&s).await?;
    let pillar = link
        .pillar(&s.grains, None, None, Value::Map(Vec::new()))
        .await
        .map_err(|e| format!("{e} (the master did not compile a pillar for {})", s.id))?;
    let conf_text = std::fs::read_to_string(config_dir.join("minion")).unwrap_or_default();
    let conf = salt_render::yaml::load(&conf_text)
        .ok()
        .flatten()
        .unwrap_or(Value::Map(Vec::new()));
    let mut ctx = ExecContext::new(&s.id, s.grains.clone());
    ctx.master = Some(link.clone());
    ctx.pillar = Arc::new(RwLock::new(Some(pillar)));
    ctx.cachedir = cfg.cachedir.clone();
    ctx.opts = Arc::new(conf);
    let out = modules::call(fun, &raw_args(args), &Value::Map(Vec::new()), &ctx).await;
    let rc = retcode(&out.ret, out.retcode);
    // Salt's caller returns the job to the master (`jid: req`), ignoring failures.
    let mut load = vec![
        (Value::from("cmd"), Value::from("_return")),
        (Value::from("id"), Value::from(s.id.as_str())),
        (Value::from("jid"), Value::from("req")),
        (Value::from("return"), out.ret.clone()),
        (Value::from("retcode"), Value::from(rc)),
    ];
    if let Some(o) = out.out {
        load.push((Value::from("out"), Value::from(o)));
    }
    load.push((Value::from("fun"), Value::from(fun)));
    load.push((
        Value::from("fun_args"),
        Value::Array(args.iter().map(|a| Value::from(a.as_str())).collect()),
    ));
    if let Err(e) = link.send(&Value::Map(load)).await {
        tracing::debug!("Returning the job to the master failed: {e}");
    }
    Ok((out.ret, i32::try_from(rc).unwrap_or(1), out.out))
}
