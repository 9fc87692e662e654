//! Salt's `postgres` returner on the master (salt/returners/postgres.py): the job cache
//! (`master_job_cache: postgres`) and the event returner (`event_return: postgres`) in its
//! tables `jids`, `salt_returns` and `salt_events`, whose columns are text (JSON written by
//! the caller as Salt's `salt.utils.json.dumps` does), not `pgjsonb`'s `jsonb`.
//!
//! As Salt: a load is inserted once (a second save of a jid is ignored), every return is a
//! row (no unique index), each event a row with this master's id. Salt leaves the tables to
//! the operator (its module documentation holds the DDL); salt-rs creates them from that DDL
//! when they are missing ([`DDL`]). Unlike the group's `pgjsonb` cache nothing is spooled:
//! with the database down a write fails and is logged (Salt's returner logs and drops).

use std::sync::Arc;

use crate::handle::{text_opt, text_pairs};
use crate::{Error, Settings};

/// The tables of Salt's `postgres` returner documentation, `IF NOT EXISTS`.
pub const DDL: &str = "
SET client_min_messages TO warning;
CREATE TABLE IF NOT EXISTS jids (
  jid   varchar(20) PRIMARY KEY,
  load  text NOT NULL
);
CREATE TABLE IF NOT EXISTS salt_returns (
  fun       varchar(50) NOT NULL,
  jid       varchar(255) NOT NULL,
  return    text NOT NULL,
  full_ret  text,
  id        varchar(255) NOT NULL,
  success   varchar(10) NOT NULL,
  alter_time   TIMESTAMP WITH TIME ZONE DEFAULT now()
);
CREATE INDEX IF NOT EXISTS idx_salt_returns_id ON salt_returns (id);
CREATE INDEX IF NOT EXISTS idx_salt_returns_jid ON salt_returns (jid);
CREATE INDEX IF NOT EXISTS idx_salt_returns_fun ON salt_returns (fun);
CREATE INDEX IF NOT EXISTS idx_salt_returns_updated ON salt_returns (alter_time);
CREATE SEQUENCE IF NOT EXISTS seq_salt_events_id;
CREATE TABLE IF NOT EXISTS salt_events (
    id BIGINT NOT NULL UNIQUE DEFAULT nextval('seq_salt_events_id'),
    tag varchar(255) NOT NULL,
    data text NOT NULL,
    alter_time TIMESTAMP WITH TIME ZONE DEFAULT NOW(),
    master_id varchar(255) NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_salt_events_tag on salt_events (tag);
";

/// One `salt_returns` row as Salt's `postgres.returner` writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgReturn {
    /// `fun` of the return.
    pub fun: String,
    /// The job id.
    pub jid: String,
    /// `json.dumps(ret["return"])`.
    pub ret: String,
    /// The minion id.
    pub id: String,
    /// `ret.get("success", False)` as PostgreSQL writes a boolean into text: `true`/`false`.
    pub success: bool,
    /// `json.dumps(ret)`.
    pub full_ret: String,
}

struct Inner {
    settings: Settings,
    connector: crate::tls::Connector,
    pool: deadpool_postgres::Pool,
    ready: tokio::sync::OnceCell<()>,
}

impl Inner {
    async fn client(&self) -> Result<deadpool_postgres::Object, Error> {
        let client = self
            .pool
            .get()
            .await
            .map_err(|e| self.connector.pool_error(e))?;
        self.ready
            .get_or_try_init(|| async { client.batch_execute(DDL).await.map_err(Error::from) })
            .await?;
        Ok(client)
    }
}

/// Salt's `postgres` returner: see the module docs.
pub struct PgReturner {
    h: crate::handle::Handle<Inner>,
}

impl std::fmt::Debug for PgReturner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgReturner")
            .field("db", &self.h.inner.settings.db)
            .finish_non_exhaustive()
    }
}

impl PgReturner {
    /// Set up the pool (no connection yet); `settings.master` is the `master_id` of events.
    pub fn new(settings: Settings) -> Result<Self, Error> {
        let connector = settings.connector()?;
        let pool = connector.pool(4, crate::CONNECT_TIMEOUT)?;
        let inner = Arc::new(Inner {
            settings,
            connector,
            pool,
            ready: tokio::sync::OnceCell::new(),
        });
        let h = crate::handle::Handle::new("salt-pgreturner", 1, "postgres returner", inner)?;
        Ok(Self { h })
    }

    fn call<T, F>(&self, f: impl FnOnce(Arc<Inner>) -> F) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        self.h.call(f)
    }

    /// Connect and create the missing tables.
    pub fn connect(&self) -> Result<(), Error> {
        self.call(|i| async move { i.client().await.map(|_| ()) })
    }

    /// Salt's `save_load`: the first load of a jid is kept.
    pub fn save_load(&self, jid: &str, load_json: String) -> Result<(), Error> {
        let jid = jid.to_owned();
        self.call(|i| async move {
            let c = i.client().await?;
            c.execute(
                "INSERT INTO jids (jid, load) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&jid, &load_json],
            )
            .await?;
            Ok(())
        })
    }

    /// Salt's `returner`: one row per return.
    pub fn save_return(&self, r: PgReturn) -> Result<(), Error> {
        self.call(|i| async move {
            let c = i.client().await?;
            let success = if r.success { "true" } else { "false" };
            c.execute(
                "INSERT INTO salt_returns (fun, jid, return, id, success, full_ret) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[&r.fun, &r.jid, &r.ret, &r.id, &success, &r.full_ret],
            )
            .await?;
            Ok(())
        })
    }

    /// Salt's `event_return`: `(tag, json.dumps(data))` rows in one transaction.
    pub fn event_return(&self, events: Vec<(String, String)>) -> Result<(), Error> {
        self.call(|i| async move {
            let mut c = i.client().await?;
            let tx = c.transaction().await?;
            let st = tx
                .prepare("INSERT INTO salt_events (tag, data, master_id) VALUES ($1, $2, $3)")
                .await?;
            for (tag, data) in &events {
                tx.execute(&st, &[tag, data, &i.settings.master]).await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    /// Salt's `get_load`: the load JSON text of `jid`.
    pub fn load(&self, jid: &str) -> Result<Option<String>, Error> {
        let jid = jid.to_owned();
        self.call(|i| async move {
            let c = i.client().await?;
            text_opt(&c, "SELECT load FROM jids WHERE jid = $1", &[&jid]).await
        })
    }

    /// Salt's `get_jid`: (minion id, `full_ret` JSON text) of every return of `jid`.
    pub fn returns(&self, jid: &str) -> Result<Vec<(String, String)>, Error> {
        let jid = jid.to_owned();
        self.call(|i| async move {
            let c = i.client().await?;
            let sql = "SELECT id, coalesce(full_ret, 'null') FROM salt_returns WHERE jid = $1 \
                       ORDER BY id, alter_time";
            text_pairs(&c, sql, &[&jid]).await
        })
    }

    /// Salt's `get_jids`: every (jid, load JSON text), by jid.
    pub fn jobs(&self) -> Result<Vec<(String, String)>, Error> {
        self.call(|i| async move {
            let c = i.client().await?;
            text_pairs(&c, "SELECT jid, load FROM jids ORDER BY jid", &[]).await
        })
    }
}
