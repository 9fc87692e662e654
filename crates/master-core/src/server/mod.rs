//! The master daemon: `run(config, shutdown)`.
//!
//! ```text
//!  ROUTER (ret_port) ──Request──▶ socket thread ──bounded queue──▶ worker_threads: handle
//!        ▲                                                              │
//!        └──────────────────── reply(peer, bytes) + doorbell ◀──────────┘
//!  PUB (publish_port) ◀── publish() ◀── local client tasks ◀── Unix socket ◀── `salt`
//!  maintenance: every loop_interval, dropfile / publish_session → rotate the publish key
//! ```
//!
//! RSA and AES work runs on a fixed pool of `worker_threads` OS threads fed by the socket
//! thread, so at most that many requests are processed at once; the socket thread itself
//! answers only quick file-server requests (`requests::handle_quick`, `salt_fileserver::inline`). Shutdown (mini-redis style): stop reading requests, let in-flight handlers
//! finish (returns get written; every file is written atomically), close the sockets.

pub(crate) mod fdlimit;
pub(crate) mod group;
pub(crate) mod local;
pub(crate) mod publish_pull;
pub(crate) mod signin_lane;
pub(crate) mod trim;
pub(crate) mod workers;

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use salt_config::MasterConfig;
use salt_transport::{
    Heartbeat, PoolServer, Publisher, PublisherOptions, ServerOptions, tcp_endpoint,
};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::{MasterError, io_err};
use crate::keys::aes::PublishKey;
use crate::shared::Shared;

/// What the master reports once it can serve (for systemd's `READY=1` and `STATUS=`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Ready {
    /// The publisher's bound endpoint.
    pub publish: String,
    /// The request server's bound endpoint.
    pub ret: String,
    /// Accepted minion keys at start.
    pub accepted: usize,
    /// The OpenMetrics text, for the binary's `metrics_port` endpoint.
    pub metrics: crate::events::metrics::Scrape,
}

/// Run the master until `shutdown` completes.
pub async fn run(cfg: MasterConfig, shutdown: impl Future) -> Result<(), MasterError> {
    run_with_ready(cfg, shutdown, |_| {}).await
}

