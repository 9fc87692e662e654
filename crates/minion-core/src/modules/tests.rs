//! Unit tests of the registry and the basic modules.

use super::*;

fn ctx() -> ExecContext {
    ExecContext::new(
        "m1",
        Arc::new(Value::Map(vec![
            (Value::from("id"), Value::from("m1")),
            (Value::from("os"), Value::from("Debian")),
            (
                Value::from("pkg"),
                Value::Map(vec![(Value::from("apache"), Value::from("apache2"))]),
            ),
        ])),
    )
}

fn kw(pairs: &[(&str, Value)]) -> Value {
    let mut m: Vec<(Value, Value)> = pairs
        .iter()
        .map(|(k, v)| (Value::from(*k), v.clone()))
        .collect();
    m.push((Value::from("__kwarg__"), Value::Boolean(true)));
    Value::Map(m)
}

async fn run(fun: &str, args: Vec<Value>) -> CallOutcome {
    call(fun, &args, &Value::Map(vec![]), &ctx()).await
}

#[tokio::test]
async fn test_module_functions() {
    assert_eq!(
        run("test.ping", vec![]).await,
        CallOutcome::ok(Value::Boolean(true))
    );
    assert_eq!(
        run("test.version", vec![]).await.ret,
        Value::from("3007.17")
    );
    assert_eq!(
        run("test.echo", vec![Value::from("hi")]).await.ret,
        Value::from("hi")
    );
    assert_eq!(
        run("test.echo", vec![kw(&[("text", Value::from("kw"))])])
            .await
            .ret,
        Value::from("kw")
    );
    let e = run("test.echo", vec![]).await;
    assert_eq!(e.retcode, 1);
    assert_eq!(
        e.ret,
        Value::from(
            "Passed invalid arguments to test.echo: echo() missing 1 required positional argument: 'text'\n"
        )
    );
    let e = run("test.ping", vec![Value::from(1)]).await;
    assert!(!e.success());
    assert_eq!(
        run("test.sleep", vec![Value::from(0)]).await.ret,
        Value::Boolean(true)
    );
    assert_eq!(
        run("test.sleep", vec![Value::from("0")]).await.ret,
        Value::Boolean(true)
    );
}

#[tokio::test]
async fn test_arg_shape_matches_python() {
    let job = Value::Map(vec![
        (Value::from("fun"), Value::from("test.arg")),
        (Value::from("jid"), Value::from("123")),
    ]);
    let out = call(
        "test.arg",
        &[
            Value::from(1),
            Value::from("a=b"),
            kw(&[("x", Value::from(2))]),
        ],
        &job,
        &ctx(),
    )
    .await;
    assert_eq!(
        out.ret,
        Value::Map(vec![
            (Value::from("args"), Value::Array(vec![Value::from(1)])),
            (
                Value::from("kwargs"),
                Value::Map(vec![
                    (Value::from("a"), Value::from("b")),
                    (Value::from("x"), Value::from(2)),
                    (Value::from("__pub_fun"), Value::from("test.arg")),
                    (Value::from("__pub_jid"), Value::from("123")),
                ])
            ),
        ])
    );
    assert!(out.success());
}

#[test]
fn kwarg_strings() {
    assert_eq!(parse_kwarg("a=b"), Some(("a", "b")));
    assert_eq!(parse_kwarg("a==b"), None);
    assert_eq!(parse_kwarg("1a=b"), None);
    assert_eq!(parse_kwarg("echo a=b"), None);
    assert_eq!(parse_kwarg("x.y-z=1"), Some(("x.y-z", "1")));
    let a = Args::parse(&[
        Value::from("n=3"),
        Value::from("t=True"),
        Value::from("plain"),
    ]);
    assert_eq!(a.args, vec![Value::from("plain")]);
    assert_eq!(
        a.kwargs,
        vec![
            ("n".into(), Value::from(3)),
            ("t".into(), Value::Boolean(true))
        ]
    );
}

#[tokio::test]
async fn cmd_run_combines_and_strips() {
    let out = run("cmd.run", vec![Value::from("echo hi; echo err 1>&2")]).await;
    assert_eq!(out.ret, Value::from("hi\nerr"));
    assert_eq!(out.retcode, 0);
    let out = run("cmd.run", vec![Value::from("echo bad; exit 3")]).await;
    assert_eq!(out.ret, Value::from("bad"));
    assert_eq!(out.retcode, 3);
    assert!(!out.success());
    let out = run(
        "cmd.run",
        vec![Value::from("pwd"), kw(&[("cwd", Value::from("/tmp"))])],
    )
    .await;
    assert_eq!(out.ret, Value::from("/tmp"));
}

