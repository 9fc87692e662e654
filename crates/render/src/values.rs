//! Values inside templates: Salt's data as mutable dicts and lists (Jinja2 formulas call
//! `{% do d.update(...) %}`, `{% do l.append(x) %}`), and conversions to and from msgpack.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use minijinja::value::{Enumerator, Object, ObjectRepr, Value as Mj, ValueKind};
use minijinja::{Error, ErrorKind, State};
use rmpv::Value;

/// A Python dict: ordered, mutable in place.
#[derive(Debug, Default)]
pub struct Dict(Mutex<Vec<(Mj, Mj)>>);

/// A Python list, mutable in place.
#[derive(Debug, Default)]
pub struct List(Mutex<Vec<Mj>>);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn bad_args(msg: &str) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.to_owned())
}

impl Dict {
    /// A dict of these entries.
    pub fn from_entries(entries: Vec<(Mj, Mj)>) -> Mj {
        Mj::from_object(Dict(Mutex::new(entries)))
    }

    fn set(&self, k: Mj, v: Mj) {
        let mut g = lock(&self.0);
        match g.iter_mut().find(|(e, _)| *e == k) {
            Some(slot) => slot.1 = v,
            None => g.push((k, v)),
        }
    }
}

impl Object for Dict {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    /// Python's `repr` (`~`, `str.format` and the like).
    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entries = lock(&self.0).clone();
        f.write_str(&crate::pytext::py_repr(&entries.into_iter().collect()))
    }

    fn get_value(self: &Arc<Self>, key: &Mj) -> Option<Mj> {
        lock(&self.0)
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(lock(&self.0).iter().map(|(k, _)| k.clone()).collect())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &State<'_, '_>,
        method: &str,
        args: &[Mj],
    ) -> Result<Mj, Error> {
        match method {
            "update" => {
                for a in args {
                    if a.is_kwargs() || a.kind() == ValueKind::Map {
                        for k in a.try_iter()? {
                            let v = a.get_item(&k)?;
                            self.set(k, v);
                        }
                    } else {
                        return Err(bad_args("dict.update() takes a mapping"));
                    }
                }
                Ok(Mj::from(()))
            }
            "setdefault" => {
                let key = args
                    .first()
                    .cloned()
                    .ok_or_else(|| bad_args("missing key"))?;
                if let Some(v) = self.get_value(&key) {
                    return Ok(v);
                }
                let v = args.get(1).cloned().unwrap_or(Mj::from(()));
                self.set(key, v.clone());
                Ok(v)
            }
            "pop" => {
                let key = args.first().ok_or_else(|| bad_args("missing key"))?;
                let mut g = lock(&self.0);
                match g.iter().position(|(k, _)| k == key) {
                    Some(i) => Ok(g.remove(i).1),
                    None => args.get(1).cloned().ok_or_else(|| {
                        Error::new(ErrorKind::InvalidOperation, format!("KeyError: {key}"))
                    }),
                }
            }
            "clear" => {
                lock(&self.0).clear();
                Ok(Mj::from(()))
            }
            "copy" => Ok(Dict::from_entries(lock(&self.0).clone())),
            "has_key" => Ok(Mj::from(
                self.get_value(args.first().unwrap_or(&Mj::UNDEFINED))
                    .is_some(),
            )),
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    }
}

impl Object for List {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    /// Python's `repr`.
    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items = lock(&self.0).clone();
        f.write_str(&crate::pytext::py_repr(&Mj::from(items)))
    }

    fn get_value(self: &Arc<Self>, key: &Mj) -> Option<Mj> {
        let g = lock(&self.0);
        let i = key.as_i64()?;
        let i = if i < 0 { g.len() as i64 + i } else { i };
        g.get(usize::try_from(i).ok()?).cloned()
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(lock(&self.0).len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &State<'_, '_>,
        method: &str,
        args: &[Mj],
    ) -> Result<Mj, Error> {
        let mut g = lock(&self.0);
        match method {
            "append" => {
                g.push(
                    args.first()
                        .cloned()
                        .ok_or_else(|| bad_args("missing item"))?,
                );
            }
            "extend" => {
                let other = args.first().ok_or_else(|| bad_args("missing list"))?;
                let items: Vec<Mj> = other.try_iter()?.collect();
                g.extend(items);
            }
            "insert" => {
                let (Some(i), Some(v)) = (args.first().and_then(Mj::as_i64), args.get(1)) else {
                    return Err(bad_args("list.insert(index, item)"));
                };
                let i = usize::try_from(i.max(0)).unwrap_or(0).min(g.len());
                g.insert(i, v.clone());
            }
            "pop" => {
                if g.is_empty() {
                    return Err(bad_args("pop from empty list"));
                }
                let i = match args.first().and_then(Mj::as_i64) {
                    Some(i) if i < 0 => g.len() as i64 + i,
                    Some(i) => i,
                    None => g.len() as i64 - 1,
                };
                let i = usize::try_from(i).map_err(|_| bad_args("pop index out of range"))?;
                if i >= g.len() {
                    return Err(bad_args("pop index out of range"));
                }
                return Ok(g.remove(i));
            }
            "remove" => {
                let v = args.first().ok_or_else(|| bad_args("missing item"))?;
                match g.iter().position(|x| x == v) {
                    Some(i) => {
                        g.remove(i);
                    }
                    None => return Err(bad_args("list.remove(x): x not in list")),
                }
            }
            "index" => {
                let v = args.first().ok_or_else(|| bad_args("missing item"))?;
                return g
                    .iter()
                    .position(|x| x == v)
                    .map(|i| Mj::from(i as i64))
                    .ok_or_else(|| bad_args("value is not in list"));
            }
            "reverse" => g.reverse(),
            "sort" => g.sort(),
            "clear" => g.clear(),
            "copy" => return Ok(Mj::from_object(List(Mutex::new(g.clone())))),
            _ => return Err(Error::from(ErrorKind::UnknownMethod)),
        }
        Ok(Mj::from(()))
    }
}

