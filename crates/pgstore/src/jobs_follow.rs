//! Background work of the job cache: hear the returns other masters store (LISTEN
//! `salt_rs_returns`, plus a read of every waited job's returns after each (re)connect and
//! every [`crate::POLL`], since a notification is never replayed), replay the spool, beat.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio_postgres::AsyncMessage;

use crate::jobs::{JobInner, RETURNS, ReturnHooks};
use crate::{Error, POLL};

const RETRY: Duration = Duration::from_millis(500);
/// Spool replay / heartbeat period.
const TICK: Duration = Duration::from_secs(1);
/// Heartbeat period of `salt_rs_masters`.
pub const BEAT: Duration = Duration::from_secs(5);

pub(crate) async fn listen(inner: Arc<JobInner>, hooks: Arc<dyn ReturnHooks>) {
    loop {
        if let Err(e) = listen_once(&inner, &hooks).await {
            tracing::debug!("job cache: return listener: {e}");
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Deliver the returns of every waited job that its waiter has not had yet.
async fn sweep(client: &tokio_postgres::Client, hooks: &Arc<dyn ReturnHooks>) -> Result<(), Error> {
    for (jid, had) in hooks.waited() {
        let rows = client
            .query(
                "SELECT id, full_ret::text FROM salt_returns \
                 WHERE jid = $1 AND NOT (id = ANY($2))",
                &[&jid, &had],
            )
            .await?;
        for r in rows {
            let (id, full): (String, String) = (r.get(0), r.get(1));
            hooks.deliver(&jid, &id, &full);
        }
    }
    Ok(())
}

async fn listen_once(inner: &Arc<JobInner>, hooks: &Arc<dyn ReturnHooks>) -> Result<(), Error> {
    let (client, mut conn) = inner.connector.connect().await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, String)>();
    let me = format!("{}\t", inner.settings.master);
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| conn.poll_message(cx));
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notification(n)) if !n.payload().starts_with(&me) => {
                    let mut parts = n.payload().splitn(3, '\t');
                    if let (Some(_), Some(jid), Some(id)) =
                        (parts.next(), parts.next(), parts.next())
                    {
                        let _ = tx.send((jid.to_owned(), id.to_owned()));
                    }
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    let result = async {
        client.batch_execute(&format!("LISTEN {RETURNS}")).await?;
        sweep(&client, hooks).await?;
        let mut poll = tokio::time::interval(POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                n = rx.recv() => {
                    let Some((jid, id)) = n else {
                        return Err(Error::Pool("notification connection closed".into()));
                    };
                    let waited = hooks.waited();
                    if !waited.iter().any(|(j, had)| *j == jid && !had.contains(&id)) {
                        continue;
                    }
                    let row = client
                        .query_opt(
                            "SELECT full_ret::text FROM salt_returns WHERE jid = $1 AND id = $2",
                            &[&jid, &id],
                        )
                        .await?;
                    if let Some(r) = row {
                        let full: String = r.get(0);
                        hooks.deliver(&jid, &id, &full);
                    }
                }
                _ = poll.tick() => sweep(&client, hooks).await?,
            }
        }
    }
    .await;
    driver.abort();
    result
}

pub(crate) async fn replay_and_beat(inner: Arc<JobInner>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_beat: Option<tokio::time::Instant> = None;
    loop {
        tick.tick().await;
        if last_beat.is_none_or(|t| t.elapsed() >= BEAT) && beat(&inner).await.is_ok() {
            last_beat = Some(tokio::time::Instant::now());
        }
        let pending = inner.spool.len();
        if pending == 0 {
            if !inner.up.load(Ordering::Relaxed) && inner.client().await.is_ok() {
                inner.up.store(true, Ordering::Relaxed);
                tracing::info!("job cache: the database is back");
            }
            continue;
        }
        match inner.replay().await {
            Ok(n) => {
                tracing::info!("job cache: {n} spooled item(s) written to the database");
                // Anything spooled meanwhile goes on the next tick.
                if inner.spool.len() == 0 && !inner.up.swap(true, Ordering::Relaxed) {
                    tracing::info!("job cache: the database is back");
                }
            }
            Err(e) => tracing::debug!("job cache: spool replay waits for the database: {e}"),
        }
    }
}

async fn beat(inner: &JobInner) -> Result<(), Error> {
    let c = inner.client().await?;
    c.execute(
        "INSERT INTO salt_rs_masters (cluster_id, master) VALUES ($1, $2) \
         ON CONFLICT (cluster_id, master) DO UPDATE SET beat_at = now()",
        &[&inner.settings.cluster_id, &inner.settings.master],
    )
    .await?;
    Ok(())
}
