//! The mine on the master (`salt/daemons/masterapi.py` `RemoteFuncs._mine*`): each minion's
//! mine is a map of function -> data in the minion data cache (`minions/<id>/mine.p`);
//! `_mine_get` answers from it for any target type, under the `mine_get` ACL (minion id
//! regex -> function regexes; unset or empty: everyone may read everything) and the
//! minion-side `allow_tgt` ACL of each entry.

use rmpv::Value;
use salt_compat::{map_get, py_str};
use salt_keystore::KeyState;
use salt_matcher::pcre_match;
use salt_proto::msg::{Command, MineDelete, MineGet, MineLoad};

use crate::minions::data::MinionCache;
use crate::shared::Shared;

const ACL_ID: &str = "__saltmine_acl_id__";
const ACL_DATA: &str = "__data__";

/// The reply to one `_mine*` load from minion `id`, read as the request server reads it
/// (the typed readers of `salt_proto::msg`, Salt's reply to a load that lacks a key).
pub fn handle(shared: &Shared, id: &str, cmd: &str, load: &Value) -> Value {
    match Command::read(cmd, load.clone()) {
        Ok(Command::Mine(m)) => store(shared, id, &m),
        Ok(Command::MineGet(g)) => get(shared, id, &g),
        Ok(Command::MineDelete(d)) => delete(shared, id, &d),
        Ok(Command::MineFlush) => flush(shared, id),
        Ok(_) => Value::Map(Vec::new()),
        Err(source) => match (super::error::RequestError::Command {
            cmd: cmd.to_owned(),
            source,
        })
        .wire()
        {
            super::error::Wire::Sealed(v) | super::error::Wire::Plain(v) => v,
        },
    }
}

/// `_mine`: merge (or with `clear`, replace) the minion's mine data.
pub fn store(shared: &Shared, id: &str, m: &MineLoad) -> Value {
    if !shared.cfg.minion_data_cache {
        return Value::Boolean(true);
    }
    let cache = MinionCache::new(&shared.cfg.cachedir);
    let mut data = match m.clear {
        Some(true) => Vec::new(),
        _ => match cache.fetch(id, "mine") {
            Some(Value::Map(old)) => old,
            _ => Vec::new(),
        },
    };
    if let Value::Map(new) = &m.data {
        for (k, v) in new {
            match data.iter_mut().find(|(e, _)| e == k) {
                Some(slot) => slot.1 = v.clone(),
                None => data.push((k.clone(), v.clone())),
            }
        }
    }
    put(&cache, id, Value::Map(data))
}

/// `_mine_delete`: drop one function from the minion's mine.
pub fn delete(shared: &Shared, id: &str, d: &MineDelete) -> Value {
    if !shared.cfg.minion_data_cache {
        return Value::Boolean(true);
    }
    let cache = MinionCache::new(&shared.cfg.cachedir);
    match cache.fetch(id, "mine") {
        Some(Value::Map(mut m)) => {
            let before = m.len();
            m.retain(|(k, _)| *k != d.fun);
            if m.len() == before {
                Value::Boolean(true)
            } else {
                put(&cache, id, Value::Map(m))
            }
        }
        _ => Value::Boolean(false),
    }
}

/// `_mine_flush`: drop the minion's mine.
pub fn flush(shared: &Shared, id: &str) -> Value {
    let cache = MinionCache::new(&shared.cfg.cachedir);
    Value::Boolean(!shared.cfg.minion_data_cache || cache.flush(id, "mine"))
}

/// `_mine_get`: other minions' mine data, under the `mine_get` ACL.
pub fn get(shared: &Shared, id: &str, g: &MineGet) -> Value {
    let cache = MinionCache::new(&shared.cfg.cachedir);
    mine_get(shared, &cache, id, g)
}

fn put(cache: &MinionCache, id: &str, data: Value) -> Value {
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

fn mine_get(shared: &Shared, cache: &MinionCache, id: &str, g: &MineGet) -> Value {
    let (tgt, fun) = (&g.tgt, &g.fun);
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
    let tgt_type = g
        .tgt_type
        .as_ref()
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
            let Some(entry) = map_get(&data, function) else {
                continue;
            };
            let mut result = entry.clone();
            if map_get(entry, ACL_ID).is_some() {
                result = map_get(entry, ACL_DATA).cloned().unwrap_or(Value::Nil);
                if let Some(allow) = map_get(entry, "allow_tgt") {
                    let ty =
                        map_get(entry, "allow_tgt_type").map_or_else(|| "glob".to_owned(), py_str);
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
    let groups = crate::minions::target::nodegroups(&shared.cfg);
    let target =
        crate::minions::target::resolve(tgt, tgt_type, &groups).map_err(|e| e.to_string())?;
    let accepted = shared.store.list(KeyState::Accepted);
    target
        .expected(accepted.iter().map(String::as_str), cache, &groups, false)
        .map_err(|e| e.to_string())
}
