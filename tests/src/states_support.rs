//! What the `states_*` tests share: comparing a salt-call run of Python Salt with ours, each
//! masterless in its own throwaway root (`ROOT/conf/minion`, states written under `ROOT/out`).

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::error::HarnessError;

/// Write `ROOT/conf/minion` for a masterless run (`id: t1`, `file_client: local`, every path
/// under `ROOT`, `file_roots` = `tree`, `pillar_roots` = `pillar` when given) plus `extra`
/// option lines, and create `ROOT/out`.
pub fn local_minion(
    root: &Path,
    tree: &Path,
    pillar: Option<&Path>,
    extra: &str,
) -> Result<(), HarnessError> {
    let r = root.display();
    let mut conf = format!(
        "id: t1\nfile_client: local\nroot_dir: {r}\ncachedir: {r}/cache\npki_dir: {r}/pki\n\
         log_file: {r}/minion.log\n{extra}file_roots:\n  base: [{}]\n",
        tree.display()
    );
    if let Some(p) = pillar {
        conf.push_str(&format!("pillar_roots:\n  base: [{}]\n", p.display()));
    }
    for dir in [root.join("conf"), root.join("out")] {
        std::fs::create_dir_all(&dir).map_err(|e| HarnessError::io("mkdir", e))?;
    }
    std::fs::write(root.join("conf/minion"), conf).map_err(|e| HarnessError::io("write", e))
}

/// Run `salt_call` (a salt-call binary, or a wrapper command ending in one) in `root` as
/// `-c conf --local --out OUT --retcode-passthrough ARGS...`, bounded to 120 s: its stdout
/// and exit code.
pub fn salt_call<A: AsRef<OsStr>>(
    mut salt_call: Command,
    root: &Path,
    out: &str,
    args: &[A],
) -> Result<(String, Option<i32>), HarnessError> {
    salt_call
        .current_dir(root)
        .args([
            "-c",
            "conf",
            "--local",
            "--out",
            out,
            "--retcode-passthrough",
        ])
        .args(args);
    let out = crate::run_with_timeout(salt_call, Duration::from_secs(120))?;
    Ok((out.stdout, out.status.and_then(|s| s.code())))
}

/// A salt-call's `--out json` or `--out highstate` text with what differs between two runs
/// blanked: the throwaway root (`ROOT`), `start_time`, `duration`, `pid` and the highstate
/// summary's times, and the line after a `pid:` key.
pub fn normalize(text: &str, root: &Path) -> String {
    let root = root.display().to_string();
    let mut after_pid = false;
    text.replace(&root, "ROOT")
        .lines()
        .map(|l| {
            let t = l.trim_start();
            let pid_line = after_pid;
            after_pid = t == "pid:";
            if pid_line {
                return "PID".to_owned();
            }
            for key in [
                "\"start_time\": ",
                "\"duration\": ",
                "\"pid\": ",
                "Started: ",
                "Duration: ",
                "Total run time: ",
            ] {
                if t.starts_with(key) {
                    return format!("{}{key}X", &l[..l.len() - t.len()]);
                }
            }
            l.to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
