//! `cmd.run` keyword arguments through the whole path (our `salt`, master and minion): `runas`
//! drops to the user, `timeout` ends the job in time, an argument we do not implement is
//! refused by name.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use salt_integration_tests::e2e_support::{Cluster, KeyDir, MINION_READY};
use salt_integration_tests::{require, root, wait_for_log};

const START: Duration = Duration::from_secs(30);

#[test]
fn runas_timeout_and_refused_arguments() {
    let mut c = Cluster::new(|m| m).unwrap();
    c.start_master().unwrap();
    let m1 = c.minion("m1").unwrap();
    c.wait_key(KeyDir::Pending, "m1", START).unwrap();
    c.accept("m1").unwrap();
    wait_for_log(&m1, MINION_READY, START).unwrap();

    // runas needs root; the rest of the test runs either way.
    if require(root()).is_some() {
        let out = c
            .salt(&["-t", "20", "m1", "cmd.run", "whoami", "runas=nobody"])
            .unwrap();
        assert_eq!(out.stdout, "m1:\n    nobody\n", "{out:?}");
    }

    let t0 = Instant::now();
    let out = c
        .salt(&["-t", "20", "m1", "cmd.run", "sleep 30", "timeout=2"])
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(12), "{:?}", t0.elapsed());
    assert_eq!(
        out.stdout, "m1:\n    sleep 30 : Timed out after 2 seconds\n",
        "{out:?}"
    );

    let out = c
        .salt(&["-t", "20", "m1", "cmd.run", "echo x", "use_vt=True"])
        .unwrap();
    assert!(
        out.stdout
            .contains("argument 'use_vt' of cmd.run is not implemented by salt-rs"),
        "{out:?}"
    );
}
