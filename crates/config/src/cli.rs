//! What every salt-rs program says the same way before it reads its configuration: the
//! `--version` string and the missing-configuration rule (daemons, `salt`, `salt-run`).

use std::path::Path;

/// What to say about a missing configuration: `Err` (the daemon must exit) when `-c DIR` was
/// given explicitly and `DIR/<role>` does not exist, a warning when the default directory
/// has no file (Salt then runs on its defaults, as we do), `None` when the file exists.
pub fn check_config_file(dir: &Path, role: &str, explicit: bool) -> Result<Option<String>, String> {
    let file = dir.join(role);
    if file.is_file() {
        return Ok(None);
    }
    let why = if dir.is_dir() {
        format!("{} does not exist", file.display())
    } else {
        format!(
            "the configuration directory {} does not exist",
            dir.display()
        )
    };
    if explicit {
        Err(format!(
            "{why} (given with -c); create it (an empty file runs on Salt's defaults) or fix the path"
        ))
    } else {
        Ok(Some(format!(
            "{why}: running on Salt's defaults (give the directory with -c DIR)"
        )))
    }
}

/// The `--version` string: our version and the Salt releases we speak.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (salt-rs; wire-compatible with Salt 3006, 3007 and 3008)"
);
