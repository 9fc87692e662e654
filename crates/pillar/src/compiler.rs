//! The compilation itself: top files, their matches, SLS with includes, merging.

use std::sync::Arc;

use rmpv::Value;
use salt_render::{Context, render};

use crate::roots::Roots;
use crate::{Options, Request};

/// One target of a merged top file.
struct TopEntry {
    env: String,
    tgt: String,
    kind: Option<String>,
    states: Vec<String>,
    order: i64,
}

struct Compiler<'a> {
    cfg: &'a Options,
    req: &'a Request,
    roots: Arc<Roots>,
    pillarenv: Option<String>,
    errors: Vec<String>,
    /// The pillar SLS and top targets see as `pillar`: `pillar_override`, or with
    /// `ext_pillar_first` the external pillar.
    pillar: Value,
    ignored: Vec<(String, String)>,
    /// SLS names per environment, listed once per compilation.
    avail: Vec<(String, Arc<Vec<String>>)>,
}

/// Compile the pillar of one minion.
pub fn compile(cfg: &Options, req: &Request) -> Value {
    let pillarenv = req
        .pillarenv
        .clone()
        .or_else(|| {
            cfg.pillarenv_from_saltenv
                .then(|| req.saltenv.clone())
                .flatten()
        })
        .or_else(|| cfg.pillarenv.clone());
    let env = pillarenv
        .clone()
        .or_else(|| req.saltenv.clone())
        .unwrap_or_else(|| "base".to_owned());
    let roots = Arc::new(Roots::new(&cfg.pillar_roots, &env));
    let mut c = Compiler {
        cfg,
        req,
        roots,
        pillarenv,
        errors: Vec::new(),
        pillar: match &req.pillar_override {
            Value::Map(m) => Value::Map(m.clone()),
            _ => Value::Map(Vec::new()),
        },
        ignored: Vec::new(),
        avail: Vec::new(),
    };
    let top = c.top();
    // Salt keeps the top file's errors apart and lists them last.
    let top_errors = std::mem::take(&mut c.errors);
    let mut ext_errors = Vec::new();
    let mut pillar = if cfg.ext_pillar_first {
        // Salt's `ext_pillar(self.pillar_override)`: the external pillar first, then the top
        // file matched and rendered with it as `pillar`, and merged over it.
        let ext = crate::ext::run(
            cfg,
            req,
            c.pillarenv.as_deref(),
            c.override_map(),
            &mut ext_errors,
        );
        c.pillar = ext.clone();
        let rendered = c.render_top(&top);
        c.merge(ext, rendered)
    } else {
        let rendered = c.render_top(&top);
        crate::ext::run(cfg, req, c.pillarenv.as_deref(), rendered, &mut ext_errors)
    };
    let mut errors = std::mem::take(&mut c.errors);
    if cfg.ext_pillar_first {
        // Salt passes the ext_pillar errors into `render_pillar`, which adds its own after.
        ext_errors.append(&mut errors);
        errors = ext_errors;
    } else {
        errors.append(&mut ext_errors);
    }
    errors.extend(top_errors);
    if let Value::Map(m) = &mut pillar
        && !errors.is_empty()
    {
        for e in &errors {
            tracing::error!("Pillar render error for {}: {e}", req.id);
        }
        let errs = errors.iter().map(|e| Value::from(e.as_str())).collect();
        m.retain(|(k, _)| k.as_str() != Some("_errors"));
        m.push((Value::from("_errors"), Value::Array(errs)));
    }
    let ov = c.override_map();
    if matches!(&ov, Value::Map(m) if !m.is_empty()) {
        pillar = c.merge(pillar, ov);
    }
    pillar
}

