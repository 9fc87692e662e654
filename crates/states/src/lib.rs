//! salt-states: Salt's state system for the salt-rs minion.
//!
//! [`compile`] turns a top file and SLS files (rendered with `salt-render`'s `jinja|yaml`)
//! into high data (`include`, `extend`, `exclude`, auto-order) and then into ordered low
//! chunks, as `salt.state.BaseHighState`/`State.compile_high_data` do. [`engine`] runs the
//! chunks with Salt's requisite rules (`require`, `watch` + `mod_watch`, `onchanges`,
//! `onfail`, `prereq` (the pre-required state run first in test mode; `prereq_in` and
//! `prereq` add Salt's `prerequired` to the other side), the `_in` forms; `listen`, `use` and
//! the `_any`/`_all` forms refused by name) and the `unless`/`onlyif`/`creates` checks, and
//! builds the return dict key for key as Salt does (`file_|-id_|-name_|-managed`,
//! `__run_num__`, `__sls__`, `start_time`, `duration`, `__id__`). [`mods`] holds the state
//! functions; a state function salt-rs does not have answers `'x.y' is not available.`
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod compile;
pub mod engine;
pub mod fileclient;
pub mod lowstate;
pub mod mods;
mod parallel;
mod prereq;
mod requisite;

use rmpv::Value;

pub use fileclient::{FileClient, LocalFileClient};

/// Options a state run sees (the minion's `__opts__` subset).
#[derive(Clone, Debug)]
pub struct Opts {
    /// The minion id.
    pub id: String,
    /// The grains.
    pub grains: Value,
    /// The pillar.
    pub pillar: Value,
    /// `test=True`.
    pub test: bool,
    /// `failhard` (config default).
    pub failhard: bool,
    /// The saltenv rendered (`base` by default).
    pub saltenv: String,
    /// The minion options visible as `opts` in templates.
    pub opts: Value,
    /// `exclude=`: SLS names or `{sls: x}`/`{id: x}` entries removed before the run.
    pub exclude: Vec<Value>,
    /// The minion's execution modules for templates' `salt[...]`.
    pub salt: salt_render::SaltHook,
    /// State functions the host adds (the master's `salt.*` for orchestrate).
    pub extra: ExtraHook,
}

/// State functions a host adds besides salt-rs's own: the master's `salt.state`,
/// `salt.function`, `salt.runner`... for orchestrate, run by the same engine.
pub trait ExtraStates: Send + Sync {
    /// Whether `full` (`state.fun`, e.g. `salt.function`) is one of them.
    fn has(&self, full: &str) -> bool;
    /// Run `full` for the low chunk `low`; Salt's state return dict.
    fn call(&self, full: &str, low: &Value, opts: &Opts) -> Value;
}

/// An optional [`ExtraStates`].
#[derive(Clone, Default)]
pub struct ExtraHook(pub Option<std::sync::Arc<dyn ExtraStates>>);

impl ExtraHook {
    /// Whether the host adds `full`.
    pub fn has(&self, full: &str) -> bool {
        self.0.as_ref().is_some_and(|h| h.has(full))
    }
}

impl std::fmt::Debug for ExtraHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ExtraHook(Some)"
        } else {
            "ExtraHook(None)"
        })
    }
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            id: String::new(),
            grains: Value::Map(Vec::new()),
            pillar: Value::Map(Vec::new()),
            test: false,
            failhard: false,
            saltenv: "base".into(),
            opts: Value::Map(Vec::new()),
            exclude: Vec::new(),
            salt: salt_render::SaltHook::default(),
            extra: ExtraHook::default(),
        }
    }
}

/// Set `key` in a map (in place when present, like a Python dict; appended otherwise).
pub fn set(m: &mut Value, key: &str, val: Value) {
    if let Value::Map(entries) = m {
        match entries.iter_mut().find(|(k, _)| k.as_str() == Some(key)) {
            Some(slot) => slot.1 = val,
            None => entries.push((Value::from(key), val)),
        }
    }
}

/// Remove `key` from a map, returning its value.
pub fn pop(m: &mut Value, key: &str) -> Option<Value> {
    if let Value::Map(entries) = m {
        let pos = entries.iter().position(|(k, _)| k.as_str() == Some(key))?;
        return Some(entries.remove(pos).1);
    }
    None
}

