//! Dropping a handle joins its thread and libzmq's threads: nothing leaks.
//! (Own test binary: it counts the process's threads, so nothing may run beside it.)
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use std::time::Duration;

use salt_transport::{
    Publisher, PublisherOptions, ReqClient, ReqOptions, RouterServer, ServerOptions, SubClient,
    SubEvent, SubOptions,
};

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn dropping_handles_leaves_no_threads() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let before = thread_count();
    rt.block_on(async {
        for _ in 0..3 {
            let (server, mut reqs) =
                RouterServer::bind("tcp://127.0.0.1:*", ServerOptions::default()).unwrap();
            let client = ReqClient::connect(server.endpoint(), ReqOptions::default()).unwrap();
            let publisher =
                Publisher::bind("tcp://127.0.0.1:*", PublisherOptions::default()).unwrap();
            let (sub, mut events) =
                SubClient::connect(publisher.endpoint(), SubOptions::default()).unwrap();
            let srv = server.clone();
            let echo = async move {
                let req = reqs.recv().await.unwrap();
                srv.reply(req.peer, req.body).unwrap();
            };
            let (reply, ()) =
                tokio::join!(client.request(b"x".to_vec(), Duration::from_secs(10)), echo);
            assert_eq!(reply.unwrap(), b"x");
            assert_eq!(events.recv().await, Some(SubEvent::Connected));
            assert!(thread_count() > before);
            drop((server, client, publisher, sub));
        }
    });
    assert_eq!(thread_count(), before, "threads leaked");
}
