//! `config.values`: the master's configuration as Salt's wheel answers it, that is what
//! `salt.config.master_config(conf_file)` returns (Salt 3007.17, `salt/config/__init__.py`):
//!
//! 1. `DEFAULT_MASTER_OPTS` (generated from Salt into `data/salt-master-defaults.json` by
//!    `scripts/gen-salt-master-defaults.py`; `user`, `ssh_config_file` and `ipc_write_buffer`
//!    depend on the machine and are computed here, as Salt computes them);
//! 2. overlaid by the files, read as the master reads them ([`Sources::gather`]), each value
//!    as PyYAML with Salt's loader gives it (`0700` is the integer 700), `id` made a string,
//!    `conf_file` the file's path;
//! 3. then Salt's `apply_master_config` ([`apply`], in Salt's order), `_validate_ssh_minion_opts`,
//!    `_validate_opts`'s `return` joining and the `nodegroups` fix ([`finish`]).
//!
//! Where Salt raises (an invalid `ssl` or `discovery`, a type its code cannot handle), the
//! answer is a [`ValuesError::Invalid`] with Salt's message. What this does not do:
//! `sdb://` values are returned unresolved (salt-rs has no sdb), `id_function` is not called
//! (the default id is the host name, as the master's own), and without a `root_dir` in the
//! file a master not running as root reports its own default root (`$HOME/.salt-rs/master`),
//! where Salt would report `/`, since that is where this master keeps its files.
//! Nothing here logs the values: they hold the configuration's secrets.

mod checks;
mod root;

use std::path::Path;

use salt_compat::posixpath::{abspath, basename, isabs, join};
use salt_compat::{py_json_str, py_truthy_json};
use serde_json::{Map, Value, json};

use crate::error::ConfigErrors;
use crate::node::{Kind, Node};
use crate::source::{Sources, glob_unsorted};
use crate::{LoadOptions, common::default_id};

/// `DEFAULT_MASTER_OPTS` of Salt 3007.17, with the machine's values as [`COMPUTED`].
const DEFAULTS: &str = include_str!("../../data/salt-master-defaults.json");
/// The marker of a default computed at call time.
const COMPUTED: &str = "<computed>";

/// Why `config.values` has no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValuesError {
    /// A configuration file could not be read or parsed.
    #[error("{0}")]
    Files(#[from] ConfigErrors),
    /// What Salt's `master_config()` raises on these values (`SaltConfigurationError`, or a
    /// Python error for a value of a type its code does not expect): Salt's message.
    #[error("{0}")]
    Invalid(String),
}

/// The facts of the running process Salt's answer depends on.
#[derive(Clone, Debug)]
pub(crate) struct Facts {
    /// `__cli`: the base name of the master's `argv[0]`.
    pub(crate) cli: String,
    /// The default `user`: the user the master started as.
    pub(crate) user: String,
    /// The home directory (`ssh_config_file`).
    pub(crate) home: String,
    /// The working directory (relative paths).
    pub(crate) cwd: String,
    /// `_DFLT_IPC_WBUFFER`: half of the larger of 5% of the memory and 10 MiB.
    pub(crate) ipc_write_buffer: u64,
}

impl Facts {
    /// From the process: `argv[0]`, the user and home `opts` recorded at start (else the
    /// effective user's entry in passwd), the working directory, `/proc/meminfo`.
    fn of_process(opts: &LoadOptions) -> Self {
        let pw = nix::unistd::User::from_uid(nix::unistd::geteuid())
            .ok()
            .flatten();
        let argv0 = std::env::args_os().next().unwrap_or_default();
        let memory = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .unwrap_or(0)
            * 1024;
        Self {
            cli: basename(&argv0.to_string_lossy()).to_owned(),
            user: opts
                .user
                .clone()
                .or_else(|| pw.as_ref().map(|u| u.name.clone()))
                .unwrap_or_else(|| "root".to_owned()),
            home: opts
                .home
                .clone()
                .or_else(|| pw.as_ref().map(|u| u.dir.clone()))
                .unwrap_or_else(|| "/".into())
                .to_string_lossy()
                .into_owned(),
            cwd: std::env::current_dir()
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "/".to_owned()),
            ipc_write_buffer: ipc_write_buffer(memory),
        }
    }
}

