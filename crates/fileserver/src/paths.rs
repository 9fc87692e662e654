//! Request paths as Salt's `Fileserver.find_file` and `roots.find_file` read them: the
//! `|` escape, `?saltenv=` query strings, `normpath`, and the refusal of anything that could
//! leave a root (absolute paths, `..`, NUL bytes, over-long paths, odd environment names).

use std::path::{Path, PathBuf};

/// Longest request path accepted (Linux `PATH_MAX`); longer ones are refused unread.
pub const MAX_PATH_LEN: usize = 4096;

/// A request path that passed the checks.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct Wanted {
    /// `posixpath.normpath` of the path: relative, no `.`/`..` components.
    pub rel: String,
    /// The environment (`saltenv` of the load, or of the query string).
    pub saltenv: String,
    /// `?index=N`: only the N-th root of the environment.
    pub index: Option<String>,
}

/// Why a path is refused (logged; the reply is Salt's "not found" shape).
#[derive(Clone, Copy, Debug, Eq, PartialEq, thiserror::Error)]
pub enum Refused {
    /// Absolute path.
    #[error("absolute path")]
    Absolute,
    /// A `..` component that leaves the root.
    #[error("path leaves the root (`..`)")]
    Parent,
    /// A NUL byte.
    #[error("NUL byte in path")]
    Nul,
    /// Longer than [`MAX_PATH_LEN`].
    #[error("path longer than {MAX_PATH_LEN} bytes")]
    TooLong,
    /// Empty path, or one that names the root itself.
    #[error("empty path")]
    Empty,
}

/// Parses `path` (with `saltenv` from the load) like `Fileserver.find_file` then
/// `roots.find_file`.
///
/// # Errors
/// [`Refused`] for a path that must not be looked up.
pub fn parse(path: &str, saltenv: &str) -> Result<Wanted, Refused> {
    if path.len() > MAX_PATH_LEN {
        return Err(Refused::TooLong);
    }
    let mut saltenv = saltenv.to_owned();
    let mut index = None;
    let path = if let Some(unescaped) = path.strip_prefix('|') {
        unescaped.trim_start_matches('|')
    } else if let Some((p, query)) = path.split_once('?') {
        // Python: `hcomps = path.split("?")`, the query is `hcomps[1]`.
        let query = query.split('?').next().unwrap_or_default();
        for comp in query.split('&') {
            if let Some((k, v)) = comp.split_once('=') {
                match k {
                    "saltenv" => saltenv = v.to_owned(),
                    "index" => index = Some(v.to_owned()),
                    _ => {}
                }
            }
        }
        p
    } else {
        path
    };
    if path.contains('\0') || saltenv.contains('\0') {
        return Err(Refused::Nul);
    }
    if path.starts_with('/') {
        return Err(Refused::Absolute);
    }
    if path.contains("../") {
        return Err(Refused::Parent);
    }
    let rel = normpath(path);
    if rel == ".." || rel.starts_with("../") {
        return Err(Refused::Parent);
    }
    if rel == "." {
        return Err(Refused::Empty);
    }
    Ok(Wanted {
        rel,
        saltenv,
        index,
    })
}

/// Python's `posixpath.normpath` for a relative path (a leading `/` is kept).
pub fn normpath(path: &str) -> String {
    if path.is_empty() {
        return ".".to_owned();
    }
    let absolute = path.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for comp in path.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|c| *c != "..") {
                    out.pop();
                } else if !absolute {
                    out.push("..");
                }
            }
            c => out.push(c),
        }
    }
    let joined = out.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// Whether an environment name may be substituted for `__env__` in a root: it must stay
/// one path component (Salt does not check; a name like `../../etc` would move the root).
pub fn env_name_ok(saltenv: &str) -> bool {
    !saltenv.is_empty()
        && saltenv != "."
        && saltenv != ".."
        && !saltenv.contains('/')
        && !saltenv.contains('\0')
        && saltenv.len() <= 255
}

/// `salt.utils.verify.clean_path(root, path, subdir=True, realpath=...)`: whether `full`
/// lies under `root`, after resolving symlinks when `realpath`.
pub fn under_root(root: &Path, full: &Path, realpath: bool) -> bool {
    let (root, full) = if realpath {
        match (root.canonicalize(), full.canonicalize()) {
            (Ok(r), Ok(f)) => (r, f),
            _ => return false,
        }
    } else {
        (lexical(root), lexical(full))
    };
    full.starts_with(&root)
}

fn lexical(p: &Path) -> PathBuf {
    PathBuf::from(normpath(&p.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normpath_like_python() {
        for (i, o) in [
            ("a/b", "a/b"),
            ("a/./b/", "a/b"),
            ("a/../b", "b"),
            ("a/..", "."),
            ("..", ".."),
            ("a/../../b", "../b"),
            ("//a//b", "/a/b"),
            ("", "."),
        ] {
            assert_eq!(normpath(i), o, "{i}");
        }
    }

    #[test]
    fn hostile_paths_are_refused() {
        assert_eq!(parse("/etc/passwd", "base"), Err(Refused::Absolute));
        assert_eq!(parse("../x", "base"), Err(Refused::Parent));
        assert_eq!(parse("a/../../x", "base"), Err(Refused::Parent));
        assert_eq!(parse("..", "base"), Err(Refused::Parent));
        assert_eq!(parse("a\0b", "base"), Err(Refused::Nul));
        assert_eq!(parse(&"a/".repeat(3000), "base"), Err(Refused::TooLong));
        assert_eq!(parse("a/..", "base"), Err(Refused::Empty));
        assert_eq!(parse("x?saltenv=../..", "base").unwrap().saltenv, "../..");
        assert!(!env_name_ok("../.."));
        assert!(env_name_ok("dev"));
    }

    #[test]
    fn query_strings_and_escapes() {
        let w = parse("files/a.txt?saltenv=dev&index=1", "base").unwrap();
        assert_eq!(w.rel, "files/a.txt");
        assert_eq!(w.saltenv, "dev");
        assert_eq!(w.index.as_deref(), Some("1"));
        let w = parse("|odd?name", "base").unwrap();
        assert_eq!(w.rel, "odd?name");
        assert_eq!(w.saltenv, "base");
    }
}
