//! salt-pgstore: a master group on PostgreSQL (docs/group.md).
//!
//! Every minion key and every change lives in the database: `salt_minion_keys` holds the
//! keys, `salt_key_log` numbers each change (the number is taken under the group row's
//! lock, so numbers commit in order), `salt_groups` holds the counter and the group's
//! publish (AES) key. Each master mirrors the keys into its own `pki_dir` (Salt's layout,
//! see [`mirror`]), so a sign-in reads local files and never waits on the database. A
//! follower task LISTENs for `salt_rs_keys` and reads `seq > last` on every notification,
//! after every reconnect and every [`POLL`] (a notification is never replayed; the log is).
//!
//! Changes ([`Group`] implements [`salt_keystore::KeyChanges`]) are one transaction each,
//! then applied to the local mirror before returning. With the database down they fail
//! with [`salt_keystore::KeyStoreError::Backend`] naming the database; the mirror keeps
//! serving the keys it has. Eauth tokens of the group live in the same database
//! ([`PgTokens`], `eauth_tokens: postgres`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod db;
mod follow;
mod handle;
mod jobs;
mod jobs_follow;
mod leader;
mod mirror;
mod plan;
mod returner;
mod schema;
mod spool;
mod tls;
mod tokens;

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use salt_keystore::{
    AcceptFrom, KeyChanges, KeyState, KeyStore, KeyStoreError, RejectFrom, Report,
};

pub use jobs::{JobDb, MasterPresence, ReturnHooks, ReturnRow, Stored};
pub use jobs_follow::BEAT;
pub use leader::Leader;
pub use returner::{DDL as RETURNER_DDL, PgReturn, PgReturner};
pub use schema::SCHEMA_VERSION;
pub use tls::{SslMode, Tls};
pub use tokens::{PgTokens, TokenStoreError, token_store};

/// How the master and `salt-key` open `pki_dir` per `keys.cache_driver`: Salt 3008's
/// `mmap_key` index files when configured (`mmap_key_*` shape them), else one file per
/// key (`localfs_key`, and the local mirror of `postgres`).
pub fn key_store_options(cfg: &salt_config::MasterConfig) -> salt_keystore::OpenOptions {
    salt_keystore::OpenOptions::new().mmap_key(cfg.keys_mmap.map(|m| salt_keystore::MmapGeometry {
        size: m.size,
        slot_size: m.slot_size,
        key_size: m.id_size,
        max_segment_bytes: m.max_segment_bytes,
    }))
}

/// The follower's safety-net poll of the change counter.
pub const POLL: Duration = Duration::from_secs(2);
/// How long the key change log keeps a change (older ones are trimmed every hour).
pub const LOG_KEEP: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long a caller waits for the database before giving up.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Connect (and pool wait) timeout.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Errors of the group store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The database refused a statement or the connection failed.
    #[error("PostgreSQL: {}", pg_text(.0))]
    Db(#[from] tokio_postgres::Error),
    /// No connection from the pool.
    #[error("PostgreSQL unreachable: {0}")]
    Pool(String),
    /// The schema is from a newer salt-rs.
    #[error("{0}")]
    Schema(String),
    /// The local mirror (`pki_dir`).
    #[error("local key mirror: {0}")]
    Mirror(#[from] KeyStoreError),
    /// A file of the mirror (`.group_seq`, `.group.lock`).
    #[error("local key mirror: {0}")]
    Io(#[from] std::io::Error),
    /// TLS to the database: a certificate file, or a failed handshake (named with the
    /// host and `postgres.sslmode`).
    #[error("PostgreSQL TLS: {0}")]
    Tls(String),
    /// The database did not answer in time.
    #[error("PostgreSQL did not answer within {0:?}")]
    Timeout(Duration),
}

/// A driver error with the server's message (tokio-postgres shows only "db error").
pub(crate) fn pg_text(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.to_string(),
        None => e.to_string(),
    }
}

impl From<deadpool_postgres::PoolError> for Error {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        Error::Pool(e.to_string())
    }
}

