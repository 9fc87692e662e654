//! What a new user trips over (issue 22): a second daemon on the same pid file, a mistyped
//! `-c` directory or config key, unsupported `salt` flags, messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use salt_integration_tests::config::current_user;
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, bins, free_port_pair, wait_until};
use salt_integration_tests::{both, command, require, root};

/// Kills a detached daemon by pid when the test ends, whatever happened.
struct Detached(Option<i32>);

impl Drop for Detached {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')))
}

fn start_detached(bin: &Path, conf_dir: &Path, pid_file: &Path) -> Output {
    Command::new(bin)
        .arg("-d")
        .arg("-c")
        .arg(conf_dir)
        .arg("--pid-file")
        .arg(pid_file)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Starts `bin -d` twice on the same config and pid file: the second start is refused on the
/// terminal with Salt's message and exit code 1, and the first daemon keeps running with its
/// pid file intact; then a foreground second start is refused the same way.
fn second_instance_is_refused(bin: &Path, conf_dir: &Path, pid_file: &Path, what: &str) {
    let first = start_detached(bin, conf_dir, pid_file);
    assert!(
        first.status.success(),
        "{what}: first -d start: {}",
        stderr(&first)
    );
    let mut guard = Detached(None);
    wait_until("the daemon's pid file", Duration::from_secs(30), || {
        guard.0 = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .filter(|p| alive(*p));
        guard.0.is_some()
    })
    .unwrap();
    let pid = guard.0.unwrap();
    let before = std::fs::read_to_string(pid_file).unwrap();

    let second = start_detached(bin, conf_dir, pid_file);
    assert_eq!(second.status.code(), Some(1), "{what}: second -d start");
    let err = stderr(&second);
    assert!(
        err.contains("An instance is already running") && err.contains(&format!("pid {pid}")),
        "{what}: {err}"
    );
    let fg = Command::new(bin)
        .arg("-c")
        .arg(conf_dir)
        .arg("--pid-file")
        .arg(pid_file)
        .output()
        .unwrap();
    assert_eq!(fg.status.code(), Some(1), "{what}: foreground second start");
    assert!(stderr(&fg).contains("An instance is already running"));
    assert_eq!(
        std::fs::read_to_string(pid_file).unwrap(),
        before,
        "{what}: pid file intact"
    );
    assert!(alive(pid), "{what}: the first instance still runs");

    kill(Pid::from_raw(pid), Signal::SIGTERM).unwrap();
    wait_until("the daemon to exit", Duration::from_secs(30), || {
        !alive(pid)
    })
    .unwrap();
    guard.0 = None;
    wait_until("its pid file to go", Duration::from_secs(10), || {
        !pid_file.exists()
    })
    .unwrap();
}

#[test]
fn a_second_master_is_refused_and_the_first_keeps_its_pid_file() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    let (publish, ret) = free_port_pair().unwrap();
    let conf = MasterConf::new(root.path().join("master"))
        .ports(publish, ret)
        .set("user", current_user().as_str());
    let conf_dir = conf.write().unwrap();
    let pid_file: PathBuf = root.path().join("run/master.pid");
    second_instance_is_refused(&b.master, &conf_dir, &pid_file, "salt-master");
}

#[test]
fn a_second_minion_is_refused_and_the_first_keeps_its_pid_file() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    let (publish, ret) = free_port_pair().unwrap();
    let conf = MinionConf::new(root.path().join("minion"), "twice")
        .set("master_port", i64::from(ret))
        .set("publish_port", i64::from(publish))
        .set("user", current_user().as_str());
    let conf_dir = conf.write().unwrap();
    let pid_file: PathBuf = root.path().join("run/minion.pid");
    second_instance_is_refused(&b.minion, &conf_dir, &pid_file, "salt-minion");
}

/// `-c DIR` given explicitly with no `DIR/master` (`minion`) is an error naming the path, and
/// nothing is created: no pki_dir, no pid file.
#[test]
fn a_mistyped_config_dir_is_an_error_for_the_daemons() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    let missing = root.path().join("does-not-exist");
    for (bin, role) in [(&b.master, "master"), (&b.minion, "minion")] {
        let out = Command::new(bin)
            .arg("-c")
            .arg(&missing)
            .env("HOME", root.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{role}");
        let err = stderr(&out);
        assert!(
            err.contains(&format!(
                "the configuration directory {} does not exist (given with -c)",
                missing.display()
            )),
            "{role}: {err}"
        );
        let empty = root.path().join(format!("empty-{role}"));
        std::fs::create_dir_all(&empty).unwrap();
        let out = Command::new(bin)
            .arg("-c")
            .arg(&empty)
            .env("HOME", root.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{role}");
        assert!(
            stderr(&out).contains(&format!("{} does not exist", empty.join(role).display())),
            "{role}: {}",
            stderr(&out)
        );
    }
    assert!(!root.path().join(".salt-rs").exists(), "nothing created");
}

/// A typo in a master key is logged as an unknown option with the nearest name (not as an
/// unimplemented Salt option), on a console log without escape codes (stderr is a file here,
/// as under journald), with the Rust module path in the log file.
#[test]
fn master_config_typo_is_named_and_the_console_log_has_no_colour() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    let (publish, ret) = free_port_pair().unwrap();
    let conf = MasterConf::new(root.path().join("master"))
        .ports(publish, ret)
        .set("user", current_user().as_str())
        .set("interfce", "10.0.0.5")
        .set("log_level", "warning");
    let conf_dir = conf.write().unwrap();
    let mut master = salt_integration_tests::ProcSpec::new("master", &b.master, conf.dir())
        .args(["-c".as_ref(), conf_dir.as_os_str()])
        .spawn()
        .unwrap();
    salt_integration_tests::wait_for_log(
        &master,
        "unknown option `interfce` (did you mean `interface`?)",
        Duration::from_secs(30),
    )
    .unwrap();
    let pem = conf.pki_dir().join("master.pem");
    wait_until("master.pem", Duration::from_secs(60), || pem.exists()).unwrap();
    master.signal(Signal::SIGTERM);
    master.wait_exit(Duration::from_secs(30)).expect("exits");
    let out = master.output();
    assert!(
        !out.contains('\x1b'),
        "no ANSI escapes off a terminal:\n{out}"
    );
    assert!(out.contains("[WARNING ] "), "{out}");
    assert!(!out.contains("not implemented by salt-rs"), "{out}");
    let log = std::fs::read_to_string(conf.dir().join("master.log")).unwrap();
    assert!(
        log.contains("[salt_"),
        "Rust module paths in the log file:\n{log}"
    );

    // master.pem readable by others (a careless copy): set back to 0400 with a warning.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&pem, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut master = salt_integration_tests::ProcSpec::new("master", &b.master, conf.dir())
        .args(["-c".as_ref(), conf_dir.as_os_str()])
        .spawn()
        .unwrap();
    salt_integration_tests::wait_for_log(
        &master,
        "master.pem had mode 0644 (readable by others): set to 0400",
        Duration::from_secs(30),
    )
    .unwrap();
    master.signal(Signal::SIGTERM);
    master.wait_exit(Duration::from_secs(30)).expect("exits");
    let mode = std::fs::metadata(&pem).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o400);
}

