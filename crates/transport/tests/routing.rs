//! Reply routing: a reply reaches the socket that sent the request, and no other.
//!
//! The master's ROUTER runs with `ROUTER_HANDOVER` (as Salt's): a peer that connects with an
//! identity already in use takes it over, and replies addressed to that identity go to the
//! newcomer. These tests pin down the hazard with raw libzmq, then show that [`ReqClient`]
//! cannot fall into it (every socket instance gets its own identity, resets included), that
//! many one-shot clients connecting at the same instant each get their own reply, and that
//! `fail_fast` turns a refused connection into an immediate error.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use std::net::TcpListener;
use std::time::{Duration, Instant};

use salt_transport::{
    ReqClient, ReqOptions, Request, RouterServer, ServerOptions, TransportError, request_once,
};
use tokio::sync::mpsc;
use tokio::time::timeout;

const ANY: &str = "tcp://127.0.0.1:*";

async fn next_request(reqs: &mut mpsc::Receiver<Request>) -> Request {
    timeout(Duration::from_secs(10), reqs.recv())
        .await
        .expect("a request within 10 s")
        .expect("server open")
}

fn reply_to(server: &RouterServer, req: Request) {
    let mut out = b"re:".to_vec();
    out.extend_from_slice(&req.body);
    server.reply(req.peer, out).unwrap();
}

/// The hazard itself, with raw libzmq: two REQ sockets presenting one identity to a
/// `ROUTER_HANDOVER` server. The first one's reply goes to the second, which takes it as the
/// answer to its own request; the first never hears back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_sockets_sharing_an_identity_cross_replies() {
    let (server, mut reqs) = RouterServer::bind(ANY, ServerOptions::default()).unwrap();
    let ep = server.endpoint().to_owned();
    let ctx = zmq::Context::new();
    let open = |ctx: &zmq::Context| {
        let s = ctx.socket(zmq::REQ).unwrap();
        s.set_identity(b"salt-req/minion/m1").unwrap();
        s.set_linger(0).unwrap();
        s.set_rcvtimeo(1500).unwrap();
        s.connect(&ep).unwrap();
        s
    };
    let a = open(&ctx);
    a.send("A", 0).unwrap();
    let req_a = next_request(&mut reqs).await;
    let b = open(&ctx);
    b.send("B", 0).unwrap();
    let req_b = next_request(&mut reqs).await;
    assert_eq!(req_a.peer, req_b.peer, "one identity, one routing id");
    reply_to(&server, req_a);
    reply_to(&server, req_b);
    let got_b = tokio::task::spawn_blocking(move || (b.recv_bytes(0), a.recv_bytes(0)))
        .await
        .unwrap();
    assert_eq!(got_b.0.unwrap(), b"re:A", "B got A's reply");
    assert!(got_b.1.is_err(), "A never hears back");
}

/// Two clients given the same identity prefix (two sockets of one minion, or two minions
/// configured alike) connect and send at the same time: each gets its own reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_sharing_an_identity_prefix_never_cross() {
    let (server, mut reqs) = RouterServer::bind(ANY, ServerOptions::default()).unwrap();
    let opts = ReqOptions {
        identity: Some(b"salt-req/minion/m1".to_vec()),
        ..ReqOptions::default()
    };
    let a = ReqClient::connect(server.endpoint(), opts.clone()).unwrap();
    let ta = tokio::spawn({
        let a = a.clone();
        async move { a.request(b"A".to_vec(), Duration::from_secs(5)).await }
    });
    let req_a = next_request(&mut reqs).await;
    let b = ReqClient::connect(server.endpoint(), opts).unwrap();
    let tb = tokio::spawn({
        let b = b.clone();
        async move { b.request(b"B".to_vec(), Duration::from_secs(5)).await }
    });
    let req_b = next_request(&mut reqs).await;
    assert_ne!(req_a.peer, req_b.peer, "each socket has its own identity");
    reply_to(&server, req_a);
    reply_to(&server, req_b);
    assert_eq!(ta.await.unwrap().unwrap(), b"re:A");
    assert_eq!(tb.await.unwrap().unwrap(), b"re:B");
}

