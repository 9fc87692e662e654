//! Salt's venvs, found relative to the workspace (or where the environment says).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Missing, workspace_root};

/// The Salt releases the interop tests run against (`.ci/run` makes a venv of each).
pub const SALT_VERSIONS: [&str; 3] = ["3006.30", "3007.17", "3008.5"];

/// The release a test uses when it needs one Salt, not a particular one.
pub const DEFAULT_SALT_VERSION: &str = "3007.17";

/// A directory is a Salt venv when it has `bin/python` and `bin/salt-minion`.
fn is_venv(dir: &Path) -> bool {
    dir.join("bin/python").exists() && dir.join("bin/salt-minion").is_file()
}

/// Directories named by `SALT_VENVS` (`:`-separated), then `SALT_VENV`.
fn from_env() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    if let Some(list) = std::env::var_os("SALT_VENVS") {
        out.extend(std::env::split_paths(&list).filter(|p| !p.as_os_str().is_empty()));
    }
    if let Some(v) = std::env::var_os("SALT_VENV").filter(|v| !v.is_empty()) {
        out.push(PathBuf::from(v));
    }
    out
}

/// `<workspace>/.venv/salt-<version>`.
fn in_workspace(version: &str) -> PathBuf {
    workspace_root()
        .join(".venv")
        .join(format!("salt-{version}"))
}

/// The Salt release installed in `dir`: from its name `salt-<version>`, else by asking its
/// Python.
fn version_of(dir: &Path) -> Option<String> {
    if let Some(v) = dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("salt-"))
        .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
    {
        return Some(v.to_owned());
    }
    let out = Command::new(dir.join("bin/python"))
        .args(["-c", "import salt.version; print(salt.version.__version__)"])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !v.is_empty()).then_some(v)
}

fn missing(version: &str) -> Missing {
    Missing::new(format!(
        "no Salt {version} venv (SALT_VENVS, SALT_VENV or .venv/salt-{version}; \
         .ci/run or scripts/salt-venv.sh {version} makes it)"
    ))
}

/// The venv of Salt `version`: the first of `SALT_VENVS`, `SALT_VENV` that holds that
/// release, else `<workspace>/.venv/salt-<version>`.
pub fn salt_venv(version: &str) -> Result<PathBuf, Missing> {
    from_env()
        .into_iter()
        .filter(|d| is_venv(d))
        .find(|d| version_of(d).as_deref() == Some(version))
        .or_else(|| Some(in_workspace(version)).filter(|d| is_venv(d)))
        .ok_or_else(|| missing(version))
}

/// A Salt venv of any release, for tests that need Salt but not a particular one:
/// `SALT_VENV`, else the first of `SALT_VENVS`, else `<workspace>/.venv/salt-3007.17`, else
/// any other of [`SALT_VERSIONS`] there.
pub fn any_salt_venv() -> Result<PathBuf, Missing> {
    let env = std::env::var_os("SALT_VENV").filter(|v| !v.is_empty());
    env.map(PathBuf::from)
        .into_iter()
        .chain(from_env())
        .chain(std::iter::once(in_workspace(DEFAULT_SALT_VERSION)))
        .chain(SALT_VERSIONS.iter().map(|v| in_workspace(v)))
        .find(|d| is_venv(d))
        .ok_or_else(|| missing(DEFAULT_SALT_VERSION))
}

/// Every Salt venv found (the environment's, then the workspace's), with its release, one per
/// release, in the order found.
pub fn salt_venvs() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    let dirs = from_env()
        .into_iter()
        .chain(SALT_VERSIONS.iter().map(|v| in_workspace(v)));
    for dir in dirs.filter(|d| is_venv(d)) {
        if let Some(v) = version_of(&dir)
            && out.iter().all(|(have, _)| *have != v)
        {
            out.push((v, dir));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_come_from_the_directory_name() {
        assert_eq!(
            version_of(Path::new("/nowhere/salt-3006.30")).as_deref(),
            Some("3006.30")
        );
        assert_eq!(version_of(Path::new("/nowhere/venv")), None);
    }

    #[test]
    fn a_missing_venv_says_which_and_how_to_make_it() {
        let m = salt_venv("2015.8.0").unwrap_err();
        assert!(m.reason().starts_with("no Salt 2015.8.0 venv"), "{m}");
        assert!(m.reason().contains("scripts/salt-venv.sh 2015.8.0"), "{m}");
    }
}
