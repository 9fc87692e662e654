//! salt-config: Salt's YAML configuration files, read into typed [`MasterConfig`] and
//! [`MinionConfig`] values with Salt's option names and Salt's defaults.
//!
//! Loading follows Salt's `master_config()` / `minion_config()`:
//!
//! 1. `<config_dir>/master` (or `minion`); when it does not exist, the embedded defaults;
//! 2. `default_include` (`master.d/*.conf`, `minion.d/*.conf`), files in sorted order;
//! 3. the `include:` option (a string or a list of globs, relative to the config dir).
//!
//! Each later source replaces earlier top-level options; within one include batch mappings
//! are merged and lists concatenated, as Salt's `dictupdate.update` does. Then `root_dir` is
//! prefixed to the path options exactly as Salt's `prepend_root_dir` does.
//!
//! Like linkerd's env loader, every option is parsed and **every** problem is reported
//! (file, line when known, option, what is wrong) before failing once with
//! [`ConfigErrors`]. Options salt-rs does not implement are warnings, not errors; so are keys
//! Salt does not know either (typos: the warning names the nearest known option).
//!
//! This crate does not create directories, check permissions, resolve host names or read
//! the environment (except through [`LoadOptions::from_system`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

use std::path::{Path, PathBuf};

mod cli;
mod cluster;
mod common;
mod error;
mod event_bus;
mod ext_pillar;
mod fail_closed;
mod fileserver;
mod known;
mod load;
mod master;
mod master_eauth;
mod minion;
mod netapi;
mod node;
mod reactor;
mod reader;
mod returners;
mod salt3008;
mod source;
mod types;
mod values;

pub use cli::{VERSION, check_config_file};
pub use cluster::{ClusterConfig, JobDriver, KeyDriver, MmapKeyConfig, PostgresConfig, SslMode};
pub use error::{ConfigError, ConfigErrors, Problem};
pub use event_bus::{EventBusFraming, IpcMode};
pub use ext_pillar::{
    EXT_PILLAR_MODULES, ExtPillar, PgPillarConn, check_module as check_ext_pillar_module,
};
pub use fileserver::{
    DEFAULT_FILE_BUFFER_SIZE, FileServerConfig, GIT_PILLAR_PARAMS, GitPillarConfig,
    GitPillarRemote, GitfsConfig, GitfsRemote, GitfsSaltenv, TopMergingStrategy,
};
pub use master::MasterConfig;
pub use minion::MinionConfig;
pub use netapi::{ApiOptions, NETAPI_CLIENTS, RestCherrypy};
pub use reactor::{ReactorConfig, ReactorMap};
pub use returners::{EVENT_RETURNERS, MasterReturners, PgReturnerConn};
/// Python's `glob.glob` (`*`, `?`, `[...]`; no leading-dot matches).
pub use source::glob as py_glob;
pub use types::{
    EncryptionAlgorithm, HashType, LogFile, LogLevel, MasterAddr, MasterType, Masters,
    PublisherAclBlacklist, Secret, SigningAlgorithm,
};
pub use values::{ValuesError, master_values};

/// Salt's default configuration directory (`salt.syspaths.CONFIG_DIR`).
pub const DEFAULT_CONFIG_DIR: &str = "/etc/salt";

/// Where to load from and the facts about the process that Salt's defaults depend on.
///
/// Everything is explicit so that tests are deterministic; [`LoadOptions::from_system`]
/// fills the facts from the running process.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct LoadOptions {
    /// The configuration directory (`-c DIR`), holding `master`/`minion` and `*.d/`.
    pub config_dir: PathBuf,
    /// Whether the daemon runs as root. When not, the default `root_dir` is a per-user
    /// directory (`$HOME/.salt-rs/master` or `.../minion`) so that a non-root run works.
    pub running_as_root: bool,
    /// The user's home directory (for the non-root `root_dir` and `~` in `include:`).
    pub home: Option<PathBuf>,
    /// The user name; the default of the `user` option (Salt uses the current user).
    pub user: Option<String>,
    /// The host name used for a default `id`; `None` reads `/proc/sys/kernel/hostname`
    /// (or `/etc/hostname`) at load time.
    pub hostname: Option<String>,
}

impl LoadOptions {
    /// Loads from `config_dir`, as root, with no home, user or host name given.
    pub fn new(config_dir: impl Into<PathBuf>) -> Self {
        Self {
            config_dir: config_dir.into(),
            running_as_root: true,
            home: None,
            user: None,
            hostname: None,
        }
    }

