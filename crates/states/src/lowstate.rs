//! High data -> low chunks: `extend`/`exclude` (`reconcile_extend`), `verify_high` (the
//! parts salt-rs enforces), `compile_high_data` and `order_chunks`.

use rmpv::Value;

use std::collections::HashMap;

use crate::compile::{High, REQUISITES};
use crate::{get_str, map, pop, set};
use salt_compat::map_get;

fn first_key(v: &Value) -> Option<&str> {
    match v {
        Value::Map(m) => m.first().and_then(|(k, _)| k.as_str()),
        _ => None,
    }
}

/// Apply `extend`, then `exclude`, to the high data (`reconcile_extend`, `apply_exclude`).
pub fn reconcile(high: &mut High) -> Vec<String> {
    let mut errors = Vec::new();
    for (name, ext) in std::mem::take(&mut high.extend) {
        let Some(i) = high.find(&name) else {
            errors.push(format!(
                "Cannot extend ID '{name}' in '{}:{}'. It is not part of the high state.\nThis is likely due to a missing include statement or an incorrectly typed ID.\nEnsure that a state with an ID of '{name}' is available\nin environment '{}' and to SLS '{}'",
                get_str(&ext, "__env__").unwrap_or("base"),
                get_str(&ext, "__sls__").unwrap_or(""),
                get_str(&ext, "__env__").unwrap_or("base"),
                get_str(&ext, "__sls__").unwrap_or(""),
            ));
            continue;
        };
        let Value::Map(ext_entries) = ext else {
            continue;
        };
        for (state, run) in ext_entries {
            let Some(state) = state.as_str().map(str::to_owned) else {
                continue;
            };
            if state.starts_with("__") {
                continue;
            }
            let body = &mut high.ids[i].1;
            let Value::Array(run) = run else { continue };
            let Some(Value::Array(target)) = map_get(body, &state).cloned() else {
                set(body, &state, Value::Array(run));
                continue;
            };
            let mut target = target;
            for arg in run {
                let mut update = false;
                #[allow(clippy::needless_range_loop)] // the slot is replaced whole in places
                for h in 0..target.len() {
                    match (&arg, &mut target[h]) {
                        (Value::String(_), t @ Value::String(_)) => {
                            *t = arg.clone();
                            update = true;
                        }
                        (Value::Map(am), Value::Map(hm)) if !am.is_empty() && !hm.is_empty() => {
                            let af = first_key(&arg).unwrap_or("").to_owned();
                            let hf = hm[0].0.as_str().unwrap_or("").to_owned();
                            if af == hf {
                                if REQUISITES.contains(&af.as_str()) {
                                    if let (Value::Array(dst), Value::Array(src)) =
                                        (&mut hm[0].1, &am[0].1)
                                    {
                                        dst.extend(src.iter().cloned());
                                    }
                                } else {
                                    target[h] = arg.clone();
                                }
                                update = true;
                            } else if af == "name" && hf == "names" {
                                target[h] = arg.clone();
                            }
                        }
                        _ => {}
                    }
                }
                if !update {
                    target.push(arg);
                }
            }
            set(body, &state, Value::Array(target));
        }
    }
    // Salt applies `exclude` after `extend` (`State.apply_exclude` in `call_high`).
    for ex in std::mem::take(&mut high.exclude) {
        let (kind, val) = match &ex {
            Value::Map(m) if m.len() == 1 => {
                (salt_compat::py_str(&m[0].0), salt_compat::py_str(&m[0].1))
            }
            other => ("sls".to_owned(), salt_compat::py_str(other)),
        };
        if kind == "id" {
            high.ids.retain(|(id, _)| *id != val);
        } else {
            high.ids
                .retain(|(_, b)| get_str(b, "__sls__") != Some(val.as_str()));
        }
    }
    errors
}

