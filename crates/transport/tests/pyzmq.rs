//! Interop with pyzmq (libzmq 4.3.x from the Salt venv): the peers real Salt uses.
//!
//! Needs a Salt venv (`salt_testkit::any_salt_venv`; a failure under CI=true where missing,
//! else a recorded skip).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use salt_transport::{
    Heartbeat, Publisher, PublisherOptions, ReqClient, ReqOptions, RouterServer, ServerOptions,
    SubClient, SubEvent, SubOptions,
};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tokio::time::timeout;

const LONG: Duration = Duration::from_secs(10);

fn venv_python() -> Option<PathBuf> {
    salt_testkit::require(salt_testkit::any_salt_venv()).map(|v| v.join("bin/python"))
}

/// A python peer: the child and its stdout lines.
struct Py {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Py {
    fn spawn(python: &PathBuf, script: &str, args: &[&str]) -> Self {
        let mut child = Command::new(python)
            .arg("-c")
            .arg(script)
            .args(args)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self { child, lines }
    }

    async fn line(&mut self) -> String {
        timeout(LONG, self.lines.next_line())
            .await
            .expect("python peer silent")
            .unwrap()
            .expect("python peer exited")
    }
}

#[tokio::test]
async fn python_req_to_our_router() {
    let Some(py) = venv_python() else { return };
    let (server, mut reqs) =
        RouterServer::bind("tcp://127.0.0.1:*", ServerOptions::default()).unwrap();
    let srv = server.replier();
    tokio::spawn(async move {
        while let Some(req) = reqs.recv().await {
            let mut out = b"rust:".to_vec();
            out.extend_from_slice(&req.body);
            srv.reply(req.peer, out).unwrap();
        }
    });
    let script = r#"
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.REQ)
s.setsockopt(zmq.LINGER, 0)
s.setsockopt(zmq.RCVTIMEO, 5000)
s.setsockopt(zmq.HEARTBEAT_IVL, 100)
s.connect(sys.argv[1])
for i in range(20):
    s.send(b"py-%d" % i)
    print(s.recv().decode(), flush=True)
big = b"x" * (4 << 20)
s.send(big)
print(len(s.recv()), flush=True)
"#;
    let mut peer = Py::spawn(&py, script, &[server.endpoint()]);
    for i in 0..20 {
        assert_eq!(peer.line().await, format!("rust:py-{i}"));
    }
    assert_eq!(peer.line().await, (5 + (4 << 20)).to_string());
    assert!(peer.child.wait().await.unwrap().success());
}

#[tokio::test]
async fn our_req_to_python_router_with_heartbeats_answers_pings() {
    let Some(py) = venv_python() else { return };
    // Salt 3008's ROUTER sends PINGs; if we did not answer with PONG it would drop us after
    // HEARTBEAT_TIMEOUT and count a DISCONNECTED + a second ACCEPTED.
    let script = r#"
import zmq
from zmq.utils.monitor import recv_monitor_message
ctx = zmq.Context()
r = ctx.socket(zmq.ROUTER)
r.setsockopt(zmq.LINGER, 0)
r.setsockopt(zmq.ROUTER_HANDOVER, 1)
r.setsockopt(zmq.HEARTBEAT_IVL, 100)
r.setsockopt(zmq.HEARTBEAT_TIMEOUT, 300)
mon = r.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)
r.bind("tcp://127.0.0.1:*")
print(r.getsockopt_string(zmq.LAST_ENDPOINT), flush=True)
acc = dis = 0
poller = zmq.Poller()
poller.register(r, zmq.POLLIN)
poller.register(mon, zmq.POLLIN)
while True:
    ev = dict(poller.poll(10000))
    if not ev:
        break
    if mon in ev:
        e = recv_monitor_message(mon)
        acc += e["event"] == zmq.EVENT_ACCEPTED
        dis += e["event"] == zmq.EVENT_DISCONNECTED
    if r in ev:
        frames = r.recv_multipart()
        ident, empty, body = frames
        if body == b"stats":
            r.send_multipart([ident, b"", b"accepted=%d disconnected=%d" % (acc, dis)])
            continue
        r.send_multipart([ident, empty, b"py:" + body])
        if body == b"quit":
            break
