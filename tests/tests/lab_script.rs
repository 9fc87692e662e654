//! `scripts/lab.sh --check`: the README's "run" command starts two masters and a minion on
//! loopback, accepts the key with salt-key, answers one `test.ping`, and cleans up.

use std::process::Command;
use std::time::Duration;

use salt_integration_tests::{bins, free_port_pair, run_with_timeout, workspace_root};

#[test]
fn lab_script_check_pings_and_cleans_up() {
    let bins = bins().expect("building our binaries");
    bins.check().expect("our binaries");
    let bin_dir = bins.master.parent().expect("binary dir").to_path_buf();
    let (publish, _ret) = free_port_pair().expect("free ports");
    let mut c = Command::new("bash");
    c.arg(workspace_root().join("scripts/lab.sh"))
        .arg("--check")
        .env("LAB_BIN_DIR", &bin_dir)
        .env("LAB_PORT_BASE", publish.to_string());
    let out = run_with_timeout(c, Duration::from_secs(180)).expect("running lab.sh");
    assert!(
        out.success(),
        "lab.sh --check failed ({:?})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.contains("lab-minion:"),
        "no ping answer:\n{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("True"),
        "no ping answer:\n{}",
        out.stdout
    );
    assert!(out.stdout.contains("lab: check passed"));
    // The lab's processes are gone: nothing listens on its ports any more.
    for port in [publish, publish + 1] {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} still open after lab.sh exited"
        );
    }
}

/// The lab as a user runs it: the printed `cmd.run` suggestion answers, the printed
/// stop-and-restart of m1 works, and Ctrl-C (SIGINT to the lab's process group, as a
/// terminal sends it) stops every daemon (the restarted one too), says what it stopped and
/// removed, and leaves no process behind (no orphaned `sleep`).
#[test]
fn lab_suggestions_work_and_ctrl_c_leaves_nothing_behind() {
    use std::os::unix::process::CommandExt as _;

    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    use salt_integration_tests::{TempRoot, wait_until};

    let bins = bins().expect("building our binaries");
    bins.check().expect("our binaries");
    let bin_dir = bins.master.parent().expect("binary dir").to_path_buf();
    let (publish, ret) = free_port_pair().expect("free ports");
    let out_dir = TempRoot::new().unwrap();
    let out_path = out_dir.path().join("lab.out");
    // SIGINT at its default disposition, as at a terminal: a test run started in the
    // background of a non-interactive shell (`cargo test ... &`) inherits SIGINT *ignored*,
    // and bash cannot trap a signal ignored on entry, so the lab would never see Ctrl-C.
    let mut child = Command::new("env")
        .arg("--default-signal=INT")
        .arg("bash")
        .arg(workspace_root().join("scripts/lab.sh"))
        .env("LAB_BIN_DIR", &bin_dir)
        .env("LAB_PORT_BASE", publish.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(out_dir.path().join("lab.err")).unwrap())
        .process_group(0)
        .spawn()
        .expect("start lab.sh");
    let pgid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    /// Ctrl-C for the lab, whatever happens (the lab stops its daemons on SIGINT).
    struct Group(Pid);
    impl Drop for Group {
        fn drop(&mut self) {
            let _ = kill(Pid::from_raw(-self.0.as_raw()), Signal::SIGINT);
        }
    }
    let _group = Group(pgid);
    let printed = || std::fs::read_to_string(&out_path).unwrap_or_default();
    let err = || std::fs::read_to_string(out_dir.path().join("lab.err")).unwrap_or_default();
    wait_until("the lab to be running", Duration::from_secs(150), || {
        printed().contains("(console output:") || child.try_wait().ok().flatten().is_some()
    })
    .unwrap();
    let text = printed();
    assert!(text.contains("The lab is running"), "{text}\n{}", err());
    let root = text
        .lines()
        .find_map(|l| l.strip_prefix("== lab root "))
        .and_then(|l| l.split_whitespace().next())
        .expect("lab root")
        .to_owned();
    let from_root = |needle: &str| -> String {
        let line = text
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} in\n{text}"));
        let at = line.find(&root).expect("a command under the lab root");
        line[at..].to_owned()
    };
    let sh = |cmd: &str| {
        let out = Command::new("bash").arg("-c").arg(cmd).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };

    // The printed job suggestion answers (through the master the minion is on).
    let (ok, out) = sh(&from_root("cmd.run 'uname -a'"));
    assert!(
        ok && out.contains("lab-minion:") && out.contains("Linux"),
        "{out}"
    );

    // Stop m1 as printed, then restart it as printed.
    let stop = text
        .lines()
        .find_map(|l| l.split("kill -TERM ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .expect("the printed kill -TERM")
        .to_owned();
    let (ok, out) = sh(&format!("kill -TERM {stop}"));
    assert!(ok, "{out}");
    // Stopped: its port closed and the process gone (it holds its pid file until it exits).
    wait_until("m1 to stop", Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", ret)).is_err()
            && std::fs::read_to_string(format!("/proc/{stop}/stat")).map_or(true, |st| {
                st.rsplit(") ").next().is_some_and(|r| r.starts_with('Z'))
            })
    })
    .unwrap();
    let restart = text
        .lines()
        .find(|l| l.contains("/salt-master -c") && l.trim_end().ends_with(" -d"))
        .expect("the printed restart")
        .trim()
        .to_owned();
    let (ok, out) = sh(&restart);
    assert!(ok, "{restart}: {out}");
    let pid_file = std::path::Path::new(&root).join("m1/master.pid");
    let mut restarted = 0;
    wait_until("the restarted m1", Duration::from_secs(30), || {
        restarted = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        restarted > 0 && std::net::TcpStream::connect(("127.0.0.1", ret)).is_ok()
    })
    .unwrap();

    // Ctrl-C.
    kill(Pid::from_raw(-pgid.as_raw()), Signal::SIGINT).unwrap();
    let mut status = None;
    wait_until("lab.sh to exit", Duration::from_secs(60), || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    })
    .unwrap();
    let text = printed();
    assert!(
        text.contains(&format!("m1 (pid {restarted})")) && text.contains("lab: stopped"),
        "{text}"
    );
    assert!(text.contains("minion (pid "), "{text}");
    assert!(text.contains(&format!("lab: removed {root}")), "{text}");
    assert!(!std::path::Path::new(&root).exists());
    // Nothing left: not in the lab's process group (the idle sleep), not the restarted m1.
    wait_until("the lab's processes to go", Duration::from_secs(10), || {
        kill(Pid::from_raw(-pgid.as_raw()), None).is_err()
            && kill(Pid::from_raw(restarted), None).is_err()
    })
    .unwrap();
    for port in [publish, ret] {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} still open after lab.sh exited"
        );
    }
}
