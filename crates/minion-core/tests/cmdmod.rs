//! `cmd.*` with Salt's keyword arguments, run for real (`/bin/sh`, `setpriv`, `su`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmpv::Value;
use salt_minion_core::modules::{CallOutcome, ExecContext, call};

fn kw(pairs: &[(&str, Value)]) -> Value {
    let mut m: Vec<(Value, Value)> = pairs
        .iter()
        .map(|(k, v)| (Value::from(*k), v.clone()))
        .collect();
    m.push((Value::from("__kwarg__"), Value::Boolean(true)));
    Value::Map(m)
}

async fn run(fun: &str, cmd: &str, kwargs: &[(&str, Value)]) -> CallOutcome {
    let ctx = ExecContext::new("m1", Arc::new(Value::Map(vec![])));
    let args = vec![Value::from(cmd), kw(kwargs)];
    let job = Value::Map(vec![(
        Value::from("jid"),
        Value::from("20250101000000000001"),
    )]);
    call(fun, &args, &job, &ctx).await
}

fn s(v: &str) -> Value {
    Value::from(v)
}

#[tokio::test]
async fn timeout_kills_the_process_group_in_time() {
    let t0 = Instant::now();
    let r = run(
        "cmd.run",
        "sleep 30 & sleep 30; echo never",
        &[("timeout", Value::from(2))],
    )
    .await;
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(6), "took {took:?}");
    assert!(took >= Duration::from_secs(2), "took {took:?}");
    assert_eq!(
        r.ret,
        s("sleep 30 & sleep 30; echo never : Timed out after 2 seconds")
    );
    assert_eq!(r.retcode, 1);
    let r = run("cmd.run_all", "sleep 30", &[("timeout", Value::F64(0.5))]).await;
    let Value::Map(m) = &r.ret else {
        panic!("{r:?}")
    };
    assert_eq!(m[1], (s("retcode"), Value::from(1)));
    assert_eq!(
        m[2],
        (s("stdout"), s("sleep 30 : Timed out after 0.5 seconds"))
    );
}

#[tokio::test]
async fn runas_switches_user_groups_and_environment() {
    let Some(()) = salt_testkit::require(salt_testkit::root()) else {
        return;
    };
    let r = run(
        "cmd.run",
        "whoami; id -u; echo $HOME $USER",
        &[("runas", s("nobody"))],
    )
    .await;
    assert_eq!(r.retcode, 0, "{r:?}");
    let out = r.ret.as_str().unwrap().to_owned();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "nobody");
    assert_ne!(lines[1], "0");
    assert_eq!(lines[2], "/nonexistent nobody");
    let r = run("cmd.run", "id", &[("runas", s("no-such-user-x"))]).await;
    assert_eq!(r.ret, s("ERROR: User 'no-such-user-x' is not available"));
    assert_eq!(r.retcode, 1);
    let r = run("cmd.run", "id -gn", &[("group", s("nogroup"))]).await;
    assert_eq!(r.ret, s("nogroup"), "{r:?}");
}

#[tokio::test]
async fn env_stdin_shell_umask_and_cwd() {
    let r = run(
        "cmd.run",
        "echo $FOO-$BAR",
        &[(
            "env",
            Value::Map(vec![(s("FOO"), s("a")), (s("BAR"), Value::from(2))]),
        )],
    )
    .await;
    assert_eq!(r.ret, s("a-2"));
    let r = run("cmd.run", "echo $FOO", &[("env", s("{FOO: from-cli}"))]).await;
    assert_eq!(r.ret, s("from-cli"));
    let r = run(
        "cmd.run",
        "echo ${HOME:-unset}",
        &[("clean_env", Value::Boolean(true))],
    )
    .await;
    assert_eq!(r.ret, s("unset"));
    let r = run("cmd.run", "cat", &[("stdin", s("line one\nline two\n"))]).await;
    assert_eq!(r.ret, s("line one\nline two"));
    let r = run(
        "cmd.run",
        "echo $HOME 'a b'",
        &[("python_shell", Value::Boolean(false))],
    )
    .await;
    assert_eq!(r.ret, s("$HOME a b"));
    let r = run("cmd.run", "umask", &[("umask", s("077"))]).await;
    assert_eq!(r.ret, s("0077"));
    let r = run("cmd.run", "umask", &[("umask", s("0"))]).await;
    assert_eq!(r.ret, s("ERROR: Zero umask is not allowed."));
    let r = run("cmd.run", "pwd", &[("cwd", s("/tmp"))]).await;
    assert_eq!(r.ret, s("/tmp"));
    let r = run("cmd.run", "pwd", &[("cwd", s("/no/such/dir"))]).await;
    assert_eq!(
        r.ret,
        s("ERROR: Specified cwd '/no/such/dir' either not absolute or does not exist")
    );
    let r = run("cmd.run", "echo $LC_TIME", &[]).await;
    assert_eq!(r.ret, s("C"), "reset_system_locale defaults LC_* to C");
    let r = run("cmd.run", "echo x", &[("shell", s("/no/shell"))]).await;
    assert_eq!(r.ret, s("ERROR: The shell /no/shell is not available"));
}

