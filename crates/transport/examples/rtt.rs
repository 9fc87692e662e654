//! Micro benchmark: REQ→ROUTER round trips per second and PUB→SUB messages per second,
//! through the tokio bridge, next to raw libzmq on plain threads (the bridge's cost).
//!
//! `cargo run --release -p salt-transport --example rtt [-- ROUNDS MSGS SIZE]`
//! (defaults 20000 round trips, 200000 messages, 512 bytes).
#![allow(clippy::unwrap_used)] // a benchmark: fail loudly

use std::time::{Duration, Instant};

use salt_transport::{
    Publisher, PublisherOptions, ReqClient, ReqOptions, RouterServer, ServerOptions, SubClient,
    SubEvent, SubOptions,
};

const ANY: &str = "tcp://127.0.0.1:*";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let rounds = args.first().copied().unwrap_or(20_000);
    let msgs = args.get(1).copied().unwrap_or(200_000);
    let size = args.get(2).copied().unwrap_or(512);
    println!(
        "libzmq {:?}, {size}-byte messages, loopback",
        salt_transport::zmq_version()
    );

    let rt = bridge_rtt(rounds, size, 1).await;
    println!("bridge REQ->ROUTER, 1 client sequential:  {rt:>9.0} rt/s");
    let rt = bridge_rtt(rounds, size, 16).await;
    println!("bridge REQ->ROUTER, 16 clients concurrent: {rt:>9.0} rt/s");
    let rt = tokio::task::spawn_blocking(move || raw_rtt(rounds, size))
        .await
        .unwrap();
    println!("raw zmq REQ->ROUTER, 1 client (threads):  {rt:>9.0} rt/s");
    let (rate, lost) = bridge_pubsub(msgs, size).await;
    println!("bridge PUB->SUB:   {rate:>10.0} msg/s ({lost} lost)");
    let rate = tokio::task::spawn_blocking(move || raw_pubsub(msgs, size))
        .await
        .unwrap();
    println!("raw zmq PUB->SUB:  {rate:>10.0} msg/s");
}

/// Round trips per second with `clients` concurrent ReqClients against one RouterServer
/// whose replies come from a tokio task.
async fn bridge_rtt(rounds: usize, size: usize, clients: usize) -> f64 {
    let (server, mut reqs) = RouterServer::bind(ANY, ServerOptions::default()).unwrap();
    let srv = server.replier();
    tokio::spawn(async move {
        while let Some(req) = reqs.recv().await {
            srv.reply(req.peer, req.body).unwrap();
        }
    });
    let per_client = rounds / clients;
    let mut conns = Vec::new();
    for _ in 0..clients {
        let c = ReqClient::connect(server.endpoint(), ReqOptions::default()).unwrap();
        c.request(vec![0; size], Duration::from_secs(5))
            .await
            .unwrap(); // warm up
        conns.push(c);
    }
    let start = Instant::now();
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|c| {
            tokio::spawn(async move {
                for _ in 0..per_client {
                    c.request(vec![1; size], Duration::from_secs(5))
                        .await
                        .unwrap();
                }
                c
            })
        })
        .collect();
    let mut done = Vec::new();
    for t in tasks {
        done.push(t.await.unwrap());
    }
    let rate = (per_client * clients) as f64 / start.elapsed().as_secs_f64();
    tokio::task::spawn_blocking(move || drop((done, server)))
        .await
        .unwrap();
    rate
}

/// The same exchange on raw sockets, blocking calls on two threads.
fn raw_rtt(rounds: usize, size: usize) -> f64 {
    let ctx = zmq::Context::new();
    let router = ctx.socket(zmq::ROUTER).unwrap();
    router.bind(ANY).unwrap();
    let ep = router.get_last_endpoint().unwrap().unwrap();
    let echo = std::thread::spawn(move || {
        for _ in 0..=rounds {
            let m = router.recv_multipart(0).unwrap();
            router.send_multipart(m, 0).unwrap();
        }
    });
    let req = ctx.socket(zmq::REQ).unwrap();
    req.connect(&ep).unwrap();
    let body = vec![1u8; size];
    req.send(&body, 0).unwrap();
    req.recv_bytes(0).unwrap();
    let start = Instant::now();
    for _ in 0..rounds {
        req.send(&body, 0).unwrap();
        req.recv_bytes(0).unwrap();
    }
    let rate = rounds as f64 / start.elapsed().as_secs_f64();
    echo.join().unwrap();
    rate
}

/// Messages per second from a Publisher to a SubClient (HWMs unlimited so none are
/// dropped), and how many were lost anyway.
async fn bridge_pubsub(msgs: usize, size: usize) -> (f64, usize) {
    let publisher = Publisher::bind(
        ANY,
        PublisherOptions {
            hwm: 0,
            ..Default::default()
        },
    )
    .unwrap();
    let (sub, mut rx) = SubClient::connect(
        publisher.endpoint(),
        SubOptions {
            rcvhwm: 0,
            queue_capacity: 4096,
            ..Default::default()
        },
    )
    .unwrap();
    // Wait for the subscription to take effect (slow joiner).
    loop {
        publisher.publish(vec![b"probe".to_vec()]).unwrap();
        match tokio::time::timeout(Duration::from_millis(20), rx.recv()).await {
            Ok(Some(SubEvent::Message(m))) if m == [b"probe".to_vec()] => break,
            _ => {}
        }
    }
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(50), rx.recv()).await {}

    let start = Instant::now();
    let body = vec![2u8; size];
    let p = publisher.clone();
    tokio::spawn(async move {
        for _ in 0..msgs {
            p.publish(vec![body.clone()]).unwrap();
        }
        p.publish(vec![b"end".to_vec()]).unwrap();
    });
    let mut got = 0;
    while let Some(ev) = rx.recv().await {
        if let SubEvent::Message(m) = ev {
            if m == [b"end".to_vec()] {
                break;
            }
            got += 1;
        }
    }
    let rate = got as f64 / start.elapsed().as_secs_f64();
    tokio::task::spawn_blocking(move || drop((sub, publisher)))
        .await
        .unwrap();
    (rate, msgs - got)
}

fn raw_pubsub(msgs: usize, size: usize) -> f64 {
    let ctx = zmq::Context::new();
    let publ = ctx.socket(zmq::PUB).unwrap();
    publ.set_sndhwm(0).unwrap();
    publ.bind(ANY).unwrap();
    let ep = publ.get_last_endpoint().unwrap().unwrap();
    let sub = ctx.socket(zmq::SUB).unwrap();
    sub.set_rcvhwm(0).unwrap();
    sub.set_subscribe(b"").unwrap();
    sub.connect(&ep).unwrap();
    sub.set_rcvtimeo(20).unwrap();
    loop {
        publ.send("probe", 0).unwrap();
        if sub.recv_bytes(0).is_ok() {
            break;
        }
    }
    sub.set_rcvtimeo(50).unwrap();
    while sub.recv_bytes(0).is_ok() {}
    sub.set_rcvtimeo(-1).unwrap();
    let start = Instant::now();
    let sender = std::thread::spawn(move || {
        let body = vec![2u8; size];
        for _ in 0..msgs {
            publ.send(&body, 0).unwrap();
        }
        publ.send("end", 0).unwrap();
        publ
    });
    let mut got = 0usize;
    loop {
        let m = sub.recv_bytes(0).unwrap();
        if m == b"end" {
            break;
        }
        got += 1;
    }
    let rate = got as f64 / start.elapsed().as_secs_f64();
    drop(sender.join().unwrap());
    rate
}
