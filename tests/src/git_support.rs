//! Salt's master with GitPython (its gitfs and git_pillar provider), for the git interop
//! tests: installed once into `target/gitfs-gitpython` and put on the master's `PYTHONPATH`.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{SaltVenv, workspace_root};

/// GitPython for Salt's master: a `--target` directory the master gets on `PYTHONPATH`.
pub fn gitpython(venv: &SaltVenv) -> Option<PathBuf> {
    let dir = workspace_root().join("target/gitfs-gitpython");
    if dir.join("git/__init__.py").is_file() {
        return Some(dir);
    }
    let out = Command::new(venv.bin("pip"))
        .args(["install", "-q", "--target"])
        .arg(&dir)
        .arg("GitPython")
        .output()
        .ok()?;
    dir.join("git/__init__.py")
        .is_file()
        .then_some(dir)
        .or_else(|| {
            eprintln!("pip: {}", String::from_utf8_lossy(&out.stderr));
            None
        })
}

/// A venv-shaped directory whose `bin/*` run the real venv's with GitPython importable.
pub fn venv_with(venv: &SaltVenv, extra: &Path, at: &Path) -> SaltVenv {
    let bin = at.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in [
        "salt-master",
        "salt-minion",
        "salt",
        "salt-run",
        "salt-key",
        "salt-call",
        "python",
    ] {
        let p = bin.join(name);
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\nPYTHONPATH='{}'${{PYTHONPATH:+:$PYTHONPATH}} exec '{}' \"$@\"\n",
                extra.display(),
                venv.bin(name).display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    SaltVenv::at(at).unwrap()
}
