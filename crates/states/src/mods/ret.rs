//! Building a state's return dict: Salt's four keys and the usual ways of filling them.

use rmpv::Value;

use crate::{map, set};

/// `{name, changes: {}, result, comment}`, in Salt's key order.
pub(crate) fn new(name: impl Into<Value>, result: bool, comment: &str) -> Value {
    map(vec![
        ("name", name.into()),
        ("changes", Value::Map(vec![])),
        ("result", Value::Boolean(result)),
        ("comment", Value::from(comment)),
    ])
}

/// Sets `comment`.
pub(crate) fn comment(r: &mut Value, text: impl Into<String>) {
    set(r, "comment", Value::from(text.into()));
}

/// A failure: `result` False and `comment`.
pub(crate) fn fail(mut r: Value, msg: String) -> Value {
    set(&mut r, "result", Value::Boolean(false));
    comment(&mut r, msg);
    r
}

/// Test mode: `result` None and what would be done.
pub(crate) fn would(mut r: Value, msg: impl Into<String>) -> Value {
    set(&mut r, "result", Value::Nil);
    comment(&mut r, msg);
    r
}

/// A change made (or, under `test`, one that would be made: `result` None): `changes` and
/// `comment`.
pub(crate) fn changed(mut r: Value, test: bool, changes: Value, msg: impl Into<String>) -> Value {
    if test {
        set(&mut r, "result", Value::Nil);
    }
    set(&mut r, "changes", changes);
    comment(&mut r, msg);
    r
}