/// `int(max(memory * 0.05, 10 << 20) * 0.5)`, in Python's float arithmetic.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
fn ipc_write_buffer(memory: u64) -> u64 {
    let space = (memory as f64 * 0.05).max(f64::from(10u32 << 20));
    (space * 0.5) as u64
}

/// The master's configuration as Salt's `config.values` wheel function answers it: Salt's
/// defaults, the files under `opts.config_dir` (`master`, `master.d/*.conf`, `include:`),
/// and Salt's `apply_master_config`. Re-reads the files on every call, as Salt does.
///
/// # Errors
/// A file that cannot be read or parsed; a value Salt's code raises on (Salt's message).
pub fn master_values(opts: &LoadOptions) -> Result<Value, ValuesError> {
    master_values_with(opts, &Facts::of_process(opts))
}

/// [`master_values`] with the process facts given.
pub(crate) fn master_values_with(opts: &LoadOptions, facts: &Facts) -> Result<Value, ValuesError> {
    let sources = Sources::gather(opts, "master");
    if !sources.errors.is_empty() {
        return Err(ConfigErrors {
            errors: sources.errors,
        }
        .into());
    }
    let main = opts.config_dir.join("master");
    let mut overrides = Map::new();
    for entry in &sources.entries {
        // `load_config` replaces the main file's own `conf_file` with the path it read.
        if entry.key == "conf_file" && entry.file == main {
            continue;
        }
        let mut value = py_value(&entry.node);
        // `_read_conf_file`: "allow using numeric ids: convert int to string".
        if entry.key == "id" && !value.is_string() {
            value = Value::String(py_json_str(&value));
        }
        overrides.insert(entry.key.clone(), value);
    }
    if sources.files.first() == Some(&main) && !overrides.contains_key("conf_file") {
        let dir = abspath(&opts.config_dir.to_string_lossy(), &facts.cwd);
        overrides.insert("conf_file".into(), json!(join(&dir, &["master"])));
    }
    // This master's own default root when not root (the crate's documentation says why).
    let root = opts.default_root_dir("master");
    if !overrides.contains_key("root_dir") && root != Path::new("/") {
        overrides.insert("root_dir".into(), json!(root.to_string_lossy()));
    }
    let mut opts_out = apply(overrides, defaults(facts), facts, opts)?;
    finish(&mut opts_out);
    Ok(Value::Object(opts_out))
}

/// `DEFAULT_MASTER_OPTS.copy()`, the computed defaults filled in.
fn defaults(facts: &Facts) -> Map<String, Value> {
    let doc: Value = serde_json::from_str(DEFAULTS).unwrap_or_default();
    let mut d = match doc.get("defaults") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for (key, value) in d.iter_mut() {
        if value != COMPUTED {
            continue;
        }
        *value = match key.as_str() {
            "user" => json!(facts.user),
            "ssh_config_file" => json!(join(&facts.home, &[".ssh", "config"])),
            "ipc_write_buffer" => json!(facts.ipc_write_buffer),
            _ => Value::Null,
        };
    }
    d
}

/// A YAML value as Salt's loader gives it to Python: [`Node::to_json`], except that a plain
/// scalar PyYAML reads as an octal-looking integer (`0700`, kept as text by our parser) is
/// the integer Salt's `SaltYamlSafeLoader` makes of it (decimal 700; with a sign, octal).
/// A quoted `'0700'` cannot be told apart from a plain one and becomes 700 too.
fn py_value(node: &Node) -> Value {
    match &node.kind {
        Kind::Str(s) => yaml11_octal(s).map_or_else(|| json!(s), Value::from),
        Kind::Seq(items) => Value::Array(items.iter().map(py_value).collect()),
        Kind::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (k.key_string(), py_value(v)))
                .collect(),
        ),
        _ => node.to_json(),
    }
}

/// PyYAML's YAML 1.1 octal integer form `[-+]?0[0-7_]+`, read as Salt's loader reads it.
fn yaml11_octal(s: &str) -> Option<i64> {
    let (sign, digits) = match s.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, s.strip_prefix('+').unwrap_or(s)),
    };
    let body = digits.strip_prefix('0')?;
    if body.is_empty() || !body.bytes().all(|b| matches!(b, b'0'..=b'7' | b'_')) {
        return None;
    }
    let clean: String = body.chars().filter(|c| *c != '_').collect();
    if clean.is_empty() {
        return Some(0);
    }
    // Salt strips the leading zeros of an unsigned one (decimal); a signed one stays octal.
    let radix = if s.starts_with(['-', '+']) { 8 } else { 10 };
    i64::from_str_radix(&clean, radix).ok().map(|v| sign * v)
}