/// A string value of `key`.
pub fn get_str<'a>(m: &'a Value, key: &str) -> Option<&'a str> {
    salt_compat::map_get(m, key).and_then(Value::as_str)
}

/// Python truthiness (`salt_compat::py_truthy`).
pub use salt_compat::py_truthy as truthy;

/// An ordered map literal.
pub fn map(entries: Vec<(&str, Value)>) -> Value {
    Value::Map(
        entries
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect(),
    )
}

/// `{}`.
pub fn empty() -> Value {
    Value::Map(Vec::new())
}

/// The answer when the top file gives this minion nothing (Salt's `no_|-states_|-states_|-None`).
pub fn no_states() -> Value {
    map(vec![(
        "no_|-states_|-states_|-None",
        map(vec![
            ("result", Value::Boolean(false)),
            (
                "comment",
                Value::from(
                    "No Top file or master_tops data matches found. Please see master log for details.",
                ),
            ),
            ("name", Value::from("No States")),
            ("changes", empty()),
            ("__run_num__", Value::from(0)),
        ]),
    )])
}

/// What a state run returns: the running dict, or Salt's list of compile errors.
pub type Outcome = Result<Value, Vec<String>>;

/// The low chunks of `high` in run order, or every error found (`errors` first).
fn low_chunks(mut high: compile::High, mut errors: Vec<String>) -> Result<Vec<Value>, Vec<String>> {
    errors.extend(lowstate::reconcile(&mut high));
    errors.extend(lowstate::verify(&high));
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut errors = prereq::requisite_in(&mut high);
    let mut chunks = lowstate::compile_high_data(&high);
    errors.extend(engine::requisite_in(&mut chunks));
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(chunks)
}

fn run_high(
    compiler: compile::Compiler,
    mut high: compile::High,
    errors: Vec<String>,
    client: std::sync::Arc<dyn FileClient>,
    opts: &Opts,
) -> Outcome {
    high.exclude.extend(opts.exclude.iter().cloned());
    let chunks = low_chunks(high, errors)?;
    let mut eng = engine::Engine::new(opts, client, compiler.processed);
    Ok(eng.call_chunks(&chunks).into_value())
}

/// `state.highstate` / `state.apply` without mods.
pub fn highstate(client: std::sync::Arc<dyn FileClient>, opts: &Opts) -> Outcome {
    let mut compiler = compile::Compiler::new(client.clone(), opts.clone());
    let matches = compiler.top_matches()?;
    if matches.iter().all(|(_, s)| s.is_empty()) {
        return Ok(no_states());
    }
    let (high, errors) = compiler.render_highstate(&matches);
    run_high(compiler, high, errors, client, opts)
}

/// `state.sls mods` / `state.apply mods`.
pub fn sls(client: std::sync::Arc<dyn FileClient>, opts: &Opts, mods: &[String]) -> Outcome {
    let mut compiler = compile::Compiler::new(client.clone(), opts.clone());
    let matches = vec![(opts.saltenv.clone(), mods.to_vec())];
    let (high, errors) = compiler.render_highstate(&matches);
    run_high(compiler, high, errors, client, opts)
}

/// `state.high data`: run high data given as such (`{id: {state: [args...]}}`).
pub fn high(client: std::sync::Arc<dyn FileClient>, opts: &Opts, data: &Value) -> Outcome {
    let mut high = compile::High::default();
    match data {
        Value::Map(entries) => {
            for (k, v) in entries {
                high.ids.push((salt_compat::py_str(k), pad_funcs(v)));
            }
        }
        _ => return Err(vec!["High data must be a dictionary".to_owned()]),
    }
    let compiler = compile::Compiler::new(client.clone(), opts.clone());
    run_high(compiler, high, Vec::new(), client, opts)
}

/// Salt's `pad_funcs`: `state.fun: [args]` becomes `state: [args..., fun]`.
fn pad_funcs(body: &Value) -> Value {
    let Value::Map(entries) = body else {
        return body.clone();
    };
    let mut out = Vec::new();
    for (k, v) in entries {
        match (k.as_str().and_then(|s| s.split_once('.')), v) {
            (Some((st, fun)), Value::Array(args)) if !st.starts_with('_') => {
                let mut args = args.clone();
                args.push(Value::from(fun));
                out.push((Value::from(st), Value::Array(args)));
            }
            (Some((st, fun)), Value::Nil) => {
                out.push((Value::from(st), Value::Array(vec![Value::from(fun)])));
            }
            _ => out.push((k.clone(), v.clone())),
        }
    }
    Value::Map(out)
}

