//! `salt -a` and `salt-run -a` (issue #33): our `salt`/`salt-run` and Salt 3007.17's Python
//! `salt`/`salt-run`, run with the same arguments against the same master of ours, print the
//! same and exit alike:
//!
//! * `-a pam` with a real PAM user (`useradd`): right password, wrong password, a function
//!   the ACL denies;
//! * `-a file` (a text user file): right and wrong password; credentials prompted
//!   (`username: ` on stdout, the password from stdin with no terminal, as Python's
//!   `getpass` falls back);
//! * an eauth backend that does not exist (Salt: "ERROR: Authentication failed", exit 2);
//! * `-T`: the token saved in `~/salt_token` (mode 0600, a sha256 hexdigest), then used by
//!   a run with no `-a` from a user who cannot read the root key (ours only: Python's
//!   LocalClient as that user cannot read the master's event bus);
//! * `salt-run -a file` allowed by `@runner`, and `salt-run -a pam` refused.
//!
//! Needs root (the PAM user). Under `CI=true` a missing venv fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use salt_integration_tests::interop_support::{Daemon, Side, serial, venv_for};
use salt_integration_tests::pam::PamUser;
use salt_integration_tests::{
    MasterConf, MinionConf, TempRoot, Yaml, bins, free_port_pair, run_with_timeout,
};

const VERSION: &str = "3007.17";
const PAM_PASSWORD: &str = "Corr3ct-horse";

/// What a command showed: exit code, stdout, stderr.
type Shown = (Option<i32>, String, String);

/// The exit code ours has where Salt's `salt` showed `py`: Salt prints a refused publish
/// ("Authentication error occurred.", "Authorization error occurred.") and exits 0, ours
/// exits 2 (docs/cli.md, as for `publisher_acl`).
fn refused_exit(py: &Shown) -> Option<i32> {
    if py.0 == Some(0) && py.1.ends_with(" error occurred.\n") {
        Some(2)
    } else {
        py.0
    }
}

