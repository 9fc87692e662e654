//! `prereq` and `prereq_in` in high data, as Salt's `State.requisite_in` and
//! `reconcile_extend(high, strict=True)` do them before the chunks are compiled:
//!
//! * `A: prereq: [{file: B}]` adds `prerequired: [{<A's state>: A}]` to the states
//!   `find_name(B, file, strict)` finds (the ID `B` when it has that state, else the IDs whose
//!   `file` state has an argument equal to `B`); A keeps its `prereq`;
//! * `B: prereq_in: [{cmd: A}]` adds `prerequired: [{cmd: A}]` to B and
//!   `prereq: [{<B's state>: B}]` to A (an ID or `name` that names no single state is Salt's
//!   "Cannot extend ID" error).
//!
//! `sls: x` names every state of SLS `x`; a bare string names the first state of that ID, else
//! the state whose `name` it is. Salt keeps the targets of one list in one growing list (its
//! `hinges`), so a later item also repeats the earlier ones; so does this.

use rmpv::Value;

use crate::compile::High;
use crate::{get_str, map};
use salt_compat::map_get;
use salt_compat::py_str;

/// One `extend` entry (an ID or name, its states' arguments, the `__env__`/`__sls__` of the
/// last origin that named it).
struct Ext {
    name: String,
    states: Vec<(String, Vec<Value>)>,
    origin: Option<(String, String)>,
}

fn ext_args<'a>(ext: &'a mut Vec<Ext>, name: &str, state: &str) -> &'a mut Vec<Value> {
    let i = match ext.iter().position(|e| e.name == name) {
        Some(i) => i,
        None => {
            ext.push(Ext {
                name: name.to_owned(),
                states: Vec::new(),
                origin: None,
            });
            ext.len() - 1
        }
    };
    let states = &mut ext[i].states;
    let j = match states.iter().position(|(s, _)| s == state) {
        Some(j) => j,
        None => {
            states.push((state.to_owned(), Vec::new()));
            states.len() - 1
        }
    };
    &mut states[j].1
}

/// Salt's generic `_in` branch: `{rkey: [{state: id}]}` onto `name`'s `target_state`,
/// merged into an `rkey` entry already there.
fn add_in(ext: &mut Vec<Ext>, name: &str, target_state: &str, entry: Value, origin: (&str, &str)) {
    let args = ext_args(ext, name, target_state);
    let mut found = false;
    for a in args.iter_mut() {
        if let Value::Map(m) = a
            && let Some((k, Value::Array(list))) = m.first_mut()
            && k.as_str() == Some("prereq")
        {
            list.push(entry.clone());
            found = true;
        }
    }
    if !found {
        args.push(map(vec![("prereq", Value::Array(vec![entry]))]));
    }
    if let Some(e) = ext.iter_mut().find(|e| e.name == name) {
        e.origin = Some((origin.0.to_owned(), origin.1.to_owned()));
    }
}

