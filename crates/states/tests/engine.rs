//! The compiler and runner on in-memory trees (no Python needed).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use rmpv::Value;
use salt_compat::map_get;
use salt_states::{FileClient, Opts, get_str};

struct Mem(Vec<(&'static str, String)>);

impl FileClient for Mem {
    fn get_file(&self, path: &str, saltenv: &str) -> Result<Option<Vec<u8>>, String> {
        if saltenv != "base" {
            return Ok(None);
        }
        Ok(self
            .0
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, t)| t.clone().into_bytes()))
    }
    fn envs(&self) -> Vec<String> {
        vec!["base".into()]
    }
}

fn opts(test: bool) -> Opts {
    Opts {
        id: "m1".into(),
        test,
        ..Opts::default()
    }
}

fn keys(v: &Value) -> Vec<String> {
    match v {
        Value::Map(m) => m
            .iter()
            .map(|(k, _)| k.as_str().unwrap().to_owned())
            .collect(),
        _ => vec![],
    }
}

fn run(files: Vec<(&'static str, String)>, mods: &[&str], test: bool) -> Value {
    let mods: Vec<String> = mods.iter().map(|s| (*s).to_owned()).collect();
    salt_states::sls(Arc::new(Mem(files)), &opts(test), &mods).unwrap()
}

#[test]
fn requisites_order_and_keys() {
    let sls = r"
b:
  test.succeed_with_changes:
    - require:
      - test: a
a:
  test.succeed_without_changes: []
c:
  test.nop:
    - onchanges:
      - test: a
d:
  test.nop:
    - watch:
      - test: b
e:
  test.nop:
    - require_in:
      - test: a
"
    .to_owned();
    let ret = run(vec![("s.sls", sls)], &["s"], false);
    assert_eq!(
        keys(&ret),
        [
            "test_|-e_|-e_|-nop",
            "test_|-a_|-a_|-succeed_without_changes",
            "test_|-b_|-b_|-succeed_with_changes",
            "test_|-c_|-c_|-nop",
            "test_|-d_|-d_|-nop",
        ]
    );
    let c = map_get(&ret, "test_|-c_|-c_|-nop").unwrap();
    assert_eq!(
        get_str(c, "comment"),
        Some("State was not run because none of the onchanges reqs changed")
    );
    let d = map_get(&ret, "test_|-d_|-d_|-nop").unwrap();
    // test.nop has no changes of its own: the watch fires mod_watch
    assert_eq!(get_str(d, "comment"), Some("Watch statement fired."));
    let b = map_get(&ret, "test_|-b_|-b_|-succeed_with_changes").unwrap();
    assert_eq!(
        keys(b),
        [
            "name",
            "changes",
            "result",
            "comment",
            "__sls__",
            "__run_num__",
            "start_time",
            "duration",
            "__id__"
        ]
    );
}

#[test]
fn include_extend_names_and_order() {
    let files = vec![
        ("top.sls", "base:\n  'm*':\n    - a\n".to_owned()),
        ("a/init.sls", "include:\n  - .b\nx:\n  test.nop:\n    - order: last\nextend:\n  y:\n    test:\n      - comment: extended\n".to_owned()),
        ("a/b.sls", "y:\n  test.succeed_without_changes:\n    - names:\n      - n2\n      - n1\n".to_owned()),
    ];
    let ret = salt_states::highstate(Arc::new(Mem(files)), &opts(false)).unwrap();
    assert_eq!(
        keys(&ret),
        [
            "test_|-y_|-n2_|-succeed_without_changes",
            "test_|-y_|-n1_|-succeed_without_changes",
            "test_|-x_|-x_|-nop",
        ]
    );
    let n1 = map_get(&ret, "test_|-y_|-n1_|-succeed_without_changes").unwrap();
    assert_eq!(get_str(n1, "comment"), Some("extended"));
    assert_eq!(get_str(n1, "__sls__"), Some("a.b"));
}

#[test]
fn failures_and_refusals() {
    let sls = "f:\n  test.fail_without_changes: []\ng:\n  test.nop:\n    - require:\n      - test: f\nh:\n  mycustom.installed: []\n".to_owned();
    let ret = run(vec![("s.sls", sls)], &["s"], false);
    let g = map_get(&ret, "test_|-g_|-g_|-nop").unwrap();
    assert_eq!(
        get_str(g, "comment"),
        Some("One or more requisite failed: s.f")
    );
    let h = map_get(&ret, "mycustom_|-h_|-h_|-installed").unwrap();
    assert!(
        get_str(h, "comment")
            .unwrap()
            .contains("'mycustom.installed' is not available.")
    );
    let bad = "p:\n  test.nop:\n    - use:\n      - test: q\nq:\n  test.nop: []\n".to_owned();
    let errs = salt_states::sls(
        Arc::new(Mem(vec![("s.sls", bad)])),
        &opts(false),
        &["s".into()],
    )
    .unwrap_err();
    assert!(
        errs[0].contains("'use' requisite, which salt-rs does not support"),
        "{errs:?}"
    );
    let missing =
        salt_states::sls(Arc::new(Mem(vec![])), &opts(false), &["nope".into()]).unwrap_err();
    assert_eq!(missing, ["No matching sls found for 'nope' in env 'base'"]);
}

#[test]
fn file_managed_test_mode_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    let sls = format!("{}:\n  file.managed:\n    - contents: hi\n", path.display());
    let ret = run(vec![("s.sls", sls.clone())], &["s"], true);
    let (_, r) = match &ret {
        Value::Map(m) => m[0].clone(),
        _ => panic!(),
    };
    assert_eq!(map_get(&r, "result"), Some(&Value::Nil));
    assert!(!path.exists());
    let ret = run(vec![("s.sls", sls)], &["s"], false);
    assert!(salt_states::all_ok(&ret));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hi\n");
}

