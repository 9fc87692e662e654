//! Typed option values shared by the master and minion configurations.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

use zeroize::Zeroizing;

use crate::error::Problem;

/// Salt's log levels (`salt/_logging/impl.py` `LOG_LEVELS`), from most to least verbose.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub enum LogLevel {
    /// `all`: everything (Python `NOTSET`).
    All,
    /// `garbage`: below trace.
    Garbage,
    /// `trace`.
    Trace,
    /// `debug`.
    Debug,
    /// `profile`: Salt's profiling level, between debug and info.
    Profile,
    /// `info`.
    Info,
    /// `warning` (`warn` is accepted too).
    Warning,
    /// `error`.
    Error,
    /// `critical`.
    Critical,
    /// `quiet`: nothing.
    Quiet,
}

impl LogLevel {
    /// The Salt spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Garbage => "garbage",
            Self::Trace => "trace",
            Self::Debug => "debug",
            Self::Profile => "profile",
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Quiet => "quiet",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<Self, Problem> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "all" => Self::All,
            "garbage" => Self::Garbage,
            "trace" => Self::Trace,
            "debug" => Self::Debug,
            "profile" => Self::Profile,
            "info" => Self::Info,
            "warning" | "warn" => Self::Warning,
            "error" => Self::Error,
            "critical" => Self::Critical,
            "quiet" => Self::Quiet,
            _ => {
                return Err(invalid(
                    s,
                    "expected one of all, garbage, trace, debug, profile, info, warning, error, \
                     critical, quiet",
                ));
            }
        })
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a log goes: a file path, or a URL such as `udp://host:514` / `file:///dev/log`
/// (Salt does not prefix `root_dir` to those).
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum LogFile {
    /// A path on the local filesystem (already prefixed with `root_dir`).
    Path(PathBuf),
    /// A `scheme://...` destination, kept as written.
    Url(String),
}

impl LogFile {
    /// Classifies a configured value: anything with a URL scheme is a [`LogFile::Url`].
    pub(crate) fn parse(s: &str) -> Self {
        match s.split_once("://") {
            Some((scheme, _))
                if !scheme.is_empty()
                    && scheme
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
            {
                Self::Url(s.to_owned())
            }
            _ => Self::Path(PathBuf::from(s)),
        }
    }
}

/// Hash used for file hashes and key fingerprints (`hash_type`; Salt lowercases it): the
/// one definition, `salt_pki::HashType`.
pub use salt_pki::HashType;

/// Parse `hash_type` (case-insensitive, as Salt lowercases it).
pub(crate) fn parse_hash_type(s: &str) -> Result<HashType, Problem> {
    s.parse()
        .map_err(|_| invalid(s, "expected md5, sha1, sha224, sha256, sha384 or sha512"))
}

/// RSA signing scheme (`salt.crypt.VALID_SIGNING_ALGORITHMS`): one definition,
/// `salt_pki::SigAlgo`, which the handshakes use.
pub type SigningAlgorithm = salt_pki::SigAlgo;

/// RSA encryption scheme (`salt.crypt.VALID_ENCRYPTION_ALGORITHMS`): one definition,
/// `salt_pki::EncAlgo`.
pub type EncryptionAlgorithm = salt_pki::EncAlgo;

/// Parse `signing_algorithm` / `publish_signing_algorithm` (exact names, as Salt).
pub(crate) fn parse_sig_algo(s: &str) -> Result<SigningAlgorithm, Problem> {
    s.parse()
        .map_err(|_| invalid(s, "expected PKCS1v15-SHA1 or PKCS1v15-SHA224"))
}

/// Parse `encryption_algorithm` (exact names, as Salt).
pub(crate) fn parse_enc_algo(s: &str) -> Result<EncryptionAlgorithm, Problem> {
    s.parse()
        .map_err(|_| invalid(s, "expected OAEP-SHA1 or OAEP-SHA224"))
}

/// How the minion chooses among its masters (`master_type`, `salt/minion.py` `eval_master`).
#[derive(Clone, Copy, Debug, Eq, Hash, PartialEq)]
pub enum MasterType {
    /// `str`: connect to the master (to every master at once when `master` is a list).
    Str,
    /// `failover`: connect to the first reachable master of the list, move on when it dies.
    Failover,
    /// `distributed`: like failover, starting at a master chosen by a hash of the minion id.
    Distributed,
    /// `func`: `master` names an execution module function that returns the master.
    Func,
    /// `disable`: do not connect to any master.
    Disable,
}

impl MasterType {
    /// The Salt spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Str => "str",
            Self::Failover => "failover",
            Self::Distributed => "distributed",
            Self::Func => "func",
            Self::Disable => "disable",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<Self, Problem> {
        match s {
            "str" => Ok(Self::Str),
            "failover" => Ok(Self::Failover),
            "distributed" => Ok(Self::Distributed),
            "func" => Ok(Self::Func),
            "disable" => Ok(Self::Disable),
            _ => Err(invalid(
                s,
                "expected one of str, failover, distributed, func, disable",
            )),
        }
    }
}

/// One `master` entry: a host (name or IP address, without brackets) and an optional port,
/// parsed like Salt's `salt.utils.network.parse_host_port`.
#[derive(Clone, Debug, Eq, Hash, PartialEq)]
pub struct MasterAddr {
    /// Host name, or an IP address in its canonical (compressed) form.
    pub host: String,
    /// Port given with the entry (`host:port`, `[v6]:port`); `None` means `master_port`.
    pub port: Option<u16>,
}

