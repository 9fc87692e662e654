//! Pillar fixtures: the formula-style tree in `tests/data/pillar-golden` and real Salt's
//! answer for it (`salt-call --local`, no daemons), the golden that our master must match.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::{HarnessError, SaltVenv, run_with_timeout, workspace_root};

/// Node groups the tree's top file uses (`grouped`), as master/minion config YAML.
pub const NODEGROUPS: &str = "{grouped: 'L@pym1,other'}";

/// `tests/data/pillar-golden`.
pub fn golden_tree() -> PathBuf {
    workspace_root().join("tests/data/pillar-golden")
}

/// `salt-call --local <fun> --out json` of `venv` as minion `id` with `pillar_roots: tree`,
/// in `dir`: the `local` value.
pub fn salt_call_local(
    venv: &SaltVenv,
    dir: &Path,
    tree: &Path,
    id: &str,
    fun: &[&str],
) -> Result<serde_json::Value, HarnessError> {
    salt_call_local_with(venv, dir, tree, id, "", fun)
}

/// [`salt_call_local`] with `extra` appended to the minion's config (e.g. `ext_pillar`).
pub fn salt_call_local_with(
    venv: &SaltVenv,
    dir: &Path,
    tree: &Path,
    id: &str,
    extra: &str,
    fun: &[&str],
) -> Result<serde_json::Value, HarnessError> {
    let conf = dir.join("conf");
    std::fs::create_dir_all(&conf).map_err(|e| HarnessError::io(conf.display().to_string(), e))?;
    let root = dir.join("root");
    let text = format!(
        "id: {id}\nfile_client: local\nroot_dir: {r}\npki_dir: {r}/pki\ncachedir: {r}/cache\n\
         sock_dir: {r}/sock\nlog_file: {r}/log\npillar_roots: {{base: [{t}]}}\nnodegroups: {NODEGROUPS}\n{extra}",
        r = root.display(),
        t = tree.display(),
    );
    let file = conf.join("minion");
    std::fs::write(&file, text).map_err(|e| HarnessError::io(file.display().to_string(), e))?;
    let mut cmd = Command::new(venv.bin("salt-call"));
    cmd.arg("-c")
        .arg(&conf)
        .arg("--local")
        .args(fun)
        .args(["--out", "json"]);
    let out = run_with_timeout(cmd, Duration::from_secs(120))?.ok()?;
    let v: serde_json::Value =
        serde_json::from_str(out.stdout.trim()).map_err(|e| HarnessError::Command {
            cmd: out.cmd.clone(),
            status: format!("output is not JSON ({e})"),
            stderr: out.stderr.clone(),
        })?;
    Ok(v.get("local").cloned().unwrap_or(serde_json::Value::Null))
}

/// Salt's pillar (`salt-call --local pillar.items` of `venv`, as minion `pym1`, with `extra`
/// appended to its config) and ours for the same `pillar_roots: tree` and options
/// (`salt_pillar::compile` with `extra` read by our master's config loader), both as JSON;
/// `dir` holds both configurations. Bytes (`file_tree`) are Python's `repr`, as Salt prints
/// them. `key_cache: ''` is added to Salt's side (a masterless minion lacks the option its
/// node-group matching reads).
pub fn ours_and_salts(
    venv: &SaltVenv,
    dir: &Path,
    tree: &Path,
    extra: &str,
) -> Result<(serde_json::Value, serde_json::Value), String> {
    ours_and_salts_with(venv, dir, tree, extra, extra)
}

/// [`ours_and_salts`] with different options for Salt (`salt_extra`) and us (`our_extra`).
pub fn ours_and_salts_with(
    venv: &SaltVenv,
    dir: &Path,
    tree: &Path,
    salt_extra: &str,
    our_extra: &str,
) -> Result<(serde_json::Value, serde_json::Value), String> {
    let (extra, salt) = (our_extra, dir.join("salt"));
    // The minion's key accepted (node groups match accepted minions only).
    let accepted = salt.join("root/pki/minions");
    std::fs::create_dir_all(&accepted).map_err(|e| format!("{}: {e}", accepted.display()))?;
    std::fs::write(accepted.join("pym1"), "").map_err(|e| e.to_string())?;
    let grains = python_grains(venv, &salt, tree)?;
    let want = salt_call_local_with(
        venv,
        &salt,
        tree,
        "pym1",
        &format!("key_cache: ''\n{salt_extra}"),
        &["pillar.items"],
    )
    .map_err(|e| e.to_string())?;
    let conf = dir.join("ours");
    std::fs::create_dir_all(&conf).map_err(|e| format!("{}: {e}", conf.display()))?;
    let file = conf.join("master");
    std::fs::write(
        &file,
        format!(
            "root_dir: {}\npillar_roots: {{base: [{}]}}\nnodegroups: {NODEGROUPS}\n{extra}",
            conf.display(),
            tree.display()
        ),
    )
    .map_err(|e| format!("{}: {e}", file.display()))?;
    let loaded = salt_config::MasterConfig::load(&salt_config::LoadOptions::new(&conf))
        .map_err(|e| format!("our config loader: {e}"))?;
    if let Some(w) = loaded.warnings.iter().find(|w| w.contains("ext_pillar")) {
        return Err(format!("our config loader warned: {w}"));
    }
    let req = salt_pillar::Request {
        id: "pym1".into(),
        grains: salt_compat::json::json_to_msgpack(&grains),
        saltenv: None,
        pillarenv: None,
        pillar_override: rmpv::Value::Nil,
        ext: None,
        salt: salt_pillar::SaltHook::default(),
    };
    let ours = salt_pillar::compile(&salt_pillar::Options::from(&loaded.config), &req);
    Ok((pillar_json(&ours), want))
}

/// `venv`'s `grains.items` as minion `pym1` (the grains of this machine, whatever the
/// options), asked once per venv and test binary: a case of [`ours_and_salts`] then costs
/// one Python `salt-call`, not two.
fn python_grains(venv: &SaltVenv, dir: &Path, tree: &Path) -> Result<serde_json::Value, String> {
    static CACHE: std::sync::Mutex<Vec<(PathBuf, serde_json::Value)>> =
        std::sync::Mutex::new(Vec::new());
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, g)) = cache.iter().find(|(d, _)| *d == venv.dir) {
        return Ok(g.clone());
    }
    let g = salt_call_local_with(venv, dir, tree, "pym1", "", &["grains.items"])
        .map_err(|e| e.to_string())?;
    cache.push((venv.dir.clone(), g.clone()));
    Ok(g)
}

/// A compiled pillar as Salt's JSON outputter prints it: bytes as Python's `repr`.
pub fn pillar_json(v: &rmpv::Value) -> serde_json::Value {
    use rmpv::Value as V;
    match v {
        V::Binary(b) => serde_json::Value::String(py_bytes_repr(b)),
        V::Array(a) => serde_json::Value::Array(a.iter().map(pillar_json).collect()),
        V::Map(m) => serde_json::Value::Object(
            m.iter()
                .map(|(k, v)| (salt_compat::py_str(k), pillar_json(v)))
                .collect(),
        ),
        other => salt_compat::json::msgpack_to_json(other),
    }
}

/// Python's `repr` of `bytes`.
fn py_bytes_repr(b: &[u8]) -> String {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') {
        b'"'
    } else {
        b'\''
    };
    let mut out = format!("b{}", quote as char);
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c as char);
            }
            c if !(0x20..0x7f).contains(&c) => out.push_str(&format!("\\x{c:02x}")),
            c => out.push(c as char),
        }
    }
    out.push(quote as char);
    out
}
