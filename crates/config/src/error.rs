//! Errors of configuration loading: one [`ConfigError`] per bad file or key, collected into
//! [`ConfigErrors`] so that an operator sees every mistake at once.

use std::fmt;
use std::path::{Path, PathBuf};

/// One problem found while loading a configuration.
///
/// Every variant names the file it came from; key problems also name the key and, when the
/// YAML parser reported it, the line (1-based).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read (permissions, not UTF-8, ...).
    #[error("{}: cannot read configuration file: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// The file is not valid YAML (or uses a YAML feature Salt rejects, such as duplicate keys).
    #[error("{}: invalid YAML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message, which includes line and column.
        message: String,
    },
    /// The file's top-level YAML value is not a mapping (Salt: "conf should be a document").
    #[error("{}: the configuration must be a YAML mapping of options, not {found}", path.display())]
    NotAMapping {
        /// The file.
        path: PathBuf,
        /// What was found instead ("a list", "a string", ...).
        found: String,
    },
    /// A top-level key is not a string (for example `1: foo`).
    #[error("{}: option names must be strings, found {found}", Where(path, *line))]
    BadKeyName {
        /// The file.
        path: PathBuf,
        /// Line of the key, if known.
        line: Option<u64>,
        /// Description of the key that was found.
        found: String,
    },
    /// An option has a value of the wrong type or an invalid value.
    #[error("{}: option `{key}`: {problem}", Where(path, *line))]
    InvalidOption {
        /// The file the value came from.
        path: PathBuf,
        /// Line of the value, if known.
        line: Option<u64>,
        /// The Salt option name.
        key: String,
        /// What is wrong with it.
        problem: Problem,
    },
}

impl ConfigError {
    /// The file and (when known) the line the error is about.
    pub fn location(&self) -> (&Path, Option<u64>) {
        match self {
            Self::Read { path, .. }
            | Self::Syntax { path, .. }
            | Self::NotAMapping { path, .. } => (path, None),
            Self::BadKeyName { path, line, .. } | Self::InvalidOption { path, line, .. } => {
                (path, *line)
            }
        }
    }
}

/// What is wrong with an option's value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The value is of the wrong YAML type.
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// The type the option needs, in words ("an integer", "a boolean", ...).
        expected: &'static str,
        /// What was found, in words, with the value.
        found: String,
    },
    /// A number outside the option's range.
    #[error("{value} is out of range (allowed: {allowed})")]
    OutOfRange {
        /// The value as written.
        value: String,
        /// The allowed range, in words.
        allowed: String,
    },
    /// A Salt security option set to ask for a protection salt-rs does not give: the daemon
    /// refuses to start rather than run without it (fail closed).
    #[error(
        "security option not implemented by salt-rs ({lacks}); refusing to start without it \
         (fail closed): remove the option or run Salt for this daemon"
    )]
    NotImplemented {
        /// What salt-rs lacks, in words.
        lacks: &'static str,
    },
    /// A value of the right type that is not acceptable (unknown enum word, bad host name...).
    #[error("invalid value {value:?}: {reason}")]
    Invalid {
        /// The value as written.
        value: String,
        /// Why it is rejected, possibly listing the accepted values.
        reason: String,
    },
}

/// Every error found while loading a configuration. `Display` prints one error per line.
#[derive(Clone, Debug, Default, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors {
    /// The errors, in the order they were found (file order, then key order).
    pub errors: Vec<ConfigError>,
}

impl ConfigErrors {
    /// Number of errors.
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// True when no error was recorded.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// Iterates over the errors.
    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.errors.iter()
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.errors.iter()
    }
}

/// `file:line` (or just `file` when the line is unknown) for messages.
pub(crate) struct Where<'a>(pub(crate) &'a Path, pub(crate) Option<u64>);

impl fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Some(line) => write!(f, "{}:{line}", self.0.display()),
            None => write!(f, "{}", self.0.display()),
        }
    }
}