/// Check the high data (`verify_high`, the parts salt-rs enforces).
pub fn verify(high: &High) -> Vec<String> {
    let mut errors = Vec::new();
    // id -> (its state, requisite target -> requisite kind): Salt's direct-cycle check.
    let mut reqs = ReqIndex::new();
    for (id, body) in &high.ids {
        let sls = get_str(body, "__sls__").unwrap_or("");
        let Value::Map(entries) = body else { continue };
        for (k, args) in entries {
            let Some(state) = k.as_str() else { continue };
            if state.starts_with("__") {
                continue;
            }
            let Value::Array(args) = args else {
                errors.push(format!(
                    "State '{id}' in SLS '{sls}' is not formed as a list"
                ));
                continue;
            };
            let funs = args
                .iter()
                .filter(|a| matches!(a, Value::String(_)))
                .count();
            if funs == 0 {
                errors.push(format!(
                    "No function declared in state '{state}' in SLS '{sls}'"
                ));
            } else if funs > 1 {
                errors.push(format!(
                    "Too many functions declared in state '{state}' in SLS '{sls}'"
                ));
            }
            for a in args {
                if let Value::Map(m) = a {
                    direct_cycle(&mut reqs, &mut errors, (id, state, sls), m);
                    if let Some((k, v)) = m.first()
                        && k.as_str() == Some("prereq")
                        && !matches!(v, Value::Array(_))
                    {
                        errors.push(format!(
                            "The prereq statement in state '{id}' in SLS '{sls}' needs to be formed as a list"
                        ));
                    }
                    for (ak, _) in m {
                        let ak = ak.as_str().unwrap_or("");
                        if matches!(
                            ak,
                            "listen"
                                | "listen_in"
                                | "use"
                                | "use_in"
                                | "require_any"
                                | "watch_any"
                                | "onfail_any"
                                | "onfail_all"
                                | "onchanges_any"
                        ) {
                            errors.push(format!(
                                "State '{id}' in SLS '{sls}' uses the '{ak}' requisite, which salt-rs does not support"
                            ));
                        }
                    }
                }
            }
        }
    }
    errors
}

/// High data -> low chunks in run order (`compile_high_data` + `order_chunks`).
pub fn compile_high_data(high: &High) -> Vec<Value> {
    let mut chunks = Vec::new();
    for (id, body) in &high.ids {
        let Value::Map(entries) = body else { continue };
        for (state, run) in entries {
            let Some(state) = state.as_str() else {
                continue;
            };
            if state.starts_with("__") {
                continue;
            }
            let Value::Array(run) = run else { continue };
            let mut chunk = map(vec![
                ("state", Value::from(state)),
                ("name", Value::from(id.as_str())),
            ]);
            for key in ["__sls__", "__env__", "__sls_included_from__"] {
                if let Some(v) = map_get(body, key) {
                    set(&mut chunk, key, v.clone());
                }
            }
            set(&mut chunk, "__id__", Value::from(id.as_str()));
            let mut funs: Vec<String> = Vec::new();
            let mut names: Vec<Value> = Vec::new();
            for arg in run {
                match arg {
                    Value::String(s) => {
                        let s = s.as_str().unwrap_or_default().to_owned();
                        if !funs.contains(&s) {
                            funs.push(s);
                        }
                    }
                    Value::Map(m) => {
                        for (k, v) in m {
                            let k = salt_compat::py_str(k);
                            match k.as_str() {
                                "names" => {
                                    if let Value::Array(ns) = v {
                                        for n in ns {
                                            if !names.contains(n) {
                                                names.push(n.clone());
                                            }
                                        }
                                    }
                                }
                                "state" => {}
                                "name" if !matches!(v, Value::String(_)) => {
                                    set(&mut chunk, "name", Value::from(id.as_str()));
                                }
                                _ => set(&mut chunk, &k, v.clone()),
                            }
                        }
                    }
                    _ => {}
                }
            }
            if names.is_empty() {
                for f in &funs {
                    let mut live = chunk.clone();
                    set(&mut live, "fun", Value::from(f.as_str()));
                    chunks.push(live);
                }
            } else {
                for (i, entry) in names.iter().enumerate() {
                    let mut live = chunk.clone();
                    match entry {
                        Value::Map(m) if !m.is_empty() => {
                            set(&mut live, "name", Value::from(salt_compat::py_str(&m[0].0)));
                            if let Value::Array(opts) = &m[0].1 {
                                for o in opts {
                                    if let Value::Map(om) = o {
                                        for (k, v) in om {
                                            set(&mut live, &salt_compat::py_str(k), v.clone());
                                        }
                                    }
                                }
                            }
                        }
                        other => set(&mut live, "name", Value::from(salt_compat::py_str(other))),
                    }
                    set(&mut live, "name_order", Value::from(i as i64 + 1));
                    for f in &funs {
                        let mut l = live.clone();
                        set(&mut l, "fun", Value::from(f.as_str()));
                        chunks.push(l);
                    }
                }
            }
        }
    }
    order_chunks(chunks)
}

