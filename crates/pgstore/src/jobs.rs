//! The group's job cache on PostgreSQL (`master_job_cache: pgjsonb`, docs/group.md), in the
//! tables of Salt's `pgjsonb` returner (`jids`, `salt_returns`, `salt_events`), plus who
//! holds which minion (`salt_rs_presence`, `salt_rs_masters`).
//!
//! Every return is stored once per `(jid, id)` (a unique index; `ON CONFLICT DO NOTHING`),
//! whichever master received it, and announced on `salt_rs_returns` (payload
//! `<master>\t<jid>\t<id>`) so a `salt` command waiting on another master hears of it.
//! While the database is down, loads and returns are written to the spool
//! ([`crate::spool`]) and replayed when it returns; nothing is lost, nothing doubled.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::handle::{text_opt, text_pairs};
use crate::spool::{Item, Spool};
use crate::{Error, Settings, schema};

/// `NOTIFY` channel of new returns.
pub(crate) const RETURNS: &str = "salt_rs_returns";

/// One return row (Salt's `salt_returns`: `return` is `full_ret -> 'return'`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReturnRow {
    /// The job id.
    pub jid: String,
    /// The minion id.
    pub id: String,
    /// The function (cut to Salt's 50 characters).
    pub fun: String,
    /// `success` of the return.
    pub success: bool,
    /// The whole return load, JSON text.
    pub full_ret: String,
}

/// Where a load or return went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// Written to the database (or there already: a duplicate).
    Db,
    /// The database is down: written to the spool, replayed when it returns.
    Spooled,
}

/// A master's side of the returns other masters store.
pub trait ReturnHooks: Send + Sync {
    /// The jids a `salt` command on this master waits on, with the minions already
    /// delivered for each.
    fn waited(&self) -> Vec<(String, Vec<String>)>;
    /// A return stored by any master (`full_ret` JSON text); called again for the same
    /// `(jid, id)` after a reconnect: the receiver drops duplicates.
    fn deliver(&self, jid: &str, id: &str, full_ret: &str);
}

/// A minion's presence: the master that saw it last.
#[derive(Clone, Debug, PartialEq)]
pub struct MasterPresence {
    /// The minion id.
    pub minion: String,
    /// The master that saw it last.
    pub master: String,
    /// Seconds since then.
    pub age: f64,
    /// Whether that master's heartbeat is recent.
    pub master_alive: bool,
}

pub(crate) struct JobInner {
    pub(crate) settings: Settings,
    pub(crate) connector: crate::tls::Connector,
    pub(crate) pool: deadpool_postgres::Pool,
    pub(crate) spool: Spool,
    /// False from a failed write until the replay reaches the database again: meanwhile
    /// writes go straight to the spool (no caller waits on a connect timeout).
    pub(crate) up: AtomicBool,
    migrated: AtomicBool,
}

/// The job cache on PostgreSQL: see the module docs.
pub struct JobDb {
    h: crate::handle::Handle<JobInner>,
}

impl std::fmt::Debug for JobDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobDb")
            .field("cluster_id", &self.h.inner.settings.cluster_id)
            .finish_non_exhaustive()
    }
}

/// A database error that is about the data (the server answered), not the connection.
pub(crate) fn refused(e: &Error) -> bool {
    matches!(e, Error::Db(d) if d.as_db_error().is_some())
}

impl JobInner {
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, Error> {
        let mut client = self
            .pool
            .get()
            .await
            .map_err(|e| self.connector.pool_error(e))?;
        if !self.migrated.load(Ordering::Relaxed) {
            schema::migrate(&mut client).await?;
            self.migrated.store(true, Ordering::Relaxed);
        }
        Ok(client)
    }

    pub(crate) async fn write(&self, item: &Item) -> Result<(), Error> {
        let client = self.client().await?;
        match item {
            Item::Load { jid, load } => {
                // The job's `salt/job/<jid>/new` event goes to `salt_events` (as Salt's
                // `pgjsonb.event_return`), once: not again for a load stored twice.
                client
                    .execute(
                        "WITH j AS ( \
                           INSERT INTO jids (jid, load) VALUES ($1, $2::text::jsonb) \
                           ON CONFLICT (jid) DO UPDATE SET load = EXCLUDED.load \
                           RETURNING (xmax = 0) AS new, load) \
                         INSERT INTO salt_events (tag, data, master_id) \
                         SELECT 'salt/job/' || $1 || '/new', load, $3 FROM j WHERE new",
                        &[jid, load, &self.settings.master],
                    )
                    .await?;
            }
            Item::Return(r) => {
                let fun: String = r.fun.chars().take(50).collect();
                let success = if r.success { "true" } else { "false" };
                client
                    .execute(
                        "WITH ins AS ( \
                           INSERT INTO salt_returns (fun, jid, return, id, success, full_ret) \
                           SELECT $1, $2, coalesce(f -> 'return', 'null'::jsonb), $3, $4, f \
                             FROM (SELECT $5::text::jsonb AS f) AS v \
                           ON CONFLICT (jid, id) DO NOTHING RETURNING jid, id, full_ret), \
                         ev AS ( \
                           INSERT INTO salt_events (tag, data, master_id) \
                           SELECT 'salt/job/' || jid || '/ret/' || id, full_ret, $7 FROM ins) \
                         SELECT pg_notify($6, $7 || chr(9) || jid || chr(9) || id) FROM ins",
                        &[
                            &fun,
                            &r.jid,
                            &r.id,
                            &success,
                            &r.full_ret,
                            &RETURNS,
                            &self.settings.master,
                        ],
                    )
                    .await?;
            }
        }
        Ok(())
    }