#[tokio::test]
async fn retcodes_and_output_options() {
    let r = run("cmd.run", "echo out; exit 3", &[]).await;
    assert_eq!((r.ret.clone(), r.retcode), (s("out"), 3));
    let r = run("cmd.run", "exit 3", &[("success_retcodes", s("2,3"))]).await;
    assert_eq!(r.retcode, 0);
    let r = run(
        "cmd.run",
        "echo fine; exit 4",
        &[("success_stdout", s("fine"))],
    )
    .await;
    assert_eq!(r.retcode, 0);
    let r = run(
        "cmd.retcode",
        "exit 5",
        &[("ignore_retcode", Value::Boolean(true))],
    )
    .await;
    assert_eq!((r.ret.clone(), r.retcode), (Value::from(5), 0));
    let r = run(
        "cmd.run",
        "echo secret",
        &[("hide_output", Value::Boolean(true))],
    )
    .await;
    assert_eq!(r.ret, s(""));
    let r = run("cmd.run", "echo err >&2; echo out", &[]).await;
    assert_eq!(r.ret, s("err\nout"), "cmd.run redirects stderr");
    let r = run("cmd.run_stdout", "echo err >&2; echo out", &[]).await;
    assert_eq!(r.ret, s("out"));
    let r = run(
        "cmd.run",
        "echo failed; exit 1",
        &[("raise_err", Value::Boolean(true))],
    )
    .await;
    assert_eq!((r.ret.clone(), r.retcode), (s("ERROR: failed"), 1));
    let r = run(
        "cmd.run",
        "printf 'x  \n\n'",
        &[("rstrip", Value::Boolean(false))],
    )
    .await;
    assert_eq!(r.ret, s("x  \n\n"));
}

#[tokio::test]
async fn unimplemented_arguments_are_refused_by_name_and_unknown_ones_ignored() {
    let r = run("cmd.run", "echo x", &[("template", s("jinja"))]).await;
    assert_eq!(
        r.ret,
        s(
            "ERROR executing 'cmd.run': argument 'template' of cmd.run is not implemented by salt-rs"
        )
    );
    assert_eq!(r.retcode, 1);
    let r = run("cmd.run", "echo x", &[("use_vt", Value::Boolean(true))]).await;
    assert!(r.ret.as_str().unwrap().contains("'use_vt'"), "{r:?}");
    let r = run("cmd.run_all", "echo x", &[("bg", Value::Boolean(true))]).await;
    // bg is not in run_all's signature: Salt's **kwargs takes it, unused.
    assert_eq!(r.retcode, 0, "{r:?}");
    let r = run("cmd.run", "echo x", &[("not_a_salt_arg", s("y"))]).await;
    assert_eq!(r.ret, s("x"));
    let r = run("cmd.run", "echo x", &[("password", s("ignored on Linux"))]).await;
    assert_eq!(r.ret, s("x"));
    let r = run("cmd.run", "echo x", &[("output_encoding", s("latin-1"))]).await;
    assert!(
        r.ret.as_str().unwrap().contains("'output_encoding'"),
        "{r:?}"
    );
}