/// `state.show_sls mods`: the high data (Python's dict form, `__sls__`/`__env__` kept).
pub fn show_sls(client: std::sync::Arc<dyn FileClient>, opts: &Opts, mods: &[String]) -> Outcome {
    let mut compiler = compile::Compiler::new(client, opts.clone());
    high_data(&mut compiler, &[(opts.saltenv.clone(), mods.to_vec())])
}

/// `state.show_highstate`: the high data of the top file's SLS (Python's dict form).
pub fn show_highstate(client: std::sync::Arc<dyn FileClient>, opts: &Opts) -> Outcome {
    let mut compiler = compile::Compiler::new(client, opts.clone());
    let matches = compiler.top_matches()?;
    high_data(&mut compiler, &matches)
}

/// The high data of `matches` (`{id: body}`), extends applied, or every error found.
fn high_data(compiler: &mut compile::Compiler, matches: &[(String, Vec<String>)]) -> Outcome {
    let (mut high, mut errors) = compiler.render_highstate(matches);
    errors.extend(lowstate::reconcile(&mut high));
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Value::Map(
        high.ids
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect(),
    ))
}

/// `state.single state.fun name=... key=value...`: `{tag: return}`.
pub fn single(
    client: std::sync::Arc<dyn FileClient>,
    opts: &Opts,
    fun: &str,
    kwargs: &[(String, Value)],
) -> Outcome {
    let Some((state, f)) = fun.split_once('.') else {
        return Err(vec![format!("Invalid function passed: {fun}")]);
    };
    let name = kwargs
        .iter()
        .find(|(k, _)| k == "name")
        .map(|(_, v)| v.clone())
        .ok_or_else(|| vec!["state.single needs a name=...".to_owned()])?;
    let mut low = map(vec![]);
    for (k, v) in kwargs {
        set(&mut low, k, v.clone());
    }
    set(&mut low, "state", Value::from(state));
    set(&mut low, "fun", Value::from(f));
    set(&mut low, "__id__", name.clone());
    set(&mut low, "name", name);
    let mut probe = compile::High::default();
    let mut body = map(vec![
        ("__sls__", Value::from("")),
        ("__env__", Value::from("base")),
    ]);
    let args: Vec<Value> = kwargs
        .iter()
        .map(|(k, v)| map(vec![(k.as_str(), v.clone())]))
        .chain(std::iter::once(Value::from(f)))
        .collect();
    set(&mut body, state, Value::Array(args));
    probe.ids.push(("single".into(), body));
    let errors = lowstate::verify(&probe);
    if !errors.is_empty() {
        return Err(errors);
    }
    let tag = engine::gen_tag(&low);
    let mut eng = engine::Engine::new(opts, client, Vec::new());
    let ret = eng.call_single(&low);
    Ok(Value::Map(vec![(Value::from(tag), ret)]))
}

/// `state.show_lowstate`: the highstate's low chunks in run order.
pub fn show_lowstate(client: std::sync::Arc<dyn FileClient>, opts: &Opts) -> Outcome {
    let mut compiler = compile::Compiler::new(client, opts.clone());
    let matches = compiler.top_matches()?;
    let (high, errors) = compiler.render_highstate(&matches);
    Ok(Value::Array(low_chunks(high, errors)?))
}

/// `state.show_top`: `{saltenv: [sls...]}`.
pub fn show_top(client: std::sync::Arc<dyn FileClient>, opts: &Opts) -> Outcome {
    let compiler = compile::Compiler::new(client, opts.clone());
    let matches = compiler.top_matches()?;
    Ok(Value::Map(
        matches
            .into_iter()
            .map(|(e, s)| {
                (
                    Value::from(e),
                    Value::Array(s.into_iter().map(Value::from).collect()),
                )
            })
            .collect(),
    ))
}

/// Whether every state in a run succeeded (`result` not `False`).
pub fn all_ok(ret: &Value) -> bool {
    match ret {
        Value::Map(entries) => entries
            .iter()
            .all(|(_, r)| salt_compat::map_get(r, "result") != Some(&Value::Boolean(false))),
        _ => false,
    }
}