    /// Write every spooled item, oldest first; stops at the first connection failure.
    /// Returns how many were written.
    pub(crate) async fn replay(&self) -> Result<usize, Error> {
        let mut n = 0;
        for path in self.spool.list() {
            let Some(item) = Spool::read(&path) else {
                continue;
            };
            match self.write(&item).await {
                Ok(()) => {
                    let _ = std::fs::remove_file(&path);
                    n += 1;
                }
                Err(e) if refused(&e) => {
                    tracing::error!(
                        "job cache: the database refused spooled {} ({e}); set aside",
                        path.display()
                    );
                    Spool::set_aside(&path);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}

impl JobDb {
    /// Set up the pool (no connection yet); the spool in `spool_dir`.
    pub fn new(settings: Settings, spool_dir: std::path::PathBuf) -> Result<Self, Error> {
        let connector = settings.connector()?;
        let pool = connector.pool(8, crate::CONNECT_TIMEOUT)?;
        let inner = Arc::new(JobInner {
            settings,
            connector,
            pool,
            spool: Spool::new(spool_dir),
            up: AtomicBool::new(true),
            migrated: AtomicBool::new(false),
        });
        let h = crate::handle::Handle::new("salt-jobdb", 2, "job cache", inner)?;
        Ok(Self { h })
    }

    fn call<T, F>(&self, f: impl FnOnce(Arc<JobInner>) -> F) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        self.h.call(f)
    }

    /// Connect and apply the migrations (at start; an error is not fatal: the spool).
    pub fn connect(&self) -> Result<(), Error> {
        self.call(|i| async move { i.client().await.map(|_| ()) })
    }

    /// Whether writes currently reach the database.
    pub fn is_up(&self) -> bool {
        self.h.inner.up.load(Ordering::Relaxed)
    }

    /// Items waiting in the spool.
    pub fn spooled(&self) -> usize {
        self.h.inner.spool.len()
    }

    fn store(&self, item: Item) -> Result<Stored, Error> {
        if self.h.inner.up.load(Ordering::Relaxed) {
            let it = item.clone();
            match self.call(|i| async move { i.write(&it).await }) {
                Ok(()) => return Ok(Stored::Db),
                Err(e) if refused(&e) => return Err(e),
                Err(e) => {
                    if self.h.inner.up.swap(false, Ordering::Relaxed) {
                        tracing::warn!(
                            "job cache: the database is unreachable ({e}); spooling to {} \
                             until it returns",
                            self.h.inner.spool.dir().display()
                        );
                    }
                }
            }
        }
        self.h.inner.spool.put(&item)?;
        Ok(Stored::Spooled)
    }

    /// Save a job load (`jids`; a later save of the same jid replaces it).
    pub fn save_load(&self, jid: &str, load_json: String) -> Result<Stored, Error> {
        self.store(Item::Load {
            jid: jid.to_owned(),
            load: load_json,
        })
    }

    /// Save a return once per `(jid, id)` and announce it to the other masters.
    pub fn save_return(&self, row: ReturnRow) -> Result<Stored, Error> {
        self.store(Item::Return(row))
    }

    /// The load of `jid` (JSON text).
    pub fn load(&self, jid: &str) -> Result<Option<String>, Error> {
        let jid = jid.to_owned();
        self.call(|i| async move {
            let c = i.client().await?;
            text_opt(&c, "SELECT load::text FROM jids WHERE jid = $1", &[&jid]).await
        })
    }

    /// Every return of `jid`: (minion id, `full_ret` JSON text).
    pub fn returns(&self, jid: &str) -> Result<Vec<(String, String)>, Error> {
        let jid = jid.to_owned();
        self.call(|i| async move {
            let c = i.client().await?;
            let sql = "SELECT id, full_ret::text FROM salt_returns WHERE jid = $1 ORDER BY id";
            text_pairs(&c, sql, &[&jid]).await
        })
    }

    /// Every job: (jid, load JSON text), by jid.
    pub fn jobs(&self) -> Result<Vec<(String, String)>, Error> {
        self.call(|i| async move {
            let c = i.client().await?;
            text_pairs(&c, "SELECT jid, load::text FROM jids ORDER BY jid", &[]).await
        })
    }

    /// Salt's `pgjsonb.clean_old_jobs`: remove returns and events older than `keep`, and
    /// the jobs all of whose returns are (and jobs without returns, by their jid's time,
    /// never one in `waited`). Returns the rows removed.
    pub fn clean(&self, keep: Duration, waited: Vec<String>) -> Result<u64, Error> {
        let secs = keep.as_secs_f64();
        self.call(move |i| async move {
            let c = i.client().await?;
            let cut = "now() - make_interval(secs => $1)";
            let jids = c
                .execute(
                    &format!(
                        "DELETE FROM jids j WHERE NOT (j.jid = ANY($2)) AND ( \
                           (EXISTS (SELECT 1 FROM salt_returns r WHERE r.jid = j.jid) \
                            AND NOT EXISTS (SELECT 1 FROM salt_returns r \
                                WHERE r.jid = j.jid AND r.alter_time >= {cut})) \
                           OR (NOT EXISTS (SELECT 1 FROM salt_returns r WHERE r.jid = j.jid) \
                               AND j.jid ~ '^[0-9]{{20}}' \
                               AND to_timestamp(left(j.jid, 14), 'YYYYMMDDHH24MISS') < {cut}))"
                    ),
                    &[&secs, &waited],
                )
                .await?;
            let rets = c
                .execute(
                    &format!(
                        "DELETE FROM salt_returns WHERE alter_time < {cut} \
                         AND NOT (jid = ANY($2))"
                    ),
                    &[&secs, &waited],
                )
                .await?;
            let events = c
                .execute(
                    &format!("DELETE FROM salt_events WHERE alter_time < {cut}"),
                    &[&secs],
                )
                .await?;
            Ok(jids + rets + events)
        })
    }

    /// The events in `salt_events` whose tag starts with `tag_prefix` (tag, data JSON
    /// text, master_id), oldest first.
    pub fn events(&self, tag_prefix: &str) -> Result<Vec<(String, String, String)>, Error> {
        let prefix = tag_prefix.to_owned();
        self.call(move |i| async move {
            let c = i.client().await?;
            let rows = c
                .query(
                    "SELECT tag, data::text, master_id FROM salt_events \
                      WHERE starts_with(tag, $1) ORDER BY id",
                    &[&prefix],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2)))
                .collect())
        })
    }

