//! TCP keepalive reaches the kernel's sockets (Salt's `tcp_keepalive*` options, and the
//! request server's fixed 60 s idle / 15 s / 3 probes of Salt 3007.17): read back from
//! `/proc/net/tcp`, where an armed keepalive timer shows as timer kind 2 with its remaining
//! time. (The crates.io build of libzmq left `ZMQ_HAVE_SO_KEEPALIVE` undefined and ignored
//! every keepalive option; `third_party/zeromq-src` defines it.)
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use std::time::{Duration, Instant};

use salt_transport::{
    Keepalive, Publisher, PublisherOptions, ReqClient, ReqOptions, RouterServer, ServerOptions,
    SubClient, SubEvent, SubOptions,
};

const ANY: &str = "tcp://127.0.0.1:*";
const LONG: Duration = Duration::from_secs(10);

fn port_of(endpoint: &str) -> u16 {
    endpoint.rsplit(':').next().unwrap().parse().unwrap()
}

/// An established TCP connection in `/proc/net/tcp`.
#[derive(Debug)]
struct Conn {
    local: u16,
    remote: u16,
    /// `tr`: 0 no timer, 1 retransmit, 2 keepalive, ...
    timer: u8,
    /// Seconds until the timer fires (USER_HZ ticks / 100).
    remaining: f64,
}

/// The established connections to or from `port` on 127.0.0.1.
fn conns(port: u16) -> Vec<Conn> {
    let text = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let port_hex = |addr: &str| u16::from_str_radix(addr.rsplit(':').next().unwrap(), 16).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (local, remote) = (port_hex(f[1]), port_hex(f[2]));
            if f[3] != "01" || (local != port && remote != port) {
                return None;
            }
            let (tr, when) = f[5].split_once(':').unwrap();
            Some(Conn {
                local,
                remote,
                timer: u8::from_str_radix(tr, 16).unwrap(),
                remaining: u64::from_str_radix(when, 16).unwrap() as f64 / 100.0,
            })
        })
        .collect()
}

/// The accepted side (local port `port`) and the connecting side of the one connection to
/// `port`, once it is quiet: right after data was sent the kernel shows the retransmission
/// timer (kind 1) instead of the keepalive one, for ~200 ms.
async fn both_sides(port: u16) -> (Conn, Conn) {
    let deadline = Instant::now() + LONG;
    loop {
        let mut cs = conns(port);
        if cs.len() == 2 && cs.iter().all(|c| c.timer != 1) {
            cs.sort_by_key(|c| c.local != port);
            let client = cs.pop().unwrap();
            let server = cs.pop().unwrap();
            assert_eq!(client.remote, port);
            return (server, client);
        }
        // Also waits for an earlier connection to `port` to finish closing.
        assert!(
            Instant::now() < deadline,
            "one quiet connection, two ends: {cs:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn assert_keepalive(c: &Conn, idle_secs: f64, what: &str) {
    assert_eq!(c.timer, 2, "{what}: keepalive timer armed: {c:?}");
    assert!(
        c.remaining <= idle_secs + 1.0 && c.remaining > idle_secs - 20.0,
        "{what}: fires within its idle time of {idle_secs} s: {c:?}"
    );
}

#[tokio::test]
async fn request_connections_carry_salts_keepalives_and_off_means_off() {
    let (server, mut reqs) = RouterServer::bind(ANY, ServerOptions::default()).unwrap();
    let replier = server.replier();
    tokio::spawn(async move {
        while let Some(r) = reqs.recv().await {
            let _ = replier.reply(r.peer, r.body);
        }
    });
    let port = port_of(server.endpoint());

    // A minion's REQ socket with Salt's defaults: 300 s idle. The master's side: 60 s.
    let client = ReqClient::connect(server.endpoint(), ReqOptions::default()).unwrap();
    assert_eq!(client.request(b"x".to_vec(), LONG).await.unwrap(), b"x");
    let (srv, cli) = both_sides(port).await;
    assert_keepalive(&srv, 60.0, "request server (Salt 3007.17: 60 s idle)");
    assert_keepalive(&cli, 300.0, "REQ client (tcp_keepalive_idle 300)");
    drop(client);

    // `tcp_keepalive: False` turns it off on the minion's side.
    let off = ReqOptions {
        keepalive: Keepalive {
            enabled: false,
            ..Keepalive::SALT_DEFAULT
        },
        ..ReqOptions::default()
    };
    let client = ReqClient::connect(server.endpoint(), off).unwrap();
    assert_eq!(client.request(b"y".to_vec(), LONG).await.unwrap(), b"y");
    let (srv, cli) = both_sides(port).await;
    assert_keepalive(&srv, 60.0, "request server");
    assert_eq!(cli.timer, 0, "keepalive off: no timer: {cli:?}");
}

#[tokio::test]
async fn publish_connections_carry_the_configured_keepalives() {
    let publisher = Publisher::bind(
        ANY,
        PublisherOptions {
            keepalive: Keepalive {
                idle: Some(Duration::from_secs(120)),
                ..Keepalive::SALT_DEFAULT
            },
            ..PublisherOptions::default()
        },
    )
    .unwrap();
    let port = port_of(publisher.endpoint());
    let (_sub, mut events) = SubClient::connect(
        publisher.endpoint(),
        SubOptions {
            keepalive: Keepalive {
                idle: Some(Duration::from_secs(200)),
                cnt: Some(4),
                intvl: Some(Duration::from_secs(20)),
                ..Keepalive::SALT_DEFAULT
            },
            ..SubOptions::default()
        },
    )
    .unwrap();
    loop {
        match tokio::time::timeout(LONG, events.recv()).await {
            Ok(Some(SubEvent::Connected)) => break,
            Ok(Some(_)) => continue,
            other => panic!("SUB never connected: {other:?}"),
        }
    }
    let (srv, cli) = both_sides(port).await;
    assert_keepalive(&srv, 120.0, "publisher (tcp_keepalive_idle 120)");
    assert_keepalive(&cli, 200.0, "SUB client (tcp_keepalive_idle 200)");
}
