//! `examples/tutorial/NN-*.sh` in quick mode: each script builds its keys, configs and daemons
//! under a temp root on loopback, prints the log lines of the seed tutorial and an
//! `NN-name: OK:` line, and stops everything it started. This test runs them in order with our
//! debug binaries, asserts those lines, and checks that no daemon, port or temp file is left,
//! so the README -> examples path cannot rot. Step 07 (the docs/migration.md rehearsal) needs
//! real Salt and runs in its own test, which requires a venv (`salt_integration_tests::require`).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use salt_integration_tests::{bins, free_port_pair, require, salt_venv, workspace_root};

/// Per-script limit: quick mode takes 1-8 s unloaded; a loaded 2-core machine gets room.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(90);

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs `bash script` with `env`; on timeout sends SIGTERM to the script (its trap stops its
/// daemons), then SIGKILL to its group and to every group it recorded in `pgid_file`.
fn run_script(script: &Path, env: &[(&str, String)], pgid_file: &Path) -> Run {
    let mut c = Command::new("bash");
    c.arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("starting bash");
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let t0 = Instant::now();
    let mut termed = false;
    let status = loop {
        if let Some(st) = child.try_wait().expect("waiting for bash") {
            break Some(st);
        }
        if !termed && t0.elapsed() >= SCRIPT_TIMEOUT {
            let _ = kill(pid, Signal::SIGTERM);
            termed = true;
        }
        if t0.elapsed() >= SCRIPT_TIMEOUT + Duration::from_secs(15) {
            let _ = killpg(pid, Signal::SIGKILL);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if termed {
        // The script was stopped: make sure none of its daemons survives it.
        let groups = std::fs::read_to_string(pgid_file).unwrap_or_default();
        for g in groups.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
        }
    }
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    Run {
        ok: !termed && status.is_some_and(|s| s.success()),
        stdout,
        stderr,
    }
}

/// Runs `steps` (script name, lines its stdout must contain besides `<name>: OK:`) in order
/// with our binaries in quick mode, then checks that every port, process group and temp root
/// they used is gone.
fn check_steps(steps: &[(&str, &[&str])], extra_env: &[(&str, String)], min_groups: usize) {
    let bins = bins().expect("building our binaries");
    bins.check().expect("our binaries");
    let bin_dir = bins.master.parent().expect("binary dir").to_path_buf();
    let tut = workspace_root().join("examples/tutorial");
    let tmp = tempfile::tempdir().expect("tempdir");
    let pgid_file = tmp.path().join("pgids");
    let roots = tmp.path().join("roots");
    std::fs::create_dir(&roots).expect("roots dir");

    let t0 = Instant::now();
    let mut ports = Vec::new();
    for (name, lines) in steps {
        let (publish, _) = free_port_pair().expect("free ports");
        ports.push(publish);
        let mut env = vec![
            ("BIN_DIR", bin_dir.display().to_string()),
            ("TUTORIAL_QUICK", "1".to_owned()),
            ("TUTORIAL_PORT_BASE", publish.to_string()),
            ("TUTORIAL_PGID_FILE", pgid_file.display().to_string()),
            ("TMPDIR", roots.display().to_string()),
        ];
        env.extend(extra_env.iter().cloned());
        let s = Instant::now();
        let run = run_script(&tut.join(format!("{name}.sh")), &env, &pgid_file);
        eprintln!("{name}: {:.1} s", s.elapsed().as_secs_f64());
        assert!(
            run.ok,
            "{name}.sh failed\nstdout:\n{}\nstderr:\n{}",
            run.stdout, run.stderr
        );
        let ok_line = format!("{name}: OK:");
        for want in std::iter::once(ok_line.as_str()).chain(lines.iter().copied()) {
            assert!(
                run.stdout.contains(want),
                "{name}.sh: no {want:?} in its output:\n{}",
                run.stdout
            );
        }
    }
    eprintln!("tutorial: {:.1} s in all", t0.elapsed().as_secs_f64());

    // Everything was cleaned up: no listener, no process group, no temp root.
    for p in ports {
        for addr in ["127.0.0.1", "127.0.0.2"] {
            for port in [p, p + 1] {
                assert!(
                    std::net::TcpStream::connect((addr, port)).is_err(),
                    "{addr}:{port} still open after the tutorial"
                );
            }
        }
    }
    let groups = std::fs::read_to_string(&pgid_file).expect("the scripts recorded their groups");
    assert!(
        groups.lines().count() >= min_groups,
        "too few daemons recorded: {groups}"
    );
    for g in groups.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        assert!(
            killpg(Pid::from_raw(g), None).is_err(),
            "process group {g} survived its script"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&roots)
        .expect("roots dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "temp roots left behind: {left:?}");
}

#[test]
fn tutorial_scripts_pass_in_quick_mode() {
    let steps: [(&str, &[&str]); 6] = [
        ("01-keys", &["Verified OK", "Verification failure"]),
        (
            "02-signed-master",
            &[
                "Successfully verified signature of master public key with verification public key master_sign.pub",
                "Received signed and verified master pubkey from master 127.0.0.1",
                "Failed to verify signature of public key",
                "The Salt Master server's public key did not authenticate!",
                "good:",
            ],
        ),
        (
            "03-failover",
            &[
                "Connection to master 127.0.0.1 lost",
                "Trying to tune in to next master from master-list",
                "Removing possibly failed master 127.0.0.1 from list of masters",
                "Master ip address changed from 127.0.0.1 to 127.0.0.2",
                "Received signed and verified master pubkey from master 127.0.0.2",
            ],
        ),
        (
            "04-pubkey-signature",
            &[
                "is not a valid signature of master.pub",
                "Received signed and verified master pubkey from master 127.0.0.1",
                "Received signed and verified master pubkey from master 127.0.0.2",
            ],
        ),
        (
            "05-max-minions",
            &[
                "Master 127.0.0.1 is full (max_minions reached), trying next master",
                "Too many minions connected (max_minions=1). Rejecting connection from id b",
            ],
        ),
        (
            "06-single-master-alive",
            &[
                "Connection to master 127.0.0.1 lost",
                "Connection to master 127.0.0.1 re-established",
            ],
        ),
    ];
    check_steps(&steps, &[], 10);
}

/// docs/migration.md, path 1 and its rollback, with a real Python master and minion.
#[test]
fn migration_rehearsal_with_real_salt() {
    let Some(venv) = require(salt_venv()) else {
        return;
    };
    let steps: [(&str, &[&str]); 1] = [(
        "07-migrate-from-python",
        &["our salt-key -L:", "py1:", "3. rollback"],
    )];
    check_steps(&steps, &[("SALT_VENV", venv.dir.display().to_string())], 3);
}