    /// Record that this master holds `minion` now (in the background; a failure is only
    /// logged at debug level: presence is advisory).
    pub fn seen(&self, minion: &str) {
        let minion = minion.to_owned();
        self.h.spawn(|inner| async move {
            let r = async {
                let c = inner.client().await?;
                c.execute(
                    "INSERT INTO salt_rs_presence (cluster_id, minion_id, master) \
                     VALUES ($1, $2, $3) ON CONFLICT (cluster_id, minion_id) \
                     DO UPDATE SET master = EXCLUDED.master, seen_at = now()",
                    &[&inner.settings.cluster_id, &minion, &inner.settings.master],
                )
                .await?;
                Ok::<_, Error>(())
            }
            .await;
            if let Err(e) = r {
                tracing::debug!("presence of {minion} not recorded: {e}");
            }
        });
    }

    /// This master stops cleanly: the minions it held are no longer held (until they sign
    /// in elsewhere) and its heartbeat goes, so `manage.status` on the other members
    /// stops counting them at once. Waits at most a few seconds for the database.
    pub fn leave(&self) -> Result<u64, Error> {
        self.call(|i| async move {
            let c = i.client().await?;
            let (cluster, master) = (&i.settings.cluster_id, &i.settings.master);
            let n = c
                .execute(
                    "DELETE FROM salt_rs_presence WHERE cluster_id = $1 AND master = $2",
                    &[cluster, master],
                )
                .await?;
            c.execute(
                "DELETE FROM salt_rs_masters WHERE cluster_id = $1 AND master = $2",
                &[cluster, master],
            )
            .await?;
            Ok(n)
        })
    }

    /// Who holds which minion in the group (`alive_within`: a master whose heartbeat is
    /// older is not alive).
    pub fn presence(&self, alive_within: Duration) -> Result<Vec<MasterPresence>, Error> {
        let secs = alive_within.as_secs_f64();
        self.call(move |i| async move {
            let c = i.client().await?;
            let rows = c
                .query(
                    "SELECT p.minion_id, p.master, \
                            extract(epoch FROM now() - p.seen_at)::float8, \
                            coalesce(m.beat_at > now() - make_interval(secs => $2), false) \
                       FROM salt_rs_presence p LEFT JOIN salt_rs_masters m \
                         ON m.cluster_id = p.cluster_id AND m.master = p.master \
                      WHERE p.cluster_id = $1 ORDER BY p.minion_id",
                    &[&i.settings.cluster_id, &secs],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| MasterPresence {
                    minion: r.get(0),
                    master: r.get(1),
                    age: r.get(2),
                    master_alive: r.get(3),
                })
                .collect())
        })
    }

    /// Start the background work: the listener of other masters' returns, the spool
    /// replay, this master's heartbeat.
    pub fn start(&self, hooks: Arc<dyn ReturnHooks>) {
        self.h
            .spawn(|inner| crate::jobs_follow::listen(inner, hooks));
        self.h.spawn(crate::jobs_follow::replay_and_beat);
    }
}
