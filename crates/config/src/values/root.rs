//! Salt's `prepend_root_dir` as `apply_master_config` calls it: which options get
//! `root_dir`, how a path is prefixed, and which log destinations are URLs and keep theirs.

use salt_compat::posixpath::{abspath, isabs, salt_join};
use serde_json::{Map, Value, json};

use super::{ValuesError, text};

/// The options `apply_master_config` prefixes with `root_dir`.
const PREPEND_ROOT_DIRS: &[&str] = &[
    "pki_dir",
    "cachedir",
    "pidfile",
    "sock_dir",
    "extension_modules",
    "autosign_file",
    "autoreject_file",
    "token_dir",
    "syndic_dir",
    "sqlite_queue_dir",
    "autosign_grains_dir",
];

/// `prepend_root_dir(opts, PREPEND_ROOT_DIRS + the log files that are paths)`.
pub(super) fn prepend_root_dirs(
    opts: &mut Map<String, Value>,
    cwd: &str,
) -> Result<(), ValuesError> {
    let root_dir = abspath(&text(opts, "root_dir")?, cwd);
    let logs = ["log_file", "key_logfile", "ssh_log_file"];
    let keys: Vec<&str> = PREPEND_ROOT_DIRS
        .iter()
        .copied()
        .chain(
            logs.into_iter()
                .filter(|k| should_prepend_root_dir(opts, k)),
        )
        .collect();
    for key in keys {
        let Some(value) = opts.get(key) else {
            continue;
        };
        let path = match value {
            Value::String(p) => p.clone(),
            other => {
                return Err(ValuesError::Invalid(format!(
                    "{key}: expected a path, found {}",
                    salt_compat::py_json_repr(other)
                )));
            }
        };
        if let Some(p) = prepend_root_dir(&root_dir, &path) {
            opts.insert(key.into(), json!(p));
        }
    }
    Ok(())
}

/// Salt's `prepend_root_dir` for one path, Salt's `ROOT_DIR` being `/` (so its "default
/// root" prefix is empty and every absolute path matches it): `None` when it is kept.
pub(super) fn prepend_root_dir(root_dir: &str, path: &str) -> Option<String> {
    let def = path.is_empty() || path.starts_with('/');
    let under_root = (!root_dir.is_empty()
        && (path == root_dir || path.starts_with(&format!("{root_dir}/"))))
    .then(|| &path[root_dir.len()..]);
    // Python: `tmp_path_def_root_dir` is the whole path (truthy unless empty).
    let tmp_def = def.then_some(path).filter(|p| !p.is_empty());
    let tmp_root = under_root.filter(|p| !p.is_empty());
    let rest = match (tmp_def, tmp_root) {
        (Some(d), None) => d,
        (None, Some(r)) | (Some(_), Some(r)) => r,
        (None, None) if isabs(path) => return None,
        (None, None) => path,
    };
    Some(salt_join(root_dir, &[rest]))
}

/// `should_prepend_root_dir`: set, not `None`, and not a URL (`syslog://`, `udp://`,
/// `file://`...: `urllib.parse.urlparse(value).scheme` is empty).
fn should_prepend_root_dir(opts: &Map<String, Value>, key: &str) -> bool {
    match opts.get(key) {
        Some(Value::String(v)) => url_scheme(v).is_empty(),
        _ => false,
    }
}

/// The scheme `urllib.parse.urlsplit` finds: the text before the first `:` when it starts
/// with an ASCII letter and holds only letters, digits, `+`, `-` and `.`.
pub(super) fn url_scheme(url: &str) -> &str {
    let url = url.trim_start_matches(|c: char| c <= ' ');
    match url.find(':') {
        Some(i)
            if i > 0
                && url.as_bytes()[0].is_ascii_alphabetic()
                && url[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) =>
        {
            &url[..i]
        }
        _ => "",
    }
}
