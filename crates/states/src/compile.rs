//! SLS -> high data -> low chunks, after `salt.state.BaseHighState` and `State`.

use std::collections::HashSet;
use std::sync::Arc;

use rmpv::Value;

use crate::fileclient::{FileClient, RenderLoader};
use crate::{Opts, get, get_str, map, pop, set};

/// Requisite keywords that `extend` merges rather than replaces.
pub const REQUISITES: &[&str] = &[
    "require",
    "require_any",
    "watch",
    "watch_any",
    "prereq",
    "onfail",
    "onfail_any",
    "onfail_all",
    "onchanges",
    "onchanges_any",
    "listen",
    "use",
    "require_in",
    "watch_in",
    "prereq_in",
    "onfail_in",
    "onchanges_in",
    "listen_in",
    "use_in",
];

/// Renders SLS files into high data.
pub struct Compiler {
    client: Arc<dyn FileClient>,
    opts: Opts,
    iorder: i64,
    mods: HashSet<String>,
    /// SLS names rendered (for `sls` requisites on empty files).
    pub processed: Vec<String>,
}

/// High data: id -> body, in insertion order, plus the `extend`/`exclude` collected.
#[derive(Debug, Default, Clone)]
pub struct High {
    /// id -> {state: [args], __sls__, __env__}.
    pub ids: Vec<(String, Value)>,
    /// `extend` blocks.
    pub extend: Vec<(String, Value)>,
    /// `exclude` entries.
    pub exclude: Vec<Value>,
}

impl High {
    fn find(&self, id: &str) -> Option<usize> {
        self.ids.iter().position(|(k, _)| k == id)
    }

    fn merge(&mut self, other: High, errors: &mut Vec<String>) {
        self.extend.extend(other.extend);
        self.exclude.extend(other.exclude);
        for (id, body) in other.ids {
            match self.find(&id) {
                Some(i) => {
                    if self.ids[i].1 != body {
                        errors.push(format!(
                            "Detected conflicting IDs, SLS IDs need to be globally unique.\n    \
                             The conflicting ID is '{id}' and is found in SLS '{}:{}' and SLS '{}:{}'",
                            get_str(&self.ids[i].1, "__env__").unwrap_or(""),
                            get_str(&self.ids[i].1, "__sls__").unwrap_or(""),
                            get_str(&body, "__env__").unwrap_or(""),
                            get_str(&body, "__sls__").unwrap_or(""),
                        ));
                    }
                    self.ids[i].1 = body;
                }
                None => self.ids.push((id, body)),
            }
        }
    }
}

fn sls_paths(sls: &str) -> [String; 2] {
    let base = sls.replace('.', "/");
    [format!("{base}.sls"), format!("{base}/init.sls")]
}

impl Compiler {
    /// A compiler over `client` with `opts`.
    pub fn new(client: Arc<dyn FileClient>, opts: Opts) -> Self {
        Compiler {
            client,
            opts,
            iorder: 10000,
            mods: HashSet::new(),
            processed: Vec::new(),
        }
    }

    fn ctx(&self, saltenv: &str, sls: &str, tplfile: &str) -> salt_render::Context {
        salt_render::Context {
            grains: self.opts.grains.clone(),
            pillar: self.opts.pillar.clone(),
            opts: self.opts.opts.clone(),
            saltenv: saltenv.to_owned(),
            sls: sls.to_owned(),
            tplfile: tplfile.to_owned(),
            id: self.opts.id.clone(),
            vars: Value::Map(Vec::new()),
        }
    }