/// The text of option `key`, or Salt's failure on a value of another type.
fn text(opts: &Map<String, Value>, key: &str) -> Result<String, ValuesError> {
    match opts.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        other => Err(ValuesError::Invalid(format!(
            "{key}: expected a string, found {}",
            other.map_or_else(|| "nothing".to_owned(), salt_compat::py_json_repr)
        ))),
    }
}

/// Whether option `key` is set to something Python finds true.
fn truthy(opts: &Map<String, Value>, key: &str) -> bool {
    opts.get(key).is_some_and(py_truthy_json)
}

/// Salt's `apply_master_config(overrides, defaults)`, step by step in Salt's order.
fn apply(
    mut overrides: Map<String, Value>,
    defaults: Map<String, Value>,
    facts: &Facts,
    load: &LoadOptions,
) -> Result<Map<String, Value>, ValuesError> {
    let mut opts = defaults;
    opts.insert("__role".into(), json!("master"));
    opts.insert("__fs_update".into(), json!(true));
    let default_log_file = text(&opts, "log_file")?;
    adjust_log_file_override(&mut overrides, &default_log_file);
    opts.extend(overrides.clone());

    if rest_eauth(opts.get("external_auth")) {
        opts.insert("keep_acl_in_token".into(), json!(true));
    }
    opts.insert("__cli".into(), json!(facts.cli));
    if let Some(env) = opts.get("environment").cloned() {
        match opts.get("saltenv") {
            Some(Value::Null) | None => opts.insert("saltenv".into(), env),
            Some(saltenv) => opts.insert("environment".into(), saltenv.clone()),
        };
    }
    if let Some(Value::Array(backends)) = opts.get_mut("fileserver_backend") {
        for b in backends.iter_mut() {
            if let Value::String(s) = b
                && matches!(s.as_str(), "git" | "hg" | "svn" | "minion")
            {
                s.push_str("fs");
            }
        }
    }
    let cachedir = text(&opts, "cachedir")?;
    let sock_dir = text(&opts, "sock_dir")?;
    if sock_dir.chars().count() > cachedir.chars().count() + 10 {
        opts.insert("sock_dir".into(), json!(join(&cachedir, &[".salt-unix"])));
    }
    opts.insert("token_dir".into(), json!(join(&cachedir, &["tokens"])));
    opts.insert("syndic_dir".into(), json!(join(&cachedir, &["syndics"])));
    if !truthy(&opts, "extension_modules") {
        let ext = join(&cachedir, &["extmods"]);
        opts.insert("extension_modules".into(), json!(ext));
    }
    if !truthy(&opts, "utils_dirs") {
        let ext = text(&opts, "extension_modules")?;
        opts.insert("utils_dirs".into(), json!([join(&ext, &["utils"])]));
    }
    if overrides.get("ipc_write_buffer") == Some(&json!("dynamic")) {
        opts.insert("ipc_write_buffer".into(), json!(facts.ipc_write_buffer));
    }
    if !overrides.contains_key("ipc_write_buffer") {
        opts.insert("ipc_write_buffer".into(), json!(0));
    }
    set_id(&mut opts, load);
    root::prepend_root_dirs(&mut opts, &facts.cwd)?;
    cluster(&mut opts);
    for key in ["open_mode", "auto_accept"] {
        let on = opts.get(key) == Some(&Value::Bool(true));
        opts.insert(key.into(), json!(on));
    }
    for key in ["file_roots", "pillar_roots"] {
        let roots = opts.remove(key).unwrap_or(Value::Null);
        opts.insert(key.into(), validate_file_roots(roots));
    }
    file_ignore(&mut opts)?;
    worker_threads(&mut opts)?;
    if !opts.contains_key("pillar_source_merging_strategy") {
        opts.insert("pillar_source_merging_strategy".into(), json!("smart"));
    }
    let hash_type = text(&opts, "hash_type")?.to_lowercase();
    opts.insert("hash_type".into(), json!(hash_type));
    checks::update_ssl_config(&mut opts)?;
    checks::update_discovery_config(&mut opts)?;
    checks::check_signing_algorithm(&opts)?;
    Ok(opts)
}