#[tokio::test]
async fn cmd_run_all_shape() {
    let out = run(
        "cmd.run_all",
        vec![Value::from("echo out; echo err >&2; exit 2")],
    )
    .await;
    let Value::Map(m) = &out.ret else {
        panic!("not a map")
    };
    let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str().unwrap()).collect();
    assert_eq!(keys, ["pid", "retcode", "stdout", "stderr"]);
    assert_eq!(map_get(&out.ret, "retcode"), Some(&Value::from(2)));
    assert_eq!(map_get(&out.ret, "stdout"), Some(&Value::from("out")));
    assert_eq!(map_get(&out.ret, "stderr"), Some(&Value::from("err")));
    assert!(map_get(&out.ret, "pid").and_then(Value::as_u64).unwrap() > 0);
    assert_eq!(out.retcode, 2);
}

#[tokio::test]
async fn grains_functions() {
    assert_eq!(
        run("grains.get", vec![Value::from("os")]).await.ret,
        Value::from("Debian")
    );
    assert_eq!(
        run("grains.get", vec![Value::from("pkg:apache")]).await.ret,
        Value::from("apache2")
    );
    assert_eq!(
        run("grains.get", vec![Value::from("nope")]).await.ret,
        Value::from("")
    );
    assert_eq!(
        run("grains.get", vec![Value::from("nope"), Value::from("d")])
            .await
            .ret,
        Value::from("d")
    );
    let items = run("grains.items", vec![]).await;
    assert_eq!(items.out, Some("nested"));
    assert_eq!(map_get(&items.ret, "id"), Some(&Value::from("m1")));
}

#[tokio::test]
async fn unknown_function_and_listing() {
    let out = run("foo.bar", vec![]).await;
    let msg = out.ret.as_str().unwrap();
    assert!(msg.starts_with("'foo.bar' is not available. "), "{msg}");
    assert!(
        msg.contains(&format!(
            "has the modules {} (sys.list_functions",
            list_modules().join(", ")
        )),
        "{msg}"
    );
    assert_eq!(out.retcode, 1);
    assert_eq!(out.out, Some("nested"));
    let l = run("sys.list_functions", vec![Value::from("test")])
        .await
        .ret;
    let Value::Array(items) = l else { panic!() };
    assert!(items.contains(&Value::from("test.ping")));
    assert!(!items.contains(&Value::from("cmd.run")));
    let all = list_functions(&[]);
    assert_eq!(all.as_array().unwrap().len(), function_names().len());
    let globbed = list_functions(&[Value::from("cmd.run*")]);
    assert_eq!(globbed.as_array().unwrap().len(), 3);
}

#[test]
fn registry_lists_every_module() {
    let names = function_names();
    for f in [
        "state.apply",
        "state.show_highstate",
        "cp.get_file",
        "cp.push",
        "pillar.items",
        "saltutil.refresh_pillar",
        "pkg.version",
        "service.status",
    ] {
        assert!(names.contains(&f), "{f} missing from {names:?}");
    }
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted, names, "sorted, no duplicates");
    let mods = list_modules();
    for m in ["cp", "pillar", "pkg", "state", "test"] {
        assert!(mods.contains(&m), "{m}");
    }
}

#[tokio::test]
async fn state_and_cp_without_a_master_say_so() {
    for fun in ["state.apply", "cp.list_master"] {
        let out = run(fun, vec![]).await;
        assert_eq!(out.retcode, 1);
        assert!(
            out.ret
                .as_str()
                .unwrap()
                .contains("not connected to a master"),
            "{:?}",
            out.ret
        );
    }
    let out = run("state.sls", vec![]).await;
    assert_eq!(
        out.ret,
        Value::from(
            "Passed invalid arguments to state.sls: sls() missing 1 required positional argument: 'mods'\n"
        )
    );
    let out = run("pillar.get", vec![Value::from("a"), Value::from("d")]).await;
    assert_eq!(out.ret, Value::from("d"));
}