    /// Facts from the running process: effective uid, `$HOME`, `$USER`.
    /// `config_dir` defaults to [`DEFAULT_CONFIG_DIR`].
    pub fn from_system(config_dir: Option<PathBuf>) -> Self {
        let running_as_root = nix::unistd::geteuid().is_root();
        Self {
            config_dir: config_dir.unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG_DIR)),
            running_as_root,
            home: std::env::var_os("HOME").map(PathBuf::from),
            user: std::env::var("USER")
                .ok()
                .or_else(|| running_as_root.then(|| "root".to_owned())),
            hostname: None,
        }
    }

    /// Sets whether the process runs as root.
    pub fn running_as_root(mut self, root: bool) -> Self {
        self.running_as_root = root;
        self
    }

    /// Sets the home directory.
    pub fn home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = Some(home.into());
        self
    }

    /// Sets the user name.
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }

    /// Sets the host name used for a default `id`.
    pub fn hostname(mut self, hostname: impl Into<String>) -> Self {
        self.hostname = Some(hostname.into());
        self
    }

    /// The default `root_dir` for a role: `/` as root, else `$HOME/.salt-rs/<role>`.
    fn default_root_dir(&self, role: &str) -> PathBuf {
        match (&self.running_as_root, &self.home) {
            (false, Some(home)) => home.join(".salt-rs").join(role),
            _ => PathBuf::from("/"),
        }
    }

    fn host_name(&self) -> String {
        if let Some(h) = &self.hostname {
            return h.clone();
        }
        ["/proc/sys/kernel/hostname", "/etc/hostname"]
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .map(|s| s.trim().to_owned())
            .find(|s| !s.is_empty())
            .unwrap_or_else(|| "localhost".to_owned())
    }

    fn default_user(&self) -> String {
        self.user.clone().unwrap_or_else(|| "root".to_owned())
    }
}

/// A loaded configuration with what the loader has to say about it.
#[derive(Clone, Debug)]
pub struct Loaded<T> {
    /// The typed configuration.
    pub config: T,
    /// Non-fatal findings, one line each: unknown options, renamed options, includes that
    /// match nothing. The caller logs them.
    pub warnings: Vec<String>,
    /// Every file read, in the order read (empty when the embedded defaults were used).
    pub files: Vec<PathBuf>,
}

/// One row of the option reference (docs/configuration.md is generated from these).
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct OptionDoc {
    /// The Salt option name.
    pub name: &'static str,
    /// The default, as Salt documents it.
    pub default: &'static str,
    /// What the option does in salt-rs (Markdown).
    pub doc: String,
}

/// Renders the option reference for both daemons as Markdown (docs/configuration.md).
pub fn render_markdown() -> String {
    let mut out = String::from(
        "# Configuration reference\n\n\
         <!-- Generated from crates/config (MasterConfig::option_table, \
         MinionConfig::option_table).\n     Regenerate: UPDATE_DOCS=1 cargo test -p salt-config \
         --test docs -->\n\n\
         salt-rs reads Salt's files: `<config_dir>/master` (or `minion`), then \
         `master.d/*.conf` (`minion.d/*.conf`) in sorted order, then the `include:` globs; \
         later files override earlier ones. With no file, the defaults below apply. Paths \
         are prefixed with `root_dir` as Salt does; when not running as root the default \
         `root_dir` is `$HOME/.salt-rs/master` (or `minion`).\n\n\
         Every invalid option is reported (file, line, option, problem) before the daemon \
         exits; options salt-rs does not implement produce a warning and are ignored, except the \
         security options listed at the end, which stop the daemon (fail closed). A key \
         that is not a Salt option at all is reported as an unknown option with the nearest \
         known name (`interfce`: did you mean `interface`?) and ignored: a \
         warning, not an error, since Salt ignores such keys and some sites keep their own \
         keys in these files for `config.get`.\n",
    );
    for (title, table) in [
        ("salt-master", MasterConfig::option_table()),
        ("salt-minion", MinionConfig::option_table()),
    ] {
        out.push_str(&format!(
            "\n## {title}\n\n| Option | Default | Description |\n|---|---|---|\n"
        ));
        for row in table {
            let doc = row.doc.replace('\n', " ").replace('|', "\\|");
            out.push_str(&format!(
                "| `{}` | `{}` | {} |\n",
                row.name,
                row.default,
                doc.trim()
            ));
        }
    }
    out.push_str(
        "\n## Security options salt-rs refuses (fail closed)\n\n\
         Set to ask for a protection salt-rs does not give, these stop the daemon at start \
         with an error naming the option (exit code 64); set to Salt's default (or an empty \
         list) they are accepted.\n\n| Option | Daemon | What salt-rs lacks |\n|---|---|---|\n",
    );
    for role in ["master", "minion"] {
        for (key, lacks) in fail_closed::refused_options(role) {
            out.push_str(&format!("| `{key}` | salt-{role} | {lacks} |\n"));
        }
    }
    out
}

