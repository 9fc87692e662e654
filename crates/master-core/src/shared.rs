//! State shared by the request workers, the publisher and the local-client server.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use salt_config::MasterConfig;
use salt_keystore::KeyStore;
use salt_pki::SigAlgo;
use salt_proto::ReplayGuard;

use crate::jobs::Jobs;
use crate::jobs::jid::JidGenerator;
use crate::keys::acl::{AclBlacklist, AclEntry, PublisherAcl};
use crate::keys::aes::AesState;
use crate::keys::master::MasterKeys;
use crate::keys::sessions::Sessions;

/// Everything the master's tasks share (behind an `Arc`).
pub struct Shared {
    /// The configuration.
    pub cfg: MasterConfig,
    /// master.pem / pub_sig.
    pub keys: MasterKeys,
    /// Minion keys (with a group: the local mirror of the group's keys).
    pub store: std::sync::Arc<KeyStore>,
    /// The master group on PostgreSQL (`keys.cache_driver: postgres`), if any.
    pub group: Option<std::sync::Arc<salt_pgstore::Group>>,
    /// The publish AES key.
    pub aes: AesState,
    /// Per-minion session keys.
    pub sessions: Sessions,
    /// Job cache and waiting `salt` commands.
    pub jobs: Jobs,
    /// Job ids.
    pub jids: JidGenerator,
    /// Ids that signed in during this run (for `max_minions`).
    pub connected: Mutex<HashSet<String>>,
    /// Auth nonces seen recently (replayed `_auth` requests are refused).
    pub auth_nonces: Mutex<ReplayGuard>,
    /// publisher_acl in our shape.
    pub acl: PublisherAcl,
    /// publisher_acl_blacklist.
    pub acl_blacklist: AclBlacklist,
    /// `publish_signing_algorithm` for publish `sig`.
    pub publish_sig_algo: SigAlgo,
    /// Rate limiter for logs about bad peer input.
    pub log_limit: LogLimiter,
    /// Minion `tok`s already verified, by id, with the key file version they validated
    /// against: a request whose key file (one `stat`) and tok are unchanged skips the read,
    /// PEM parse and RSA operation (`tokens.rs`).
    pub verified_toks: Mutex<HashMap<String, crate::keys::tokens::Verified>>,
    /// The event bus (`salt-run state.event`).
    pub events: crate::events::bus::EventBus,
    /// Prometheus metrics (served only with `metrics_port`).
    pub metrics: std::sync::Arc<crate::events::metrics::Metrics>,
    /// The `roots` file server (`_file_*`, `_serve_file`, `_master_opts`, ...).
    pub files: salt_fileserver::FileServer,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// The file server of `cfg`.
    pub fn file_server(cfg: &MasterConfig) -> salt_fileserver::FileServer {
        salt_fileserver::FileServer::new(
            cfg.fileserver.clone(),
            cfg.hash_type,
            cfg.cachedir.clone(),
        )
    }

    /// Where key changes go: the group's database, or the files.
    pub fn key_changes(&self) -> &dyn salt_keystore::KeyChanges {
        match &self.group {
            Some(g) => g.as_ref(),
            None => self.store.as_ref(),
        }
    }

    /// `{cachedir}/jobs`.
    pub fn jobs_dir(cfg: &MasterConfig) -> std::path::PathBuf {
        cfg.cachedir.join("jobs")
    }

    /// `{cachedir}/sessions`.
    pub fn sessions_dir(cfg: &MasterConfig) -> std::path::PathBuf {
        cfg.cachedir.join("sessions")
    }

    /// The publisher ACL from config (entries are function regexes).
    pub fn acl_from(cfg: &MasterConfig) -> (PublisherAcl, AclBlacklist) {
        let acl = PublisherAcl {
            users: cfg
                .publisher_acl
                .iter()
                .map(|(user, funs)| {
                    (
                        user.clone(),
                        funs.iter().cloned().map(AclEntry::Fun).collect(),
                    )
                })
                .collect(),
        };
        let bl = AclBlacklist {
            users: cfg.publisher_acl_blacklist.users.clone(),
            modules: cfg.publisher_acl_blacklist.modules.clone(),
        };
        (acl, bl)
    }

    /// Whether `id` matches a line of a Salt autosign/autoreject file (`#` comments, fnmatch
    /// or full regex). A missing, unreadable or world-writable file matches nothing.
    pub fn matches_list_file(&self, path: Option<&Path>, id: &str) -> bool {
        use std::os::unix::fs::PermissionsExt;
        let Some(path) = path else { return false };
        let Ok(meta) = std::fs::metadata(path) else {
            return false;
        };
        let mode = meta.permissions().mode();
        if mode & 0o002 != 0 || (mode & 0o020 != 0 && !self.cfg.permissive_pki_access) {
            if self.log_limit.allow("autosign-perms") {
                tracing::warn!("{} is group or world writable, ignoring it", path.display());
            }
            return false;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            return false;
        };
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .any(|pattern| crate::keys::acl::expr_match(id, pattern))
    }
}

/// Logs about peer input at most once per interval per kind, so a misbehaving peer cannot
/// flood the log.
#[derive(Debug)]
pub struct LogLimiter {
    every: Duration,
    last: Mutex<HashMap<&'static str, Instant>>,
}

impl LogLimiter {
    /// At most one message per kind per `every`.
    pub fn new(every: Duration) -> Self {
        LogLimiter {
            every,
            last: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a message of `kind` may be logged now.
    pub fn allow(&self, kind: &'static str) -> bool {
        let now = Instant::now();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        match last.get(kind) {
            Some(t) if now.duration_since(*t) < self.every => false,
            _ => {
                last.insert(kind, now);
                true
            }
        }
    }
}