/// `-l loud`: a clear error, exit code 64, no backtrace even with RUST_BACKTRACE set.
#[test]
fn a_bad_log_level_is_a_clear_error_without_a_backtrace() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    let conf = MasterConf::new(root.path().join("master")).set("user", current_user().as_str());
    let conf_dir = conf.write().unwrap();
    let mconf =
        MinionConf::new(root.path().join("minion"), "m").set("user", current_user().as_str());
    let mconf_dir = mconf.write().unwrap();
    for (bin, dir) in [(&b.master, &conf_dir), (&b.minion, &mconf_dir)] {
        let out = Command::new(bin)
            .args(["-l", "loud", "-c"])
            .arg(dir)
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("unknown log level \"loud\" (one of all,"),
            "{err}"
        );
        assert!(
            !err.contains("backtrace") && !err.contains("Stack"),
            "{err}"
        );
    }
}

/// Unsupported `salt` flags name the Salt feature instead of clap's "unexpected argument";
/// nothing is published (no master is running). (`--return` is published as Salt does: the
/// minion names a returner it cannot load.)
#[test]
fn salt_names_what_it_does_not_support_yet() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    let conf = MasterConf::new(root.path().join("master")).set("user", current_user().as_str());
    let conf_dir = conf.write().unwrap();
    let salt = |args: &[&str]| {
        Command::new(&b.salt)
            .arg("-c")
            .arg(&conf_dir)
            .args(args)
            .output()
            .unwrap()
    };
    for (args, feature) in [
        (&["-R", "%web", "test.ping"][..], "-R: range targeting"),
        (
            &["--subset", "2", "*", "test.ping"][..],
            "--subset: subset targeting",
        ),
        (
            &["--batch-safe-limit", "10", "*", "test.ping"][..],
            "--batch-safe-limit: batch safe limits",
        ),
    ] {
        let out = salt(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.contains(feature) && err.contains("is not supported yet"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("unexpected argument"), "{err}");
    }
}

/// `--version` says the same thing for every binary: name, version, salt-rs, the Salt
/// releases it speaks.
#[test]
fn every_binary_prints_the_same_version_line() {
    let b = bins().expect("our binaries");
    for (bin, name) in [
        (&b.master, "salt-master"),
        (&b.minion, "salt-minion"),
        (&b.salt, "salt"),
        (&b.key, "salt-key"),
    ] {
        let out = Command::new(bin).arg("--version").output().unwrap();
        assert!(out.status.success(), "{name}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.trim(),
            format!(
                "{name} {} (salt-rs; wire-compatible with Salt 3006, 3007 and 3008)",
                env!("CARGO_PKG_VERSION")
            ),
            "{name}"
        );
    }
}

/// `salt` run by a user who may not reach the master's socket says it is a permission
/// problem (needs root to run `salt` as another user; skipped otherwise).
#[test]
fn salt_says_permission_denied_on_the_socket() {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(_) = require(both(root(), command("runuser"))) else {
        return;
    };
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = MasterConf::new(root.path().join("master")).set("user", "root");
    let conf_dir = conf.write().unwrap();
    std::fs::set_permissions(conf.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&conf_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The socket directory only root may enter, as a master running as root keeps it.
    let sock = conf.dir().join("sock");
    std::fs::create_dir_all(&sock).unwrap();
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .arg(&b.salt)
        .arg("-c")
        .arg(&conf_dir)
        .args(["*", "test.ping"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("permission denied on the master's socket")
            && err.contains("run salt as the master's user"),
        "{err}"
    );
}

/// `salt -c DIR` with no DIR/master is an error, not a run on the defaults.
#[test]
fn salt_with_a_mistyped_config_dir_says_so() {
    let b = bins().expect("our binaries");
    let root = TempRoot::new().unwrap();
    let out = Command::new(&b.salt)
        .arg("-c")
        .arg(root.path().join("nope"))
        .args(["*", "test.ping"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("does not exist (given with -c)"),
        "{}",
        stderr(&out)
    );
}
