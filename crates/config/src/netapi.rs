//! salt-api's options in the master's config (Salt's `salt-api` reads the master's file):
//! the `rest_cherrypy:` block (`salt/netapi/rest_cherrypy/app.py` and `__init__.py`),
//! `netapi_enable_clients`, `api_logfile`, `api_pidfile` and `rest_timeout`. The master
//! itself ignores them; `salt-api` (crate `salt-api-core`) serves them.

use std::path::PathBuf;
use std::time::Duration;

use crate::OptionDoc;
use crate::common::read_log_file;
use crate::error::Problem;
use crate::node::{Kind, Node};
use crate::reader::{Reader, boolean, count, duration, int_in, path, port, string, string_list};
use crate::types::{LogFile, invalid};

/// `rest_cherrypy:` as Salt's `rest_cherrypy` reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct RestCherrypy {
    /// `port` (required by Salt: without it the module does not load).
    pub port: u16,
    /// `host` (default `0.0.0.0`).
    pub host: String,
    /// `disable_ssl`: serve plain HTTP.
    pub disable_ssl: bool,
    /// `ssl_crt`: the certificate (PEM), required unless `disable_ssl`.
    pub ssl_crt: Option<PathBuf>,
    /// `ssl_key`: its private key (PEM).
    pub ssl_key: Option<PathBuf>,
    /// `root_prefix` (default `/`): where the API is mounted.
    pub root_prefix: String,
    /// `webhook_url` (default `/hook`).
    pub webhook_url: String,
    /// `webhook_disable_auth`.
    pub webhook_disable_auth: bool,
    /// `stats_disable_auth`.
    pub stats_disable_auth: bool,
    /// `collect_stats`.
    pub collect_stats: bool,
    /// `expire_responses` (CherryPy < 12 only; accepted, no effect, as with Salt's CherryPy).
    pub expire_responses: bool,
    /// `max_request_body_size` in bytes (0: no limit). Salt documents 1 MiB, but its
    /// rest_cherrypy hands the option to CherryPy under a key CherryPy does not read, so Salt's
    /// limit is CherryPy's server default, 100 MiB: ours too, unless the option is set.
    pub max_request_body_size: u64,
    /// `debug`: tracebacks in 500 answers (ours: the error text).
    pub debug: bool,
    /// `enable_sessions` (default true): false removes `/login`, `/logout`, `/minions`, `/jobs`.
    pub enable_sessions: bool,
    /// `app`: an HTML file served at `app_path`.
    pub app: Option<PathBuf>,
    /// `app_path` (default `/app`).
    pub app_path: String,
    /// `static`: a directory served at `static_path`.
    pub static_dir: Option<PathBuf>,
    /// `static_path` (default `/static`).
    pub static_path: String,
    /// `authorized_ips`: when set, only these client addresses are answered (else 403).
    pub authorized_ips: Vec<String>,
    /// salt-rs only (Salt's salt-api has no limit): `token_rate_limit`, the requests per
    /// second each session token may make (`None`: no limit). Over it: 429.
    pub token_rate_limit: Option<u32>,
    /// salt-rs only: `token_rate_burst`, how many requests a token may make at once
    /// (default: `token_rate_limit`). Only with `token_rate_limit`.
    pub token_rate_burst: Option<u32>,
}

/// What salt-api reads from the master's config.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiOptions {
    /// `rest_cherrypy` (`None`: not configured; salt-api then has nothing to serve).
    pub rest_cherrypy: Option<RestCherrypy>,
    /// `netapi_enable_clients` (default: none, as Salt 3006+).
    pub netapi_enable_clients: Vec<String>,
    /// `api_logfile` (default `/var/log/salt/api`).
    pub api_logfile: LogFile,
    /// `api_pidfile` (default `/var/run/salt-api.pid`).
    pub api_pidfile: PathBuf,
    /// `rest_timeout`: how long a synchronous runner waits for its return (default 300 s).
    pub rest_timeout: Duration,
}