/// [`run`], calling `on_ready` once the keys are loaded and every socket is bound.
pub async fn run_with_ready(
    cfg: MasterConfig,
    shutdown: impl Future,
    on_ready: impl FnOnce(&Ready),
) -> Result<(), MasterError> {
    fdlimit::raise_max_open_files(cfg.max_open_files);
    let shared = tokio::task::spawn_blocking(move || Shared::open(cfg))
        .await
        .map_err(|e| MasterError::Io {
            what: "opening the master's state".into(),
            source: std::io::Error::other(e),
        })??;
    let shared = Arc::new(shared);
    fdlimit::check_max_open_files(
        shared.cfg.max_open_files,
        shared.store.list(salt_keystore::KeyState::Accepted).len(),
    );
    follow_group(&shared);
    let cfg = &shared.cfg;
    let host = cfg.interface.to_string();
    let ipv6 = cfg.ipv6.unwrap_or(cfg.interface.is_ipv6());
    // Salt's zmq_heartbeat_ivl / zmq_heartbeat_timeout (0 or unset interval: off). libzmq
    // cancels a heartbeat timer with a linear scan of its io thread's timers, so the cost
    // grows with connections squared over the interval (docs/benchmarks.md).
    let heartbeat = match (cfg.zmq_heartbeat_ivl, cfg.zmq_heartbeat_timeout) {
        (Some(ivl), timeout) if !ivl.is_zero() => Some(Heartbeat::new(
            ivl,
            timeout.filter(|t| !t.is_zero()).unwrap_or(ivl * 3),
        )),
        _ => None,
    };
    let pub_opts = PublisherOptions {
        heartbeat,
        hwm: i32::try_from(cfg.pub_hwm).unwrap_or(1000),
        backlog: i32::try_from(cfg.zmq_backlog).unwrap_or(1000),
        ipv6,
        keepalive: salt_transport::Keepalive {
            enabled: cfg.tcp_keepalive,
            idle: cfg.tcp_keepalive_idle,
            cnt: cfg.tcp_keepalive_cnt,
            intvl: cfg.tcp_keepalive_intvl,
        },
        ..PublisherOptions::default()
    };
    let pub_endpoint = tcp_endpoint(&host, cfg.publish_port);
    let publisher = Publisher::bind(&pub_endpoint, pub_opts)?;
    tracing::info!("Starting the Salt Publisher on {}", publisher.endpoint());
    let srv_opts = ServerOptions {
        heartbeat,
        backlog: i32::try_from(cfg.zmq_backlog).unwrap_or(1000),
        ipv6,
        ..ServerOptions::default()
    };
    // The request path: the ROUTER's socket thread hands each request straight to one of
    // `worker_threads` OS threads, which runs the handler and queues the reply back (no
    // per-request task, permit or blocking-pool hop; docs/benchmarks.md).
    let activity = trim::Activity::default();
    let handler: salt_transport::Handler = {
        let shared = shared.clone();
        let activity = activity.clone();
        Arc::new(move |body: &[u8]| {
            activity.bump();
            let t0 = std::time::Instant::now();
            let r = crate::requests::handle(&shared, body);
            shared.metrics.request(t0.elapsed());
            r
        })
    };
    // Quick file-server requests (a hash or a small file from memory) are answered on the
    // socket thread itself: no hand-off to a worker and back. Anything else (sign-ins,
    // returns, big chunks, an index to build) is declined there and goes to the pool.
    let inline: salt_transport::Inline = {
        let shared = shared.clone();
        let activity = activity.clone();
        Arc::new(move |body: &[u8]| {
            activity.bump();
            // A sign-in (`"enc": "clear"` near the start of the envelope) goes to the pool
            // without being decoded here first.
            if looks_clear(body) {
                return None;
            }
            let t0 = std::time::Instant::now();
            let r = crate::requests::handle_quick(&shared, body)?;
            shared.metrics.request(t0.elapsed());
            Some(r)
        })
    };
    // Everything local tools look for (the event bus's sockets, publish_pull, the local
    // socket) exists before the request port answers: a tool or test that waits for the
    // ports finds them.
    let stop = CancellationToken::new();
    let _ = shared.host.set(crate::requests::clear::Host {
        shared: Arc::downgrade(&shared),
        publisher: publisher.clone(),
        runtime: tokio::runtime::Handle::current(),
        stop: stop.clone(),
    });
    let tracker = TaskTracker::new();
    // Other local users reach the socket when they may publish: `publisher_acl`, or
    // `external_auth` (`salt -a`), as Salt opens its sockets to them.
    let open_to_users =
        !cfg.publisher_acl.is_empty() || !shared.eauth.config().external_auth.is_empty();
    let (listener, sock_path) = local::bind(&cfg.sock_dir, open_to_users).map_err(io_err(
        format!("local socket in {}", cfg.sock_dir.display()),
    ))?;
    let local = tokio::spawn(local::serve(
        listener,
        shared.clone(),
        publisher.clone(),
        stop.clone(),
        tracker.clone(),
    ));
    let event_ipc = crate::events::ipc::start(shared.clone(), stop.clone())
        .await
        .map_err(io_err("the event bus's sockets (ipc_mode)"))?;
    let publish_pull = publish_pull::start(&shared, stop.clone()).map_err(io_err(format!(
        "{}/publish_pull.ipc",
        cfg.sock_dir.display()
    )))?;
    let workers_socket = workers::bind(cfg, &srv_opts, handler.clone())?;
    // Sign-ins wait behind the signed-in minions' requests, bounded (signin_lane.rs).
    let router = PoolServer::bind_with(
        &tcp_endpoint(&host, cfg.ret_port),
        &srv_opts,
        cfg.worker_threads.max(1) as usize,
        handler,
        Some(inline),
        Some(signin_lane::deferrable(cfg.worker_threads)),
    )?;
    tracing::info!(
        "Setting up the master communication server on {}",
        router.endpoint()
    );

    let event_returner = crate::events::returner::start(&shared, &stop);
    let maintenance = tokio::spawn(maintenance(shared.clone(), stop.clone()));
    let refusals = tokio::spawn(fdlimit::watch_refusals(
        shared.clone(),
        [
            ("publish", publisher.refused_connections()),
            ("request", router.refused_connections()),
        ],
        stop.clone(),
    ));
    let dropped = tokio::spawn(signin_lane::watch_dropped(
        shared.clone(),
        router.dropped(),
        stop.clone(),
    ));
    let trimmer = tokio::spawn(trim::trim_when_idle(activity, stop.clone()));
    crate::reactor::start(&shared, &publisher, &stop);
    crate::batch::start(&shared, &publisher, &stop);
    // The metrics text for the opt-in endpoint, which the binary serves (salt_daemon).
    let s = shared.clone();
    let metrics = crate::events::metrics::Scrape::new(shared.metrics.clone(), move |m| {
        let n = s.connected.lock().unwrap_or_else(|e| e.into_inner()).len();
        m.signed_in.set(i64::try_from(n).unwrap_or(i64::MAX));
    });
    tracing::info!(
        "Salt master {} is running with {} worker threads",
        cfg.id,
        cfg.worker_threads.max(1)
    );
    on_ready(&Ready {
        publish: publisher.endpoint().to_string(),
        ret: router.endpoint().to_string(),
        accepted: shared.store.list(salt_keystore::KeyState::Accepted).len(),
        metrics,
    });

    shutdown.await;
    tracing::info!("Shutting down the Salt master");
    stop.cancel();
    tracker.close();
    if tokio::time::timeout(Duration::from_secs(10), tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!("some requests were still running at shutdown");
    }
    let _ = local.await;
    event_ipc.close().await;
    publish_pull::remove(publish_pull.as_deref());
    let _ = maintenance.await;
    let _ = refusals.await;
    let _ = dropped.await;
    let _ = trimmer.await;
    if let Some(r) = event_returner {
        let _ = r.await; // the queued events get written
    }
    // Running handlers finish (returns get written) and their replies go out.
    let _ = tokio::task::spawn_blocking(move || {
        if !router.close(Duration::from_secs(10)) {
            tracing::warn!("some requests were still running at shutdown");
        }
        if let Some((w, path)) = workers_socket {
            w.close(Duration::from_secs(10));
            let _ = std::fs::remove_file(path);
        }
        shared.jobs.close(); // the queued returns get written
        publisher.close();
        shared.jobs.store().leave();
        crate::jobs::flush::flush_now(); // the job loads written since the last tick
    })
    .await;
    let _ = std::fs::remove_file(&sock_path);
    tracing::info!("Salt master stopped");
    Ok(())
}

