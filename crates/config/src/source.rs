//! Finding and merging the configuration files the way Salt's `master_config()` /
//! `minion_config()` do: the main file, then `default_include` (`master.d/*.conf`), then the
//! `include:` option, each later source overriding earlier ones.

use std::path::{Path, PathBuf};

use crate::LoadOptions;
use crate::error::{ConfigError, Problem};
use crate::node::{Kind, Node, merge_into, parse_document};

/// How deep `include:` may nest before we call it a loop.
const MAX_INCLUDE_DEPTH: usize = 16;

/// One top-level option after merging, with the file its (last) value came from.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) node: Node,
    pub(crate) file: PathBuf,
}

/// The merged options of every file, plus what went wrong while reading them.
#[derive(Debug, Default)]
pub(crate) struct Sources {
    pub(crate) entries: Vec<Entry>,
    pub(crate) files: Vec<PathBuf>,
    pub(crate) errors: Vec<ConfigError>,
    pub(crate) warnings: Vec<String>,
}

impl Sources {
    /// Reads `<config_dir>/<role>` and everything it includes.
    pub(crate) fn gather(opts: &LoadOptions, role: &str) -> Self {
        let mut sources = Self::default();
        let main = opts.config_dir.join(role);
        if !main.is_file() {
            // No file: embedded defaults, as Salt does for a missing file.
            return sources;
        }
        let Some(top) = sources.read_file(&main) else {
            return sources;
        };
        sources.entries = top;
        sources.apply_includes(opts, &main, role);
        sources
    }

    /// Parses a single YAML text as if it were the main file (no includes are followed).
    pub(crate) fn from_text(text: &str, path: &Path) -> Self {
        let mut sources = Self::default();
        match parse_document(text, path) {
            Ok(doc) => sources.entries = sources.entries_of(doc, path),
            Err(e) => sources.errors.push(e),
        }
        sources
    }

    fn apply_includes(&mut self, opts: &LoadOptions, main: &Path, role: &str) {
        let default_include = match self.get("default_include") {
            Some(entry) => self.patterns(entry.clone()),
            None => vec![format!("{role}.d/*.conf")],
        };
        let include = self
            .get("include")
            .cloned()
            .map(|e| self.patterns(e))
            .unwrap_or_default();
        for (patterns, verbose) in [(default_include, false), (include, true)] {
            let batch = self.include(opts, &patterns, main, verbose, 0);
            for entry in batch {
                self.set(entry);
            }
        }
    }

    /// Salt's `include_config`: every glob match in sorted order, deep-merged together.
    fn include(
        &mut self,
        opts: &LoadOptions,
        patterns: &[String],
        from: &Path,
        verbose: bool,
        depth: usize,
    ) -> Vec<Entry> {
        let mut merged: Vec<Entry> = Vec::new();
        if depth >= MAX_INCLUDE_DEPTH {
            self.errors.push(ConfigError::InvalidOption {
                path: from.to_owned(),
                line: None,
                key: "include".to_owned(),
                problem: Problem::Invalid {
                    value: patterns.join(", "),
                    reason: format!("includes nest deeper than {MAX_INCLUDE_DEPTH} levels"),
                },
            });
            return merged;
        }
        let base = from.parent().unwrap_or_else(|| Path::new("."));
        for pattern in patterns {
            let expanded = expand_user(pattern, opts.home.as_deref());
            let full = if Path::new(&expanded).is_absolute() {
                PathBuf::from(expanded)
            } else {
                base.join(expanded)
            };
            let mut matches = glob(&full);
            matches.sort();
            if matches.is_empty() && verbose {
                self.warnings.push(format!(
                    "{}: include path/glob {:?} matches no files",
                    from.display(),
                    full.display()
                ));
            }
            for file in matches {
                let Some(mut opts_of_file) = self.read_file(&file) else {
                    continue;
                };
                let nested = opts_of_file
                    .iter()
                    .find(|e| e.key == "include")
                    .cloned()
                    .map(|e| self.patterns(e))
                    .unwrap_or_default();
                if !nested.is_empty() {
                    for entry in self.include(opts, &nested, &file, verbose, depth + 1) {
                        set_entry(&mut opts_of_file, entry);
                    }
                }
                for entry in opts_of_file {
                    match merged.iter_mut().find(|e| e.key == entry.key) {
                        Some(existing) => {
                            merge_into(&mut existing.node, entry.node);
                            existing.file = entry.file;
                        }
                        None => merged.push(entry),
                    }
                }
            }
        }
        merged
    }