impl Compiler<'_> {
    /// `top_matches` + `render_pillar`: the SLS this minion gets, rendered and merged over
    /// `pillar_override`.
    fn render_top(&mut self, top: &[TopEntry]) -> Value {
        let matches = self.top_matches(top);
        let mut pillar = self.override_map();
        for (saltenv, slses) in matches {
            let avail = self.avail(&saltenv);
            let files: Vec<String> = slses
                .into_iter()
                .flat_map(|pat| expand_sls(&avail, pat))
                .collect();
            let mut mods: Vec<(String, Option<Value>)> = Vec::new();
            for sls in files {
                let state = self.render_sls(&sls, &saltenv, &mut mods, &Value::Map(Vec::new()));
                if let Some(state @ Value::Map(_)) = state {
                    pillar = self.merge(pillar, state);
                }
            }
        }
        pillar
    }
}

impl Compiler<'_> {
    fn avail(&mut self, env: &str) -> Arc<Vec<String>> {
        if let Some((_, list)) = self.avail.iter().find(|(e, _)| e == env) {
            return list.clone();
        }
        let list = Arc::new(self.roots.list_states(env));
        self.avail.push((env.to_owned(), list.clone()));
        list
    }

    fn override_map(&self) -> Value {
        match &self.req.pillar_override {
            Value::Map(m) => Value::Map(m.clone()),
            _ => Value::Map(Vec::new()),
        }
    }

    fn merge(&self, a: Value, b: Value) -> Value {
        self.cfg.merge(a, b)
    }

    fn context(&self, saltenv: &str, sls: &str, tplfile: &str, vars: &Value) -> Context {
        Context {
            grains: self.req.grains.clone(),
            pillar: self.pillar.clone(),
            opts: Value::Map(vec![
                (Value::from("id"), Value::from(self.req.id.as_str())),
                (Value::from("saltenv"), opt_str(self.req.saltenv.as_deref())),
                (Value::from("pillarenv"), opt_str(self.pillarenv.as_deref())),
            ]),
            saltenv: saltenv.to_owned(),
            sls: sls.to_owned(),
            tplfile: tplfile.to_owned(),
            id: self.req.id.clone(),
            vars: vars.clone(),
            salt: self.req.salt.clone(),
        }
    }

    fn render_file(&self, path: &std::path::Path, ctx: &Context) -> Result<Value, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        render(&text, ctx, self.roots.clone(), "jinja|yaml").map_err(|e| e.to_string())
    }

    /// `get_tops` + `merge_tops`: (saltenv, target, match type, SLS names) in order.
    fn top(&mut self) -> Vec<TopEntry> {
        let mut envs: Vec<String> = match &self.pillarenv {
            Some(p) if self.roots.has(p) => vec![p.clone()],
            Some(_) => Vec::new(),
            None => self.roots.names(),
        };
        if self.pillarenv.is_none() && self.cfg.pillar_source_merging_strategy == "none" {
            let only = self
                .req
                .saltenv
                .clone()
                .unwrap_or_else(|| "base".to_owned());
            envs.retain(|e| *e == only);
        }
        let mut tops: Vec<Value> = Vec::new();
        for env in &envs {
            let Some(path) = self.roots.find("top.sls", env) else {
                continue;
            };
            let ctx = self.context(env, "", "top.sls", &Value::Map(Vec::new()));
            match self.render_file(&path, &ctx) {
                Ok(v) => {
                    let includes = take_key(&v, "include");
                    tops.push(v);
                    for inc in includes
                        .into_iter()
                        .filter_map(|i| i.as_str().map(str::to_owned))
                    {
                        let Some((p, rel)) = self.roots.sls_file(&inc, env) else {
                            continue;
                        };
                        let ctx = self.context(env, &inc, &rel, &Value::Map(Vec::new()));
                        match self.render_file(&p, &ctx) {
                            Ok(v) => tops.push(v),
                            Err(e) => self.errors.push(format!(
                                "Rendering Top file {inc} failed, render error:\n{e}"
                            )),
                        }
                    }
                }
                Err(e) => self.errors.push(format!(
                    "Rendering Primary Top file failed, render error:\n{e}"
                )),
            }
        }
        let mut out: Vec<TopEntry> = Vec::new();
        for top in tops {
            let Value::Map(envs) = top else {
                self.errors
                    .push("Error encountered while rendering pillar top file.".to_owned());
                continue;
            };
            for (env, targets) in envs {
                let Some(env) = env.as_str().map(str::to_owned) else {
                    continue;
                };
                if env == "include" {
                    continue;
                }
                let Value::Map(targets) = targets else {
                    continue;
                };
                for (tgt, comps) in targets {
                    let tgt = salt_compat::py_str(&tgt);
                    let mut kind = None;
                    let mut states = Vec::new();
                    let mut order = 0;
                    let mut ignore_missing = false;
                    for comp in comps.as_array().into_iter().flatten() {
                        match comp {
                            Value::Map(_) => {
                                if let Some(m) = salt_compat::map_get(comp, "match") {
                                    kind = Some(salt_compat::py_str(m));
                                }
                                if let Some(o) = salt_compat::map_get(comp, "order") {
                                    order = o
                                        .as_i64()
                                        .or_else(|| salt_compat::py_str(o).parse().ok())
                                        .unwrap_or(0);
                                }
                                ignore_missing |= salt_compat::map_get(comp, "ignore_missing")
                                    .is_some_and(|v| v.as_bool() == Some(true));
                            }
                            other => {
                                if let Some(s) = other.as_str()
                                    && !states.iter().any(|x| x == s)
                                {
                                    states.push(s.to_owned());
                                }
                            }
                        }
                    }
                    if ignore_missing {
                        self.ignored
                            .extend(states.iter().map(|s| (env.clone(), s.clone())));
                    }
                    // A later top file's entry for the same target replaces the earlier one.
                    let entry = TopEntry {
                        env: env.clone(),
                        tgt,
                        kind,
                        states,
                        order,
                    };
                    match out.iter_mut().find(|e| e.env == env && e.tgt == entry.tgt) {
                        Some(slot) => *slot = entry,
                        None => out.push(entry),
                    }
                }
            }
        }
        let names = self.roots.names();
        out.sort_by_key(|e| (names.iter().position(|n| *n == e.env), e.order));
        out
    }

    /// `top_matches`: per environment, the SLS names this minion gets.
    fn top_matches(&mut self, top: &[TopEntry]) -> Vec<(String, Vec<String>)> {
        let groups = &self.cfg.nodegroups;
        let ov = self.pillar.clone();
        let facts = salt_matcher::Facts {
            id: &self.req.id,
            grains: Some(&self.req.grains),
            pillar: Some(&ov),
        };
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for TopEntry {
            env,
            tgt,
            kind,
            states,
            ..
        } in top
        {
            if self.pillarenv.as_ref().is_some_and(|p| p != env) {
                continue;
            }
            let kind = kind.as_deref().unwrap_or("compound");
            let hit =
                match salt_matcher::check(facts, &Value::from(tgt.as_str()), kind, None, groups) {
                    Ok(r) => r == Some(true),
                    Err(e) => {
                        self.errors
                            .push(format!("Pillar top target {tgt:?} in {env}: {e}"));
                        false
                    }
                };
            if !hit {
                continue;
            }
            let slot = match out.iter().position(|(e, _)| e == env) {
                Some(i) => &mut out[i].1,
                None => {
                    out.push((env.clone(), Vec::new()));
                    &mut out.last_mut().expect("just pushed").1
                }
            };
            for s in states {
                if !slot.contains(s) {
                    slot.push(s.clone());
                }
            }
        }
        out
    }

    /// `render_pstate`: one SLS with its includes.
    fn render_sls(
        &mut self,
        sls: &str,
        saltenv: &str,
        mods: &mut Vec<(String, Option<Value>)>,
        defaults: &Value,
    ) -> Option<Value> {
        if mods.len() > 1000 {
            self.errors
                .push(format!("Too many pillar SLS included from '{sls}'"));
            return None;
        }
        let Some((path, rel)) = self.roots.sls_file(sls, saltenv) else {
            if self.ignored.iter().any(|(e, s)| e == saltenv && s == sls) {
                return None;
            }
            if self.roots.has(saltenv) {
                self.errors.push(format!(
                    "Specified SLS '{sls}' in environment '{saltenv}' is not available on the salt master"
                ));
            }
            return None;
        };
        let ctx = self.context(saltenv, sls, &rel, defaults);
        let state = match self.render_file(&path, &ctx) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::error!("Rendering SLS '{sls}' failed, render error:\n{e}");
                self.errors.push(if self.cfg.pillar_safe_render_error {
                    format!("Rendering SLS '{sls}' failed. Please see master log for details.")
                } else {
                    format!("Rendering SLS '{sls}' failed, render error:\n{e}")
                });
                None
            }
        };
        mods.push((sls.to_owned(), state.clone()));
        let mut state = state?;
        let Value::Map(entries) = &mut state else {
            self.errors
                .push(format!("SLS '{sls}' does not render to a dictionary"));
            return None;
        };
        let Some(pos) = entries
            .iter()
            .position(|(k, _)| k.as_str() == Some("include"))
        else {
            return Some(state);
        };
        let (_, includes) = entries.remove(pos);
        let Value::Array(includes) = includes else {
            self.errors.push(format!(
                "Include Declaration in SLS '{sls}' is not formed as a list"
            ));
            return Some(state);
        };
        let avail = self.avail(saltenv);
        let mut parts: Vec<Value> = Vec::new();
        for inc in includes {
            let (name, defaults, key) = match &inc {
                Value::Map(m) if !m.is_empty() => {
                    let (n, v) = &m[0];
                    (
                        salt_compat::py_str(n),
                        salt_compat::map_get(v, "defaults")
                            .cloned()
                            .unwrap_or(Value::Map(Vec::new())),
                        salt_compat::map_get(v, "key").map(salt_compat::py_str),
                    )
                }
                other => (salt_compat::py_str(other), Value::Map(Vec::new()), None),
            };
            let mut name = name;
            if let Some(rel) = name.strip_prefix('.') {
                let mut base: Vec<&str> = sls.split('.').collect();
                if !rel_is_init(&rel_path(&path)) {
                    base.pop();
                }
                name = base
                    .into_iter()
                    .chain(std::iter::once(rel))
                    .collect::<Vec<_>>()
                    .join(".");
            }
            for m in expand_sls(&avail, name) {
                let nstate = match mods.iter().find(|(n, _)| *n == m) {
                    Some((_, s)) => s.clone(),
                    None => self.render_sls(&m, saltenv, mods, &defaults),
                };
                let Some(mut nstate) = nstate else { continue };
                if let Some(key) = &key {
                    for frag in key.rsplit(':') {
                        nstate = Value::Map(vec![(Value::from(frag), nstate)]);
                    }
                }
                if self.cfg.pillar_includes_override_sls {
                    state = self.merge(state, nstate);
                } else {
                    parts.push(nstate);
                }
            }
        }
        if self.cfg.pillar_includes_override_sls {
            return Some(state);
        }
        parts.push(state);
        let mut acc: Option<Value> = None;
        for p in parts {
            acc = Some(match acc {
                None => p,
                Some(a) => self.merge(a, p),
            });
        }
        acc
    }
}

/// The SLS of `avail` matching the glob `pat`, or `pat` itself when none does (so that a
/// missing SLS is reported by its name).
fn expand_sls(avail: &[String], pat: String) -> Vec<String> {
    let hits: Vec<String> = avail
        .iter()
        .filter(|s| salt_matcher::fnmatch(s, &pat))
        .cloned()
        .collect();
    if hits.is_empty() { vec![pat] } else { hits }
}

fn rel_path(p: &std::path::Path) -> String {
    p.display().to_string()
}

fn rel_is_init(p: &str) -> bool {
    p.ends_with("/init.sls")
}

fn opt_str(s: Option<&str>) -> Value {
    s.map_or(Value::Nil, Value::from)
}

fn take_key(v: &Value, key: &str) -> Vec<Value> {
    match salt_compat::map_get(v, key) {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    }
}
