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
            // A long-lived echo task holding a replier must not keep the server alive.
            let replier = server.replier();
            let echo = tokio::spawn(async move {
                while let Some(req) = reqs.recv().await {
                    let _ = replier.reply(req.peer, req.body);
                }
            });
            let reply = client.request(b"x".to_vec(), Duration::from_secs(10)).await;
            assert_eq!(reply.unwrap(), b"x");
            assert_eq!(events.recv().await, Some(SubEvent::Connected));
            assert!(thread_count() > before);
            drop((server, client, publisher, sub));
            echo.await.unwrap(); // ends because the request channel closed
        }
    });
    // A joined thread can stay listed in /proc/self/task for a moment after its join
    // returns (the kernel releases the task after waking the joiner): wait for it, briefly.
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while thread_count() > before && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(thread_count(), before, "threads leaked");
}
