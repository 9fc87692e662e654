//! `run::Spec`, the one command builder: what the built process really gets.

use std::io::Write;
use std::process::Stdio;

use salt_execmods::run::{Spec, User};

/// Runs `spec` and returns its trimmed stdout, its pid and its exit code.
fn output(spec: &Spec) -> (String, u32, i32) {
    let mut c = spec.command().expect("command");
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn");
    let pid = child.id();
    if let (Some(data), Some(mut w)) = (&spec.stdin, child.stdin.take()) {
        w.write_all(data.as_bytes()).expect("stdin");
    }
    let out = child.wait_with_output().expect("wait");
    (
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned(),
        pid,
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn shell_line_runs_with_cwd_env_umask_stdin_and_own_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path().canonicalize().expect("canonical");
    let script = "pwd; echo \"$X\"; echo \"${HOME:-unset}\"; umask; cat; ps -o pgid= -p $$";
    let spec = Spec {
        cwd: Some(cwd.to_string_lossy().into_owned()),
        clear_env: true,
        env: vec![
            ("X".into(), "from spec".into()),
            ("PATH".into(), "/usr/bin:/bin".into()),
        ],
        umask: Some("27".into()),
        stdin: Some("fed on stdin\n".into()),
        process_group: true,
        ..Spec::line(script, true, "/bin/sh").expect("line")
    };
    let (out, pid, rc) = output(&spec);
    assert_eq!(rc, 0, "{out}");
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    assert_eq!(
        lines,
        [
            cwd.to_str().expect("utf-8"),
            "from spec",
            "unset",
            "0027",
            "fed on stdin",
            &pid.to_string(),
        ]
    );
}

#[test]
fn argv_line_is_split_as_shlex_and_not_given_to_a_shell() {
    let spec = Spec::line("printf '%s|' 'a b' \"$HOME\" c", false, "/bin/sh").expect("line");
    assert_eq!(spec.argv, ["printf", "%s|", "a b", "$HOME", "c"]);
    let (out, _, rc) = output(&spec);
    assert_eq!((out.as_str(), rc), ("a b|$HOME|c|", 0));
    assert_eq!(
        Spec::line("echo 'open", false, "/bin/sh").expect_err("unbalanced quote"),
        "Unable to split command 'echo 'open': No closing quotation"
    );
    assert_eq!(
        Spec::argv::<&str>(&[]).command().expect_err("empty argv"),
        "empty command"
    );
}

#[test]
fn runas_and_group_switch_through_setpriv_outside_the_umask_wrapper() {
    let user = Spec {
        user: Some(User {
            uid: 1000,
            gid: 1000,
        }),
        gid: Some(50),
        umask: Some("22".into()),
        ..Spec::argv(&["id"])
    };
    assert_eq!(
        user.full_argv(),
        [
            "setpriv",
            "--reuid",
            "1000",
            "--regid",
            "50",
            "--init-groups",
            "--",
            "/bin/sh",
            "-c",
            "umask \"$0\" && exec \"$@\"",
            "22",
            "id"
        ]
    );
    let group = Spec {
        gid: Some(50),
        ..Spec::argv(&["id"])
    };
    assert_eq!(
        group.full_argv(),
        ["setpriv", "--regid", "50", "--keep-groups", "--", "id"]
    );
}