/// Adopt every new group publish key, and start following the change log.
fn follow_group(shared: &Arc<Shared>) {
    let Some(group) = &shared.group else {
        return;
    };
    let weak: Weak<Shared> = Arc::downgrade(shared);
    group.on_aes(Box::new(move |generation, key| {
        let Some(s) = weak.upgrade() else {
            return;
        };
        match PublishKey::from_key_string(&s.keys.key, key) {
            Ok(k) => {
                s.aes.rotate(k);
                s.metrics.rotation("group");
                tracing::info!("Rotating master AES key (group generation {generation})");
            }
            Err(e) => tracing::error!("group publish key unusable: {e}"),
        }
    }));
    group.start_follower();
}

/// Whether a request envelope has the msgpack bytes of `"enc": "clear"` in its first 64
/// bytes (where Salt's clients put it). Only a shortcut: a miss is decoded and declined.
fn looks_clear(body: &[u8]) -> bool {
    const ENC_CLEAR: &[u8] = b"\xa3enc\xa5clear";
    body[..body.len().min(64)]
        .windows(ENC_CLEAR.len())
        .any(|w| w == ENC_CLEAR)
}

/// Every `loop_interval`: rotate the publish key when the dropfile asks for it or when
/// `publish_session` has elapsed.
async fn maintenance(shared: Arc<Shared>, stop: CancellationToken) {
    let every = if shared.cfg.loop_interval.is_zero() {
        Duration::from_secs(60)
    } else {
        shared.cfg.loop_interval
    };
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // `KeyDirWatch::reads` when the connected ids were last pruned (none yet).
    let mut pruned_at = u64::MAX;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let s = shared.clone();
        let last_pruned = pruned_at;
        let ticked = tokio::task::spawn_blocking(move || {
            let cfg = &s.cfg;
            let dropfile = match salt_keystore::check_dropfile(&cfg.cachedir, Some(&cfg.id)) {
                Ok(salt_keystore::DropfileCheck::Rotate) => true,
                Ok(salt_keystore::DropfileCheck::BadMode { mode, .. }) => {
                    if s.log_limit.allow("dropfile-mode") {
                        tracing::warn!(
                            "Found dropfile with incorrect permissions ({mode:o}), ignoring..."
                        );
                    }
                    false
                }
                Ok(_) => false,
                Err(e) => {
                    if s.log_limit.allow("dropfile") {
                        tracing::warn!("cannot check the dropfile: {e}");
                    }
                    false
                }
            };
            // Forget "connected" ids whose key is no longer accepted (salt-key -d/-r), so
            // they stop counting against max_minions: only when the key directories were
            // listed again since the last tick (re-listing and copying every accepted id
            // each tick was the master's whole idle cost: ~1.5 ms per 1,000 minions).
            let listed = s.key_dirs.refresh(&s.store).is_ok();
            let reads = s.key_dirs.reads();
            let prune = listed && reads != last_pruned;
            if prune {
                // A set: `retain` over a Vec was 10^8 string compares per tick at 10k ids.
                let accepted: std::collections::HashSet<String> = s
                    .store
                    .list(salt_keystore::KeyState::Accepted)
                    .into_iter()
                    .collect();
                s.connected
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .retain(|id| accepted.contains(id));
                fdlimit::check_max_open_files(cfg.max_open_files, accepted.len());
            }
            clean_jobs(&s);
            // Salt's `clean_expired_tokens` (`eauth_tokens`), on the same timer.
            let expired = s.eauth.clean_expired_tokens();
            if expired > 0 {
                tracing::debug!("removed {expired} expired eauth tokens");
            }
            let aged = !cfg.publish_session.is_zero()
                && s.aes.current().created.elapsed() >= cfg.publish_session;
            if (dropfile || aged)
                && let Some(group) = &s.group
            {
                // The group's key rotates for every master, through the change log.
                match group.rotate_aes() {
                    Ok(()) => s.metrics.rotation(if dropfile {
                        "dropfile"
                    } else {
                        "publish_session"
                    }),
                    Err(e) => tracing::warn!("group AES key rotation refused: {e}"),
                }
            } else if dropfile || aged {
                match PublishKey::generate(&s.keys.key) {
                    Ok(k) => {
                        s.aes.rotate(k);
                        s.metrics.rotation(if dropfile {
                            "dropfile"
                        } else {
                            "publish_session"
                        });
                        tracing::info!(
                            "Rotating master AES key{}",
                            if dropfile {
                                " (dropfile)"
                            } else {
                                " (publish_session)"
                            }
                        );
                    }
                    Err(e) => tracing::error!("AES key rotation failed: {e}"),
                }
            }
            if prune { reads } else { last_pruned }
        })
        .await;
        if let Ok(at) = ticked {
            pruned_at = at;
        }
    }
}