fn state_keys(body: &Value) -> Vec<String> {
    match body {
        Value::Map(m) => m
            .iter()
            .filter_map(|(k, _)| k.as_str())
            .filter(|k| !k.starts_with("__"))
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

fn first_key(body: &Value) -> Option<String> {
    match body {
        Value::Map(m) => m.first().and_then(|(k, _)| k.as_str()).map(str::to_owned),
        _ => None,
    }
}

/// Salt's `find_name(name, state, high, strict=True)`: `(id, state)` pairs.
fn find_name(high: &High, name: &str, state: &str) -> Vec<(String, String)> {
    if let Some(i) = high.find(name)
        && map_get(&high.ids[i].1, state).is_some()
    {
        return vec![(name.to_owned(), state.to_owned())];
    }
    let mut out = Vec::new();
    if state == "sls" {
        for (nid, item) in &high.ids {
            if get_str(item, "__sls__") == Some(name)
                && let Some(k) = first_key(item)
            {
                out.push((nid.clone(), k));
            }
        }
        return out;
    }
    for (nid, body) in &high.ids {
        if let Some(Value::Array(args)) = map_get(body, state) {
            for arg in args {
                if let Value::Map(m) = arg
                    && m.len() == 1
                    && py_str(&m[0].1) == name
                {
                    out.push((nid.clone(), state.to_owned()));
                }
            }
        }
    }
    out
}

/// Salt's `find_sls_ids`: `(id, state)` of every state of SLS `sls`.
fn find_sls_ids(high: &High, sls: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (nid, item) in &high.ids {
        if get_str(item, "__sls__") == Some(sls) {
            for st in state_keys(item) {
                out.push((nid.clone(), st));
            }
        }
    }
    out
}

/// A bare-string requisite: `(state, id)` of that ID's first state, else of the state whose
/// `name` argument it is (the last found); `None` when nothing has it.
fn resolve_string(high: &High, ind: &str) -> Option<(String, String)> {
    if let Some(i) = high.find(ind) {
        return state_keys(&high.ids[i].1)
            .into_iter()
            .next()
            .map(|s| (s, ind.to_owned()));
    }
    let mut found = None;
    for (id, body) in &high.ids {
        for st in state_keys(body) {
            if let Some(Value::Array(args)) = map_get(body, &st) {
                for a in args {
                    if let Value::Map(m) = a
                        && m.iter()
                            .any(|(k, v)| k.as_str() == Some("name") && py_str(v) == ind)
                    {
                        found = Some((st.clone(), id.clone()));
                    }
                }
            }
        }
    }
    found
}

/// Salt's error for a requisite type with a dot (`file.managed: x`); the part before it.
fn undot(st: &str, name: &str, sls: &str, errors: &mut Vec<String>) -> String {
    match st.split_once('.') {
        Some((head, _)) => {
            errors.push(format!(
                "Invalid requisite in prereq: {st} for {name}, in SLS '{sls}'. Requisites must not contain dots, did you mean '{head}'?"
            ));
            head.to_owned()
        }
        None => st.to_owned(),
    }
}

/// Gather the `prereq`/`prereq_in` extends of `high` (Salt's `requisite_in` loop).
fn gather(high: &High, errors: &mut Vec<String>) -> Vec<Ext> {
    let mut ext: Vec<Ext> = Vec::new();
    for (id_, body) in &high.ids {
        let env = get_str(body, "__env__").unwrap_or("base").to_owned();
        let sls = get_str(body, "__sls__").unwrap_or("").to_owned();
        for state in state_keys(body) {
            let Some(Value::Array(run)) = map_get(body, &state) else {
                continue;
            };
            let me = map(vec![(state.as_str(), Value::from(id_.as_str()))]);
            for arg in run {
                let Value::Map(m) = arg else { continue };
                let Some((k, items)) = m.first() else {
                    continue;
                };
                let key = k.as_str().unwrap_or("");
                if key != "prereq" && key != "prereq_in" {
                    continue;
                }
                match items {
                    Value::Map(single) if key == "prereq_in" => {
                        for (st, name) in single {
                            let name = py_str(name);
                            let st = undot(&py_str(st), &name, &sls, errors);
                            add_in(&mut ext, &name, &st, me.clone(), (&env, &sls));
                        }
                    }
                    Value::Array(items) => {
                        let mut hinges: Vec<(String, String)> = Vec::new();
                        for ind in items {
                            let (pstate, pname) = match ind {
                                Value::Map(im) if !im.is_empty() => {
                                    (py_str(&im[0].0), py_str(&im[0].1))
                                }
                                Value::Map(_) => continue,
                                other => match resolve_string(high, &py_str(other)) {
                                    Some(found) => found,
                                    None => continue,
                                },
                            };
                            if pstate == "sls" {
                                hinges = find_sls_ids(high, &pname);
                            } else {
                                let pstate = undot(&pstate, &pname, &sls, errors);
                                hinges.push((pname, pstate));
                            }
                            for (name, st) in &hinges {
                                let req = map(vec![(st.as_str(), Value::from(name.as_str()))]);
                                if key == "prereq" {
                                    for (ext_id, req_state) in find_name(high, name, st) {
                                        ext_args(&mut ext, &ext_id, &req_state).push(map(vec![(
                                            "prerequired",
                                            Value::Array(vec![me.clone()]),
                                        )]));
                                    }
                                    continue;
                                }
                                ext_args(&mut ext, id_, &state)
                                    .push(map(vec![("prerequired", Value::Array(vec![req]))]));
                                add_in(&mut ext, name, st, me.clone(), (&env, &sls));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    ext
}

/// Apply `prereq`/`prereq_in` to `high`; Salt's errors for targets that name no single state.
pub(crate) fn requisite_in(high: &mut High) -> Vec<String> {
    let mut errors = Vec::new();
    for e in gather(high, &mut errors) {
        let Some(state_type) = e.states.first().map(|(s, _)| s.clone()) else {
            continue;
        };
        let mut name = e.name.clone();
        let has = high
            .find(&name)
            .is_some_and(|i| map_get(&high.ids[i].1, &state_type).is_some());
        if !has {
            let ids = find_name(high, &name, &state_type);
            if ids.len() != 1 {
                let (env, sls) = e
                    .origin
                    .clone()
                    .unwrap_or_else(|| ("base".to_owned(), "base".to_owned()));
                errors.push(format!(
                    "Cannot extend ID '{name}' in '{env}:{sls}'. It is not part of the high state.\nThis is likely due to a missing include statement or an incorrectly typed ID.\nEnsure that a state with an ID of '{name}' is available\nin environment '{env}' and to SLS '{sls}'"
                ));
                continue;
            }
            name.clone_from(&ids[0].0);
        }
        let Some(i) = high.find(&name) else { continue };
        let body = &mut high.ids[i].1;
        for (state, run) in e.states {
            match map_get(body, &state).cloned() {
                Some(Value::Array(mut target)) => {
                    for arg in run {
                        merge(&mut target, arg);
                    }
                    crate::set(body, &state, Value::Array(target));
                }
                _ => crate::set(body, &state, Value::Array(run)),
            }
        }
    }
    errors
}

/// `reconcile_extend` for one requisite argument: its list joins an entry of the same
/// requisite already there, else the argument is appended.
fn merge(target: &mut Vec<Value>, arg: Value) {
    let key = first_key(&arg).unwrap_or_default();
    let mut update = false;
    for t in target.iter_mut() {
        if let Value::Map(tm) = t
            && let Some((tk, Value::Array(dst))) = tm.first_mut()
            && tk.as_str() == Some(key.as_str())
            && let Value::Map(am) = &arg
            && let Some((_, Value::Array(src))) = am.first()
        {
            dst.extend(src.iter().cloned());
            update = true;
        }
    }
    if !update {
        target.push(arg);
    }
}
