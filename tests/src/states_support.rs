//! What the `states_*` tests share: comparing a salt-call run of Python Salt with ours, each
//! masterless in its own throwaway root (`ROOT/conf/minion`, states written under `ROOT/out`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::HarnessError;
use crate::root::TempRoot;
use crate::venv::SaltVenv;

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

/// Every file directly under `ROOT/out`: name, mode and contents (invalid UTF-8 shown
/// lossily), sorted.
pub fn out_files(root: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(rd) = std::fs::read_dir(root.join("out")) else {
        return vec!["(no out/)".to_owned()];
    };
    let mut v: Vec<String> = rd
        .flatten()
        .map(|e| {
            let p = e.path();
            let mode = std::fs::metadata(&p).map_or(0, |m| m.mode() & 0o7777);
            let body = std::fs::read(&p).unwrap_or_default();
            format!(
                "{} {mode:o} {:?}",
                e.file_name().to_string_lossy(),
                String::from_utf8_lossy(&body)
            )
        })
        .collect();
    v.sort();
    v
}

/// What one side saw of a step: its [`normalize`]d output, exit code and files.
pub type Seen = (String, Option<i32>, Vec<String>);

/// Python Salt's `salt-call` and ours, each masterless in its own root under one
/// [`TempRoot`] (`py/`, `rs/`), both set up by the same function.
pub struct Pair {
    _tmp: TempRoot,
    sides: [(PathBuf, PathBuf); 2],
}

impl Pair {
    /// Make both roots and run `setup` on each (Python's first).
    pub fn new(venv: &SaltVenv, setup: impl Fn(&Path)) -> Result<Self, HarnessError> {
        let tmp = TempRoot::new()?;
        let ours = crate::bins()?.minion.with_file_name("salt-call");
        let sides = [
            (venv.bin("salt-call"), tmp.path().join("py")),
            (ours, tmp.path().join("rs")),
        ];
        for (_, root) in &sides {
            setup(root);
        }
        Ok(Self { _tmp: tmp, sides })
    }

    /// The `salt-call` binaries and their roots, Python's first.
    pub fn sides(&self) -> [(&Path, &Path); 2] {
        let [(b0, r0), (b1, r1)] = &self.sides;
        [(b0, r0), (b1, r1)]
    }

    /// `salt-call --out OUT ARGS` on Python's side, then ours (see [`salt_call`]), with
    /// `args` made for each root: what each saw, `files(root)` read after its run.
    pub fn run(
        &self,
        out: &str,
        args: impl Fn(&Path) -> Vec<String>,
        files: impl Fn(&Path) -> Vec<String>,
    ) -> Result<[Seen; 2], HarnessError> {
        let mut seen = Vec::with_capacity(2);
        for (bin, root) in &self.sides {
            let (o, rc) = salt_call(Command::new(bin), root, out, &args(root))?;
            seen.push((normalize(&o, root), rc, files(root)));
        }
        let ours = seen.pop().unwrap_or_default();
        let salts = seen.pop().unwrap_or_default();
        Ok([salts, ours])
    }
}

/// Ours answered what Python Salt's did: the same output, exit code and files. Salt's
/// output must name `marker` first, so a Python run that failed early never passes by
/// matching an equally broken one of ours. `step` names the step in the messages, and is
/// printed when all is the same.
pub fn assert_same(step: &str, salts: &Seen, ours: &Seen, marker: &str) {
    assert!(
        salts.0.contains(marker),
        "{step}: Salt's run does not name {marker:?}: {}",
        salts.0
    );
    assert_eq!(ours.0, salts.0, "{step}: the output differs from Salt's");
    assert_eq!(ours.1, salts.1, "{step}: retcode");
    assert_eq!(ours.2, salts.2, "{step}: files");
    println!("{step}: same output, retcode {:?}, files", ours.1);
}
