//! The one loader both configurations go through: gather the sources, read every option,
//! collect every problem. [`MasterConfig`](crate::MasterConfig) and
//! [`MinionConfig`](crate::MinionConfig) only say what differs ([`Role`]).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::common::{SEC, parse_ip, read_log_file, read_root_dir};
use crate::error::ConfigErrors;
use crate::reader::{Reader, boolean, count_or_unset, duration_or_unset, path, port, string, word};
use crate::source::Sources;
use crate::types::{LogFile, LogLevel};
use crate::{LoadOptions, Loaded, OptionDoc, finish, prepend_root_dir};

/// What a configuration file says of itself: its name and how its options are read.
pub(crate) trait Role: Sized {
    /// `master` or `minion`: the config file and its `.d` directory are named after it.
    const ROLE: &'static str;

    /// Reads every option; problems are recorded in `r`.
    fn read(r: &mut Reader<'_>, opts: &LoadOptions) -> Self;

    /// Every option [`Role::read`] asks for: name, Salt default, description.
    fn option_table() -> Vec<OptionDoc>;
}

/// Loads `<config_dir>/<role>`, `<role>.d/*.conf` and `include:`.
pub(crate) fn load<C: Role>(opts: &LoadOptions) -> Result<Loaded<C>, ConfigErrors> {
    from_sources(Sources::gather(opts, C::ROLE), opts)
}

/// Loads from YAML text as if it were `<config_dir>/<role>`.
pub(crate) fn from_yaml_str<C: Role>(
    text: &str,
    opts: &LoadOptions,
) -> Result<Loaded<C>, ConfigErrors> {
    from_sources(
        Sources::from_text(text, &opts.config_dir.join(C::ROLE)),
        opts,
    )
}

/// The configuration with no file at all.
pub(crate) fn embedded_default<C: Role>(opts: &LoadOptions) -> C {
    let sources = Sources::default();
    C::read(&mut Reader::new(&sources), opts)
}

fn from_sources<C: Role>(sources: Sources, opts: &LoadOptions) -> Result<Loaded<C>, ConfigErrors> {
    let mut reader = Reader::new(&sources);
    let config = C::read(&mut reader, opts);
    crate::fail_closed::check(&mut reader, C::ROLE);
    let (errors, warnings) = reader.finish(C::ROLE);
    let mut all_errors = sources.errors;
    all_errors.extend(errors);
    let mut all_warnings = sources.warnings;
    all_warnings.extend(warnings);
    finish(config, all_errors, all_warnings, sources.files)
}

/// The public loading functions of a configuration type, delegating to this module.
macro_rules! loader_methods {
    ($role:literal) => {
        #[doc = concat!("Loads `<config_dir>/", $role, "`, `", $role, ".d/*.conf` and `include:`;")]
        /// the embedded defaults when there is no file. Fails with every error found.
        pub fn load(opts: &LoadOptions) -> Result<Loaded<Self>, ConfigErrors> {
            crate::load::load(opts)
        }

        #[doc = concat!("Loads from YAML text as if it were `<config_dir>/", $role, "`")]
        /// (includes are not followed).
        pub fn from_yaml_str(text: &str, opts: &LoadOptions) -> Result<Loaded<Self>, ConfigErrors> {
            crate::load::from_yaml_str(text, opts)
        }

        /// The configuration with no file at all.
        pub fn embedded_default(opts: &LoadOptions) -> Self {
            crate::load::embedded_default(opts)
        }

        #[doc = concat!("Every option salt-rs reads for the ", $role, ": name, Salt default, description.")]
        pub fn option_table() -> Vec<OptionDoc> {
            <Self as crate::load::Role>::option_table()
        }
    };
}
pub(crate) use loader_methods;

/// The options both daemons have and read alike (declared by `salt_options!`'s
/// `shared_daemon_options;`).
pub(crate) struct Shared {
    pub log_level: LogLevel,
    pub log_level_logfile: Option<LogLevel>,
    pub tcp_keepalive: bool,
    pub tcp_keepalive_idle: Option<Duration>,
    pub tcp_keepalive_cnt: Option<u32>,
    pub tcp_keepalive_intvl: Option<Duration>,
    pub metrics_port: Option<u16>,
    pub metrics_host: IpAddr,
}

impl Shared {
    /// Reads them, with Salt's defaults (the same for master and minion).
    pub(crate) fn read(r: &mut Reader<'_>) -> Self {
        Self {
            log_level: r.get("log_level", LogLevel::Warning, word(LogLevel::parse)),
            log_level_logfile: r.opt("log_level_logfile", word(LogLevel::parse)),
            tcp_keepalive: r.get("tcp_keepalive", true, boolean),
            tcp_keepalive_idle: r.get(
                "tcp_keepalive_idle",
                Some(crate::master::DEFAULT_TCP_KEEPALIVE_IDLE),
                duration_or_unset(SEC),
            ),
            tcp_keepalive_cnt: r.get("tcp_keepalive_cnt", None, count_or_unset),
            tcp_keepalive_intvl: r.get("tcp_keepalive_intvl", None, duration_or_unset(SEC)),
            metrics_port: r.opt("metrics_port", port),
            metrics_host: r.get("metrics_host", IpAddr::from([127, 0, 0, 1]), word(parse_ip)),
        }
    }
}

/// `Self { <fields>, <the shared ones from $shared> }`: the struct literal of a
/// configuration declared with `shared_daemon_options;`.
macro_rules! with_shared {
    ($shared:expr, Self { $($own:tt)* }) => {{
        let shared: $crate::load::Shared = $shared;
        Self {
            $($own)*
            log_level: shared.log_level,
            log_level_logfile: shared.log_level_logfile,
            tcp_keepalive: shared.tcp_keepalive,
            tcp_keepalive_idle: shared.tcp_keepalive_idle,
            tcp_keepalive_cnt: shared.tcp_keepalive_cnt,
            tcp_keepalive_intvl: shared.tcp_keepalive_intvl,
            metrics_port: shared.metrics_port,
            metrics_host: shared.metrics_host,
        }
    }};
}
pub(crate) use with_shared;

/// `master_sign_key_name` (also read as `master_key_sign_name`, with a warning): the base
/// name of the master's signing key pair, on both sides.
pub(crate) fn read_master_sign_key_name(r: &mut Reader<'_>) -> String {
    let entry = r.entry_aliased(
        "master_sign_key_name",
        "master_key_sign_name",
        "`master_key_sign_name` is not a Salt option",
    );
    r.convert(entry, "master_sign".to_owned(), string)
}

/// The locations every daemon has, read in this order, each under `root_dir`.
pub(crate) struct Paths {
    pub root_dir: PathBuf,
    pub pki_dir: PathBuf,
    pub cachedir: PathBuf,
    pub sock_dir: PathBuf,
    pub pidfile: PathBuf,
    pub log_file: LogFile,
}

impl Paths {
    /// `root_dir`, `pki_dir`, `cachedir`, `sock_dir` (Salt moves a socket directory whose
    /// path is too long under `cachedir`), `pidfile` and `log_file`, with `role`'s defaults.
    pub(crate) fn read(r: &mut Reader<'_>, opts: &LoadOptions, role: &str) -> Self {
        let root_dir = read_root_dir(r, opts, role);
        let pki_dir = r.get(
            "pki_dir",
            PathBuf::from(format!("/etc/salt/pki/{role}")),
            path,
        );
        let cachedir = r.get(
            "cachedir",
            PathBuf::from(format!("/var/cache/salt/{role}")),
            path,
        );
        let mut sock_dir = r.get(
            "sock_dir",
            PathBuf::from(format!("/var/run/salt/{role}")),
            path,
        );
        if sock_dir.as_os_str().len() > cachedir.as_os_str().len() + 10 {
            sock_dir = cachedir.join(".salt-unix");
        }
        let pidfile = r.get(
            "pidfile",
            PathBuf::from(format!("/var/run/salt-{role}.pid")),
            path,
        );
        let log_file = read_log_file(r, "log_file", &format!("/var/log/salt/{role}"), &root_dir);
        Self {
            pki_dir: prepend_root_dir(&root_dir, &pki_dir),
            cachedir: prepend_root_dir(&root_dir, &cachedir),
            sock_dir: prepend_root_dir(&root_dir, &sock_dir),
            pidfile: prepend_root_dir(&root_dir, &pidfile),
            log_file,
            root_dir,
        }
    }

    /// `path` under `root_dir`, as Salt's `prepend_root_dir` does.
    pub(crate) fn under_root(&self, path: &std::path::Path) -> PathBuf {
        prepend_root_dir(&self.root_dir, path)
    }
}

/// The option names [`Role::read`] asks for and those [`Role::option_table`] documents,
/// each sorted and deduplicated (tests compare them).
#[cfg(test)]
pub(crate) fn asked_and_documented<C: Role>() -> (Vec<&'static str>, Vec<&'static str>) {
    let sources = Sources::default();
    let mut reader = Reader::new(&sources);
    let _ = C::read(&mut reader, &LoadOptions::new("/nonexistent"));
    let mut asked: Vec<&str> = reader.asked().to_vec();
    asked.sort_unstable();
    asked.dedup();
    let mut table: Vec<&str> = C::option_table().iter().map(|o| o.name).collect();
    table.sort_unstable();
    (asked, table)
}