/// A request times out, the client replaces its socket, and the master answers the old request
/// late, just before the new one: the late answer must not be taken for the new one's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_socket_never_gets_its_predecessors_reply() {
    let (server, mut reqs) = RouterServer::bind(ANY, ServerOptions::default()).unwrap();
    let client = ReqClient::connect(
        server.endpoint(),
        ReqOptions {
            identity: Some(b"salt-req/minion/m1".to_vec()),
            ..ReqOptions::default()
        },
    )
    .unwrap();
    let first = client
        .request(b"1".to_vec(), Duration::from_millis(300))
        .await;
    assert!(matches!(first, Err(TransportError::Timeout)), "{first:?}");
    let old = next_request(&mut reqs).await;
    let c2 = client.clone();
    let second =
        tokio::spawn(async move { c2.request(b"2".to_vec(), Duration::from_secs(3)).await });
    let new = next_request(&mut reqs).await;
    reply_to(&server, old);
    tokio::time::sleep(Duration::from_millis(100)).await;
    reply_to(&server, new);
    assert_eq!(second.await.unwrap().unwrap(), b"re:2");
}

/// Twenty one-shot clients (a sign-in or alive check each, as twenty minions starting in the
/// same second) hit one server at the same instant, thirty times over: every reply reaches
/// its own requester.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simultaneous_one_shot_clients_each_get_their_own_reply() {
    let (server, mut reqs) = RouterServer::bind(ANY, ServerOptions::default()).unwrap();
    let replier = server.replier();
    tokio::spawn(async move {
        while let Some(req) = reqs.recv().await {
            let mut out = b"re:".to_vec();
            out.extend_from_slice(&req.body);
            let _ = replier.reply(req.peer, out);
        }
    });
    let ep = server.endpoint().to_owned();
    for round in 0..30 {
        let tasks: Vec<_> = (0..20)
            .map(|i| {
                let ep = ep.clone();
                let opts = ReqOptions {
                    identity: Some(format!("salt-req/minion/m{}", i % 2).into_bytes()),
                    fail_fast: true,
                    ..ReqOptions::default()
                };
                tokio::spawn(async move {
                    let body = format!("{round}-{i}").into_bytes();
                    let got = request_once(&ep, opts, body.clone(), Duration::from_secs(10)).await;
                    (body, got)
                })
            })
            .collect();
        for t in tasks {
            let (body, got) = t.await.unwrap();
            let mut want = b"re:".to_vec();
            want.extend_from_slice(&body);
            assert_eq!(got.unwrap(), want, "round {round}");
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Nothing listens (a killed master): with `fail_fast` the request fails at once instead of
/// waiting out its timeout; without it, it times out as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_fast_reports_a_refused_connection_at_once() {
    let ep = format!("tcp://127.0.0.1:{}", free_port());
    let fast = ReqOptions {
        fail_fast: true,
        ..ReqOptions::default()
    };
    let t0 = Instant::now();
    let r = request_once(&ep, fast, b"ping".to_vec(), Duration::from_secs(5)).await;
    assert!(matches!(r, Err(TransportError::Unreachable)), "{r:?}");
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    let t0 = Instant::now();
    let r = request_once(
        &ep,
        ReqOptions::default(),
        b"ping".to_vec(),
        Duration::from_millis(400),
    )
    .await;
    assert!(matches!(r, Err(TransportError::Timeout)), "{r:?}");
    assert!(t0.elapsed() >= Duration::from_millis(390));
}

/// The peer closes the connection after the request arrived (a master killed mid-request):
/// `fail_fast` fails the request when the connection drops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_fast_reports_a_connection_dropped_mid_request() {
    let (server, mut reqs) = RouterServer::bind(ANY, ServerOptions::default()).unwrap();
    let ep = server.endpoint().to_owned();
    let fast = ReqOptions {
        fail_fast: true,
        ..ReqOptions::default()
    };
    let t = tokio::spawn(async move {
        let t0 = Instant::now();
        let r = request_once(&ep, fast, b"ping".to_vec(), Duration::from_secs(5)).await;
        (r, t0.elapsed())
    });
    let _req = next_request(&mut reqs).await;
    tokio::task::spawn_blocking(move || drop(server))
        .await
        .unwrap();
    let (r, took) = t.await.unwrap();
    assert!(matches!(r, Err(TransportError::Unreachable)), "{r:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
}