/// Salt's `prepend_root_dir` for one path: with `root_dir` `/opt/r`, `/etc/salt/pki` becomes
/// `/opt/r/etc/salt/pki`, a path already under `/opt/r` is kept, a relative path is joined.
/// Note that Salt also prefixes absolute paths given by the user.
fn prepend_root_dir(root_dir: &Path, path: &Path) -> PathBuf {
    if root_dir == Path::new("/") {
        return if path.is_absolute() {
            path.to_owned()
        } else {
            root_dir.join(path)
        };
    }
    if let Ok(rest) = path.strip_prefix(root_dir) {
        return root_dir.join(rest);
    }
    let relative: PathBuf = path
        .components()
        .filter(|c| !matches!(c, std::path::Component::RootDir))
        .collect();
    root_dir.join(relative)
}

/// Turns collected errors into the loader's result.
fn finish<T>(
    config: T,
    mut errors: Vec<ConfigError>,
    warnings: Vec<String>,
    files: Vec<PathBuf>,
) -> Result<Loaded<T>, ConfigErrors> {
    // Report in reading order: file by file, line by line.
    errors.sort_by_key(|e| {
        let (path, line) = e.location();
        let file = files.iter().position(|f| f == path).unwrap_or(usize::MAX);
        (file, line.unwrap_or(0))
    });
    if errors.is_empty() {
        Ok(Loaded {
            config,
            warnings,
            files,
        })
    } else {
        Err(ConfigErrors { errors })
    }
}

/// Joins doc-comment lines into one paragraph for the option table.
fn doc_text(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join(" ")
        .trim()
        .to_owned()
}

/// Declares a configuration struct whose fields are Salt options: each field carries its
/// doc comment and its Salt default, and `field_docs()` lists them for the option table.
macro_rules! salt_options {
    // `shared_daemon_options;` first: the options both daemons have, declared once (read by
    // `load::Shared`, assigned by `load::with_shared!`), appended to the struct's own.
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            shared_daemon_options;
            $($own:tt)*
        }
        $($rest:tt)*
    ) => {
        $crate::salt_options! {
            $(#[$meta])*
            pub struct $name {
                $($own)*
                /// Console log level.
                #[salt_default = "warning"]
                pub log_level: $crate::LogLevel,
                /// Log file level (`None`: same as `log_level`).
                #[salt_default = "None"]
                pub log_level_logfile: Option<$crate::LogLevel>,
                /// Enable TCP keepalive on the sockets.
                #[salt_default = "True"]
                pub tcp_keepalive: bool,
                /// Keepalive idle time (seconds; `-1`: OS default).
                #[salt_default = "300"]
                pub tcp_keepalive_idle: Option<std::time::Duration>,
                /// Keepalive probe count (`-1`: OS default).
                #[salt_default = "-1"]
                pub tcp_keepalive_cnt: Option<u32>,
                /// Keepalive probe interval (seconds; `-1`: OS default).
                #[salt_default = "-1"]
                pub tcp_keepalive_intvl: Option<std::time::Duration>,
                /// salt-rs only: serve Prometheus metrics on this port (`None`/`0`: off).
                #[salt_default = "None (salt-rs only)"]
                pub metrics_port: Option<u16>,
                /// salt-rs only: address the metrics endpoint binds to.
                #[salt_default = "127.0.0.1 (salt-rs only)"]
                pub metrics_host: std::net::IpAddr,
            }
            $($rest)*
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                #[salt_default = $default:literal]
                pub $field:ident : $ty:ty,
            )*
        }
        $(
            nested {
                $(
                    $(#[doc = $ndoc:literal])*
                    pub $nfield:ident : $nty:ty,
                )*
            }
        )?
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!("Salt default: `", $default, "`.")]
                pub $field: $ty,
            )*
            $($(
                $(#[doc = $ndoc])*
                pub $nfield: $nty,
            )*)?
        }

        impl $name {
            /// One row per field: Salt name, Salt default, doc comment.
            fn field_docs() -> Vec<$crate::OptionDoc> {
                vec![$(
                    $crate::OptionDoc {
                        name: stringify!($field),
                        default: $default,
                        doc: $crate::doc_text(&[$($doc),*]),
                    },
                )*]
            }
        }
    };
}
pub(crate) use salt_options;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepend_root_dir_like_salt() {
        let r = Path::new("/opt/r");
        assert_eq!(
            prepend_root_dir(r, Path::new("/etc/salt/pki")),
            Path::new("/opt/r/etc/salt/pki")
        );
        assert_eq!(
            prepend_root_dir(r, Path::new("/opt/r/pki")),
            Path::new("/opt/r/pki")
        );
        assert_eq!(
            prepend_root_dir(r, Path::new("pki")),
            Path::new("/opt/r/pki")
        );
        assert_eq!(
            prepend_root_dir(Path::new("/"), Path::new("/etc/x")),
            Path::new("/etc/x")
        );
    }
}