/// Salt's `clean_old_jobs`, once per maintenance tick (on the blocking pool: the request
/// server never waits for it).
fn clean_jobs(s: &Shared) {
    let started = std::time::Instant::now();
    match s
        .jobs
        .clean(s.cfg.keep_jobs_seconds, std::time::SystemTime::now())
    {
        Ok(r) if r.removed > 0 || r.failed > 0 => tracing::info!(
            "Job cache: removed {} job(s) older than keep_jobs_seconds={} in {:.3} s ({} kept, {} failed)",
            r.removed,
            s.cfg.keep_jobs_seconds.as_secs(),
            started.elapsed().as_secs_f64(),
            r.kept,
            r.failed
        ),
        Ok(_) => {}
        Err(e) => {
            if s.log_limit.allow("jobs-clean") {
                tracing::warn!("Job cache: cannot clean {}: {e}", s.jobs.dir().display());
            }
        }
    }
}

/// How often the counters of refused connections and dropped sign-ins are looked at.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// The one loop of the counter watchers: `on_tick(seconds since the last tick)` every
/// [`WATCH_EVERY`] until `stop`.
pub(crate) async fn watch_every_second(stop: CancellationToken, mut on_tick: impl FnMut(f64)) {
    let mut last = std::time::Instant::now();
    let mut tick = tokio::time::interval(WATCH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        on_tick(last.elapsed().as_secs_f64());
        last = std::time::Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use rmpv::Value;

    /// A sign-in envelope as Salt's clients build it is recognised without decoding; an AES
    /// one is not (it is decoded, and declined there if it is not a quick request).
    #[test]
    fn looks_clear_spots_sign_ins_only() {
        let env = |enc: &str| {
            salt_proto::encode(&Value::Map(vec![
                ("enc".into(), enc.into()),
                (
                    "load".into(),
                    Value::Map(vec![("cmd".into(), "_auth".into())]),
                ),
                ("version".into(), 3.into()),
            ]))
        };
        assert!(super::looks_clear(&env("clear")));
        assert!(!super::looks_clear(&env("aes")));
        assert!(!super::looks_clear(b""));
    }
}
