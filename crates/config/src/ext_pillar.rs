//! `ext_pillar` and `master_tops`: the master's external data sources (issue 36).
//!
//! An `ext_pillar` list item is a one-key mapping `{module: argument}` (the argument a string,
//! a list of positional arguments or a mapping of keyword arguments), run in order after
//! (or, with `ext_pillar_first`, before) the top-file pillar. A module Salt has and salt-rs
//! does not is refused at start by name: a site's pillar must not silently go empty.
//! `master_tops`: `ext_nodes` only; any other module is refused the same way.

use crate::node::{Kind, Node};
use crate::reader::Reader;
use crate::types::invalid;
use crate::{OptionDoc, Problem, reader::string_list};

/// The `ext_pillar` modules salt-rs implements (crates/pillar `ext`).
pub const EXT_PILLAR_MODULES: &[&str] = &[
    "cmd_json",
    "cmd_yaml",
    "cmd_yamlex",
    "file_tree",
    "git",
    "http_json",
    "http_yaml",
    "postgres",
    "stack",
];

/// One `ext_pillar` item: the module's name and its argument as written.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtPillar {
    /// Module name (`cmd_json`, ...).
    pub module: String,
    /// The argument: a string, a list (positional) or a mapping (keyword arguments).
    pub arg: serde_json::Value,
    /// For `git` (git_pillar): its remotes, read and checked.
    pub git: Vec<crate::GitPillarRemote>,
}

/// Reads `ext_pillar`: a list of one-key mappings naming implemented modules.
pub(crate) fn ext_pillar_list(node: &Node) -> Result<Vec<ExtPillar>, Problem> {
    let Kind::Seq(items) = &node.kind else {
        return Err(invalid(
            &node.describe(),
            "The \"ext_pillar\" option is malformed: expected a list of {module: argument}",
        ));
    };
    let mut out = Vec::new();
    for item in items {
        let Kind::Map(entries) = &item.kind else {
            return Err(invalid(
                &item.describe(),
                "The \"ext_pillar\" option is malformed: each item is {module: argument}",
            ));
        };
        if entries.len() != 1 {
            return Err(invalid(
                &item.to_json().to_string(),
                "an ext_pillar item with other than one module is not implemented by salt-rs \
                 (write one list item per module)",
            ));
        }
        let (name, arg) = &entries[0];
        let module = name.key_string();
        check_module(&module)?;
        let git = if module == "git" {
            crate::fileserver::git_pillar_remotes(arg)?
        } else {
            Vec::new()
        };
        let arg = arg.to_json();
        if module == "file_tree" {
            refuse_file_tree_template(&arg)?;
        }
        out.push(ExtPillar { module, arg, git });
    }
    Ok(out)
}

/// `file_tree` with `template: True` (its files rendered) is refused by name.
fn refuse_file_tree_template(arg: &serde_json::Value) -> Result<(), Problem> {
    let template = match arg {
        serde_json::Value::Object(m) => m.get("template"),
        serde_json::Value::Array(a) => a.get(7),
        _ => None,
    };
    let on = match template {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::String(s)) => !s.is_empty(),
        Some(serde_json::Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(serde_json::Value::Array(a)) => !a.is_empty(),
        Some(serde_json::Value::Object(m)) => !m.is_empty(),
    };
    if on {
        return Err(invalid(
            "file_tree",
            "ext_pillar module `file_tree` with `template: True` (rendering the files) is not \
             implemented by salt-rs; refusing to start rather than serve the files unrendered",
        ));
    }
    Ok(())
}

/// `ext_pillar` of a masterless minion: as the master's, but git_pillar is refused (the
/// minion has no fetcher for it).
pub(crate) fn masterless_list(node: &Node) -> Result<Vec<ExtPillar>, Problem> {
    let list = ext_pillar_list(node)?;
    if let Some(e) = list.iter().find(|e| e.module == "postgres") {
        return Err(invalid(
            &e.module,
            "ext_pillar module `postgres` on a masterless minion is not implemented by salt-rs \
             (the master's is); refusing to start rather than serve a pillar without it",
        ));
    }
    if list.iter().any(|e| e.module == "git") {
        return Err(invalid(
            "git",
            "ext_pillar module `git` (git_pillar) on a masterless minion is not implemented by \
             salt-rs (the master's is); refusing to start rather than serve a pillar without it",
        ));
    }
    Ok(list)
}

/// Refuses, by name, an `ext_pillar` module salt-rs does not implement.
pub fn check_module(module: &str) -> Result<(), Problem> {
    if EXT_PILLAR_MODULES.contains(&module) {
        return Ok(());
    }
    let what = "not implemented by salt-rs";
    Err(Problem::Invalid {
        value: module.to_owned(),
        reason: format!(
            "ext_pillar module `{module}`: {what} (implemented: {}); refusing to start rather \
             than serve a pillar without it",
            EXT_PILLAR_MODULES.join(", ")
        ),
    })
}