/// `"rest" in opts.get("external_auth", {})`.
fn rest_eauth(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Object(m)) => m.contains_key("rest"),
        Some(Value::Array(a)) => a.iter().any(|x| x == "rest"),
        Some(Value::String(s)) => s.contains("rest"),
        _ => false,
    }
}

/// `_adjust_log_file_override`: a `log_dir` given moves `log_file` into it.
fn adjust_log_file_override(overrides: &mut Map<String, Value>, default_log_file: &str) {
    let Some(Value::String(dir)) = overrides.get("log_dir").filter(|v| py_truthy_json(v)) else {
        return;
    };
    let dir = dir.clone();
    let file = match overrides.get("log_file").filter(|v| py_truthy_json(v)) {
        Some(Value::String(f)) if isabs(f) => return,
        Some(Value::String(f)) => join(&dir, &[f]),
        Some(_) => return,
        None => join(&dir, &[basename(default_log_file)]),
    };
    overrides.insert("log_file".into(), json!(file));
}

/// `id`: when unset, Salt's `get_id` (the cached `<root_dir>/etc/salt/minion_id`, else the
/// host name, with `minion_id_lowercase` and `minion_id_remove_domain`) plus `_master`;
/// `append_domain` unless the id is an IPv4 address.
fn set_id(opts: &mut Map<String, Value>, load: &LoadOptions) {
    let mut using_ip = false;
    let mut append_master = false;
    if !truthy(opts, "id") {
        let root = match opts.get("root_dir") {
            Some(Value::String(r)) => r.clone(),
            _ => "/".to_owned(),
        };
        let caching = opts.get("minion_id_caching").is_none_or(py_truthy_json);
        let mut id = default_id(load, Path::new(&root), caching);
        if truthy(opts, "minion_id_lowercase") {
            id = id.to_lowercase();
        }
        match opts.get("minion_id_remove_domain") {
            Some(Value::Bool(true)) => {
                if let Some((host, _)) = id.split_once('.') {
                    id = host.to_owned();
                }
            }
            Some(Value::String(d)) if !d.is_empty() => {
                let suffix = format!(".{}", d.to_uppercase());
                if id.to_uppercase().ends_with(&suffix) {
                    id.truncate(id.len() - suffix.len());
                }
            }
            _ => {}
        }
        using_ip = id.parse::<std::net::Ipv4Addr>().is_ok();
        append_master = true;
        opts.insert("id".into(), json!(id));
    }
    if !using_ip
        && let (Some(Value::String(id)), Some(Value::String(domain))) =
            (opts.get("id"), opts.get("append_domain"))
        && !id.ends_with(domain.as_str())
        && !id.ends_with('.')
    {
        let id = format!("{id}.{domain}");
        opts.insert("id".into(), json!(id));
    }
    if append_master && let Some(Value::String(id)) = opts.get_mut("id") {
        id.push_str("_master");
    }
}

/// `cluster_id`, `cluster_peers`, `cluster_pki_dir`: peers and a pki dir only with an id.
fn cluster(opts: &mut Map<String, Value>) {
    let id = opts.entry("cluster_id").or_insert(Value::Null).clone();
    if id.is_null() {
        if truthy(opts, "cluster_peers") {
            opts.insert("cluster_peers".into(), json!([]));
        }
        if truthy(opts, "cluster_pki_dir") {
            opts.insert("cluster_pki_dir".into(), Value::Null);
        }
    } else {
        if !truthy(opts, "cluster_peers") {
            opts.insert("cluster_peers".into(), json!([]));
        }
        if !truthy(opts, "cluster_pki_dir") {
            let pki = opts.get("pki_dir").cloned().unwrap_or(Value::Null);
            opts.insert("cluster_pki_dir".into(), pki);
        }
    }
}