fn order_chunks(mut chunks: Vec<Value>) -> Vec<Value> {
    let mut cap: i64 = 1;
    for c in &chunks {
        if let Some(Value::Integer(i)) = map_get(c, "order") {
            let o = i.as_i64().unwrap_or(0);
            if o > cap - 1 && o > 0 {
                cap = o + 100;
            }
        }
    }
    let mut keyed: Vec<(f64, String, Value)> = Vec::new();
    for mut c in chunks.drain(..) {
        let mut order: f64 = match map_get(&c, "order") {
            None => cap as f64,
            Some(Value::Integer(i)) => i.as_i64().unwrap_or(0) as f64,
            Some(Value::F64(f)) => *f,
            Some(Value::String(s)) if s.as_str() == Some("last") => (cap + 1_000_000) as f64,
            Some(Value::String(s)) if s.as_str() == Some("first") => 0.0,
            Some(_) => cap as f64,
        };
        if let Some(no) = pop(&mut c, "name_order") {
            order += no.as_i64().unwrap_or(0) as f64 / 10000.0;
        }
        if order < 0.0 {
            order += (cap + 1_000_000) as f64;
        }
        let int_like = order.fract() == 0.0;
        set(
            &mut c,
            "order",
            if int_like {
                Value::from(order as i64)
            } else {
                Value::F64(order)
            },
        );
        let key = format!(
            "{}{}{}",
            get_str(&c, "state").unwrap_or(""),
            salt_compat::py_str(map_get(&c, "name").unwrap_or(&Value::Nil)),
            get_str(&c, "fun").unwrap_or("")
        );
        keyed.push((order, key, c));
    }
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    keyed.into_iter().map(|(_, _, c)| c).collect()
}

/// id -> (its state, requisite target -> requisite kind).
type ReqIndex = HashMap<String, (String, Vec<(String, String)>)>;

/// Salt's `verify_high` check for two states requiring each other.
fn direct_cycle(
    reqs: &mut ReqIndex,
    errors: &mut Vec<String>,
    (id, state, sls): (&str, &str, &str),
    arg: &[(Value, Value)],
) {
    let Some((k, Value::Array(list))) = arg.first() else {
        return;
    };
    if !matches!(
        k.as_str(),
        Some("require" | "watch" | "prereq" | "onchanges")
    ) {
        return;
    }
    let entry = reqs
        .entry(id.to_owned())
        .or_insert_with(|| (state.to_owned(), Vec::new()));
    entry.0 = state.to_owned();
    for req in list {
        let (rk, rv) = match req {
            Value::String(s) => ("id".to_owned(), s.as_str().unwrap_or("").to_owned()),
            Value::Map(m) if !m.is_empty() => {
                (salt_compat::py_str(&m[0].0), salt_compat::py_str(&m[0].1))
            }
            _ => continue,
        };
        if let Some(e) = reqs.get_mut(id) {
            match e.1.iter_mut().find(|(v, _)| *v == rv) {
                Some(slot) => slot.1.clone_from(&rk),
                None => e.1.push((rv.clone(), rk.clone())),
            }
        }
        if let Some((other_state, other_reqs)) = reqs.get(&rv)
            && other_reqs.iter().any(|(v, kind)| v == id && kind == state)
            && *other_state == rk
        {
            errors.push(format!(
                "A recursive requisite was found, SLS \"{sls}\" ID \"{id}\" ID \"{rv}\""
            ));
        }
    }
}
