//! `salt/utils/dictupdate.py`: the recursive update and the pillar merge strategies.

use rmpv::Value;

/// `dictupdate.update(dest, upd, merge_lists=...)`: maps merge recursively, lists replace
/// (or, with `merge_lists`, gain the items they lack), everything else replaces.
pub fn update(dest: Value, upd: Value, merge_lists: bool) -> Value {
    let (Value::Map(mut dest), Value::Map(upd)) = (dest, upd) else {
        return Value::Nil;
    };
    for (k, v) in upd {
        match dest.iter().position(|(e, _)| *e == k) {
            None => dest.push((k, v)),
            Some(i) => {
                let old = std::mem::replace(&mut dest[i].1, Value::Nil);
                dest[i].1 = match (old, v) {
                    (o @ Value::Map(_), n @ Value::Map(_)) => update(o, n, merge_lists),
                    (Value::Array(mut o), Value::Array(n)) if merge_lists => {
                        for x in n {
                            if !o.contains(&x) {
                                o.push(x);
                            }
                        }
                        Value::Array(o)
                    }
                    (_, n) => n,
                };
            }
        }
    }
    Value::Map(dest)
}

/// `dictupdate.merge(a, b, strategy, renderer, merge_lists)` for the strategies pillar
/// uses. `aggregate` is Salt's `merge_aggregate` (yamlex `merge_recursive` at level 1) on
/// data without yamlex `!aggregate` marks, which salt-rs's renderers never produce: the
/// top-level keys of `b` replace `a`'s whole, nothing merges below them, and
/// `merge_lists` does not apply.
pub fn merge(a: Value, b: Value, strategy: &str, merge_lists: bool) -> Value {
    match strategy {
        "aggregate" => {
            let (Value::Map(mut a), Value::Map(b)) = (a, b) else {
                return Value::Nil;
            };
            for (k, v) in b {
                match a.iter_mut().find(|(e, _)| *e == k) {
                    Some(slot) => slot.1 = v,
                    None => a.push((k, v)),
                }
            }
            Value::Map(a)
        }
        "overwrite" => {
            let Value::Map(mut a) = a else { return b };
            if let Value::Map(bm) = &b {
                for (k, v) in bm {
                    if let Some(slot) = a.iter_mut().find(|(e, _)| e == k) {
                        slot.1 = v.clone();
                    }
                }
            }
            update(Value::Map(a), b, merge_lists)
        }
        "none" => update(a, b, false),
        _ => update(a, b, merge_lists),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn y(t: &str) -> Value {
        crate::yaml::load(t).unwrap().unwrap()
    }

    #[test]
    fn strategies() {
        let a = y("a: {x: 1, l: [1, 2]}\nb: 1\n");
        let b = y("a: {y: 2, l: [2, 3]}\nc: 3\n");
        assert_eq!(
            merge(a.clone(), b.clone(), "recurse", false),
            y("a: {x: 1, l: [2, 3], y: 2}\nb: 1\nc: 3\n")
        );
        assert_eq!(
            merge(a.clone(), b.clone(), "smart", true),
            y("a: {x: 1, l: [1, 2, 3], y: 2}\nb: 1\nc: 3\n")
        );
        assert_eq!(
            merge(a.clone(), b.clone(), "overwrite", false),
            y("a: {y: 2, l: [2, 3]}\nb: 1\nc: 3\n")
        );
        assert_eq!(
            merge(a, b, "aggregate", true),
            y("a: {y: 2, l: [2, 3]}\nb: 1\nc: 3\n")
        );
    }
}
