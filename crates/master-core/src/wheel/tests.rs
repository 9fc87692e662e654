//! The two ways Salt binds a wheel call, and their texts (checked against Salt 3007.17's
//! master by `tests/tests/interop_wheel.rs`).

use serde_json::{Map, Value, json};

use super::*;

fn w(name: &str) -> &'static Wheel {
    WHEELS.iter().find(|w| w.name == name).unwrap()
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn msg(r: Bound) -> String {
    match r.1 {
        Err(Fail::Raise(_, m) | Fail::Call(m)) => m,
        Ok(_) => panic!("bound"),
    }
}

fn ok(r: Bound) -> (Args, Vec<Value>) {
    (r.1.unwrap(), r.0.unwrap())
}

#[test]
fn by_name_as_format_call() {
    let (a, fun_args) = ok(bind_low(
        w("key.accept"),
        &obj(json!({"match": "web*", "eauth": "pam"})),
    ));
    assert_eq!(a.text("match").as_deref(), Some("web*"));
    assert_eq!(
        fun_args,
        vec![
            json!("web*"),
            json!({"include_rejected": false, "include_denied": false})
        ]
    );
    assert_eq!(
        msg(bind_low(w("key.accept"), &Map::new())),
        "accept takes at least 1 argument (0 given)"
    );
    assert_eq!(
        msg(bind_low(w("key.list_all"), &obj(json!({"user": "root"})))),
        "'user' is an invalid keyword argument for 'salt.loaded.int.wheel.key.list_all'"
    );
    assert_eq!(
        msg(bind_low(
            w("key.list"),
            &obj(json!({"user": "root", "bogus": 1, "match": "x"}))
        )),
        "'user' and 'bogus' are invalid keyword arguments for 'salt.loaded.int.wheel.key.list_'"
    );
}

#[test]
fn positional_as_python() {
    let none = Map::new();
    let (a, fun_args) = ok(bind_call(w("key.list"), &[json!("acc")], &none));
    assert_eq!(a.text("match").as_deref(), Some("acc"));
    assert_eq!(fun_args, vec![json!("acc")]);
    assert_eq!(
        msg(bind_call(w("key.list_all"), &[json!("x")], &none)),
        "list_all() takes 0 positional arguments but 1 was given"
    );
    assert_eq!(
        msg(bind_call(w("key.list_all"), &[], &obj(json!({"a": 1})))),
        "list_all() got an unexpected keyword argument 'a'"
    );
    assert_eq!(
        msg(bind_call(w("key.list"), &[], &none)),
        "list_() missing 1 required positional argument: 'match'"
    );
}