impl MasterAddr {
    /// Parses `host`, `host:port`, `a.b.c.d:port`, `[v6]:port` or a bare IPv6 address.
    pub fn parse(s: &str) -> Result<Self, Problem> {
        let bad = |reason: &str| invalid(s, reason);
        let s_trim = s.trim();
        if s_trim.is_empty() {
            return Err(bad("empty master address"));
        }
        let (host, port) = if let Some(rest) = s_trim.strip_prefix('[') {
            let (host, after) = rest
                .rsplit_once(']')
                .ok_or_else(|| bad("missing ']' after IPv6 address"))?;
            let addr: std::net::Ipv6Addr = host
                .parse()
                .map_err(|_| bad("not an IPv6 address inside [...]"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(parse_port_text(p).map_err(|r| bad(&r))?),
                None if after.is_empty() => None,
                None => return Err(bad("unexpected text after ']'")),
            };
            (addr.to_string(), port)
        } else if s_trim.matches(':').count() == 1 {
            let (host, port) = s_trim.split_once(':').unwrap_or((s_trim, ""));
            (
                host.to_owned(),
                Some(parse_port_text(port).map_err(|r| bad(&r))?),
            )
        } else {
            (s_trim.to_owned(), None)
        };
        let host = match host.parse::<IpAddr>() {
            Ok(ip) => ip.to_string(),
            Err(_) => {
                let valid = !host.is_empty()
                    && host
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
                if !valid {
                    return Err(bad("not a valid host name or IP address"));
                }
                host
            }
        };
        Ok(Self { host, port })
    }

    /// The port to use: the entry's own, else `default` (the minion's `master_port`).
    pub fn port_or(&self, default: u16) -> u16 {
        self.port.unwrap_or(default)
    }
}

impl fmt::Display for MasterAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v6 = self.host.contains(':');
        match (self.port, v6) {
            (Some(p), true) => write!(f, "[{}]:{p}", self.host),
            (Some(p), false) => write!(f, "{}:{p}", self.host),
            (None, _) => f.write_str(&self.host),
        }
    }
}

/// The `master` option: one master (a string) or a list. Salt treats the two differently:
/// with `master_type: str` a list means "connect to all of them" (multi-master).
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum Masters {
    /// `master: host`.
    One(MasterAddr),
    /// `master: [a, b, ...]`.
    List(Vec<MasterAddr>),
}

impl Masters {
    /// Every configured master, in configured order.
    pub fn addrs(&self) -> &[MasterAddr] {
        match self {
            Self::One(a) => std::slice::from_ref(a),
            Self::List(v) => v,
        }
    }

    /// True when configured as a YAML list.
    pub fn is_list(&self) -> bool {
        matches!(self, Self::List(_))
    }
}

/// A secret string (a key passphrase): wiped from memory on drop, never printed by `Debug`.
#[derive(Clone, Eq, PartialEq)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// Wraps a secret.
    pub fn new(s: String) -> Self {
        Self(Zeroizing::new(s))
    }

    /// The secret text. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// `publisher_acl_blacklist`: users and module functions nobody in `publisher_acl` may use.
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct PublisherAclBlacklist {
    /// User name patterns (Salt matches them as regular expressions).
    pub users: Vec<String>,
    /// Module/function patterns.
    pub modules: Vec<String>,
}

/// A port number as text (for `host:port`).
fn parse_port_text(p: &str) -> Result<u16, String> {
    match p.trim().parse::<u32>() {
        Ok(n) if (1..=65535).contains(&n) => Ok(n as u16),
        Ok(n) => Err(format!("port {n} is out of range 1-65535")),
        Err(_) => Err(format!("port {p:?} is not an integer")),
    }
}

pub(crate) fn invalid(value: &str, reason: &str) -> Problem {
    Problem::Invalid {
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn master_addr_forms() {
        let p = |s| MasterAddr::parse(s).unwrap();
        assert_eq!(
            p("salt"),
            MasterAddr {
                host: "salt".into(),
                port: None
            }
        );
        assert_eq!(p("m1.example.com:4606").port, Some(4606));
        assert_eq!(
            p("10.0.0.1:1234"),
            MasterAddr {
                host: "10.0.0.1".into(),
                port: Some(1234)
            }
        );
        assert_eq!(
            p("[2001:db8::1]:4506"),
            MasterAddr {
                host: "2001:db8::1".into(),
                port: Some(4506)
            }
        );
        assert_eq!(p("[2001:db8:0:0::1]").host, "2001:db8::1");
        assert_eq!(
            p("2001:db8::5"),
            MasterAddr {
                host: "2001:db8::5".into(),
                port: None
            }
        );
        assert_eq!(p("[::1]:4506").to_string(), "[::1]:4506");
        for bad in [
            "",
            "host:0",
            "host:70000",
            "host:x",
            "[::1",
            "[nothost]:1",
            "bad host",
            "[::1]x",
        ] {
            assert!(
                MasterAddr::parse(bad).is_err(),
                "{bad:?} should be rejected"
            );
        }
    }

    #[test]
    fn log_file_url_or_path() {
        assert_eq!(
            LogFile::parse("udp://h:514"),
            LogFile::Url("udp://h:514".into())
        );
        assert_eq!(
            LogFile::parse("/var/log/x"),
            LogFile::Path("/var/log/x".into())
        );
    }

    #[test]
    fn secret_debug_is_redacted() {
        assert_eq!(
            format!("{:?}", Secret::new("hunter2".into())),
            "Secret(<redacted>)"
        );
    }
}
