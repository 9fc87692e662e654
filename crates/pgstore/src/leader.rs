//! The group's reactor leader (docs/group.md, "The reactor"): of the masters of a group that
//! run a reactor, the one holding a PostgreSQL session-level advisory lock reacts; the others
//! skip every event. The lock lives as long as the leader's connection, so a leader that
//! stops, dies or loses the database frees it at once, and another member takes it on its
//! next attempt (every [`TRY`]). `salt-run reactor.set_leader False` steps down and stays out
//! (the lock released); `True` takes part again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::{Error, Settings};

/// How often a member that does not lead tries to take the lock (and the leader checks its
/// connection).
pub const TRY: Duration = Duration::from_millis(500);

/// The lock: `(hashtext('salt-rs reactor leader'), hashtext(cluster_id))`, the two-`int4`
/// form (the migrations' lock is the one-`bigint` form: another key space).
const TRY_LOCK: &str =
    "SELECT pg_try_advisory_lock(hashtext('salt-rs reactor leader'), hashtext($1))";
const UNLOCK: &str = "SELECT pg_advisory_unlock(hashtext('salt-rs reactor leader'), hashtext($1))";

struct Inner {
    settings: Settings,
    connector: crate::tls::Connector,
    /// This master holds the lock.
    leads: AtomicBool,
    /// This master takes part (`reactor.set_leader`).
    willing: AtomicBool,
    /// The election's connection (the lock is its session's).
    client: tokio::sync::Mutex<Option<tokio_postgres::Client>>,
}

/// One master's part in the group's reactor election: see the module docs.
pub struct Leader {
    h: crate::handle::Handle<Inner>,
}

impl std::fmt::Debug for Leader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leader")
            .field("cluster_id", &self.h.inner.settings.cluster_id)
            .field("leads", &self.leads())
            .finish_non_exhaustive()
    }
}

impl Leader {
    /// Take part in the election of `settings`' group (in the background, from now on).
    pub fn start(settings: Settings) -> Result<Self, Error> {
        let connector = settings.connector()?;
        let inner = Arc::new(Inner {
            settings,
            connector,
            leads: AtomicBool::new(false),
            willing: AtomicBool::new(true),
            client: tokio::sync::Mutex::new(None),
        });
        let h = crate::handle::Handle::new("salt-leader", 1, "reactor leader", inner)?;
        h.spawn(run);
        Ok(Self { h })
    }

    /// Whether this master leads the group's reactor now.
    pub fn leads(&self) -> bool {
        self.h.inner.leads.load(Ordering::Acquire)
    }

    /// `reactor.set_leader`: take part (`true`: lead when no other member does) or step down
    /// and stay out (`false`). Returns whether this master leads after one attempt.
    pub fn set_willing(&self, willing: bool) -> Result<bool, Error> {
        self.h.inner.willing.store(willing, Ordering::Release);
        self.h.call(|inner| async move {
            round(&inner).await;
            Ok(inner.leads.load(Ordering::Acquire))
        })
    }
}

async fn run(inner: Arc<Inner>) {
    let mut tick = tokio::time::interval(TRY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        round(&inner).await;
    }
}

/// One attempt: connect when not connected, take or release the lock as `willing` says,
/// check the connection of a leader. Any error: not leading, reconnect next time.
async fn round(inner: &Inner) {
    let mut guard = inner.client.lock().await;
    if guard.as_ref().is_none_or(tokio_postgres::Client::is_closed) {
        set(inner, false);
        match inner.connector.connect().await {
            Ok((client, conn)) => {
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                *guard = Some(client);
            }
            Err(e) => {
                tracing::debug!(
                    "group {}: reactor leader election waits for the database: {e}",
                    inner.settings.cluster_id
                );
                *guard = None;
                return;
            }
        }
    }
    let Some(client) = guard.as_ref() else {
        return;
    };
    let cluster = &inner.settings.cluster_id;
    let willing = inner.willing.load(Ordering::Acquire);
    let leads = inner.leads.load(Ordering::Acquire);
    let r: Result<bool, tokio_postgres::Error> = match (willing, leads) {
        (true, false) => client
            .query_one(TRY_LOCK, &[cluster])
            .await
            .map(|r| r.get::<_, bool>(0)),
        (false, true) => client.query_one(UNLOCK, &[cluster]).await.map(|_| false),
        (true, true) => client.simple_query("SELECT 1").await.map(|_| true),
        (false, false) => Ok(false),
    };
    match r {
        Ok(now) => set(inner, now),
        Err(e) => {
            tracing::warn!(
                "group {cluster}: reactor leader election: {}",
                inner.connector.error(e)
            );
            set(inner, false);
            *guard = None;
        }
    }
}

fn set(inner: &Inner, now: bool) {
    if inner.leads.swap(now, Ordering::AcqRel) != now {
        let cluster = &inner.settings.cluster_id;
        if now {
            tracing::info!("group {cluster}: this master leads the reactor");
        } else {
            tracing::info!("group {cluster}: this master no longer leads the reactor");
        }
    }
}
