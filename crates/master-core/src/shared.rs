//! The master's state, shared by the request workers, the publisher and the local-client
//! server: opened in one place, [`Shared::open`], by the server and by the tests.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use salt_config::MasterConfig;
use salt_keystore::KeyStore;
use salt_proto::ReplayGuard;

use crate::error::{MasterError, mkdir};
use crate::events::bus::EventBus;
use crate::events::metrics::Metrics;
use crate::jobs::Jobs;
use crate::jobs::jid::JidGenerator;
use crate::keys::aes::AesState;
use crate::keys::master::MasterKeys;
use crate::keys::sessions::Sessions;
use crate::keys::tokens::TokenCache;

/// Everything the master's tasks share (behind an `Arc`).
pub struct Shared {
    /// The configuration.
    pub cfg: MasterConfig,
    /// master.pem / pub_sig.
    pub keys: MasterKeys,
    /// Minion keys (with a group: the local mirror of the group's keys).
    pub store: Arc<KeyStore>,
    /// When a publish re-reads the key directories (`keys/dirwatch.rs`).
    pub(crate) key_dirs: crate::keys::dirwatch::KeyDirWatch,
    /// The master group on PostgreSQL (`keys.cache_driver: postgres`), if any.
    pub group: Option<Arc<salt_pgstore::Group>>,
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
    /// Rate limiter for logs about bad peer input.
    pub log_limit: LogLimiter,
    /// New minions admitted against the descriptor limit (`server/fdlimit.rs`).
    pub(crate) fd_ceiling: crate::server::fdlimit::FdCeiling,
    /// Minion `tok`s already verified (`keys/tokens.rs`).
    pub tokens: TokenCache,
    /// The event bus (`salt-run state.event`).
    pub events: EventBus,
    /// Salt 3008's master-side batches (`crate::batch`).
    pub batches: crate::batch::Batches,
    /// Prometheus metrics (served only with `metrics_port`).
    pub metrics: Arc<Metrics>,
    /// External auth, ACLs and eauth tokens (`salt_eauth`): the clear commands on 4506.
    pub eauth: salt_eauth::Eauth,
    /// The access keys of local callers (`cachedir/.<user>_key`, `keys/access.rs`).
    pub access_keys: Vec<(String, salt_proto::clear::Secret)>,
    /// The running server's publisher and runtime, once started (the clear commands
    /// `publish` and `runner` use them: `requests/clear.rs`).
    pub(crate) host: std::sync::OnceLock<crate::requests::clear::Host>,
    /// The `roots` file server (`_file_*`, `_serve_file`, `_master_opts`, ...).
    pub files: salt_fileserver::FileServer,
    /// The reactor's map and leadership (`reactor/`).
    pub(crate) reactor: Arc<crate::reactor::Reactors>,
    /// The Salt Resources minions manage (`_register_resources`, `minions/resources.rs`).
    pub(crate) resources: crate::minions::resources::Resources,
    /// The checkouts of each `git` item of `ext_pillar`, in order (git_pillar).
    pub git_pillars: Vec<Arc<salt_fileserver::gitfs::GitPillar>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

/// Starts git_pillar (fetching in the background) for each `git` item of `ext_pillar`.
fn git_pillars(cfg: &MasterConfig) -> Vec<Arc<salt_fileserver::gitfs::GitPillar>> {
    let hash_type = cfg.hash_type.as_str().parse().unwrap_or_default();
    cfg.ext_pillar
        .iter()
        .filter(|e| e.module == "git")
        .map(|e| {
            Arc::new(salt_fileserver::gitfs::GitPillar::start(
                &e.git,
                &cfg.fileserver.git_pillar,
                cfg.cachedir.join("git_pillar"),
                hash_type,
            ))
        })
        .collect()
}

impl Shared {
    /// Opens the master's state for `cfg`: its directories (`cachedir`, `{cachedir}/jobs`,
    /// `{cachedir}/sessions`, `{cachedir}/proc`), the key store, the master keys, the group (with
    /// `keys.cache_driver: postgres`) and the first publish key, the job cache of
    /// `master_job_cache`, the file server. Blocking (files, RSA, the group's database):
    /// the server calls it on the blocking pool.
    pub fn open(cfg: MasterConfig) -> Result<Self, MasterError> {
        let jobs_dir = cfg.cachedir.join("jobs");
        let sessions_dir = cfg.cachedir.join("sessions");
        mkdir(&cfg.cachedir, 0o755)?;
        mkdir(&jobs_dir, 0o700)?;
        mkdir(&sessions_dir, 0o700)?;
        // Salt's master makes `cachedir/proc` at start (`verify_environment`); Python
        // `salt-run` writes its runner's proc file there (3008 fails without it).
        mkdir(&cfg.cachedir.join("proc"), 0o755)?;
        // Keys written here come from sign-ins: atomic but not fsync-ed (as Salt), since the
        // minion's next sign-in writes them again if a power cut loses one (docs/decisions.md).
        let store = Arc::new(
            salt_pgstore::key_store_options(&cfg)
                .durable(false)
                .open(&cfg.pki_dir)?,
        );
        let keys = MasterKeys::load(&cfg)?;
        // A fresh start makes a fresh publish key: a leftover rotation request is moot.
        let _ = salt_keystore::clear_dropfile(&cfg.cachedir);
        let (group, first_key) = crate::server::group::open(&cfg, &keys, &store)?;
        let eauth_opts =
            salt_compat::json::json_to_msgpack(&serde_json::Value::Object(cfg.eauth_opts.clone()));
        let eauth_cfg = salt_eauth::EauthConfig::from_opts(&eauth_opts, cfg.cachedir.clone())
            .map_err(MasterError::Eauth)?;
        // `eauth_tokens`: Salt's `localfs`, or (in a group) the group's database.
        let token_store = salt_pgstore::token_store(&cfg, &eauth_cfg).map_err(|e| match e {
            salt_pgstore::TokenStoreError::Config(c) => MasterError::Eauth(vec![c]),
            e => MasterError::Io {
                what: "eauth token store".into(),
                source: std::io::Error::other(e),
            },
        })?;
        let access_keys = crate::keys::access::access_keys(&cfg);
        Ok(Self {
            group,
            aes: AesState::new(first_key),
            sessions: Sessions::new(sessions_dir, cfg.publish_session),
            jobs: crate::server::group::jobs(&cfg, jobs_dir)?,
            jids: JidGenerator::new(),
            connected: Mutex::new(HashSet::new()),
            auth_nonces: Mutex::new(ReplayGuard::new(Duration::from_secs(600), 100_000)),
            log_limit: LogLimiter::new(Duration::from_secs(10)),
            fd_ceiling: crate::server::fdlimit::FdCeiling::default(),
            tokens: TokenCache::default(),
            eauth: salt_eauth::Eauth::new(eauth_cfg, token_store),
            access_keys,
            host: std::sync::OnceLock::new(),
            metrics: Arc::default(),
            events: EventBus::default(),
            batches: crate::batch::Batches::default(),
            files: salt_fileserver::FileServer::new(
                cfg.fileserver.clone(),
                cfg.hash_type,
                cfg.cachedir.clone(),
            ),
            reactor: Arc::new(crate::reactor::Reactors::new(&cfg.reactor)),
            resources: crate::minions::resources::Resources::open(&cfg.cachedir),
            git_pillars: git_pillars(&cfg),
            key_dirs: Default::default(),
            store,
            keys,
            cfg,
        })
    }

    /// Where key changes go: the group's database, or the files.
    pub fn key_changes(&self) -> &dyn salt_keystore::KeyChanges {
        match &self.group {
            Some(g) => g.as_ref(),
            None => self.store.as_ref(),
        }
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
            .any(|pattern| salt_eauth::pyre::expr_match(id, pattern))
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
