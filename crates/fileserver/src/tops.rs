//! `_master_tops` (Salt's `RemoteFuncs._master_tops` over `salt/tops/ext_nodes.py`): the
//! `ext_nodes` command run through the shell as `<command> <minion id>` in the master's
//! working directory; its stdout read as YAML: `classes` (a list, or a mapping's keys) under
//! `environment` (else `base`). Output without `classes`, or none, answers `{}` (logged).

use std::process::{Command, Stdio};

use salt_proto::Value;

/// The `_master_tops` answer for minion `id`.
pub(crate) fn ext_nodes(command: &str, id: &str) -> Value {
    let empty = || Value::Map(Vec::new());
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{command} {id}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            tracing::error!("master_tops ext_nodes: cannot run {command:?}: {e}");
            return empty();
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let ndata = match salt_render::yaml::load(&text) {
        Ok(Some(v)) if truthy(&v) => v,
        Ok(_) => {
            tracing::info!("master_tops ext_nodes call did not return any data");
            return empty();
        }
        Err(e) => {
            tracing::error!("master_tops ext_nodes: output of {command:?} is not YAML: {e}");
            return empty();
        }
    };
    let env = salt_compat::map_get(&ndata, "environment")
        .cloned()
        .unwrap_or_else(|| Value::from("base"));
    let classes = match salt_compat::map_get(&ndata, "classes") {
        Some(Value::Map(m)) => Value::Array(m.iter().map(|(k, _)| k.clone()).collect()),
        Some(v @ Value::Array(_)) => v.clone(),
        Some(_) => return empty(),
        None => {
            tracing::info!(
                "master_tops ext_nodes call did not have a dictionary with a \"classes\" key."
            );
            return empty();
        }
    };
    Value::Map(vec![(env, classes)])
}

use salt_compat::py_truthy as truthy;
