//! Self-tests of the harness pieces that need the OS: the network namespace and its black hole.

use std::time::Duration;

use salt_integration_tests::{Netns, ProcSpec, wait_until};

/// A TCP connect from inside the namespace to `addr:port`, with a 2 s limit.
fn connects(ns: &Netns, addr: &str, port: u16) -> bool {
    ns.sh(&format!(
        "timeout 2 bash -c 'exec 3<>/dev/tcp/{addr}/{port}' 2>/dev/null"
    ))
    .is_ok_and(|o| o.success())
}

#[test]
fn netns_black_hole_drops_and_heals() {
    let Some(ns) = Netns::require() else {
        return;
    };
    ns.add_addr("127.0.0.2").expect("add 127.0.0.2");
    ns.add_addr("127.0.0.3").expect("add 127.0.0.3");
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = ProcSpec::new("listener", "python3", dir.path())
        .args([
            "-c",
            "import socket,time\n\
             ss=[socket.create_server((a,18000)) for a in ('127.0.0.2','127.0.0.3')]\n\
             print('listening',flush=True)\n\
             time.sleep(600)",
        ])
        .netns(Some(ns.name()))
        .spawn()
        .expect("start listener");
    salt_integration_tests::wait_for_log(&listener, "listening", Duration::from_secs(10))
        .expect("listener up");
    assert!(ns.listening("127.0.0.2", 18000));
    assert!(connects(&ns, "127.0.0.2", 18000));

    ns.blackhole("127.0.0.2").expect("black hole");
    assert_eq!(ns.holes(), vec!["127.0.0.2".to_string()]);
    assert!(
        !connects(&ns, "127.0.0.2", 18000),
        "black-holed address answered"
    );
    assert!(
        connects(&ns, "127.0.0.3", 18000),
        "the other address must still work"
    );

    ns.heal("127.0.0.2").expect("heal");
    assert!(ns.holes().is_empty());
    wait_until("127.0.0.2 to answer again", Duration::from_secs(5), || {
        connects(&ns, "127.0.0.2", 18000)
    })
    .expect("healed");
    // The namespace's traffic never reaches the host: 127.0.0.2:18000 is not listening here.
    assert!(std::net::TcpStream::connect(("127.0.0.2", 18000)).is_err());
}
