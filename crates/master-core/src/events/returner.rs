//! The event returner (`event_return: postgres`), as Salt's `EventReturn` process
//! (salt/utils/event.py): every event of the bus whose tag passes `event_return_whitelist`
//! and `event_return_blacklist` (fnmatch globs) is queued; the queue is written when it
//! holds `event_return_queue` events or, with `event_return_queue_max_seconds`, when its
//! oldest event is that old — both checked as an event arrives — and at shutdown. The rows
//! are Salt's `postgres.event_return`: `(tag, json.dumps(data), master id)`.
//!
//! A listener that falls behind the bus loses the oldest events (logged with their count),
//! as any bus listener; a write that fails is logged and its events dropped (Salt's
//! `EventReturn` logs the returner's exception and clears the queue).

use std::sync::Arc;
use std::time::Instant;

use salt_config::MasterReturners;
use salt_pgstore::PgReturner;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::events::bus::Event;
use crate::shared::Shared;

/// Salt's `EventReturn._filter` on the tag.
pub(crate) fn wanted(tag: &str, allow: &[String], deny: &[String]) -> bool {
    let glob = |p: &String| salt_compat::fnmatch::fnmatch(tag, p);
    (allow.is_empty() || allow.iter().any(glob)) && !deny.iter().any(glob)
}

/// The connection settings of Salt's `postgres` returner for master `id`.
pub(crate) fn settings(r: &MasterReturners, id: &str) -> salt_pgstore::Settings {
    let c = &r.postgres;
    salt_pgstore::Settings {
        cluster_id: String::new(),
        master: id.to_owned(),
        host: c.host.clone(),
        port: c.port,
        user: c.user.clone(),
        pass: c.passwd.expose().to_owned(),
        db: c.db.clone(),
        tls: salt_pgstore::Tls::default(),
        rotate_on_revoke: false,
    }
}

/// Start the event returner when `event_return` names one (the bus is subscribed to now,
/// so every later event is seen).
pub(crate) fn start(
    shared: &Arc<Shared>,
    stop: &CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    let r = &shared.cfg.event_return;
    if r.event_return.is_empty() {
        return None;
    }
    let db = match PgReturner::new(settings(r, &shared.cfg.id)) {
        Ok(db) => Arc::new(db),
        Err(e) => {
            tracing::error!("event_return: postgres returner not started: {e}");
            return None;
        }
    };
    let rx = shared.events.subscribe();
    // Salt's `EventReturn` announces itself on the bus (and so stores this event first).
    shared
        .events
        .fire("salt/event_listen/start", serde_json::json!({}));
    tracing::info!(
        "event_return: events go to Salt's postgres returner (database {} on {})",
        r.postgres.db,
        r.postgres.host
    );
    Some(tokio::spawn(run(r.clone(), db, rx, stop.clone())))
}

async fn flush(db: &Arc<PgReturner>, queue: &mut Vec<Arc<Event>>) {
    if queue.is_empty() {
        return;
    }
    let rows: Vec<(String, String)> = queue
        .drain(..)
        .map(|ev| {
            let data = salt_compat::json::json_to_msgpack(&ev.data);
            (ev.tag.clone(), crate::jobs::pg_returner::salt_json(&data))
        })
        .collect();
    let n = rows.len();
    let db = db.clone();
    match tokio::task::spawn_blocking(move || db.event_return(rows)).await {
        Ok(Ok(())) => tracing::debug!("event_return: {n} event(s) stored"),
        Ok(Err(e)) => tracing::error!("Could not store events - returner 'postgres': {e}"),
        Err(e) => tracing::error!("event_return: writer failed: {e}"),
    }
}

async fn run(
    cfg: MasterReturners,
    db: Arc<PgReturner>,
    mut rx: tokio::sync::broadcast::Receiver<Arc<Event>>,
    stop: CancellationToken,
) {
    let mut queue: Vec<Arc<Event>> = Vec::new();
    let mut oldest: Option<Instant> = None;
    loop {
        let ev = tokio::select! {
            () = stop.cancelled() => break,
            ev = rx.recv() => ev,
        };
        let ev = match ev {
            Ok(ev) => ev,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!("event_return: fell behind the event bus, {n} event(s) lost");
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        if wanted(&ev.tag, &cfg.whitelist, &cfg.blacklist) {
            queue.push(ev);
        }
        let mut too_long = false;
        if !cfg.queue_max_seconds.is_zero() {
            let first = *oldest.get_or_insert_with(Instant::now);
            if first.elapsed() >= cfg.queue_max_seconds {
                too_long = true;
                oldest = None;
            }
        }
        if queue.len() >= cfg.queue as usize || too_long {
            flush(&db, &mut queue).await;
            oldest = None;
        }
    }
    // Whatever is queued at shutdown is written.
    while let Ok(ev) = rx.try_recv() {
        if wanted(&ev.tag, &cfg.whitelist, &cfg.blacklist) {
            queue.push(ev);
        }
    }
    flush(&db, &mut queue).await;
}

#[cfg(test)]
mod tests {
    use super::wanted;

    #[test]
    fn salt_filter_allow_then_deny() {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert!(wanted("salt/job/1/new", &[], &[]));
        assert!(wanted("salt/job/1/new", &s(&["salt/job/*"]), &[]));
        assert!(!wanted("salt/auth", &s(&["salt/job/*"]), &[]));
        assert!(!wanted(
            "salt/job/1/new",
            &s(&["salt/job/*"]),
            &s(&["*/new"])
        ));
        assert!(!wanted("salt/auth", &[], &s(&["salt/auth"])));
    }
}
