//! SLS -> high data -> low chunks, after `salt.state.BaseHighState` and `State`.

use std::collections::HashSet;
use std::sync::Arc;

use rmpv::Value;

use crate::fileclient::{FileClient, RenderLoader};
use crate::{Opts, get_str, map, pop, set};
use salt_compat::map_get;

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

/// Salt's `STATE_INTERNAL_KEYWORDS` (`salt/state.py`: requisites, their `_in` forms and the
/// runtime keywords): low-chunk keys a state function's `**kwargs` never see.
pub const STATE_INTERNAL_KEYWORDS: &[&str] = &[
    "onchanges",
    "onchanges_any",
    "onfail",
    "onfail_any",
    "onfail_all",
    "onfail_stop",
    "prereq",
    "prerequired",
    "watch",
    "watch_any",
    "require",
    "require_any",
    "listen",
    "onchanges_in",
    "onfail_in",
    "prereq_in",
    "watch_in",
    "require_in",
    "listen_in",
    "fun",
    "state",
    "check_cmd",
    "cmd_opts_exclude",
    "failhard",
    "onlyif",
    "unless",
    "creates",
    "retry",
    "order",
    "parallel",
    "reload_modules",
    "reload_grains",
    "reload_pillar",
    "runas",
    "runas_password",
    "fire_event",
    "saltenv",
    "umask",
    "use",
    "use_in",
    "__env__",
    "__sls__",
    "__id__",
    "__sls_included_from__",
    "__orchestration_jid__",
    "__pub_user",
    "__pub_arg",
    "__pub_jid",
    "__pub_fun",
    "__pub_tgt",
    "__pub_ret",
    "__pub_pid",
    "__pub_tgt_type",
    "__prereq__",
    "__prerequired__",
    "__umask__",
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
    pub(crate) fn find(&self, id: &str) -> Option<usize> {
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
            salt: self.opts.salt.clone(),
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
                let tenv = salt_compat::py_str(&tenv);
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
                            other => slses.push(salt_compat::py_str(other)),
                        }
                    }
                    let facts = salt_matcher::Facts {
                        id: &self.opts.id,
                        grains: Some(&self.opts.grains),
                        pillar: Some(&self.opts.pillar),
                    };
                    match salt_matcher::check(facts, &tgt, &tgt_type, None, &[]) {
                        Ok(Some(true)) => {
                            let slot = env_slot(&mut out, &tenv);
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
        // Salt's `top_matches`: the master's tops after the top file's, without repeats, or
        // before them with the minion option `master_tops_first` (then the top file's follow,
        // those the tops already name left out).
        let tops_first = map_get(&self.opts.opts, "master_tops_first").is_some_and(crate::truthy);
        match self.client.master_tops() {
            Ok(tops) => {
                for (env, slses) in tops {
                    let slot = env_slot(&mut out, &env);
                    let top_file = std::mem::take(&mut out[slot].1);
                    let (first, second) = if tops_first {
                        (slses, top_file)
                    } else {
                        (top_file, slses)
                    };
                    out[slot].1 = first;
                    for s in second {
                        if !out[slot].1.contains(&s) {
                            out[slot].1.push(s);
                        }
                    }
                }
            }
            Err(e) => errors.push(format!("master_tops: {e}")),
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
            let key = salt_compat::py_str(&k);
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
                            let name = salt_compat::py_str(&name);
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
                Value::Map(m) if m.len() == 1 => {
                    (salt_compat::py_str(&m[0].0), salt_compat::py_str(&m[0].1))
                }
                other => (saltenv.to_owned(), salt_compat::py_str(other)),
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
            // Salt (3006-3008, masterless and with a master alike) reports a missing
            // include as render_state's own "Specified SLS .. is not available" error.
            if err
                .iter()
                .any(|e| e.contains("is not available on the salt master"))
                && nstate.ids.is_empty()
            {
                errors.extend(err);
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
        if map_get(body, "__sls__").is_none() {
            set(body, "__sls__", Value::from(sls));
        }
        if map_get(body, "__env__").is_none() {
            set(body, "__env__", Value::from(saltenv));
        }
    }
}

/// The index of `env`'s entry in top matches, appended (empty) when missing: Salt's
/// `matches` dict keeps the order environments were first named.
fn env_slot(out: &mut Vec<(String, Vec<String>)>, env: &str) -> usize {
    match out.iter().position(|(e, _)| e == env) {
        Some(i) => i,
        None => {
            out.push((env.to_owned(), Vec::new()));
            out.len() - 1
        }
    }
}
