//! The mine on the master (`salt/daemons/masterapi.py` `RemoteFuncs._mine*`): each minion's
//! mine is a map of function -> data in the minion data cache (`minions/<id>/mine.p`);
//! `_mine_get` answers from it for any target type, under the `mine_get` ACL (minion id
//! regex -> function regexes; unset or empty: everyone may read everything) and the
//! minion-side `allow_tgt` ACL of each entry.

use rmpv::Value;
use salt_keystore::KeyState;
use salt_matcher::{map_lookup, pcre_match, py_str};

use crate::minion_data::MinionCache;
use crate::state::Shared;

const ACL_ID: &str = "__saltmine_acl_id__";
const ACL_DATA: &str = "__data__";

/// Answer one `_mine*` command from minion `id`.
pub fn handle(shared: &Shared, id: &str, cmd: &str, load: &Value) -> Value {
    let cache = MinionCache::new(&shared.cfg.cachedir);
    let enabled = shared.cfg.minion_data_cache;
    match cmd {
        "_mine" => {
            let Some(new) = map_lookup(load, "data") else {
                return Value::Boolean(false);
            };
            if !enabled {
                return Value::Boolean(true);
            }
            let clear = map_lookup(load, "clear").is_some_and(|c| c.as_bool() == Some(true));
            let mut data = match cache.fetch(id, "mine") {
                Some(Value::Map(m)) if !clear => m,
                _ => Vec::new(),
            };
            if let Value::Map(new) = new {
                for (k, v) in new {
                    match data.iter_mut().find(|(e, _)| e == k) {
                        Some(slot) => slot.1 = v.clone(),
                        None => data.push((k.clone(), v.clone())),
                    }
                }
            }
            store(&cache, id, Value::Map(data))
        }
        "_mine_delete" => {
            let Some(fun) = map_lookup(load, "fun") else {
                return Value::Boolean(false);
            };
            if !enabled {
                return Value::Boolean(true);
            }
            match cache.fetch(id, "mine") {
                Some(Value::Map(mut m)) => {
                    let before = m.len();
                    m.retain(|(k, _)| k != fun);
                    if m.len() == before {
                        Value::Boolean(true)
                    } else {
                        store(&cache, id, Value::Map(m))
                    }
                }
                _ => Value::Boolean(false),
            }
        }
        "_mine_flush" => Value::Boolean(!enabled || cache.flush(id, "mine")),
        _ => mine_get(shared, &cache, id, load),
    }
}

fn store(cache: &MinionCache, id: &str, data: Value) -> Value {
    match cache.store(id, "mine", &data) {
        Ok(()) => Value::Boolean(true),
        Err(e) => {
            tracing::warn!("Mine data of {id} not stored: {e}");
            Value::Boolean(false)
        }
    }
}

fn empty() -> Value {
    Value::Map(Vec::new())
}

fn mine_get(shared: &Shared, cache: &MinionCache, id: &str, load: &Value) -> Value {
    let (Some(tgt), Some(fun)) = (map_lookup(load, "tgt"), map_lookup(load, "fun")) else {
        return empty();
    };
    let (functions, as_dict): (Vec<String>, bool) = match fun {
        Value::Array(items) => (items.iter().map(py_str).collect(), true),
        Value::String(_) => {
            let mut f: Vec<String> = py_str(fun).split(',').map(str::to_owned).collect();
            f.dedup();
            let many = f.len() > 1;
            (f, many)
        }
        _ => return empty(),
    };
    let acl = &shared.cfg.mine_get;
    let allowed: Vec<String> = if acl.is_empty() {
        functions
    } else {
        let perms: Vec<&String> = acl
            .iter()
            .filter(|(m, _)| pcre_match(m, id))
            .flat_map(|(_, p)| p)
            .collect();
        functions
            .into_iter()
            .filter(|f| perms.iter().any(|p| pcre_match(p, f)))
            .collect()
    };
    if allowed.is_empty() {
        return empty();
    }
    let tgt_type = map_lookup(load, "tgt_type")
        .or_else(|| map_lookup(load, "expr_form"))
        .map_or_else(|| "glob".to_owned(), py_str);
    let minions = match targets(shared, cache, &py_str_or_list(tgt), &tgt_type) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!("mine.get from {id}: {e}");
            return empty();
        }
    };
    let mut ret: Vec<(Value, Value)> = Vec::new();
    for minion in minions {
        let Some(data) = cache.fetch(&minion, "mine") else {
            continue;
        };
        for function in &allowed {
            let Some(entry) = map_lookup(&data, function) else {
                continue;
            };
            let mut result = entry.clone();
            if map_lookup(entry, ACL_ID).is_some() {
                result = map_lookup(entry, ACL_DATA).cloned().unwrap_or(Value::Nil);
                if let Some(allow) = map_lookup(entry, "allow_tgt") {
                    let ty = map_lookup(entry, "allow_tgt_type")
                        .map_or_else(|| "glob".to_owned(), py_str);
                    let ok = targets(shared, cache, &py_str_or_list(allow), &ty)
                        .is_ok_and(|ids| ids.iter().any(|i| i == id));
                    if !ok {
                        continue;
                    }
                }
            }
            let key = Value::from(minion.as_str());
            if as_dict {
                let f = Value::from(function.as_str());
                match ret.iter_mut().find(|(k, _)| *k == f) {
                    Some((_, Value::Map(m))) => m.push((key, result)),
                    _ => ret.push((f, Value::Map(vec![(key, result)]))),
                }
            } else {
                ret.push((key, result));
            }
        }
    }
    Value::Map(ret)
}

fn py_str_or_list(v: &Value) -> String {
    match v {
        Value::Array(items) => items.iter().map(py_str).collect::<Vec<_>>().join(","),
        other => py_str(other),
    }
}

/// Minions matching a target from the cache, not greedy (Salt's `greedy=False`).
fn targets(
    shared: &Shared,
    cache: &MinionCache,
    tgt: &str,
    tgt_type: &str,
) -> Result<Vec<String>, String> {
    let groups = crate::target::nodegroups(&shared.cfg);
    let target = crate::target::resolve(tgt, tgt_type, &groups).map_err(|e| e.to_string())?;
    let accepted = shared.store.list(KeyState::Accepted);
    target
        .expected(accepted.iter().map(String::as_str), cache, &groups, false)
        .map_err(|e| e.to_string())
}
