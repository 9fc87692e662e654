//! The one minion-id rule: Salt's `salt.utils.verify.valid_id` (with `clean_path`).
//!
//! ```python
//! def valid_id(opts, id_):
//!     if any(x in id_ for x in ("/", "\\", "\0")):
//!         return False
//!     return bool(clean_path(opts["pki_dir"], id_))
//! ```
//!
//! `clean_path(root, id)` joins `id` to the (absolute) `root`, `normpath`s it and keeps it
//! only when its directory is `root` itself. With no separator in `id`, that refuses exactly
//! `""` (the path is `root`), `"."` (`root`) and `".."` (`root`'s parent). Everything else is
//! valid, as in Salt: ids starting with `.` (a dotfile key that `salt-key -L` does not list,
//! in Salt and here alike) and ids of any length (a key file name longer than the file
//! system allows fails when it is written, with the file system's error).
//!
//! Salt's `clean_path` also resolves symlinks (`realpath`) when `root/id` already exists;
//! that depends on the file system, not on the id, and is not part of this rule (our key
//! store never follows a link out of its directories).

use std::path::{Component, Path, PathBuf};

/// Why an id is not valid, or `Ok(())`.
///
/// # Errors
/// A short reason: `"empty"`, `"is a directory reference"`, `"contains '/'"`,
/// `"contains '\\'"`, `"contains a NUL byte"`.
pub fn check_id(id: &str) -> Result<(), &'static str> {
    if id.contains('/') {
        Err("contains '/'")
    } else if id.contains('\\') {
        Err("contains '\\'")
    } else if id.contains('\0') {
        Err("contains a NUL byte")
    } else if id.is_empty() {
        Err("empty")
    } else if id == "." || id == ".." {
        Err("is a directory reference")
    } else {
        Ok(())
    }
}

/// Salt's `valid_id`: see the module documentation.
pub fn valid_id(id: &str) -> bool {
    check_id(id).is_ok()
}

/// Python's `os.path.normpath` on a POSIX path (lexical: `.` dropped, `..` folded, repeated
/// separators collapsed; a leading `..` of a relative path is kept).
pub fn normpath(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir) => {}
                _ => out.push(c),
            },
            other => out.push(other),
        }
    }
    if out.is_empty() {
        return PathBuf::from(".");
    }
    out.iter().collect()
}

/// Salt's `clean_path(root, path, subdir)` without the symlink resolution: `path` joined to
/// `root` (unless absolute) and normalised, when it lies directly in `root` (or, with
/// `subdir`, anywhere below it); else `None`. `root` must be absolute (Salt joins a relative
/// one to the working directory first).
pub fn clean_path(root: &Path, path: &str, subdir: bool) -> Option<PathBuf> {
    let root = normpath(root);
    let joined = normpath(&root.join(path));
    let ok = if subdir {
        joined.starts_with(&root)
    } else {
        joined.parent() == Some(root.as_path())
    };
    ok.then_some(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule() {
        for id in [
            "minion1",
            "web-01.example.com",
            "a b",
            "ünïcödé",
            "x..y",
            "x..",
            "..x",
            ".hidden",
            "master.pem",
            "tab\there",
        ] {
            assert_eq!(check_id(id), Ok(()), "{id:?}");
        }
        assert!(valid_id(&"a".repeat(300)));
        for id in ["", ".", "..", "a/b", "/abs", "../up", "a\\b", "nul\0"] {
            assert!(!valid_id(id), "{id:?}");
        }
    }

    #[test]
    fn clean_path_agrees_with_valid_id() {
        let root = Path::new("/etc/salt/pki/master");
        for id in ["m1", ".hidden", "", ".", "..", "x..", "..x"] {
            assert_eq!(
                clean_path(root, id, false).is_some(),
                valid_id(id),
                "{id:?}"
            );
        }
        assert_eq!(
            clean_path(root, "a/../b", false),
            Some(PathBuf::from("/etc/salt/pki/master/b"))
        );
        assert_eq!(clean_path(root, "a/b", false), None);
        assert!(clean_path(root, "a/b", true).is_some());
        assert_eq!(clean_path(root, "../x", true), None);
        assert_eq!(normpath(Path::new("/a/./b/../../..")), PathBuf::from("/"));
    }
}