/// Make a template value (a literal, a filter result) mutable, deeply.
pub fn mutable(v: &Mj) -> Mj {
    if v.downcast_object_ref::<Dict>().is_some() || v.downcast_object_ref::<List>().is_some() {
        return v.clone();
    }
    match v.kind() {
        ValueKind::Map => {
            let mut entries = Vec::new();
            if let Ok(keys) = v.try_iter() {
                for k in keys {
                    let val = v.get_item(&k).unwrap_or_default();
                    entries.push((k, mutable(&val)));
                }
            }
            Dict::from_entries(entries)
        }
        ValueKind::Seq | ValueKind::Iterable => {
            let items = v
                .try_iter()
                .map(|it| it.map(|x| mutable(&x)).collect())
                .unwrap_or_default();
            Mj::from_object(List(Mutex::new(items)))
        }
        _ => v.clone(),
    }
}

/// msgpack -> template value (dicts and lists mutable).
pub fn to_jinja(v: &Value) -> Mj {
    match v {
        Value::Nil => Mj::from(()),
        Value::Boolean(b) => Mj::from(*b),
        Value::Integer(i) => match (i.as_i64(), i.as_u64()) {
            (Some(n), _) => Mj::from(n),
            (None, Some(n)) => Mj::from(n),
            _ => Mj::from(()),
        },
        Value::F32(f) => Mj::from(f64::from(*f)),
        Value::F64(f) => Mj::from(*f),
        Value::String(s) => match s.as_str() {
            Some(t) => Mj::from(t),
            None => Mj::from_bytes(s.as_bytes().to_vec()),
        },
        Value::Binary(b) => Mj::from_bytes(b.clone()),
        Value::Array(items) => {
            Mj::from_object(List(Mutex::new(items.iter().map(to_jinja).collect())))
        }
        Value::Map(entries) => Dict::from_entries(
            entries
                .iter()
                .map(|(k, v)| (to_jinja(k), to_jinja(v)))
                .collect(),
        ),
        Value::Ext(..) => Mj::from(()),
    }
}

/// Template value -> msgpack.
pub fn from_jinja(v: &Mj) -> Value {
    match v.kind() {
        ValueKind::Undefined | ValueKind::None => Value::Nil,
        ValueKind::Bool => Value::Boolean(v.is_true()),
        // A whole float stays a float (`2.0`, `1e16`): `as_i64` would take it.
        ValueKind::Number if !v.is_integer() => {
            Value::F64(f64::try_from(v.clone()).unwrap_or(f64::NAN))
        }
        ValueKind::Number => {
            if let Some(i) = v.as_i64() {
                Value::from(i)
            } else if let Ok(u) = u64::try_from(v.clone()) {
                Value::from(u)
            } else {
                Value::F64(f64::try_from(v.clone()).unwrap_or(f64::NAN))
            }
        }
        ValueKind::String => Value::from(v.as_str().unwrap_or_default()),
        ValueKind::Bytes => Value::Binary(v.as_bytes().unwrap_or_default().to_vec()),
        ValueKind::Seq | ValueKind::Iterable => Value::Array(
            v.try_iter()
                .map(|it| it.map(|x| from_jinja(&x)).collect())
                .unwrap_or_default(),
        ),
        ValueKind::Map => Value::Map(
            v.try_iter()
                .map(|keys| {
                    keys.map(|k| {
                        let val = v.get_item(&k).unwrap_or_default();
                        (from_jinja(&k), from_jinja(&val))
                    })
                    .collect()
                })
                .unwrap_or_default(),
        ),
        _ => Value::from(v.to_string()),
    }
}

/// `salt.utils.dictupdate.update(dest, upd, merge_lists=...)` in place on a template dict
/// (`defaults.merge` changes the caller's dict, as in Python): nested dicts merge into the
/// existing ones, lists replace (or gain the items they lack with `merge_lists`).
pub fn update_in_place(dest: &Mj, upd: &Mj, merge_lists: bool) -> Result<(), Error> {
    let Some(d) = dest.downcast_object_ref::<Dict>() else {
        return Err(bad_args(
            "TypeError: Cannot update using non-dict types in dictupdate.update()",
        ));
    };
    if upd.kind() != ValueKind::Map {
        return Err(bad_args(
            "TypeError: Cannot update using non-dict types in dictupdate.update()",
        ));
    }
    for k in upd.try_iter()? {
        let v = upd.get_item(&k)?;
        let cur = lock(&d.0)
            .iter()
            .find(|(e, _)| *e == k)
            .map(|(_, c)| c.clone());
        match cur {
            Some(c) if c.downcast_object_ref::<Dict>().is_some() && v.kind() == ValueKind::Map => {
                update_in_place(&c, &v, merge_lists)?;
            }
            Some(c) if merge_lists && c.kind() == ValueKind::Seq && v.kind() == ValueKind::Seq => {
                let mut merged: Vec<Mj> = c.try_iter()?.collect();
                for x in v.try_iter()? {
                    if !merged.contains(&x) {
                        merged.push(x);
                    }
                }
                d.set(k, Mj::from_object(List(Mutex::new(merged))));
            }
            _ => d.set(k, mutable(&v)),
        }
    }
    Ok(())
}