    /// Reads and parses one file, recording it in `files`; errors are recorded and give `None`.
    fn read_file(&mut self, path: &Path) -> Option<Vec<Entry>> {
        self.files.push(path.to_owned());
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                self.errors.push(ConfigError::Read {
                    path: path.to_owned(),
                    message: e.to_string(),
                });
                return None;
            }
        };
        match parse_document(&text, path) {
            Ok(doc) => Some(self.entries_of(doc, path)),
            Err(e) => {
                self.errors.push(e);
                None
            }
        }
    }

    fn entries_of(&mut self, doc: Vec<(Node, Node)>, path: &Path) -> Vec<Entry> {
        let mut out = Vec::with_capacity(doc.len());
        for (key, node) in doc {
            match key.kind {
                Kind::Str(name) => out.push(Entry {
                    key: name,
                    node,
                    file: path.to_owned(),
                }),
                // Salt keeps non-string keys; no option has such a name, so report them.
                _ => self.errors.push(ConfigError::BadKeyName {
                    path: path.to_owned(),
                    line: key.line,
                    found: key.describe(),
                }),
            }
        }
        out
    }

    /// The include patterns of an `include`/`default_include` entry (string or list).
    fn patterns(&mut self, entry: Entry) -> Vec<String> {
        let bad = |problem_found: String| ConfigError::InvalidOption {
            path: entry.file.clone(),
            line: entry.node.line,
            key: entry.key.clone(),
            problem: Problem::WrongType {
                expected: "a string or a list of strings",
                found: problem_found,
            },
        };
        match &entry.node.kind {
            Kind::Null => Vec::new(),
            Kind::Str(s) if s.is_empty() => Vec::new(),
            Kind::Str(s) => vec![s.clone()],
            Kind::Seq(items) => {
                let mut out = Vec::new();
                for item in items {
                    match &item.kind {
                        Kind::Str(s) => out.push(s.clone()),
                        _ => self.errors.push(bad(item.describe())),
                    }
                }
                out
            }
            _ => {
                self.errors.push(bad(entry.node.describe()));
                Vec::new()
            }
        }
    }

    fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }

    fn set(&mut self, entry: Entry) {
        set_entry(&mut self.entries, entry);
    }
}

/// Top-level `dict.update`: replace the value of an existing key, or append.
fn set_entry(entries: &mut Vec<Entry>, entry: Entry) {
    match entries.iter_mut().find(|e| e.key == entry.key) {
        Some(existing) => *existing = entry,
        None => entries.push(entry),
    }
}

/// `os.path.expanduser` for `~` and `~/...` (not `~user`).
pub(crate) fn expand_user(path: &str, home: Option<&Path>) -> String {
    match (path.strip_prefix('~'), home) {
        (Some(""), Some(home)) => home.display().to_string(),
        (Some(rest), Some(home)) if rest.starts_with('/') => {
            format!("{}{rest}", home.display())
        }
        _ => path.to_owned(),
    }
}

/// Python's `glob.glob` for `*`, `?` and `[...]`: matches path components one by one; a
/// wildcard does not match a leading `.` unless the pattern component starts with one.
/// The names matched in each directory are sorted (Salt sorts what `include:` matches).
pub fn glob(pattern: &Path) -> Vec<PathBuf> {
    glob_in(pattern, true)
}

/// [`glob`] with each directory's names in the order the directory lists them, as
/// Python's `glob.glob` returns them (`os.scandir` order).
pub(crate) fn glob_unsorted(pattern: &Path) -> Vec<PathBuf> {
    glob_in(pattern, false)
}

fn glob_in(pattern: &Path, sort: bool) -> Vec<PathBuf> {
    let mut current: Vec<PathBuf> = vec![PathBuf::new()];
    for component in pattern.components() {
        let part = component.as_os_str().to_string_lossy();
        let mut next = Vec::new();
        if !has_magic(&part) {
            for base in &current {
                next.push(base.join(component.as_os_str()));
            }
        } else {
            for base in &current {
                let dir = if base.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    base.as_path()
                };
                let Ok(read) = std::fs::read_dir(dir) else {
                    continue;
                };
                let mut names: Vec<String> = read
                    .filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| !name.starts_with('.') || part.starts_with('.'))
                    .filter(|name| salt_compat::fnmatch(name, &part))
                    .collect();
                if sort {
                    names.sort();
                }
                next.extend(names.into_iter().map(|n| base.join(n)));
            }
        }
        current = next;
    }
    current.retain(|p| !p.as_os_str().is_empty() && p.exists());
    current
}

fn has_magic(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_user_home() {
        let home = Path::new("/home/u");
        assert_eq!(expand_user("~/x", Some(home)), "/home/u/x");
        assert_eq!(expand_user("~", Some(home)), "/home/u");
        assert_eq!(expand_user("x/~", Some(home)), "x/~");
        assert_eq!(expand_user("~/x", None), "~/x");
    }
}
