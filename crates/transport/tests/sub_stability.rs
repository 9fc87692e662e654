//! Issue #15, shape 2: "sign-in succeeds, the SUB connects, and 5 ms later the SUB reports a
//! disconnect" on a healthy master.
//!
//! These tests replay, at the transport level, everything a minion's sockets do to one master
//! in the first seconds after start, for several minions at the same instant, many times:
//! a fail-fast sign-in on a fresh REQ socket, then the SUB (minion-id identity, the minion's
//! heartbeats `A/3` / `2A/3`) together with the first alive check on another fresh REQ, while
//! the previous SUB of the same minion (same identity, a reconnect after a lost master) is
//! torn down in that same instant, and while the master publishes. A healthy publisher must
//! never see a subscriber's connection drop: every SUB reports exactly one `Connected` and no
//! `Disconnected`, across heartbeat intervals.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use std::sync::Arc;
use std::time::Duration;

use salt_transport::{
    Heartbeat, Publisher, PublisherOptions, ReqOptions, RouterServer, ServerOptions, SubClient,
    SubEvent, SubOptions, request_once,
};
use tokio::sync::{Barrier, mpsc};
use tokio::time::{Instant, timeout};

const ANY: &str = "tcp://127.0.0.1:*";

/// `master_alive_interval` of the lab (seconds): SUB heartbeats every A/3, timeout 2A/3.
const A: Duration = Duration::from_secs(3);

fn rounds() -> usize {
    std::env::var("SUB_STABILITY_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

/// The master's side: a ROUTER that answers every request, and a PUB that publishes every
/// 20 ms, both with the master's default heartbeats.
async fn master() -> (RouterServer, Publisher) {
    let (server, mut reqs) = RouterServer::bind(ANY, ServerOptions::default()).unwrap();
    let replier = server.replier();
    tokio::spawn(async move {
        while let Some(req) = reqs.recv().await {
            let mut out = b"re:".to_vec();
            out.extend_from_slice(&req.body);
            let _ = replier.reply(req.peer, out);
        }
    });
    let publisher = Publisher::bind(ANY, PublisherOptions::default()).unwrap();
    let p = publisher.clone();
    tokio::spawn(async move {
        let mut n = 0u64;
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if p.publish(vec![format!("pub {n}").into_bytes()]).is_err() {
                return;
            }
            n += 1;
        }
    });
    (server, publisher)
}

fn sub_opts(id: &str) -> SubOptions {
    SubOptions {
        heartbeat: Some(Heartbeat::new(A / 3, A * 2 / 3)),
        identity: Some(id.as_bytes().to_vec()),
        queue_capacity: 64,
        ..SubOptions::default()
    }
}

fn req_opts(id: &str) -> ReqOptions {
    ReqOptions {
        identity: Some(format!("salt-req/minion/{id}").into_bytes()),
        fail_fast: true,
        ..ReqOptions::default()
    }
}

/// What one SUB reported while it was watched.
#[derive(Debug, Default)]
struct Seen {
    connected: usize,
    disconnected: usize,
    messages: usize,
}

async fn watch(mut rx: mpsc::Receiver<SubEvent>, until: Instant) -> Seen {
    let mut seen = Seen::default();
    while let Ok(Some(ev)) = tokio::time::timeout_at(until, rx.recv()).await {
        match ev {
            SubEvent::Connected => seen.connected += 1,
            SubEvent::Disconnected => seen.disconnected += 1,
            SubEvent::Message(_) => seen.messages += 1,
        }
    }
    seen
}

/// `n` minions start together against one healthy master, `rounds()` times; each minion's
/// previous SUB (same identity) is closed at the instant its new one connects. Watched for
/// 1.5 heartbeat intervals after the connect, no SUB may drop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simultaneous_minions_keep_their_subscriptions() {
    let (server, publisher) = master().await;
    let req_ep = server.endpoint().to_owned();
    let pub_ep = publisher.endpoint().to_owned();
    let n = 6;
    let mut previous: Vec<Option<SubClient>> = (0..n).map(|_| None).collect();
    let mut drops = Vec::new();
    for round in 0..rounds() {
        let barrier = Arc::new(Barrier::new(n));
        let tasks: Vec<_> = (0..n)
            .map(|i| {
                let barrier = Arc::clone(&barrier);
                let (req_ep, pub_ep) = (req_ep.clone(), pub_ep.clone());
                let old = previous[i].take();
                tokio::spawn(async move {
                    let id = format!("minion-{i}");
                    barrier.wait().await;
                    // Sign-in on a fresh fail-fast REQ.
                    let signin = request_once(
                        &req_ep,
                        req_opts(&id),
                        b"_auth".to_vec(),
                        Duration::from_secs(5),
                    )
                    .await;
                    assert_eq!(signin.unwrap(), b"re:_auth", "sign-in of {id}");
                    // The SUB and the first alive check together; the old SUB goes away.
                    let (sub, rx) = SubClient::connect(&pub_ep, sub_opts(&id)).unwrap();
                    let closing = tokio::task::spawn_blocking(move || drop(old));
                    let ping = request_once(
                        &req_ep,
                        req_opts(&id),
                        b"ping".to_vec(),
                        Duration::from_secs(5),
                    );
                    let until = Instant::now() + A / 2 + A / 3;
                    let (seen, ping) = tokio::join!(watch(rx, until), ping);
                    closing.await.unwrap();
                    assert_eq!(ping.unwrap(), b"re:ping", "alive check of {id}");
                    (i, sub, seen)
                })
            })
            .collect();
        for t in tasks {
            let (i, sub, seen) = timeout(Duration::from_secs(20), t)
                .await
                .expect("a minion's round within 20 s")
                .unwrap();
            if seen.connected != 1 || seen.disconnected != 0 || seen.messages == 0 {
                drops.push(format!("round {round} minion-{i}: {seen:?}"));
            }
            previous[i] = Some(sub);
        }
    }
    assert!(
        drops.is_empty(),
        "a healthy publisher's subscribers dropped or never connected: {drops:#?}"
    );
}

/// One minion's failover churn: its SUB is closed and a new one with the same identity
/// connects at once, over and over (what a lost master followed by a quick sign-in does);
/// the new SUB never reports a disconnect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resubscribing_minion_never_sees_its_old_sockets_events() {
    let (_server, publisher) = master().await;
    let ep = publisher.endpoint().to_owned();
    let mut old: Option<SubClient> = None;
    for round in 0..rounds() * 4 {
        let (sub, rx) = SubClient::connect(&ep, sub_opts("minion-x")).unwrap();
        let prev = old.take();
        let closing = tokio::task::spawn_blocking(move || drop(prev));
        let seen = watch(rx, Instant::now() + Duration::from_millis(400)).await;
        closing.await.unwrap();
        assert_eq!(
            (seen.connected, seen.disconnected),
            (1, 0),
            "round {round}: {seen:?}"
        );
        old = Some(sub);
    }
}