/// The publish key the group agreed on, and its generation.
pub type AesCallback = Box<dyn Fn(i64, &str) + Send + Sync>;

/// The group's connection and settings (built from `salt_config::ClusterConfig`).
#[derive(Clone, Debug)]
pub struct Settings {
    /// `cluster_id`.
    pub cluster_id: String,
    /// This master's id (recorded in the change log).
    pub master: String,
    /// `postgres.host` (a directory: the Unix socket's).
    pub host: String,
    /// `postgres.port`.
    pub port: u16,
    /// `postgres.user`.
    pub user: String,
    /// `postgres.pass`.
    pub pass: String,
    /// `postgres.db`.
    pub db: String,
    /// `postgres.sslmode` and the certificates.
    pub tls: Tls,
    /// Rotate the group's publish key when salt-key rejects or deletes a key
    /// (`rotate_aes_key`).
    pub rotate_on_revoke: bool,
}

impl Settings {
    /// From the master configuration's group section.
    pub fn from_config(c: &salt_config::ClusterConfig, master: &str, rotate: bool) -> Self {
        Self {
            cluster_id: c.cluster_id.clone(),
            master: master.to_owned(),
            host: c.postgres.host.clone(),
            port: c.postgres.port,
            user: c.postgres.user.clone(),
            pass: c.postgres.pass.expose().to_owned(),
            db: c.postgres.db.clone(),
            tls: Tls::from_config(&c.postgres),
            rotate_on_revoke: rotate,
        }
    }

    /// The connector (reads the certificate files now).
    pub(crate) fn connector(&self) -> Result<tls::Connector, Error> {
        tls::Connector::new(self.pg_config(), &self.host, self.port, &self.tls)
    }

    pub(crate) fn pg_config(&self) -> tokio_postgres::Config {
        let mut c = tokio_postgres::Config::new();
        c.host(&self.host)
            .port(self.port)
            .user(&self.user)
            .password(&self.pass)
            .dbname(&self.db)
            .application_name("salt-rs")
            .connect_timeout(CONNECT_TIMEOUT);
        c
    }
}

pub(crate) struct Inner {
    settings: Settings,
    connector: tls::Connector,
    pool: deadpool_postgres::Pool,
    mirror: Arc<KeyStore>,
    pki_dir: PathBuf,
    /// One catch-up at a time in this process (the flock covers other processes).
    apply: tokio::sync::Mutex<()>,
    up: AtomicBool,
    migrated: AtomicBool,
    /// A first copy lists the keys in memory and writes their files in the background
    /// (a master; `salt-key` writes them before it lists).
    defer_copy: AtomicBool,
    /// The last change applied to the mirror in this process (`.group_seq` is written
    /// only once every file of the mirror is).
    applied: Mutex<Option<i64>>,
    aes: Mutex<Option<(i64, String)>>,
    on_aes: Mutex<Option<AesCallback>>,
}

/// A master group on PostgreSQL: see the crate docs.
pub struct Group {
    h: handle::Handle<Inner>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("cluster_id", &self.h.inner.settings.cluster_id)
            .finish_non_exhaustive()
    }
}

impl Group {
    /// Set up the pool (no connection yet) over the local mirror `mirror`.
    pub fn new(settings: Settings, mirror: Arc<KeyStore>) -> Result<Self, Error> {
        let connector = settings.connector()?;
        let pool = connector.pool(4, CONNECT_TIMEOUT)?;
        let pki_dir = mirror.pki_dir().to_owned();
        let inner = Arc::new(Inner {
            settings,
            connector,
            pool,
            mirror,
            pki_dir,
            apply: tokio::sync::Mutex::new(()),
            up: AtomicBool::new(false),
            migrated: AtomicBool::new(false),
            defer_copy: AtomicBool::new(false),
            applied: Mutex::new(None),
            aes: Mutex::new(None),
            on_aes: Mutex::new(None),
        });
        let h = handle::Handle::new("salt-group", 1, "group", inner)?;
        Ok(Self { h })
    }

