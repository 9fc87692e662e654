//! Salt's GLOB target for key names: a comma-separated list of Python `fnmatch` patterns.
//!
//! `salt-key -a/-r/-d/-p/-f GLOB` split the argument on `,` (items are not trimmed) and a
//! key matches when any item matches it with `fnmatch.fnmatch` (on POSIX: case-sensitive
//! `fnmatchcase`), the one port in `salt_compat::fnmatch`.

use regex::Regex;
use salt_compat::fnmatch::{FnmatchError, compile, translate};

use crate::error::{KeyStoreError, Result};

fn glob_error(e: FnmatchError) -> KeyStoreError {
    KeyStoreError::InvalidGlob {
        pattern: e.pattern,
        reason: e.reason,
    }
}

/// A compiled GLOB list (comma-separated fnmatch patterns), as `salt-key` takes it.
#[derive(Clone, Debug)]
pub struct GlobList {
    source: String,
    /// `None` when no item can match anything (for example `[z-a]`).
    regex: Option<Regex>,
}

impl GlobList {
    /// Compile `globs` (e.g. `"web*,db[0-9]"`).
    pub fn new(globs: &str) -> Result<Self> {
        let mut alternatives = Vec::new();
        for item in globs.split(',') {
            if let Some(re) = translate(item).map_err(glob_error)? {
                alternatives.push(re);
            }
        }
        let regex = if alternatives.is_empty() {
            None
        } else {
            Some(compile(&alternatives, globs).map_err(glob_error)?)
        };
        Ok(Self {
            source: globs.to_owned(),
            regex,
        })
    }

    /// One fnmatch pattern, commas included (no splitting), as `fnmatch.fnmatch` takes it.
    pub fn single(pattern: &str) -> Result<Self> {
        let regex = match translate(pattern).map_err(glob_error)? {
            None => None,
            Some(re) => Some(compile(&[re], pattern).map_err(glob_error)?),
        };
        Ok(Self {
            source: pattern.to_owned(),
            regex,
        })
    }

    /// The glob list as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `name` matches one item of the list.
    pub fn is_match(&self, name: &str) -> bool {
        self.regex.as_ref().is_some_and(|re| re.is_match(name))
    }
}

/// Python's `fnmatch.fnmatchcase(name, pattern)` for one pattern (no comma splitting).
pub fn fnmatch(name: &str, pattern: &str) -> Result<bool> {
    salt_compat::fnmatch::try_fnmatch(name, pattern).map_err(glob_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists() {
        let g = GlobList::new("web*,db[0-9]").unwrap();
        assert!(g.is_match("web1"));
        assert!(g.is_match("db7"));
        assert!(!g.is_match("db10"));
        // Items are not trimmed, as in Salt.
        let g = GlobList::new("a, b").unwrap();
        assert!(g.is_match("a"));
        assert!(!g.is_match("b"));
        assert!(g.is_match(" b"));
        assert!(!GlobList::new("[z-a]").unwrap().is_match("a"));
    }
}
