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