/// Sub-options salt-rs's salt-api does not implement, with what it lacks (refused by name).
const REFUSED: [(&str, &str); 5] = [
    (
        "api_acl",
        "salt-api's `api_acl` (per-user client address lists) in salt-rs's salt-api",
    ),
    (
        "ssl_chain",
        "an intermediate chain file (`ssl_chain`) in salt-rs's salt-api: put the chain in `ssl_crt`",
    ),
    (
        "log_access_file",
        "CherryPy's access log (`log_access_file`) in salt-rs's salt-api",
    ),
    (
        "log_error_file",
        "CherryPy's error log (`log_error_file`) in salt-rs's salt-api: errors go to `api_logfile`",
    ),
    (
        "favicon",
        "a favicon file (`favicon`) in salt-rs's salt-api",
    ),
];

/// Sub-options Salt reads that only tune CherryPy's thread pool and queue: accepted, unused.
const TUNING: [&str; 2] = ["thread_pool", "socket_queue_size"];

fn text(node: &Node, key: &str) -> Result<String, Problem> {
    string(node).map_err(|_| invalid(key, "expected a string"))
}

fn rest_cherrypy(node: &Node) -> Result<RestCherrypy, Problem> {
    let Kind::Map(items) = &node.kind else {
        return Err(invalid(&node.describe(), "expected a mapping"));
    };
    let mut rc = RestCherrypy {
        port: 0,
        host: "0.0.0.0".to_owned(),
        disable_ssl: false,
        ssl_crt: None,
        ssl_key: None,
        root_prefix: "/".to_owned(),
        webhook_url: "/hook".to_owned(),
        webhook_disable_auth: false,
        stats_disable_auth: false,
        collect_stats: false,
        expire_responses: true,
        max_request_body_size: 104_857_600,
        debug: false,
        enable_sessions: true,
        app: None,
        app_path: "/app".to_owned(),
        static_dir: None,
        static_path: "/static".to_owned(),
        authorized_ips: Vec::new(),
        token_rate_limit: None,
        token_rate_burst: None,
    };
    let mut has_port = false;
    for (k, v) in items {
        let key = k.key_string();
        let at = |p: Problem| match p {
            Problem::NotImplemented { .. } => p,
            other => invalid(&format!("rest_cherrypy:{key}"), &other.to_string()),
        };
        if v.kind == Kind::Null {
            continue;
        }
        match key.as_str() {
            "port" => {
                rc.port = port(v).map_err(at)?;
                has_port = true;
            }
            "host" => rc.host = text(v, "host").map_err(at)?,
            "disable_ssl" => rc.disable_ssl = boolean(v).map_err(at)?,
            "ssl_crt" => rc.ssl_crt = Some(path(v).map_err(at)?),
            "ssl_key" => rc.ssl_key = Some(path(v).map_err(at)?),
            "root_prefix" => rc.root_prefix = text(v, "root_prefix").map_err(at)?,
            "webhook_url" => rc.webhook_url = text(v, "webhook_url").map_err(at)?,
            "webhook_disable_auth" => rc.webhook_disable_auth = boolean(v).map_err(at)?,
            "stats_disable_auth" => rc.stats_disable_auth = boolean(v).map_err(at)?,
            "collect_stats" => rc.collect_stats = boolean(v).map_err(at)?,
            "expire_responses" => rc.expire_responses = boolean(v).map_err(at)?,
            "max_request_body_size" => {
                rc.max_request_body_size = u64::from(count(v).map_err(at)?);
            }
            "debug" => rc.debug = boolean(v).map_err(at)?,
            "enable_sessions" => rc.enable_sessions = boolean(v).map_err(at)?,
            "app" => rc.app = Some(path(v).map_err(at)?),
            "app_path" => rc.app_path = text(v, "app_path").map_err(at)?,
            "static" => rc.static_dir = Some(path(v).map_err(at)?),
            "static_path" => rc.static_path = text(v, "static_path").map_err(at)?,
            "authorized_ips" => rc.authorized_ips = string_list(v).map_err(at)?,
            "token_rate_limit" => rc.token_rate_limit = Some(int_in(1, 1_000_000)(v).map_err(at)?),
            "token_rate_burst" => rc.token_rate_burst = Some(int_in(1, 1_000_000)(v).map_err(at)?),
            k if TUNING.contains(&k) => {
                count(v).map_err(at)?;
            }
            k => {
                if let Some((_, lacks)) = REFUSED.iter().find(|(name, _)| *name == k) {
                    return Err(Problem::NotImplemented { lacks });
                }
                return Err(invalid(
                    &format!("rest_cherrypy:{k}"),
                    "not an option of Salt's rest_cherrypy (port, host, ssl_crt, ssl_key, \
                     disable_ssl, root_prefix, webhook_url, webhook_disable_auth, \
                     stats_disable_auth, collect_stats, expire_responses, \
                     max_request_body_size, debug, enable_sessions, app, app_path, static, \
                     static_path, authorized_ips, thread_pool, socket_queue_size; salt-rs \
                     only: token_rate_limit, token_rate_burst)",
                ));
            }
        }
    }
    if !has_port {
        return Err(invalid(
            "rest_cherrypy",
            "'port' not specified (Salt's rest_cherrypy does not load without it)",
        ));
    }
    if rc.token_rate_burst.is_some() && rc.token_rate_limit.is_none() {
        return Err(invalid(
            "rest_cherrypy:token_rate_burst",
            "only with token_rate_limit (the requests per second it bounds)",
        ));
    }
    if !rc.disable_ssl && (rc.ssl_crt.is_none() || rc.ssl_key.is_none()) {
        return Err(invalid(
            "rest_cherrypy",
            "Options 'ssl_crt' and 'ssl_key' are required if SSL is not disabled \
             (or set disable_ssl: True)",
        ));
    }
    Ok(rc)
}