#[test]
fn diff_like_difflib() {
    assert_eq!(
        salt_states::mods::file::unified_diff("old\n", "line1\nline2\n"),
        "--- \n+++ \n@@ -1 +1,2 @@\n-old\n+line1\n+line2\n"
    );
}

#[test]
fn requisite_cycles() {
    // Two states requiring each other: Salt's compile error.
    let two = "a:\n  test.nop:\n    - require:\n      - test: b\nb:\n  test.nop:\n    - require:\n      - test: a\n".to_owned();
    let errs = salt_states::sls(
        Arc::new(Mem(vec![("s.sls", two)])),
        &opts(false),
        &["s".into()],
    )
    .unwrap_err();
    assert_eq!(
        errs,
        [r#"A recursive requisite was found, SLS "s" ID "b" ID "a""#]
    );
    // A longer cycle: found at run time, as Salt does.
    let three = "a:\n  test.nop:\n    - require:\n      - test: b\nb:\n  test.nop:\n    - require:\n      - test: c\nc:\n  test.nop:\n    - require:\n      - test: a\n".to_owned();
    let ret = run(vec![("s.sls", three)], &["s"], false);
    let c = map_get(&ret, "test_|-c_|-c_|-nop").unwrap();
    assert_eq!(get_str(c, "comment"), Some("Recursive requisite found"));
    assert!(!salt_states::all_ok(&ret));
}

#[test]
fn show_highstate_is_show_sls_of_the_top() {
    let files = vec![
        ("top.sls", "base:\n  'm*':\n    - a\n".to_owned()),
        ("a/init.sls", "include:\n  - .b\nx:\n  test.nop: []\nextend:\n  y:\n    test:\n      - comment: extended\n".to_owned()),
        ("a/b.sls", "y:\n  test.succeed_without_changes: []\n".to_owned()),
    ];
    let client = Arc::new(Mem(files));
    let high = salt_states::show_highstate(client.clone(), &opts(false)).unwrap();
    let sls = salt_states::show_sls(client, &opts(false), &["a".to_owned()]).unwrap();
    assert_eq!(high, sls);
    let mut ids = keys(&high);
    ids.sort();
    assert_eq!(ids, ["x", "y"]);
    let y = map_get(map_get(&high, "y").unwrap(), "test").unwrap();
    assert!(format!("{y:?}").contains("extended"), "{y:?}");
}

/// `makedirs` with a file `mode`: the new directories get the mode with the execute bit
/// added to each nonzero digit (Salt's `manage_file`).
#[test]
fn file_managed_makedirs_dir_mode_as_salt() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/f.conf");
    let plain = dir.path().join("c/f.conf");
    let sls = format!(
        "{}:\n  file.managed:\n    - contents: hi\n    - makedirs: True\n    - mode: 640\n\
         {}:\n  file.managed:\n    - contents: hi\n    - makedirs: True\n",
        path.display(),
        plain.display()
    );
    let ret = run(vec![("s.sls", sls)], &["s"], false);
    assert!(salt_states::all_ok(&ret), "{ret}");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&dir.path().join("a")), 0o750);
    assert_eq!(mode(&dir.path().join("a/b")), 0o750);
    assert_eq!(mode(&path), 0o640);
    assert!(dir.path().join("c").is_dir());
}

/// `parallel: True` (Salt's `call_parallel`/`reconcile_procs`): the state runs on its own,
/// its return is merged (with `__parallel__`) before a requisite on it is checked, and the
/// keys keep Salt's order (the placeholder's, then what the parallel return adds).
#[test]
fn parallel_states_merge_before_requisites() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let sls = format!(
        "one:\n  cmd.run:\n    - name: 'sleep 0.3; echo one > {d}/one'\n    - parallel: True\n\
         two:\n  cmd.run:\n    - name: 'cat {d}/one > {d}/two'\n    - require:\n      - cmd: one\n\
         bad:\n  test.fail_without_changes:\n    - parallel: True\n\
         rescue:\n  test.succeed_with_changes:\n    - onfail:\n      - test: bad\n"
    );
    let ret = run(vec![("p.sls", sls)], &["p"], false);
    let one = match &ret {
        Value::Map(m) => m
            .iter()
            .find(|(k, _)| k.as_str().unwrap().starts_with("cmd_|-one_|-"))
            .map(|(_, v)| v.clone())
            .unwrap(),
        _ => panic!("{ret:?}"),
    };
    assert_eq!(map_get(&one, "result"), Some(&Value::Boolean(true)));
    assert_eq!(map_get(&one, "__parallel__"), Some(&Value::Boolean(true)));
    assert_eq!(
        keys(&one),
        [
            "name",
            "result",
            "changes",
            "comment",
            "__sls__",
            "__run_num__",
            "start_time",
            "duration",
            "__id__",
            "__parallel__"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("two")).unwrap(),
        "one\n"
    );
    let rescue = map_get(&ret, "test_|-rescue_|-rescue_|-succeed_with_changes").unwrap();
    assert_eq!(map_get(rescue, "result"), Some(&Value::Boolean(true)));
    assert!(map_get(rescue, "__state_ran__").is_none(), "{rescue:?}");
}
