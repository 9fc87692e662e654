//! `SqlBaseExtPillar.process_results`: rows folded into nested mappings, the way Salt's
//! code does it on Python objects that alias each other (kept here as an arena of nodes,
//! a node's index its `id()`).

use rmpv::Value;

use super::Query;

enum N {
    Dict(Vec<(Value, usize)>),
    List(Vec<usize>),
    Leaf(Value),
}

/// The result being built across the queries of one call (`self.result`, `self.focus`).
pub(crate) struct State {
    nodes: Vec<N>,
    focus: usize,
}

const ROOT: usize = 0;

impl State {
    pub(crate) fn new() -> Self {
        Self {
            nodes: vec![N::Dict(Vec::new())],
            focus: ROOT,
        }
    }

    fn add(&mut self, n: N) -> usize {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    fn get(&self, d: usize, k: &Value) -> Result<Option<usize>, String> {
        match &self.nodes[d] {
            N::Dict(e) => Ok(e.iter().find(|(x, _)| x == k).map(|(_, v)| *v)),
            N::List(items) => Ok(items
                .iter()
                .copied()
                .find(|i| matches!(&self.nodes[*i], N::Leaf(v) if v == k))),
            N::Leaf(v) => Err(format!("argument of type {v} is not iterable")),
        }
    }

    fn set(&mut self, d: usize, k: Value, v: usize) -> Result<(), String> {
        match &mut self.nodes[d] {
            N::Dict(e) => {
                match e.iter_mut().find(|(x, _)| *x == k) {
                    Some(slot) => slot.1 = v,
                    None => e.push((k, v)),
                }
                Ok(())
            }
            _ => Err("object does not support item assignment".to_owned()),
        }
    }

    fn leaf(&mut self, v: Value) -> usize {
        self.add(N::Leaf(v))
    }

    /// `enter_root` then `process_results` for one query's rows.
    pub(crate) fn query(
        &mut self,
        q: &Query,
        names: &[String],
        rows: Vec<Vec<Value>>,
    ) -> Result<(), String> {
        // enter_root
        self.focus = match &q.root {
            Some(r) => {
                let f = self.add(N::Dict(Vec::new()));
                self.set(ROOT, Value::from(r.as_str()), f)?;
                f
            }
            None => ROOT,
        };
        // process_fields
        let num = names.len() as i64;
        let depth = if q.depth == 0 || q.depth >= num {
            num - 1
        } else {
            q.depth
        };
        let wl = |n: i64| q.with_lists.contains(&n);
        let at = |ret: &[Value], i: i64| -> Result<Value, String> {
            let idx = if i < 0 { i + ret.len() as i64 } else { i };
            usize::try_from(idx)
                .ok()
                .and_then(|i| ret.get(i))
                .cloned()
                .ok_or_else(|| "tuple index out of range".to_owned())
        };
        let mut listify: Vec<(usize, Vec<Value>)> = Vec::new();
        let note = |listify: &mut Vec<(usize, Vec<Value>)>, d: usize, k: Value| match listify
            .iter_mut()
            .find(|(x, _)| *x == d)
        {
            Some((_, keys)) => {
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
            None => listify.push((d, vec![k])),
        };
        for ret in rows {
            let mut crd = self.focus;
            if q.as_json && num == 1 {
                let row = match &ret[0] {
                    Value::String(s) => {
                        let text = s.as_str().ok_or("as_json: not UTF-8")?;
                        let j: serde_json::Value =
                            serde_json::from_str(text).map_err(|e| e.to_string())?;
                        salt_compat::json::json_to_msgpack(&j)
                    }
                    other => other.clone(),
                };
                if !matches!(row, Value::Map(_)) {
                    return Err("as_json rows must decode to a dict".to_owned());
                }
                let cur = self.value(crd);
                let merged = salt_render::merge::update(cur, row, q.as_list);
                let fresh = self.build(merged);
                self.nodes.swap(crd, fresh);
                continue;
            }
            for i in 0..(depth - 1).max(0) {
                let k = at(&ret, i)?;
                if wl(i + 1) {
                    note(&mut listify, crd, k.clone());
                }
                match self.get(crd, &k)? {
                    None => {
                        let d = self.add(N::Dict(Vec::new()));
                        self.set(crd, k, d)?;
                        crd = d;
                    }
                    Some(child) => match &self.nodes[child] {
                        N::List(_) => {
                            let t = self.add(N::Dict(Vec::new()));
                            if let N::List(items) = &mut self.nodes[child] {
                                items.push(t);
                            }
                            crd = t;
                        }
                        N::Leaf(_) => {
                            let t = self.add(N::Dict(Vec::new()));
                            if q.as_list {
                                let l = self.add(N::List(vec![child, t]));
                                self.set(crd, k, l)?;
                            } else {
                                self.set(crd, k, t)?;
                            }
                            crd = t;
                        }
                        N::Dict(_) => crd = child,
                    },
                }
            }
            if depth == num - 1 {
                let nk = num - 2;
                let key = at(&ret, nk)?;
                let last = at(&ret, num - 1)?;
                let present = self.get(crd, &key)?;
                if (q.as_list && present.is_some()) || wl(nk + 1) {
                    let list = match present {
                        Some(c) if matches!(self.nodes[c], N::List(_)) => c,
                        Some(c) => {
                            let l = self.add(N::List(vec![c]));
                            self.set(crd, key, l)?;
                            l
                        }
                        None => {
                            let l = self.add(N::List(Vec::new()));
                            self.set(crd, key, l)?;
                            l
                        }
                    };
                    let v = self.leaf(last);
                    if let N::List(items) = &mut self.nodes[list] {
                        items.push(v);
                    }
                } else if !q.ignore_null || !last.is_nil() {
                    let v = self.leaf(last);
                    self.set(crd, key, v)?;
                }
            } else {
                let key = at(&ret, depth - 1)?;
                if self.get(crd, &key)?.is_none() {
                    let d = self.add(N::Dict(Vec::new()));
                    self.set(crd, key.clone(), d)?;
                }
                if wl(depth) {
                    note(&mut listify, crd, key.clone());
                }
                crd = self.get(crd, &key)?.ok_or("KeyError")?;
                for i in depth..num {
                    let nk = Value::from(names[i as usize].as_str());
                    if wl(i + 1) {
                        note(&mut listify, crd, nk.clone());
                    }
                    let val = at(&ret, i)?;
                    let present = self.get(crd, &nk)?;
                    if let (true, Some(c)) = (q.as_list, present) {
                        let v = self.leaf(val);
                        if let N::List(items) = &mut self.nodes[c] {
                            items.push(v);
                        } else {
                            let l = self.add(N::List(vec![c, v]));
                            self.set(crd, nk, l)?;
                        }
                    } else if !q.ignore_null || !val.is_nil() {
                        let v = self.leaf(val);
                        self.set(crd, nk, v)?;
                    }
                }
            }
        }
        for (d, keys) in listify.into_iter().rev() {
            for k in keys {
                let c = self.get(d, &k)?.ok_or_else(|| format!("KeyError: {k}"))?;
                let new = match &self.nodes[c] {
                    N::Dict(e) => N::List(e.iter().map(|(_, v)| *v).collect()),
                    N::List(_) => N::List(vec![c]),
                    N::Leaf(_) => continue,
                };
                let n = self.add(new);
                self.set(d, k, n)?;
            }
        }
        Ok(())
    }

    fn value(&self, n: usize) -> Value {
        match &self.nodes[n] {
            N::Leaf(v) => v.clone(),
            N::List(items) => Value::Array(items.iter().map(|i| self.value(*i)).collect()),
            N::Dict(e) => Value::Map(e.iter().map(|(k, v)| (k.clone(), self.value(*v))).collect()),
        }
    }

    fn build(&mut self, v: Value) -> usize {
        match v {
            Value::Map(m) => {
                let e = m.into_iter().map(|(k, v)| (k, self.build(v))).collect();
                self.add(N::Dict(e))
            }
            Value::Array(a) => {
                let items = a.into_iter().map(|v| self.build(v)).collect();
                self.add(N::List(items))
            }
            other => self.leaf(other),
        }
    }

    /// `self.result`.
    pub(crate) fn into_result(self) -> Value {
        self.value(ROOT)
    }
}