/// The clients Salt 3006+ knows for `netapi_enable_clients`.
pub const NETAPI_CLIENTS: [&str; 9] = [
    "local",
    "local_async",
    "local_batch",
    "local_subset",
    "runner",
    "runner_async",
    "ssh",
    "wheel",
    "wheel_async",
];

fn clients(node: &Node) -> Result<Vec<String>, Problem> {
    let list = string_list(node)?;
    if let Some(bad) = list.iter().find(|c| !NETAPI_CLIENTS.contains(&c.as_str())) {
        return Err(invalid(
            bad,
            "not a netapi client (local, local_async, local_batch, local_subset, runner, \
             runner_async, ssh, wheel, wheel_async)",
        ));
    }
    Ok(list)
}

/// Reads salt-api's options.
pub(crate) fn read(r: &mut Reader<'_>, root_dir: &std::path::Path) -> ApiOptions {
    let api_logfile = read_log_file(r, "api_logfile", "/var/log/salt/api", root_dir);
    let api_pidfile = r.get("api_pidfile", PathBuf::from("/var/run/salt-api.pid"), path);
    ApiOptions {
        rest_cherrypy: r.opt("rest_cherrypy", rest_cherrypy),
        netapi_enable_clients: r.get("netapi_enable_clients", Vec::new(), clients),
        api_logfile,
        api_pidfile: crate::prepend_root_dir(root_dir, &api_pidfile),
        rest_timeout: r.get(
            "rest_timeout",
            Duration::from_secs(300),
            duration(crate::common::SEC),
        ),
    }
}

