//! Requisite resolution helpers: reading `require`/`watch`/`onfail`/`onchanges` lists, matching
//! them against chunks (Salt's `State._match_req`-style id/name/sls globbing), and folding the
//! `*_in` forms onto their targets (`State.requisite_in`).

use rmpv::Value;

use crate::{get_str, map, set};
use salt_compat::map_get;
use salt_compat::py_str;

pub(crate) const REQ_KINDS: &[&str] = &["require", "watch", "onfail", "onchanges"];

pub(crate) fn req_list(low: &Value, key: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(Value::Array(items)) = map_get(low, key) {
        for r in items {
            match r {
                Value::String(s) => out.push(("id".into(), s.as_str().unwrap_or("").to_owned())),
                Value::Map(m) if !m.is_empty() => {
                    out.push((py_str(&m[0].0), py_str(&m[0].1)));
                }
                _ => {}
            }
        }
    }
    out
}

pub(crate) fn chunk_matches(chunk: &Value, key: &str, val: &str) -> bool {
    if key == "sls" {
        let sls = get_str(chunk, "__sls__").unwrap_or("");
        let inc = matches!(map_get(chunk, "__sls_included_from__"), Some(Value::Array(a)) if a.iter().any(|x| x.as_str() == Some(val)));
        return salt_matcher::fnmatch(sls, val) || inc;
    }
    let name = py_str(map_get(chunk, "name").unwrap_or(&Value::Nil));
    let id = py_str(map_get(chunk, "__id__").unwrap_or(&Value::Nil));
    (salt_matcher::fnmatch(&name, val) || salt_matcher::fnmatch(&id, val))
        && (key == "id" || get_str(chunk, "state") == Some(key))
}

/// Turn `require_in`/`watch_in`/`onchanges_in`/`onfail_in` into requisites on their targets.
/// A target ID that names no state is Salt's `reconcile_extend` error (its `_in` requisites
/// become `extend` entries), once per ID.
pub fn requisite_in(chunks: &mut [Value]) -> Vec<String> {
    let mut adds: Vec<(usize, String, Value)> = Vec::new();
    let mut errors: Vec<(String, String)> = Vec::new();
    for c in chunks.iter() {
        for kind in REQ_KINDS {
            let key = format!("{kind}_in");
            for (rk, rv) in req_list(c, &key) {
                let missing = rk != "sls"
                    && !rv.contains(['*', '?', '['])
                    && !chunks.iter().any(|t| chunk_matches(t, &rk, &rv));
                if missing && !errors.iter().any(|(n, _)| *n == rv) {
                    let (env, sls) = (
                        get_str(c, "__env__").unwrap_or("base"),
                        get_str(c, "__sls__").unwrap_or(""),
                    );
                    errors.push((
                        rv.clone(),
                        format!(
                            "Cannot extend ID '{rv}' in '{env}:{sls}'. It is not part of the high state.\nThis is likely due to a missing include statement or an incorrectly typed ID.\nEnsure that a state with an ID of '{rv}' is available\nin environment '{env}' and to SLS '{sls}'"
                        ),
                    ));
                }
                for (j, t) in chunks.iter().enumerate() {
                    if chunk_matches(t, &rk, &rv) {
                        let req = map(vec![(
                            get_str(c, "state").unwrap_or(""),
                            map_get(c, "__id__").cloned().unwrap_or(Value::Nil),
                        )]);
                        adds.push((j, (*kind).to_owned(), req));
                    }
                }
            }
        }
    }
    for (j, kind, req) in adds {
        let t = &mut chunks[j];
        match map_get(t, &kind).cloned() {
            Some(Value::Array(mut a)) => {
                if !a.contains(&req) {
                    a.push(req);
                }
                set(t, &kind, Value::Array(a));
            }
            _ => set(t, &kind, Value::Array(vec![req])),
        }
    }
    for c in chunks.iter_mut() {
        for kind in REQ_KINDS {
            crate::pop(c, &format!("{kind}_in"));
        }
    }
    errors.into_iter().map(|(_, e)| e).collect()
}