"#;
    let mut peer = Py::spawn(&py, script, &[]);
    let endpoint = peer.line().await;
    let client = ReqClient::connect(
        &endpoint,
        ReqOptions {
            heartbeat: None, // only the python side pings
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(client.request(b"a".to_vec(), LONG).await.unwrap(), b"py:a");
    // Stay idle for 4 heartbeat timeouts: the subject of the test, not synchronisation.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(client.request(b"b".to_vec(), LONG).await.unwrap(), b"py:b");
    let stats = client.request(b"stats".to_vec(), LONG).await.unwrap();
    assert_eq!(
        String::from_utf8(stats).unwrap(),
        "accepted=1 disconnected=0",
        "the python ROUTER dropped us: PINGs unanswered"
    );
    assert_eq!(
        client.request(b"quit".to_vec(), LONG).await.unwrap(),
        b"py:quit"
    );
    assert!(peer.child.wait().await.unwrap().success());
}

#[tokio::test]
async fn frozen_python_publisher_is_detected_by_heartbeat() {
    let Some(py) = venv_python() else { return };
    let script = r#"
import time, zmq
ctx = zmq.Context()
p = ctx.socket(zmq.PUB)
p.setsockopt(zmq.LINGER, 0)
p.setsockopt(zmq.HEARTBEAT_IVL, 10000)
p.setsockopt(zmq.HEARTBEAT_TIMEOUT, 30000)
p.bind("tcp://127.0.0.1:*")
print(p.getsockopt_string(zmq.LAST_ENDPOINT), flush=True)
while True:
    p.send(b"tick")
    time.sleep(0.02)
"#;
    let mut peer = Py::spawn(&py, script, &[]);
    let endpoint = peer.line().await;
    let hb = Heartbeat::new(Duration::from_millis(200), Duration::from_millis(600));
    let (_sub, mut rx) = SubClient::connect(
        &endpoint,
        SubOptions {
            heartbeat: Some(hb),
            reconnect_ivl: Duration::from_millis(100),
            reconnect_ivl_max: Duration::from_millis(500),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        timeout(LONG, rx.recv()).await.unwrap(),
        Some(SubEvent::Connected)
    );
    assert_eq!(
        timeout(LONG, rx.recv()).await.unwrap(),
        Some(SubEvent::Message(vec![b"tick".to_vec()]))
    );

    let pid = nix::unistd::Pid::from_raw(peer.child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let stopped_at = Instant::now();
    let limit = hb.timeout + Duration::from_secs(1);
    let disconnected = async {
        loop {
            match rx.recv().await {
                Some(SubEvent::Message(_)) => continue, // queued before the freeze
                other => return other,
            }
        }
    };
    let ev = timeout(limit, disconnected).await;
    let took = stopped_at.elapsed();
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT);
    assert_eq!(
        ev.expect("no Disconnected within heartbeat timeout + 1 s"),
        Some(SubEvent::Disconnected)
    );
    eprintln!("SIGSTOPped python PUB detected after {took:?}");
    let _ = peer.child.wait().await;
}

#[tokio::test]
async fn python_sub_with_zmq_filtering_from_our_publisher() {
    let Some(py) = venv_python() else { return };
    let publisher = Publisher::bind("tcp://127.0.0.1:*", PublisherOptions::default()).unwrap();
    let me = "4a4b5f0a9a1e3ad0a6f5d1e0f3b1b1c2d3e4f5a6"; // stands for sha1(minion id)
    let script = r#"
import sys, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.SUB)
s.setsockopt(zmq.LINGER, 0)
s.setsockopt(zmq.IDENTITY, b"minion1")
s.setsockopt(zmq.SUBSCRIBE, b"broadcast")
s.setsockopt(zmq.SUBSCRIBE, sys.argv[2].encode())
s.connect(sys.argv[1])
while True:
    frames = s.recv_multipart()
    print("|".join(f.decode() for f in frames), flush=True)
    if frames[-1] == b"end":
        break
"#;
    let mut peer = Py::spawn(&py, script, &[publisher.endpoint(), me]);
    // Slow joiner: probe until the python side has subscribed.
    loop {
        publisher
            .publish(vec![b"broadcast".to_vec(), b"probe".to_vec()])
            .unwrap();
        if let Ok(line) = timeout(Duration::from_millis(50), peer.line()).await {
            assert_eq!(line, "broadcast|probe");
            break;
        }
    }
    assert_eq!(publisher.connected_peers(), 1);
    publisher
        .publish(vec![b"0000other".to_vec(), b"not-mine".to_vec()])
        .unwrap();
    publisher
        .publish(vec![me.as_bytes().to_vec(), b"mine".to_vec()])
        .unwrap();
    publisher
        .publish(vec![b"broadcast".to_vec(), b"end".to_vec()])
        .unwrap();
    let mut rest = Vec::new();
    loop {
        let l = peer.line().await;
        if l == "broadcast|probe" {
            continue;
        }
        let end = l == "broadcast|end";
        rest.push(l);
        if end {
            break;
        }
    }
    assert_eq!(rest, vec![format!("{me}|mine"), "broadcast|end".to_owned()]);
    assert!(peer.child.wait().await.unwrap().success());
}