/// Option-table rows.
pub(crate) fn docs() -> Vec<OptionDoc> {
    vec![
        OptionDoc {
            name: "rest_cherrypy",
            default: "None",
            doc: "salt-api's HTTP API (`salt-api`, docs/api.md): `port` (required), `host`, \
                  `ssl_crt`/`ssl_key` or `disable_ssl`, `root_prefix`, `webhook_url`, \
                  `webhook_disable_auth`, `stats_disable_auth`, `collect_stats`, \
                  `expire_responses`, `max_request_body_size` (default 100 MiB, the limit \
                  Salt's CherryPy applies), `debug`, `enable_sessions`, \
                  `app`, `app_path`, `static`, `static_path`, `authorized_ips` (`thread_pool` \
                  and `socket_queue_size` accepted, unused). `api_acl`, `ssl_chain`, \
                  `log_access_file`, `log_error_file` and `favicon` are refused by name. \
                  salt-rs only (Salt's salt-api has no such limit): `token_rate_limit` \
                  (requests per second per session token, default none; over it a 429) and \
                  `token_rate_burst` (requests at once, default the rate). \
                  The master ignores it."
                .to_owned(),
        },
        OptionDoc {
            name: "netapi_enable_clients",
            default: "[]",
            doc: "The salt-api clients that may be used (`local`, `local_async`, \
                  `local_batch`, `local_subset`, `runner`, `runner_async`, `wheel`, \
                  `wheel_async`, ...); \
                  others are refused as Salt 3006+ refuses them."
                .to_owned(),
        },
        OptionDoc {
            name: "api_logfile",
            default: "/var/log/salt/api",
            doc: "salt-api's log file.".to_owned(),
        },
        OptionDoc {
            name: "api_pidfile",
            default: "/var/run/salt-api.pid",
            doc: "salt-api's pid file.".to_owned(),
        },
        OptionDoc {
            name: "rest_timeout",
            default: "300",
            doc: "Seconds salt-api waits for a synchronous runner's return.".to_owned(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use crate::{LoadOptions, MasterConfig};

    fn load(yaml: &str) -> Result<MasterConfig, String> {
        MasterConfig::from_yaml_str(yaml, &LoadOptions::new("/nonexistent"))
            .map(|l| l.config)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn salts_api_options_are_read() {
        let c = load(
            "rest_cherrypy:\n  port: 8000\n  disable_ssl: True\n  webhook_url: /h\n  \
             thread_pool: 10\nnetapi_enable_clients: [local, runner]\napi_pidfile: /run/a.pid\n",
        )
        .unwrap();
        let rc = c.api.rest_cherrypy.unwrap();
        assert_eq!(
            (rc.port, rc.disable_ssl, rc.webhook_url.as_str()),
            (8000, true, "/h")
        );
        assert_eq!(c.api.netapi_enable_clients, ["local", "runner"]);
        assert_eq!(c.api.api_pidfile, std::path::Path::new("/run/a.pid"));
        assert_eq!((rc.token_rate_limit, rc.token_rate_burst), (None, None));
    }

    /// salt-rs's per-token rate limit is read under `rest_cherrypy` only; at the top level it
    /// is no option (a warning naming it, and ignored).
    #[test]
    fn token_rate_limit_is_a_rest_cherrypy_option() {
        let c = load(
            "rest_cherrypy:\n  port: 8000\n  disable_ssl: True\n  token_rate_limit: 20\n  \
             token_rate_burst: 40\n",
        )
        .unwrap();
        let rc = c.api.rest_cherrypy.unwrap();
        assert_eq!(
            (rc.token_rate_limit, rc.token_rate_burst),
            (Some(20), Some(40))
        );
        let loaded = MasterConfig::from_yaml_str(
            "token_rate_limit: 20\n",
            &LoadOptions::new("/nonexistent"),
        )
        .unwrap();
        assert!(
            loaded
                .warnings
                .iter()
                .any(|w| w.to_string().contains("token_rate_limit")),
            "{:?}",
            loaded.warnings
        );
        assert_eq!(loaded.config.api.rest_cherrypy, None);
    }

    #[test]
    fn unsupported_sub_options_are_refused_by_name() {
        let e =
            load("rest_cherrypy:\n  port: 8000\n  disable_ssl: True\n  api_acl: {}\n").unwrap_err();
        assert!(e.contains("api_acl"), "{e}");
        let e = load("rest_cherrypy:\n  port: 8000\n  disable_ssl: True\n  prot: 1\n").unwrap_err();
        assert!(e.contains("rest_cherrypy:prot"), "{e}");
        let e = load("rest_cherrypy:\n  port: 8000\n").unwrap_err();
        assert!(e.contains("ssl_crt"), "{e}");
        let e = load("rest_cherrypy:\n  port: 8000\n  disable_ssl: True\n  token_rate_burst: 5\n")
            .unwrap_err();
        assert!(e.contains("token_rate_burst"), "{e}");
        let e = load("rest_cherrypy:\n  port: 8000\n  disable_ssl: True\n  token_rate_limit: 0\n")
            .unwrap_err();
        assert!(e.contains("token_rate_limit"), "{e}");
        let e = load("netapi_enable_clients: [locl]\n").unwrap_err();
        assert!(e.contains("locl"), "{e}");
    }
}