/// The `postgres` option: the connection of the `postgres` external pillar (Salt's
/// `POSTGRESExtPillar._get_options`: each key missing takes its default).
#[derive(Clone, Debug, PartialEq)]
pub struct PgPillarConn {
    /// Host name, address, or the directory of a Unix socket.
    pub host: String,
    /// User.
    pub user: String,
    /// Password.
    pub pass: crate::Secret,
    /// Database.
    pub db: String,
    /// Port.
    pub port: u16,
}

impl Default for PgPillarConn {
    fn default() -> Self {
        Self {
            host: "localhost".to_owned(),
            user: "salt".to_owned(),
            pass: crate::Secret::new("salt".to_owned()),
            db: "salt".to_owned(),
            port: 5432,
        }
    }
}

/// Reads `postgres: {host, user, pass, db, port}`.
pub(crate) fn pg_conn(node: &Node) -> Result<PgPillarConn, Problem> {
    let Kind::Map(entries) = &node.kind else {
        return Err(invalid(
            &node.describe(),
            "expected a mapping {host, user, pass, db, port}",
        ));
    };
    let mut c = PgPillarConn::default();
    for (k, v) in entries {
        let text = || match v.to_json() {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        match k.key_string().as_str() {
            "host" => c.host = text(),
            "user" => c.user = text(),
            "pass" => c.pass = crate::Secret::new(text()),
            "db" => c.db = text(),
            "port" => {
                c.port = text()
                    .parse()
                    .map_err(|_| invalid(&text(), "postgres: port must be a port number"))?;
            }
            _ => {}
        }
    }
    Ok(c)
}

/// Reads `on_demand_ext_pillar`: module names a minion may ask for in its `ext`.
pub(crate) fn on_demand(node: &Node) -> Result<Vec<String>, Problem> {
    string_list(node)
}

/// Reads `master_tops`: `ext_nodes: <command>` (its command); any other module is refused by
/// name.
pub(crate) fn master_tops(node: &Node) -> Result<Option<String>, Problem> {
    match &node.kind {
        Kind::Map(entries) if entries.is_empty() => Ok(None),
        Kind::Map(entries) => {
            let names: Vec<String> = entries.iter().map(|(k, _)| k.key_string()).collect();
            let others: Vec<&String> = names.iter().filter(|n| *n != "ext_nodes").collect();
            if !others.is_empty() {
                let list: Vec<&str> = others.iter().map(|s| s.as_str()).collect();
                return Err(Problem::Invalid {
                    value: list.join(", "),
                    reason: format!(
                        "master_tops module(s) `{}` not implemented by salt-rs (implemented: \
                         ext_nodes); refusing to start rather than serve a highstate without \
                         them",
                        list.join("`, `")
                    ),
                });
            }
            crate::reader::string(&entries[0].1).map(Some)
        }
        _ => Err(invalid(
            &node.describe(),
            "expected a mapping of tops modules",
        )),
    }
}

/// Master options of the data-source family salt-rs does not implement, and what it lacks:
/// set to anything that asks for something, each stops the master by name (a site's job
/// cache, pillar or secrets must not silently go missing); Salt's default (empty, `False`)
/// is accepted quietly.
const REFUSED: [(&str, &str); 3] = [
    (
        "ext_job_cache",
        "the external job cache (minions returning to a returner the master also saves \
         loads to) is not implemented by salt-rs; use `master_job_cache: postgres` (Salt's \
         postgres returner tables), or `salt --return <returner>` per job",
    ),
    (
        "pillar_opts",
        "the master's configuration as pillar (`pillar_opts: True`) is not implemented by \
         salt-rs; refusing to start rather than serve a pillar without its `master` key",
    ),
    (
        "decrypt_pillar",
        "pillar decryption (`decrypt_pillar`, the gpg renderer) is not implemented by \
         salt-rs; refusing to start rather than serve the values still encrypted",
    ),
];

/// Records a start-up error for each [`REFUSED`] option set to something that asks.
pub(crate) fn refuse_unimplemented(r: &mut Reader<'_>) {
    for (key, lacks) in REFUSED {
        r.get(key, (), |n| {
            let asks = match &n.kind {
                Kind::Null => false,
                Kind::Bool(b) => *b,
                Kind::Str(s) => !s.is_empty(),
                Kind::Seq(items) => !items.is_empty(),
                Kind::Map(entries) => !entries.is_empty(),
                _ => true,
            };
            if asks {
                Err(invalid(key, lacks))
            } else {
                Ok(())
            }
        });
    }
}

/// Option-table rows for [`REFUSED`].
pub(crate) fn refused_docs() -> Vec<OptionDoc> {
    let defaults = ["''", "False", "[]"];
    REFUSED
        .iter()
        .zip(defaults)
        .map(|((name, lacks), default)| OptionDoc {
            name,
            default,
            doc: format!("Refused when set: {lacks}."),
        })
        .collect()
}
