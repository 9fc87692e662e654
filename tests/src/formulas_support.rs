//! What the formula fidelity tests share (`formulas*.rs`): the ten training formulas of
//! `../shared/formulas` (beside the workspace, not copied into it), running a harness script
//! of `scripts/` over them, and reading its `RESULTS` cells ("formula command cell" lines).

use std::path::PathBuf;
use std::process::Command;

use salt_testkit::{Missing, workspace_root};

use crate::{SaltVenv, TempRoot};

/// The training formulas (folder names under `../shared/formulas`).
pub const FORMULAS: &[&str] = &[
    "apache",
    "cron",
    "fail2ban",
    "logrotate",
    "packages",
    "postgres",
    "resolver",
    "sudoers",
    "sysctl",
    "systemd",
];

/// `../shared/formulas`, when every training formula is there (`<name>/<name>/`).
pub fn formulas_dir() -> Result<PathBuf, Missing> {
    let dir = workspace_root().join("../shared/formulas");
    let missing: Vec<&str> = FORMULAS
        .iter()
        .copied()
        .filter(|f| !dir.join(f).join(f).is_dir())
        .collect();
    if missing.is_empty() {
        Ok(dir)
    } else {
        Err(Missing::new(format!(
            "the community formulas {missing:?} under {} (../shared/formulas beside the \
             workspace, each <name>/<name>/ with pillar.example)",
            dir.display()
        )))
    }
}

/// What a harness run printed and the cells it wrote.
pub struct HarnessRun {
    /// The summary table (stdout).
    pub report: String,
    /// The diffs (stderr, with `VERBOSE=1`).
    pub diffs: String,
    results: String,
}

impl HarnessRun {
    /// `scripts/<script>` over the training formulas of `dir` against the Python side of
    /// `venv` (`SALT_VENV`), with `env` and `VERBOSE=1`.
    pub fn run(
        script: &str,
        dir: &std::path::Path,
        venv: &SaltVenv,
        env: &[(&str, String)],
    ) -> Self {
        let tmp = TempRoot::new().expect("a temporary root");
        let results = tmp.path().join("results");
        let out = Command::new("bash")
            .arg(workspace_root().join("scripts").join(script))
            .args(FORMULAS.iter().map(|f| dir.join(f)))
            .env("SALT_VENV", &venv.dir)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .env("RESULTS", &results)
            .env("VERBOSE", "1")
            .output()
            .unwrap_or_else(|e| panic!("bash scripts/{script}: {e}"));
        let run = Self {
            report: String::from_utf8_lossy(&out.stdout).into_owned(),
            diffs: String::from_utf8_lossy(&out.stderr).into_owned(),
            results: std::fs::read_to_string(&results).unwrap_or_default(),
        };
        println!("{}", run.report);
        run
    }

    /// The cell of `formula` for `cmd` ("equal", "DIFF(n)", "NO-ANSWER", ...; "not run").
    pub fn cell(&self, formula: &str, cmd: &str) -> String {
        self.results
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(n, _)| *n == formula)
            .find_map(|(_, rest)| rest.strip_prefix(&format!("{cmd} ")))
            .unwrap_or("not run")
            .to_owned()
    }

    /// Every `(formula, cmd)` whose cell is not `equal`, as "formula cmd: cell".
    pub fn not_equal(&self, cells: &[(&str, &str)]) -> Vec<String> {
        cells
            .iter()
            .map(|(f, c)| (f, c, self.cell(f, c)))
            .filter(|(_, _, cell)| cell != "equal")
            .map(|(f, c, cell)| format!("{f} {c}: {cell}"))
            .collect()
    }
}
