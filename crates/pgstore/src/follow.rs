//! The follower: LISTEN on the group's channel, catch up on every notification, after
//! every (re)connect and every [`crate::POLL`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio_postgres::AsyncMessage;

use crate::db::CHANNEL;
use crate::{Inner, POLL};

/// How often a master trims the change log.
const TRIM_EVERY: Duration = Duration::from_secs(3600);
/// Wait between reconnect attempts.
const RETRY: Duration = Duration::from_millis(500);

pub(crate) async fn run(inner: Arc<Inner>) {
    // Warn once per outage: at the first failed attempt, and whenever a followed
    // connection is lost.
    let mut warned = false;
    loop {
        let mut connected = false;
        match follow_once(&inner, &mut connected).await {
            Ok(()) => {}
            Err(e) => {
                if connected || !warned {
                    warned = true;
                    tracing::warn!(
                        "group {}: database unreachable ({e}); serving the keys already \
                         known, key changes refused until it returns",
                        inner.settings.cluster_id
                    );
                }
            }
        }
        inner.up.store(false, Ordering::Relaxed);
        tokio::time::sleep(RETRY).await;
    }
}

async fn follow_once(inner: &Arc<Inner>, connected: &mut bool) -> Result<(), crate::Error> {
    let (client, mut conn) = inner.connector.connect().await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let prefix = format!("{}:", inner.settings.cluster_id);
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| conn.poll_message(cx));
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notification(n)) if n.payload().starts_with(&prefix) => {
                    let _ = tx.send(());
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    let result = async {
        client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
        let seq = inner.catch_up().await?;
        *connected = true;
        tracing::info!(
            "group {}: following the database from change {seq}",
            inner.settings.cluster_id
        );
        let mut poll = tokio::time::interval(POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut trimmed = tokio::time::Instant::now();
        loop {
            if trimmed.elapsed() >= TRIM_EVERY {
                trimmed = tokio::time::Instant::now();
                match inner.trim_log(crate::LOG_KEEP).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!("group: {n} old change-log row(s) trimmed"),
                    Err(e) => tracing::debug!("group: change-log trim: {e}"),
                }
            }
            tokio::select! {
                n = rx.recv() => {
                    if n.is_none() {
                        return Err(crate::Error::Pool("notification connection closed".into()));
                    }
                    // Coalesce a burst of notifications into one catch-up.
                    while rx.try_recv().is_ok() {}
                }
                _ = poll.tick() => {}
            }
            inner.catch_up().await?;
        }
    }
    .await;
    driver.abort();
    result
}
