//! One commit's tree, in memory: every entry by full path, the symlink targets, and the
//! listings of a saltenv computed from it with a remote's root and mountpoint (GitPython
//! provider's `file_list`, `dir_list` and `find_file`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use super::git::GitError;
use super::libgit::{self, EntryKind};
use crate::paths::normpath;

/// Salt's `SYMLINK_RECURSE_DEPTH`.
const SYMLINK_DEPTH: usize = 100;
/// `S_IFLNK`.
const MODE_LINK: u32 = 0o120_000;

/// A blob in a tree.
#[derive(Clone, Debug, Eq, PartialEq)]
pub(crate) struct Blob {
    /// Object id.
    pub(crate) oid: String,
    /// Git mode (`0o100644`, ...), Salt's `stat` of a gitfs file.
    pub(crate) mode: u32,
}

/// A commit's tree.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    /// Blobs by full path.
    blobs: HashMap<String, Blob>,
    /// Directories (full paths).
    dirs: BTreeSet<String>,
    /// Symlink path → target text.
    links: HashMap<String, String>,
}

/// A saltenv's listings from one tree.
#[derive(Debug, Default)]
pub(crate) struct Lists {
    pub(crate) files: BTreeSet<String>,
    pub(crate) dirs: BTreeSet<String>,
    pub(crate) links: BTreeMap<String, String>,
}

impl Tree {
    /// Reads `commit`'s tree from the repository at `dir`.
    pub(crate) fn load(dir: &Path, commit: &str) -> Result<Self, GitError> {
        let mut t = Self::default();
        let mut link_oids = Vec::new();
        for e in libgit::ls_tree(dir, commit)? {
            match e.kind {
                EntryKind::Tree => {
                    t.dirs.insert(e.path);
                }
                EntryKind::Blob => {
                    if e.mode & 0o170_000 == MODE_LINK {
                        link_oids.push((e.path.clone(), e.oid.clone()));
                    }
                    t.blobs.insert(
                        e.path,
                        Blob {
                            oid: e.oid,
                            mode: e.mode,
                        },
                    );
                }
                EntryKind::Commit => {}
            }
        }
        let oids: Vec<&str> = link_oids.iter().map(|(_, o)| o.as_str()).collect();
        for ((path, _), data) in link_oids.iter().zip(libgit::read_blobs(dir, &oids)?) {
            t.links
                .insert(path.clone(), String::from_utf8_lossy(&data).into_owned());
        }
        Ok(t)
    }

    /// The files, directories and symlinks under `root`, placed under `mountpoint`.
    pub(crate) fn lists(&self, root: &str, mountpoint: &str, out: &mut Lists) {
        if !root.is_empty() && !self.dirs.contains(root) {
            return;
        }
        let rel = |p: &str| -> Option<String> {
            let r = if root.is_empty() {
                p
            } else {
                p.strip_prefix(root)?.strip_prefix('/')?
            };
            Some(if mountpoint.is_empty() {
                r.to_owned()
            } else {
                format!("{mountpoint}/{r}")
            })
        };
        for path in self.blobs.keys() {
            if let Some(f) = rel(path) {
                if let Some(target) = self.links.get(path) {
                    out.links.insert(f.clone(), target.clone());
                }
                out.files.insert(f);
            }
        }
        out.dirs.extend(self.dirs.iter().filter_map(|d| rel(d)));
        if !mountpoint.is_empty() {
            out.dirs.insert(mountpoint.to_owned());
        }
    }

    /// GitPython's `find_file`: the blob at `path`, following symlinks (`salt.utils.path.join`
    /// of the link's directory and its target, normalized) at most [`SYMLINK_DEPTH`] times.
    pub(crate) fn find(&self, path: &str) -> Option<&Blob> {
        let mut path = path.to_owned();
        for _ in 0..SYMLINK_DEPTH {
            let blob = self.blobs.get(&path)?;
            let Some(target) = self.links.get(&path) else {
                return Some(blob);
            };
            let target = target.trim_start_matches('/');
            path = match path.rfind('/') {
                Some(i) => normpath(&format!("{}/{target}", &path[..i])),
                None => normpath(target),
            };
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Tree {
        let mut t = Tree::default();
        for (p, m) in [
            ("a/b.sls", 0o100_644),
            ("a/l", MODE_LINK),
            ("top.sls", 0o100_644),
        ] {
            t.blobs.insert(
                p.to_owned(),
                Blob {
                    oid: p.to_owned(),
                    mode: m,
                },
            );
        }
        t.dirs.insert("a".to_owned());
        t.links.insert("a/l".to_owned(), "b.sls".to_owned());
        t.blobs.insert(
            "a/up".to_owned(),
            Blob {
                oid: "up".to_owned(),
                mode: MODE_LINK,
            },
        );
        t.links.insert("a/up".to_owned(), "../top.sls".to_owned());
        t
    }

    #[test]
    fn lists_with_root_and_mountpoint() {
        let mut l = Lists::default();
        tree().lists("a", "m/n", &mut l);
        assert_eq!(
            l.files.iter().collect::<Vec<_>>(),
            ["m/n/b.sls", "m/n/l", "m/n/up"]
        );
        assert_eq!(l.dirs.iter().collect::<Vec<_>>(), ["m/n"]);
        assert_eq!(l.links["m/n/l"], "b.sls");
        let mut l = Lists::default();
        tree().lists("nope", "", &mut l);
        assert!(l.files.is_empty());
    }

    #[test]
    fn symlinks_are_followed() {
        let t = tree();
        assert_eq!(t.find("a/l").map(|b| b.oid.as_str()), Some("a/b.sls"));
        assert_eq!(t.find("a/up").map(|b| b.oid.as_str()), Some("top.sls"));
        assert!(t.find("a").is_none());
        assert!(t.find("missing").is_none());
    }
}
