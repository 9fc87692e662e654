//! The swarm's highstate mode: what a Python minion's `state.apply` asks of its master.
//!
//! On a publish of `state.apply` / `state.highstate` a minion runs, one request at a time on
//! its own request socket (as a minion's one channel): `_pillar` (ver 2, the reply opened
//! with the minion key and its signature checked, as `RemotePillar` does), `_master_opts`,
//! `_file_list` of `base`, then for each file of the formula tree (the top file, every sls
//! the top and the sls include, every `salt://` source of their states) `_file_hash` and
//! `_serve_file` from `loc` 0 until an empty chunk (the fileclient's `get_file` loop), and
//! last the `_return` of a highstate result with one state per served non-sls file. No
//! state is run: the master's side of a highstate, from the minions, is what is measured.

use std::path::Path;
use std::time::Duration;

use rmpv::Value;

/// The files a highstate fetches and the return it sends.
#[derive(Debug, Clone)]
pub struct HighstatePlan {
    /// `salt://` paths (relative, `base`), fetched in this order.
    pub files: Vec<String>,
    /// The `return` of the `_return` (a highstate result map).
    pub ret: Value,
    /// A request unanswered this long fails the minion's highstate (counted as timed out).
    pub timeout: Duration,
}

impl HighstatePlan {
    /// The plan from a file listing one `salt://` path per line (blank lines and `#`
    /// comments skipped); a `file.managed` state is reported for each non-`.sls` file.
    ///
    /// # Errors
    /// The list cannot be read, or holds no path.
    pub fn from_list(path: &Path, timeout: Duration) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let files: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| l.trim_start_matches("salt://").to_owned())
            .collect();
        if files.is_empty() {
            return Err(format!("{}: no salt:// path listed", path.display()));
        }
        Ok(Self::new(files, timeout))
    }

    /// The plan for `files`.
    pub fn new(files: Vec<String>, timeout: Duration) -> Self {
        let ret = highstate_return(&files);
        Self {
            files,
            ret,
            timeout,
        }
    }
}

/// A highstate result as a minion returns it: one `file.managed` entry per non-sls file
/// (`file_|-<dest>_|-<dest>_|-managed`), unchanged, `result: True`.
fn highstate_return(files: &[String]) -> Value {
    let mut out = Vec::new();
    for (n, f) in files.iter().filter(|f| !f.ends_with(".sls")).enumerate() {
        let dest = format!("/srv/swarm/{f}");
        let sls = f.split('/').next().unwrap_or("formula");
        let key = format!("file_|-{dest}_|-{dest}_|-managed");
        let entry = Value::Map(vec![
            ("name".into(), dest.as_str().into()),
            ("changes".into(), Value::Map(Vec::new())),
            ("result".into(), true.into()),
            (
                "comment".into(),
                format!("File {dest} is in the correct state").into(),
            ),
            ("__sls__".into(), sls.into()),
            ("__run_num__".into(), n.into()),
            ("start_time".into(), "12:00:00.000000".into()),
            ("duration".into(), 1.5.into()),
            ("__id__".into(), dest.as_str().into()),
        ]);
        out.push((key.into(), entry));
    }
    Value::Map(out)
}

/// Whether a published function is a highstate.
pub fn is_highstate(fun: &str) -> bool {
    matches!(fun, "state.apply" | "state.highstate")
}
