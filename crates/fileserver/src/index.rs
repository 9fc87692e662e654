//! The in-memory index of one environment: what `roots._file_lists` walks for every listing
//! (files, directories, empty directories, symlinks) and, for each listed file, the root that
//! `roots.find_file` would serve it from. Built once, dropped when a watched root changes
//! (or after [`crate::LIST_CACHE_TIME`] when a root cannot be watched).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::Ignore;
use crate::paths::{normpath, under_root};

/// One environment's listings and file locations.
#[derive(Debug, Default)]
pub struct EnvIndex {
    /// `_file_list`, sorted.
    pub files: Vec<String>,
    /// `_dir_list`, sorted.
    pub dirs: Vec<String>,
    /// `_file_list_emptydirs`, sorted.
    pub empty_dirs: Vec<String>,
    /// `_symlink_list`: path → link text.
    pub links: BTreeMap<String, String>,
    /// Listed file → index of the root `find_file` serves it from.
    pub found: HashMap<String, usize>,
    /// When it was built.
    pub built: Option<Instant>,
    /// Whether every root is watched for changes.
    pub watched: bool,
}

/// What the walk needs to know.
pub struct WalkOpts<'a> {
    /// `fileserver_followsymlinks`.
    pub follow: bool,
    /// `fileserver_ignoresymlinks`.
    pub ignore_links: bool,
    /// `file_ignore_regex` / `file_ignore_glob`.
    pub ignore: &'a Ignore,
}

impl EnvIndex {
    /// Walks `roots` like `roots._file_lists` (`os.walk` with `followlinks=follow`).
    pub fn build(roots: &[PathBuf], o: &WalkOpts<'_>) -> Self {
        let mut files = BTreeSet::new();
        let mut dirs = BTreeSet::new();
        let mut empty = BTreeSet::new();
        let mut links = BTreeMap::new();
        for root in roots {
            let mut seen = HashSet::new();
            walk(
                root,
                root,
                o,
                &mut seen,
                &mut Lists {
                    files: &mut files,
                    dirs: &mut dirs,
                    empty: &mut empty,
                    links: &mut links,
                },
            );
        }
        let mut found = HashMap::with_capacity(files.len());
        for rel in &files {
            if let Some(i) = find_on_disk(roots, rel, o.follow, o.ignore) {
                found.insert(rel.clone(), i);
            }
        }
        Self {
            files: files.into_iter().collect(),
            dirs: dirs.into_iter().collect(),
            empty_dirs: empty.into_iter().collect(),
            links,
            found,
            built: Some(Instant::now()),
            watched: false,
        }
    }
}

struct Lists<'a> {
    files: &'a mut BTreeSet<String>,
    dirs: &'a mut BTreeSet<String>,
    empty: &'a mut BTreeSet<String>,
    links: &'a mut BTreeMap<String, String>,
}

fn walk(
    fs_root: &Path,
    dir: &Path,
    o: &WalkOpts<'_>,
    seen: &mut HashSet<(u64, u64)>,
    out: &mut Lists<'_>,
) {
    // A directory reached twice through symlinks is walked once (Python loops until ELOOP).
    if let Ok(m) = std::fs::metadata(dir)
        && !seen.insert((m.dev(), m.ino()))
    {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut subdirs = Vec::new();
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let abs = entry.path();
        if entry.file_name().to_str().is_none() {
            tracing::debug!("file server: skipping non-UTF-8 name {}", abs.display());
            continue;
        }
        let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
        let is_dir = std::fs::metadata(&abs).is_ok_and(|m| m.is_dir());
        if is_dir && (!is_link || o.follow) {
            subdirs.push(abs.clone());
        }
        if is_link && o.ignore_links {
            continue;
        }
        let Ok(rel) = abs.strip_prefix(fs_root) else {
            continue;
        };
        let rel = rel.to_string_lossy().into_owned();
        if o.ignore.matches(&rel) {
            continue;
        }
        if is_dir {
            out.dirs.insert(rel.clone());
            if std::fs::read_dir(&abs).is_ok_and(|mut d| d.next().is_none()) {
                out.empty.insert(rel.clone());
            }
        } else {
            out.files.insert(rel.clone());
        }
        if is_link && let Ok(dest) = std::fs::read_link(&abs) {
            let dest_s = dest.to_string_lossy().into_owned();
            // Salt joins a `..` target to the link itself, any other to its directory.
            let joined = if dest_s.starts_with("..") {
                abs.join(&dest)
            } else {
                abs.parent().unwrap_or(fs_root).join(&dest)
            };
            let joined = PathBuf::from(normpath(&joined.to_string_lossy()));
            let inside = match (joined.canonicalize(), fs_root.canonicalize()) {
                (Ok(t), Ok(r)) => t.starts_with(&r),
                // Python's realpath of a dangling target stays lexical.
                (Err(_), Ok(r)) => joined.starts_with(&r),
                _ => false,
            };
            if inside || !o.follow {
                out.links.insert(rel, dest_s);
            }
        }
    }
    for sub in subdirs {
        walk(fs_root, &sub, o, seen, out);
    }
}

/// `roots.find_file` over `roots` for a normalized relative path: the index of the first root
/// holding it as a regular file (after following links), inside the root (symlinks
/// resolved unless `follow`), and not ignored by its full path.
pub fn find_on_disk(roots: &[PathBuf], rel: &str, follow: bool, ignore: &Ignore) -> Option<usize> {
    roots
        .iter()
        .position(|root| file_in_root(root, rel, follow, ignore))
}

/// One root of [`find_on_disk`].
pub fn file_in_root(root: &Path, rel: &str, follow: bool, ignore: &Ignore) -> bool {
    let full = root.join(rel);
    under_root(root, &full, !follow)
        && std::fs::metadata(&full).is_ok_and(|m| m.is_file())
        && !ignore.matches(&full.to_string_lossy())
}
