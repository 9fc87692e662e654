//! `prereq`/`prereq_in` in the engine, on in-memory trees (`tests/tests/states_prereq.rs`
//! compares the same rules with Python Salt's `salt-call`).
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

fn sls(text: &str, test: bool) -> salt_states::Outcome {
    let opts = Opts {
        id: "m1".into(),
        test,
        ..Opts::default()
    };
    salt_states::sls(
        Arc::new(Mem(vec![("s.sls", text.to_owned())])),
        &opts,
        &["s".into()],
    )
}

fn keys(v: &Value) -> Vec<&str> {
    match v {
        Value::Map(m) => m.iter().map(|(k, _)| k.as_str().unwrap()).collect(),
        _ => vec![],
    }
}

fn num(v: &Value) -> i64 {
    map_get(v, "__run_num__").unwrap().as_i64().unwrap()
}

const TREE: &str = "
a:
  test.succeed_without_changes:
    - prereq:
      - test: b
b:
  test.succeed_with_changes: []
c:
  test.succeed_with_changes:
    - prereq:
      - test: d
d:
  test.succeed_without_changes: []
e:
  test.fail_without_changes:
    - prereq:
      - test: f
f:
  test.succeed_with_changes: []
g:
  test.succeed_with_changes:
    - prereq_in:
      - test: h
h:
  test.succeed_without_changes: []
";

#[test]
fn prereq_runs_the_pre_requiring_state_only_when_the_other_would_change() {
    let ret = sls(TREE, false).unwrap();
    let get = |id: &str, fun: &str| map_get(&ret, &format!("test_|-{id}_|-{id}_|-{fun}")).unwrap();
    // b would change: a runs first, then b for real.
    let (a, b) = (
        get("a", "succeed_without_changes"),
        get("b", "succeed_with_changes"),
    );
    assert_eq!((num(a), num(b)), (0, 1));
    assert_eq!(get_str(a, "comment"), Some("Success!"));
    assert_eq!(get_str(b, "comment"), Some("Success!"));
    assert!(map_get(b, "changes").is_some_and(salt_states::truthy));
    // d would not change: c is not run.
    let (c, d) = (
        get("c", "succeed_with_changes"),
        get("d", "succeed_without_changes"),
    );
    assert_eq!((num(c), num(d)), (2, 3));
    assert_eq!(get_str(c, "comment"), Some("No changes detected"));
    assert_eq!(map_get(c, "result"), Some(&Value::Boolean(true)));
    assert_eq!(
        keys(c),
        [
            "changes",
            "result",
            "duration",
            "start_time",
            "comment",
            "__run_num__",
            "__sls__",
            "__id__",
            "name"
        ]
    );
    // e fails: f is not run; its entry is its test run, changes emptied, no times.
    let (e, f) = (
        get("e", "fail_without_changes"),
        get("f", "succeed_with_changes"),
    );
    assert_eq!((num(e), num(f)), (4, 5));
    assert_eq!(map_get(e, "result"), Some(&Value::Boolean(false)));
    assert_eq!(map_get(f, "result"), Some(&Value::Nil));
    assert_eq!(
        get_str(f, "comment"),
        Some("If we weren't testing, this would be successful with changes")
    );
    assert_eq!(map_get(f, "changes"), Some(&Value::Map(vec![])));
    assert!(map_get(f, "start_time").is_none(), "{f:?}");
    assert_eq!(
        &keys(f)[keys(f).len() - 3..],
        ["__run_num__", "__sls__", "__id__"]
    );
    // g: prereq_in [h]: h is the pre-requiring one (runs first), g the pre-required one.
    let (g, h) = (
        get("g", "succeed_with_changes"),
        get("h", "succeed_without_changes"),
    );
    assert_eq!((num(h), num(g)), (6, 7));
    assert_eq!(get_str(h, "comment"), Some("Success!"));
    assert!(map_get(g, "changes").is_some_and(salt_states::truthy));
}

#[test]
fn prereq_in_test_mode() {
    let ret = sls(TREE, true).unwrap();
    let get = |id: &str, fun: &str| map_get(&ret, &format!("test_|-{id}_|-{id}_|-{fun}")).unwrap();
    let (a, b) = (
        get("a", "succeed_without_changes"),
        get("b", "succeed_with_changes"),
    );
    assert_eq!((num(a), num(b)), (0, 1));
    assert_eq!(map_get(b, "result"), Some(&Value::Nil));
    assert!(map_get(b, "start_time").is_some());
    let c = get("c", "succeed_with_changes");
    assert_eq!(get_str(c, "comment"), Some("No changes detected"));
}

#[test]
fn a_pre_required_state_naming_a_missing_requisite_is_left_out() {
    let text = "p:\n  test.succeed_with_changes:\n    - prereq:\n      - test: q\n\
                q:\n  test.nop:\n    - require:\n      - test: nowhere\n\
                r:\n  test.nop:\n    - prereq:\n      - test: nothing\n";
    let ret = sls(text, false).unwrap();
    assert_eq!(
        keys(&ret),
        ["test_|-p_|-p_|-succeed_with_changes", "test_|-r_|-r_|-nop"]
    );
    let p = map_get(&ret, "test_|-p_|-p_|-succeed_with_changes").unwrap();
    assert_eq!(
        get_str(p, "comment"),
        Some("One or more requisite failed: s.q")
    );
    assert_eq!(num(p), 1);
    let r = map_get(&ret, "test_|-r_|-r_|-nop").unwrap();
    assert_eq!(num(r), 3);
    assert_eq!(
        get_str(r, "comment"),
        Some(
            "The following requisites were not found:\n                   prereq:\n                       test: nothing\n"
        )
    );
}

#[test]
fn prereq_compile_errors() {
    let errs = sls(
        "a:\n  test.nop:\n    - prereq_in:\n      - test: zz\n",
        false,
    )
    .unwrap_err();
    assert_eq!(
        errs,
        [
            "Cannot extend ID 'zz' in 'base:s'. It is not part of the high state.\nThis is likely due to a missing include statement or an incorrectly typed ID.\nEnsure that a state with an ID of 'zz' is available\nin environment 'base' and to SLS 's'"
        ]
    );
    let errs = sls(
        "a:\n  test.nop:\n    - prereq:\n        test: b\nb:\n  test.nop: []\n",
        false,
    )
    .unwrap_err();
    assert_eq!(
        errs,
        ["The prereq statement in state 'a' in SLS 's' needs to be formed as a list"]
    );
}
