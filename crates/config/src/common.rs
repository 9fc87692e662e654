//! Readers both configurations share: duration units, `0` disables, IP addresses,
//! `root_dir`, `log_file`, the default minion id.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::Problem;
use crate::reader::{Reader, duration, path, string};
use crate::types::{LogFile, invalid};
use crate::{LoadOptions, prepend_root_dir};

pub(crate) const MS: Duration = Duration::from_millis(1);
pub(crate) const SEC: Duration = Duration::from_secs(1);
pub(crate) const MIN: Duration = Duration::from_secs(60);

/// A duration where `0` means "off".
pub(crate) fn zero_disables(
    unit: Duration,
) -> impl Fn(&crate::node::Node) -> Result<Option<Duration>, Problem> {
    move |n| duration(unit)(n).map(|d| (!d.is_zero()).then_some(d))
}

pub(crate) fn parse_ip(s: &str) -> Result<IpAddr, Problem> {
    s.trim()
        .parse()
        .map_err(|_| invalid(s, "expected an IPv4 or IPv6 address"))
}

/// `root_dir`: configured (made absolute like Python's `os.path.abspath`) or the default.
pub(crate) fn read_root_dir(r: &mut Reader<'_>, opts: &LoadOptions, role: &str) -> PathBuf {
    let root = r.get("root_dir", opts.default_root_dir(role), path);
    if root.is_absolute() {
        root
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(&root))
            .unwrap_or(root)
    }
}

/// A log destination: URLs are kept, paths get `root_dir`.
pub(crate) fn read_log_file(
    r: &mut Reader<'_>,
    key: &'static str,
    default: &str,
    root_dir: &std::path::Path,
) -> LogFile {
    match r.get(key, LogFile::parse(default), |n| {
        string(n).map(|s| LogFile::parse(&s))
    }) {
        LogFile::Path(p) => LogFile::Path(prepend_root_dir(root_dir, &p)),
        url => url,
    }
}

/// Salt's `get_id` without `id`: `<root_dir>/etc/salt/minion_id` when caching is on and the
/// file holds a name other than `localhost`, else the host name.
pub(crate) fn default_id(opts: &LoadOptions, root_dir: &std::path::Path, caching: bool) -> String {
    if caching {
        let cache = root_dir.join("etc/salt/minion_id");
        if let Ok(text) = std::fs::read_to_string(cache) {
            let name = text
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches('\u{feff}')
                .trim()
                .to_owned();
            if !name.is_empty() && name != "localhost" {
                return name;
            }
        }
    }
    opts.host_name()
}
