//! Execution modules on throwaway files: hosts, cron layout, file edits, dispatch.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rmpv::Value;
use salt_compat::map_get;
use salt_execmods::{Ctx, FUNCTIONS, call, compare_dicts, cron};

fn kw(pairs: &[(&str, Value)]) -> Vec<(String, Value)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

#[test]
fn dispatch_and_unknown_functions() {
    let ctx = Ctx::default();
    assert!(call("pkg.nope", &[], &[], &ctx).is_none());
    assert!(
        FUNCTIONS.windows(2).all(|w| w[0] < w[1]),
        "FUNCTIONS sorted"
    );
    let err = call("file.get_hash", &[], &[], &ctx).unwrap().unwrap_err();
    assert!(
        err.contains("missing 1 required positional argument: 'path'"),
        "{err}"
    );
}

#[test]
fn hosts_add_rm_and_comment() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosts");
    std::fs::write(
        &path,
        "127.0.0.1\tlocalhost\n# keep me\n10.0.0.5 a b # old\n",
    )
    .unwrap();
    let opts = Value::Map(vec![(
        Value::from("hosts.file"),
        Value::from(path.display().to_string()),
    )]);
    let ctx = Ctx {
        opts: &opts,
        grains: &Value::Nil,
    };
    let c = |f: &str, a: &[&str]| {
        let pos: Vec<Value> = a.iter().map(|s| Value::from(*s)).collect();
        call(f, &pos, &[], &ctx).unwrap().unwrap()
    };
    assert_eq!(c("hosts.get_ip", &["b"]), Value::from("10.0.0.5"));
    assert_eq!(
        c("hosts.add_host", &["10.0.0.9", "c"]),
        Value::Boolean(true)
    );
    assert_eq!(c("hosts.rm_host", &["10.0.0.5", "a"]), Value::Boolean(true));
    assert_eq!(
        c("hosts.set_comment", &["10.0.0.9", "new"]),
        Value::Boolean(true)
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "127.0.0.1\t\tlocalhost\n# keep me\n10.0.0.5\t\tb\t\t# old\n10.0.0.9\t\tc\t\t# new\n"
    );
    assert_eq!(
        c("hosts.has_pair", &["10.0.0.5", "a"]),
        Value::Boolean(false)
    );
}

#[test]
fn cron_layout_round_trip() {
    let tab = "MAILTO=x\n# Lines below here are managed by Salt, do not edit\nFOO=bar\n# nightly SALT_CRON_IDENTIFIER:n1\n0 3 * * * /bin/true\n#DISABLED#@daily /bin/false\n";
    let t = cron::parse(tab);
    let v = format!("{t:?}");
    assert!(
        v.contains("n1") && v.contains("/bin/true") && v.contains("@daily"),
        "{v}"
    );
}

#[test]
fn file_replace_append_and_hash() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.conf");
    let ps = p.display().to_string();
    std::fs::write(&p, "port = 80\ndebug = yes\n").unwrap();
    let ctx = Ctx::default();
    let pos = [
        Value::from(ps.as_str()),
        Value::from(r"^port = (\d+)"),
        Value::from(r"port = \g<1>0"),
    ];
    let diff = call("file.replace", &pos, &[], &ctx).unwrap().unwrap();
    assert_eq!(
        diff,
        Value::from("--- \n+++ \n@@ -1,2 +1,2 @@\n-port = 80\n+port = 800\n debug = yes\n")
    );
    assert!(dir.path().join("f.conf.bak").exists());
    let pos = [
        Value::from(ps.as_str()),
        Value::from("^missing"),
        Value::from("added = 1"),
    ];
    let k = kw(&[
        ("append_if_not_found", Value::Boolean(true)),
        ("backup", Value::Boolean(false)),
    ]);
    call("file.replace", &pos, &k, &ctx).unwrap().unwrap();
    let k = kw(&[(
        "args",
        Value::Array(vec![Value::from("x"), Value::from("y")]),
    )]);
    let out = call("file.append", &[Value::from(ps.as_str())], &k, &ctx)
        .unwrap()
        .unwrap();
    assert_eq!(out, Value::from(format!("Wrote 2 lines to \"{ps}\"")));
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "port = 800\ndebug = yes\nadded = 1\nx\ny\n"
    );
    let h = call(
        "file.get_hash",
        &[Value::from(ps.as_str()), Value::from("md5")],
        &[],
        &ctx,
    )
    .unwrap()
    .unwrap();
    assert_eq!(h.as_str().map(str::len), Some(32));
    let refused = call(
        "file.replace",
        &pos,
        &kw(&[("backslash_literal", Value::Boolean(true))]),
        &ctx,
    )
    .unwrap()
    .unwrap_err();
    assert!(
        refused.contains("'backslash_literal' is not supported"),
        "{refused}"
    );
}

#[test]
fn compare_dicts_orders_like_salt() {
    let old = vec![
        ("a".to_owned(), "1".to_owned()),
        ("b".to_owned(), "1".to_owned()),
    ];
    let new = vec![
        ("b".to_owned(), "2".to_owned()),
        ("c".to_owned(), "1".to_owned()),
    ];
    let v = compare_dicts(&old, &new);
    let a = map_get(&v, "a").unwrap();
    assert_eq!(
        a,
        &Value::Map(vec![
            (Value::from("new"), Value::from("")),
            (Value::from("old"), Value::from("1"))
        ])
    );
    let c = map_get(&v, "c").unwrap();
    assert_eq!(map_get(c, "old"), Some(&Value::from("")));
}

#[test]
fn sysctl_show_config_as_salt_reads_it() {
    use salt_execmods::sysctl;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("99.conf");
    let missing = p.display().to_string();
    assert_eq!(sysctl::show_config(&missing), Ok(None));
    std::fs::write(
        &p,
        "# c = 1\n  vm.swappiness =  20 \nbad line\nfs.file-max=1\n",
    )
    .unwrap();
    let got = sysctl::show_config(&missing).unwrap().unwrap();
    assert_eq!(
        got,
        vec![
            ("vm.swappiness".to_owned(), "20".to_owned()),
            ("fs.file-max".to_owned(), "1".to_owned())
        ]
    );
}