    fn render_file(&self, path: &str, saltenv: &str, sls: &str) -> Result<Option<Value>, String> {
        let Some(bytes) = self.client.get_file(path, saltenv)? else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&bytes);
        let loader = Arc::new(RenderLoader(self.client.clone()));
        salt_render::render(&text, &self.ctx(saltenv, sls, path), loader, "jinja|yaml")
            .map(Some)
            .map_err(|e| format!("Rendering SLS '{saltenv}:{sls}' failed: {e}"))
    }

    /// The top file's matches for this minion: `[(saltenv, [sls...])]`.
    pub fn top_matches(&self) -> Result<Vec<(String, Vec<String>)>, Vec<String>> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        let mut errors = Vec::new();
        let mut envs = vec![self.opts.saltenv.clone()];
        for e in self.client.envs() {
            if !envs.contains(&e) {
                envs.push(e);
            }
        }
        for env in envs {
            let top = match self.render_file("top.sls", &env, "") {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(e) => {
                    errors.push(e.replace("SLS ':'", &format!("SLS '{env}:top.sls'")));
                    continue;
                }
            };
            let Value::Map(envmap) = top else {
                errors.push(format!("Top file in saltenv {env} is not a dictionary"));
                continue;
            };
            for (tenv, targets) in envmap {
                let tenv = crate::py_str(&tenv);
                let Value::Map(targets) = targets else {
                    continue;
                };
                for (tgt, items) in targets {
                    let Value::Array(items) = items else { continue };
                    let mut tgt_type = "glob".to_owned();
                    let mut slses = Vec::new();
                    for item in &items {
                        match item {
                            Value::Map(_) => {
                                if let Some(m) = get_str(item, "match") {
                                    tgt_type = m.to_owned();
                                }
                            }
                            other => slses.push(crate::py_str(other)),
                        }
                    }
                    let facts = salt_matcher::Facts {
                        id: &self.opts.id,
                        grains: Some(&self.opts.grains),
                        pillar: Some(&self.opts.pillar),
                    };
                    match salt_matcher::check(facts, &tgt, &tgt_type, None, &[]) {
                        Ok(Some(true)) => {
                            let slot = match out.iter().position(|(e, _)| *e == tenv) {
                                Some(i) => i,
                                None => {
                                    out.push((tenv.clone(), Vec::new()));
                                    out.len() - 1
                                }
                            };
                            for s in slses {
                                if !out[slot].1.contains(&s) {
                                    out[slot].1.push(s);
                                }
                            }
                        }
                        Ok(_) => {}
                        Err(e) => errors.push(format!("top file target {tgt}: {e}")),
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }

    /// Render the SLS files `matches` name, with their includes, into one high data.
    pub fn render_highstate(&mut self, matches: &[(String, Vec<String>)]) -> (High, Vec<String>) {
        let mut high = High::default();
        let mut errors = Vec::new();
        for (env, slses) in matches {
            for sls in slses {
                if self.mods.contains(&format!("{env}:{sls}")) {
                    continue;
                }
                let (state, mut errs) = self.render_state(sls, env);
                high.merge(state, &mut errs);
                for e in &mut errs {
                    if e.contains("is not available")
                        && e.contains(&format!("SLS {sls} in saltenv"))
                    {
                        *e = format!("No matching sls found for '{sls}' in env '{env}'");
                    }
                }
                errors.extend(errs);
            }
        }
        (high, errors)
    }

    /// Render one SLS and its includes (`render_state`).
    pub fn render_state(&mut self, sls: &str, saltenv: &str) -> (High, Vec<String>) {
        let mut errors = Vec::new();
        let mut high = High::default();
        let mut rendered = None;
        let mut is_init = false;
        let [p1, p2] = sls_paths(sls);
        for (i, path) in [p1, p2].iter().enumerate() {
            match self.render_file(path, saltenv, sls) {
                Ok(Some(v)) => {
                    rendered = Some(v);
                    is_init = i == 1;
                    break;
                }
                Ok(None) => {}
                Err(e) => {
                    errors.push(e);
                    self.mods.insert(format!("{saltenv}:{sls}"));
                    return (high, errors);
                }
            }
        }
        let Some(state) = rendered else {
            errors.push(format!(
                "Specified SLS {sls} in saltenv {saltenv} is not available on the salt master or through a configured fileserver"
            ));
            return (high, errors);
        };
        self.mods.insert(format!("{saltenv}:{sls}"));
        self.processed.push(sls.to_owned());
        let Value::Map(entries) = state else {
            errors.push(format!("SLS {sls} does not render to a dictionary"));
            return (high, errors);
        };
        let mut include = Vec::new();
        for (k, v) in entries {
            let key = crate::py_str(&k);
            match key.as_str() {
                "include" => match v {
                    Value::Array(a) => include = a,
                    _ => errors.push(format!(
                        "Include Declaration in SLS {sls} is not formed as a list"
                    )),
                },
                "extend" => match v {
                    Value::Map(ext) => {
                        for (name, mut body) in ext {
                            let name = crate::py_str(&name);
                            if !matches!(body, Value::Map(_)) {
                                errors.push(format!(
                                    "Extension name '{name}' in SLS '{sls}' is not a dictionary"
                                ));
                                continue;
                            }
                            normalize_body(&mut body, sls, saltenv);
                            high.extend.push((name, body));
                        }
                    }
                    _ => errors.push(format!(
                        "Extension value in SLS '{sls}' is not a dictionary"
                    )),
                },
                "exclude" => match v {
                    Value::Array(a) => high.exclude.extend(a),
                    _ => errors.push(format!(
                        "Exclude Declaration in SLS {sls} is not formed as a list"
                    )),
                },
                _ => {
                    let body = match v {
                        Value::Map(_) => {
                            let mut b = v;
                            normalize_body(&mut b, sls, saltenv);
                            b
                        }
                        Value::String(s) if s.as_str().is_some_and(|s| s.contains('.')) => {
                            let s = s.as_str().unwrap_or_default();
                            let (st, fun) = s.split_once('.').unwrap_or((s, ""));
                            map(vec![
                                ("__sls__", Value::from(sls)),
                                ("__env__", Value::from(saltenv)),
                                (st, Value::Array(vec![Value::from(fun)])),
                            ])
                        }
                        _ => {
                            errors.push(format!("ID {key} in SLS {sls} is not a dictionary"));
                            continue;
                        }
                    };
                    high.ids.push((key, body));
                }
            }
        }
        for inc in include {
            let (env, mut inc_sls) = match &inc {
                Value::Map(m) if m.len() == 1 => (crate::py_str(&m[0].0), crate::py_str(&m[0].1)),
                other => (saltenv.to_owned(), crate::py_str(other)),
            };
            if env == "_xenv" {
                errors.push(format!(
                    "include of {inc_sls} with _xenv is not supported by salt-rs"
                ));
                continue;
            }
            if inc_sls.starts_with('.') {
                let levels = inc_sls.chars().take_while(|c| *c == '.').count();
                let rest = &inc_sls[levels..];
                let mut comps: Vec<&str> = sls.split('.').collect();
                if is_init {
                    comps.push("init");
                }
                if levels > comps.len() {
                    errors.push(format!(
                        "Attempted relative include of '{inc_sls}' within SLS '{saltenv}:{sls}' goes beyond top level package "
                    ));
                    continue;
                }
                let mut parts: Vec<&str> = comps[..comps.len() - levels].to_vec();
                parts.push(rest);
                inc_sls = parts.join(".");
            }
            if self.mods.contains(&format!("{env}:{inc_sls}")) {
                continue;
            }
            let (mut nstate, err) = self.render_state(&inc_sls, &env);
            if err
                .iter()
                .any(|e| e.contains("is not available on the salt master"))
                && nstate.ids.is_empty()
            {
                errors.push(format!(
                    "Unknown include: Specified SLS {env}: {inc_sls} is not available on the salt master in saltenv(s): {env} "
                ));
                errors.extend(
                    err.into_iter()
                        .filter(|e| !e.contains("is not available on the salt master")),
                );
                continue;
            }
            for (_, body) in &mut nstate.ids {
                let mut from = match pop(body, "__sls_included_from__") {
                    Some(Value::Array(a)) => a,
                    _ => Vec::new(),
                };
                from.push(Value::from(sls));
                set(body, "__sls_included_from__", Value::Array(from));
            }
            high.merge(nstate, &mut errors);
            errors.extend(err);
        }
        self.handle_iorder(&mut high);
        (high, errors)
    }

    fn handle_iorder(&mut self, high: &mut High) {
        for (_, body) in &mut high.ids {
            let Value::Map(entries) = body else { continue };
            for (k, args) in entries.iter_mut() {
                if k.as_str().is_none_or(|k| k.starts_with('_')) {
                    continue;
                }
                let Value::Array(args) = args else { continue };
                let found = args.iter().any(|a| match a {
                    Value::Map(m) => m.first().is_some_and(|(k, _)| k.as_str() == Some("order")),
                    _ => false,
                });
                if !found {
                    args.push(map(vec![("order", Value::from(self.iorder))]));
                    self.iorder += 1;
                }
            }
        }
    }
}

/// `state.fun: [args]` -> `state: [args..., fun]`, plus `__sls__`/`__env__`.
fn normalize_body(body: &mut Value, sls: &str, saltenv: &str) {
    if let Value::Map(entries) = body {
        for (k, v) in entries.iter_mut() {
            let Some(key) = k.as_str().map(str::to_owned) else {
                continue;
            };
            if key.starts_with('_') {
                continue;
            }
            if matches!(v, Value::Nil) {
                *v = Value::Array(Vec::new());
            }
            let Value::Array(args) = v else { continue };
            if let Some((st, fun)) = key.split_once('.') {
                args.push(Value::from(fun));
                *k = Value::from(st);
            }
        }
        if get(body, "__sls__").is_none() {
            set(body, "__sls__", Value::from(sls));
        }
        if get(body, "__env__").is_none() {
            set(body, "__env__", Value::from(saltenv));
        }
    }
}

fn first_key(v: &Value) -> Option<&str> {
    match v {
        Value::Map(m) => m.first().and_then(|(k, _)| k.as_str()),
        _ => None,
    }
}

/// Apply `exclude` and `extend` to the high data (`reconcile_extend`).
pub fn reconcile(high: &mut High) -> Vec<String> {
    let mut errors = Vec::new();
    for ex in std::mem::take(&mut high.exclude) {
        let (kind, val) = match &ex {
            Value::Map(m) if m.len() == 1 => (crate::py_str(&m[0].0), crate::py_str(&m[0].1)),
            other => ("sls".to_owned(), crate::py_str(other)),
        };
        if kind == "id" {
            high.ids.retain(|(id, _)| *id != val);
        } else {
            high.ids
                .retain(|(_, b)| get_str(b, "__sls__") != Some(val.as_str()));
        }
    }
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
            let Some(Value::Array(target)) = get(body, &state).cloned() else {
                set(body, &state, Value::Array(run));
                continue;
            };
            let mut target = target;
            for arg in run {
                let mut update = false;
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
    errors
}

/// Check the high data (`verify_high`, the parts salt-rs enforces).
pub fn verify(high: &High) -> Vec<String> {
    let mut errors = Vec::new();
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
                    for (ak, av) in m {
                        let ak = ak.as_str().unwrap_or("");
                        if ak == "parallel" && crate::truthy(av) {
                            errors.push(format!(
                                "State '{id}' in SLS '{sls}' uses 'parallel', which salt-rs does not support"
                            ));
                        }
                        if matches!(
                            ak,
                            "prereq"
                                | "prereq_in"
                                | "listen"
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
                if let Some(v) = get(body, key) {
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
                            let k = crate::py_str(k);
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
                            set(&mut live, "name", Value::from(crate::py_str(&m[0].0)));
                            if let Value::Array(opts) = &m[0].1 {
                                for o in opts {
                                    if let Value::Map(om) = o {
                                        for (k, v) in om {
                                            set(&mut live, &crate::py_str(k), v.clone());
                                        }
                                    }
                                }
                            }
                        }
                        other => set(&mut live, "name", Value::from(crate::py_str(other))),
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
        if let Some(Value::Integer(i)) = get(c, "order") {
            let o = i.as_i64().unwrap_or(0);
            if o > cap - 1 && o > 0 {
                cap = o + 100;
            }
        }
    }
    let mut keyed: Vec<(f64, String, Value)> = Vec::new();
    for mut c in chunks.drain(..) {
        let mut order: f64 = match get(&c, "order") {
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
            crate::py_str(get(&c, "name").unwrap_or(&Value::Nil)),
            get_str(&c, "fun").unwrap_or("")
        );
        keyed.push((order, key, c));
    }
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    keyed.into_iter().map(|(_, _, c)| c).collect()
}