#[test]
fn salt_and_salt_run_with_eauth_answer_as_salts() {
    use salt_integration_tests::{both, require, root};
    let Some((venv, ())) = require(both(venv_for(VERSION), root())) else {
        return;
    };
    let _guard = serial();
    let bins = bins().unwrap();
    let ours = Side::Ours(bins.clone());
    let pam_user = PamUser::create("scli", PAM_PASSWORD).expect("a PAM user (root)");

    let root = TempRoot::new().unwrap();
    let ports = free_port_pair().unwrap();
    let users = root.path().join("eauth_users");
    std::fs::write(&users, "fred:secret\n").unwrap();
    let eauth = format!(
        "{{file: {{'^filename': '{}', '^filetype': text, fred: ['test.*', '@runner']}}, \
         pam: {{'{}': ['test.*']}}}}",
        users.display(),
        pam_user.name
    );
    let mconf = MasterConf::new(root.path().join("m"))
        .id("eauthmaster")
        .ports(ports.0, ports.1)
        .set("worker_threads", 2u32)
        .set("auto_accept", true)
        .set("external_auth", Yaml::Raw(eauth));
    let mut master = Daemon::start_master(&ours, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let mid = "eauthminion";
    let minion_conf = MinionConf::new(root.path().join(mid), mid).ports(ports.0, ports.1);
    let mut minion = Daemon::start_minion(&ours, &minion_conf).unwrap();
    minion.wait_minion_ready().unwrap();

    let conf_dir = master.conf_dir.clone();
    let our_salt = bins.salt.clone();
    let our_run = bins.salt.with_file_name("salt-run");
    let home = root.dir("home").unwrap();
    // `sh -c` for a command with input on stdin; `setsid`: no controlling terminal, so the
    // password is read from stdin by both (Python's getpass fallback).
    let show = |prog: &Path, args: &[&str], stdin: Option<&str>, home: &Path| -> Shown {
        let mut c = match stdin {
            None => std::process::Command::new(prog),
            Some(input) => {
                let mut c = std::process::Command::new("sh");
                c.arg("-c")
                    .arg(format!("printf '{input}' | setsid -w \"$0\" \"$@\""))
                    .arg(prog);
                c
            }
        };
        c.arg("-c").arg(&conf_dir).args(args).env("HOME", home);
        let out = run_with_timeout(c, Duration::from_secs(120)).unwrap();
        (out.status.and_then(|s| s.code()), out.stdout, out.stderr)
    };
    let pam = pam_user.name.as_str();
    let cases: Vec<(&str, Vec<&str>, Option<&str>)> = vec![
        (
            "pam",
            vec!["-a", "pam", "--username", pam, "--password", PAM_PASSWORD],
            None,
        ),
        (
            "pam wrong password",
            vec!["-a", "pam", "--username", pam, "--password", "wrong"],
            None,
        ),
        (
            "file",
            vec![
                "--eauth",
                "file",
                "--username",
                "fred",
                "--password",
                "secret",
            ],
            None,
        ),
        (
            "file wrong password",
            vec!["-a", "file", "--username", "fred", "--password", "nope"],
            None,
        ),
        (
            "file prompted",
            vec!["-a", "file"],
            Some("fred\\nsecret\\n"),
        ),
    ];
    let mut compared = 0;
    for (name, flags, stdin) in &cases {
        for fun in [&["test.ping"][..], &["cmd.run", "id"][..]] {
            let mut args = flags.clone();
            args.push(mid);
            args.extend_from_slice(fun);
            let py = show(&venv.bin("salt"), &args, *stdin, &home);
            let ours = show(&our_salt, &args, *stdin, &home);
            println!("salt {name} {fun:?}:\n  Salt: {py:?}\n  ours: {ours:?}");
            assert_eq!(
                (refused_exit(&py), &py.1),
                (ours.0, &ours.1),
                "salt {name} {fun:?}: exit code and stdout"
            );
            if *stdin == Some("fred\\nsecret\\n") {
                assert!(
                    ours.2.contains("Warning: Password input may be echoed."),
                    "{ours:?}"
                );
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 10);
    // The allowed runs really ran.
    let ok = show(
        &our_salt,
        &cases[2]
            .1
            .iter()
            .copied()
            .chain([mid, "test.ping"])
            .collect::<Vec<_>>(),
        None,
        &home,
    );
    assert_eq!(ok.0, Some(0), "{ok:?}");
    assert!(ok.1.contains("True"), "{ok:?}");

    // A backend that does not exist: Salt's two lines (ours lists the backends it has).
    let args = [
        "-a",
        "nosuch",
        "--username",
        "fred",
        "--password",
        "x",
        mid,
        "test.ping",
    ];
    let py = show(&venv.bin("salt"), &args, None, &home);
    let ours = show(&our_salt, &args, None, &home);
    assert_eq!((py.0, ours.0), (Some(2), Some(2)), "{py:?} {ours:?}");
    assert!(py.2.contains("ERROR: Authentication failed"), "{py:?}");
    assert!(ours.2.contains("ERROR: Authentication failed"), "{ours:?}");
    let first = |s: &str| s.lines().next().unwrap_or_default().to_owned();
    assert_eq!(first(&py.1), first(&ours.1));

    // `-T`: the token file, as Python writes it.
    for (who, prog) in [("Salt", venv.bin("salt")), ("ours", our_salt.clone())] {
        let home = root.dir(&format!("home-{who}")).unwrap();
        let args = [
            "-a",
            "file",
            "-T",
            "--username",
            "fred",
            "--password",
            "secret",
            mid,
            "test.ping",
        ];
        let out = show(&prog, &args, None, &home);
        assert_eq!(out.0, Some(0), "{who}: {out:?}");
        let file = home.join("salt_token");
        let token = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{who}: {e}"));
        assert_eq!(token.len(), 64, "{who}: {token:?}");
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{who}");
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{who}");
        assert!(
            master
                .dir
                .join("cache")
                .join("tokens")
                .join(token.trim())
                .is_file(),
            "{who}: the master keeps the token in cachedir/tokens"
        );
    }

    // The saved token, used by a user who cannot read the root key (no `-a`).
    let tok_home = root.path().join("home-ours");
    let tok = std::fs::read_to_string(tok_home.join("salt_token")).unwrap();
    let user_home = root.dir("home-pam").unwrap();
    std::fs::write(user_home.join("salt_token"), &tok).unwrap();
    for p in [root.path(), &user_home] {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(p).unwrap().permissions().mode();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode | 0o005)).unwrap();
    }
    let run_as_pam = |args: &[&str]| -> Shown {
        let mut c = std::process::Command::new("runuser");
        // `runuser` sets HOME to the user's: `env` sets it back.
        c.args(["-u", pam, "--", "env"])
            .arg(format!("HOME={}", user_home.display()))
            .arg(&our_salt)
            .arg("-c")
            .arg(&conf_dir)
            .args(args);
        let out = run_with_timeout(c, Duration::from_secs(120)).unwrap();
        (out.status.and_then(|s| s.code()), out.stdout, out.stderr)
    };
    std::fs::set_permissions(
        user_home.join("salt_token"),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let out = run_as_pam(&[mid, "test.ping"]);
    assert_eq!(out.0, Some(0), "token of fred used by {pam}: {out:?}");
    assert!(out.1.contains("True"), "{out:?}");
    let out = run_as_pam(&[mid, "cmd.run", "id"]);
    assert_ne!(out.0, Some(0), "fred's ACL applies: {out:?}");
    std::fs::remove_file(user_home.join("salt_token")).unwrap();
    let out = run_as_pam(&[mid, "test.ping"]);
    assert_ne!(
        out.0,
        Some(0),
        "no token, no publisher_acl: refused: {out:?}"
    );

    // `salt-run -a`: `@runner` allows fred; the PAM user has no runner rights.
    for (name, flags) in [
        (
            "file",
            vec!["-a", "file", "--username", "fred", "--password", "secret"],
        ),
        (
            "pam denied",
            vec!["-a", "pam", "--username", pam, "--password", PAM_PASSWORD],
        ),
        (
            "file wrong password",
            vec!["-a", "file", "--username", "fred", "--password", "nope"],
        ),
    ] {
        let mut args = flags.clone();
        args.extend(["--out", "json", "manage.up"]);
        let py = show(&venv.bin("salt-run"), &args, None, &home);
        let ours = show(&our_run, &args, None, &home);
        println!("salt-run {name}:\n  Salt: {py:?}\n  ours: {ours:?}");
        assert_eq!((py.0, &py.1), (ours.0, &ours.1), "salt-run {name}");
    }

    minion.proc.stop(Duration::from_secs(10));
    master.proc.stop(Duration::from_secs(15));
}