    /// Run `f` on the group's runtime and wait (from any thread, async or not).
    fn call<T, F>(&self, f: impl FnOnce(Arc<Inner>) -> F) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        self.h.call(f)
    }

    /// A first copy of the database (a new `pki_dir`) lists the keys in memory at once,
    /// so sign-ins are served from them, and writes their files in the background (the
    /// master does this; without it the files are written before [`sync`](Self::sync)
    /// returns, as `salt-key` needs).
    pub fn defer_first_copy(&self) {
        self.h.inner.defer_copy.store(true, Ordering::Relaxed);
    }

    /// Connect, apply migrations, create the group's row, bring the mirror up to date.
    /// Returns the number of the last change applied.
    pub fn sync(&self) -> Result<i64, Error> {
        self.call(|inner| async move { inner.catch_up().await })
    }

    /// Whether the last contact with the database succeeded.
    pub fn is_up(&self) -> bool {
        self.h.inner.up.load(Ordering::Relaxed)
    }

    /// The group's publish key (generation, Crypticle key string), once known.
    pub fn aes(&self) -> Option<(i64, String)> {
        self.h
            .inner
            .aes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Called with every new group publish key the follower sees.
    pub fn on_aes(&self, f: AesCallback) {
        *self
            .h
            .inner
            .on_aes
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(f);
    }

    /// Make the group's publish key `key` if the group has none yet; return the one in
    /// force (generation, key).
    pub fn ensure_aes(&self, key: &str) -> Result<(i64, String), Error> {
        let key = key.to_owned();
        self.call(|inner| async move { inner.ensure_aes(&key).await })
    }

    /// Replace the group's publish key (`publish_session` expiry, a dropfile).
    pub fn rotate_aes(&self) -> Result<(), Error> {
        self.call(|inner| async move { inner.rotate_aes().await })
    }

    /// Trim the change log: drop the changes older than `keep` (a master whose copy is
    /// older then copies every key again). The follower does this every hour with
    /// [`LOG_KEEP`].
    pub fn trim_log(&self, keep: Duration) -> Result<u64, Error> {
        self.call(move |inner| async move { inner.trim_log(keep).await })
    }

    /// Start the follower (LISTEN/NOTIFY, catch-up after every reconnect, [`POLL`]).
    pub fn start_follower(&self) {
        self.h.spawn(follow::run);
    }

    fn change(&self, op: plan::Op) -> salt_keystore::Result<Report> {
        self.call(|inner| async move { inner.change(op).await })
            .map_err(backend)
    }
}

fn backend(e: Error) -> KeyStoreError {
    match e {
        Error::Mirror(k) => k,
        e => KeyStoreError::Backend {
            driver: "postgres",
            message: format!("{e}; key changes need the group database (docs/group.md)"),
        },
    }
}

impl KeyChanges for Group {
    fn driver(&self) -> &'static str {
        "postgres"
    }

    fn put(&self, state: KeyState, id: &str, pem: &str) -> salt_keystore::Result<()> {
        salt_keystore::validate_id(id)?;
        if let Err(reason) =
            salt_keystore::KeyValidator::validate(&salt_keystore::PemArmorValidator, pem)
        {
            return Err(KeyStoreError::InvalidKey {
                path: self.h.inner.mirror.state_dir(state).join(id),
                reason,
            });
        }
        self.change(plan::Op::Put(state, id.to_owned(), pem.to_owned()))
            .map(|_| ())
    }

    fn accept_many(&self, ids: &[String], from: AcceptFrom) -> salt_keystore::Result<Report> {
        self.change(plan::Op::Accept(ids.to_vec(), from))
    }

    fn reject_many(&self, ids: &[String], from: RejectFrom) -> salt_keystore::Result<Report> {
        self.change(plan::Op::Reject(ids.to_vec(), from))
    }

    fn delete_many(&self, ids: &[String]) -> salt_keystore::Result<Report> {
        self.change(plan::Op::Delete(ids.to_vec()))
    }
}