/// `_validate_file_roots` (used by Salt for `pillar_roots` too): not a mapping gives
/// `{base: [/srv/salt]}`; each environment's list has its globs expanded, anything else
/// becomes `[]`.
fn validate_file_roots(roots: Value) -> Value {
    let Value::Object(envs) = roots else {
        return json!({"base": ["/srv/salt"]});
    };
    let expanded = envs
        .into_iter()
        .map(|(env, dirs)| {
            let dirs = match dirs {
                Value::Array(paths) => paths.into_iter().flat_map(expand_glob).collect(),
                _ => Vec::new(),
            };
            (env, Value::Array(dirs))
        })
        .collect();
    Value::Object(expanded)
}

/// `_expand_glob_path` for one entry: a pattern gives what `glob.glob` matches.
fn expand_glob(path: Value) -> Vec<Value> {
    match &path {
        Value::String(p) if p.contains(['*', '?', '[']) => glob_unsorted(Path::new(p))
            .into_iter()
            .map(|m| json!(m.to_string_lossy()))
            .collect(),
        _ => vec![path],
    }
}

/// `file_ignore_regex` (a list of the patterns that compile) and `file_ignore_glob` (a
/// list).
fn file_ignore(opts: &mut Map<String, Value>) -> Result<(), ValuesError> {
    if truthy(opts, "file_ignore_regex") {
        let list = match opts.get("file_ignore_regex").cloned() {
            Some(Value::String(s)) => vec![Value::String(s)],
            Some(Value::Array(a)) => a,
            other => {
                return Err(ValuesError::Invalid(format!(
                    "file_ignore_regex: expected a string or a list, found {}",
                    other
                        .as_ref()
                        .map_or_else(String::new, salt_compat::py_json_repr)
                )));
            }
        };
        // Salt keeps what Python's `re` compiles; this master's file server compiles
        // them with Rust's `regex` and refuses the others at start.
        let kept: Vec<Value> = list
            .into_iter()
            .filter(|r| r.as_str().is_some_and(|r| regex::Regex::new(r).is_ok()))
            .collect();
        opts.insert("file_ignore_regex".into(), Value::Array(kept));
    }
    if truthy(opts, "file_ignore_glob")
        && let Some(Value::String(s)) = opts.get("file_ignore_glob").cloned()
    {
        opts.insert("file_ignore_glob".into(), json!([s]));
    }
    Ok(())
}

/// `worker_threads` is at least 3 when `peer` is set.
fn worker_threads(opts: &mut Map<String, Value>) -> Result<(), ValuesError> {
    let below = match opts.get("worker_threads") {
        Some(Value::Number(n)) => n.as_f64().is_some_and(|n| n < 3.0),
        Some(Value::Bool(_)) => true,
        other => {
            return Err(ValuesError::Invalid(format!(
                "worker_threads: expected a number, found {}",
                other.map_or_else(String::new, salt_compat::py_json_repr)
            )));
        }
    };
    if below && truthy(opts, "peer") {
        opts.insert("worker_threads".into(), json!(3));
    }
    Ok(())
}

/// What `master_config` does after `apply_master_config`: `ssh_minion_opts` without the
/// file server and pillar options, a `return` list joined with commas, `nodegroups`
/// `None` made `{}` and a list of one-key mappings made one mapping.
fn finish(opts: &mut Map<String, Value>) {
    if let Some(v) = opts.get_mut("ssh_minion_opts") {
        match v {
            Value::Object(m) => m.retain(|name, _| {
                let lower = name.to_ascii_lowercase();
                let fs = lower.split_once("fs_").is_some_and(|(head, _)| {
                    !head.is_empty() && head.bytes().all(|b| b.is_ascii_alphanumeric())
                });
                !(fs || (name.contains("pillar") && name != "ssh_merge_pillar")
                    || name == "fileserver_backend")
            }),
            _ => {
                opts.remove("ssh_minion_opts");
            }
        }
    }
    if let Some(Value::Array(items)) = opts.get("return")
        && items.iter().all(Value::is_string)
    {
        let joined: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
        let joined = joined.join(",");
        opts.insert("return".into(), json!(joined));
    }
    match opts.get("nodegroups") {
        None | Some(Value::Null) => {
            opts.insert("nodegroups".into(), json!({}));
        }
        Some(Value::Array(items))
            if items
                .iter()
                .all(|i| i.as_object().is_some_and(|m| m.len() == 1)) =>
        {
            let packed: Map<String, Value> = items
                .iter()
                .filter_map(Value::as_object)
                .flat_map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())))
                .collect();
            opts.insert("nodegroups".into(), Value::Object(packed));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
