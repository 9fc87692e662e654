//! salt-render: Salt's default renderer pipeline, `jinja|yaml`, for pillar (and states).
//!
//! [`render`] takes the source of an SLS file, a [`Context`] (grains, pillar, opts, saltenv,
//! sls) and a [`Loader`] that resolves `salt://` paths (for `{% import %}`, `{% from %}`,
//! `{% include %}` and `import_yaml`); it returns the data as msgpack values.
//!
//! Supported: the `#!yaml`, `#!yamlex`, `#!json`, `#!jinja|yaml`, `#!jinja|yamlex`,
//! `#!jinja|json`, `#!jinja` ... shebangs (`jinja`, `yaml`, `yamlex`, `json` stages; `py` and
//! the others refused by name), Salt's YAML 1.1 loading ([`yaml`]), Jinja through
//! minijinja with Python's str/dict/list methods, mutable dicts and lists for `{% do %}`,
//! StrictUndefined (Salt's default), Python's `%` formatting, the variables `grains`,
//! `pillar`, `opts`, `saltenv` and those of Salt's `generate_sls_context` (`sls`, `slspath`,
//! `slsdotpath`, `slscolonpath`, `sls_path`, `tpldir`, `tplpath`, `tplfile`, `tpldot`),
//! `salt['grains.get' | 'grains.filter_by' | 'pillar.get' | 'config.get' | 'match.glob' ..]`
//! and `salt.mod.fun(...)` (`salt_funcs.rs`),
//! and the filters `yaml`, `json`, `tojson`, `yaml_dquote`, `yaml_squote`, `yaml_encode`
//! (PyYAML over libyaml and Python's `json` to the byte: [`yaml_dump`], [`pyjson`]), `unique`,
//! `sequence`, `load_yaml`, `load_json`, `to_bool`, `string`, `format`, `round`, and Salt's
//! `regex_search`, `regex_match`, `regex_replace`, `regex_escape`, `quote`, `union`,
//! `intersect`, `difference`, `symmetric_difference`, `md5`, `sha1`, `sha256`, `sha512`,
//! `base64_encode`, `base64_decode`, `path_join`, `traverse`. Values print as Python prints them (`{{ l }}`
//! is `['a', None]`). Other `salt[...]` functions go to the
//! [`Context::salt`] hook (the minion's execution modules) when one is set. Anything else
//! (another renderer, a `salt[...]` function nobody has) is an error that names it; nothing
//! renders silently different.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod args;
mod jinja;
pub mod merge;
mod prepass;
mod pyformat;
pub mod pyjson;
mod pymethods;
mod pytext;
mod salt_filters;
mod salt_funcs;
mod values;
pub mod yaml;
pub mod yaml_dump;
pub mod yamlex;

use std::sync::Arc;

use rmpv::Value;

pub use pyjson::{JsonOpts, dumps as py_json};
pub use values::{from_jinja, to_jinja};

/// What a template sees.
#[derive(Clone, Debug)]
pub struct Context {
    /// The minion's grains.
    pub grains: Value,
    /// The pillar visible while rendering (the minion's `pillar_override` during pillar
    /// compilation, the compiled pillar for states).
    pub pillar: Value,
    /// The options visible as `opts` (and to `config.get`).
    pub opts: Value,
    /// The environment rendered.
    pub saltenv: String,
    /// The SLS name (`a.b`), empty for a top file.
    pub sls: String,
    /// The file's path relative to its root (`a/b.sls`, `a/b/init.sls`).
    pub tplfile: String,
    /// The minion id (for `match.*`).
    pub id: String,
    /// Extra template variables (a map; pillar `include:` `defaults`).
    pub vars: Value,
    /// The minion's execution modules for `salt[...]` beyond the built-in ones.
    pub salt: SaltHook,
}

/// Execution functions a template's `salt['mod.fun'](...)` reaches (the minion's modules).
pub trait SaltFunctions: Send + Sync {
    /// Call `fun` with positional `args` and keyword `kwargs`; `None` when the minion has no
    /// such function.
    fn call(
        &self,
        fun: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Option<Result<Value, String>>;

    /// Whether the minion has `fun`, without calling it (none known by default).
    fn has(&self, fun: &str) -> bool {
        let _ = fun;
        false
    }

    /// `fun`'s signature, where the minion knows it (`module.run`'s old syntax binds
    /// arguments by it).
    fn argspec(&self, fun: &str) -> Option<ArgSpec> {
        let _ = fun;
        None
    }
}

/// An execution function's signature: `def f(p0, p1=..., *args, **kwargs)`.
#[derive(Clone, Copy, Debug)]
pub struct ArgSpec {
    /// Named parameters in order.
    pub params: &'static [&'static str],
    /// How many of them are required (the first ones).
    pub required: usize,
    /// `*args`.
    pub varargs: bool,
    /// `**kwargs`.
    pub varkw: bool,
}

/// An optional [`SaltFunctions`] (none: only the renderer's built-in functions).
#[derive(Clone, Default)]
pub struct SaltHook(pub Option<Arc<dyn SaltFunctions>>);

impl std::fmt::Debug for SaltHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "SaltHook(Some)"
        } else {
            "SaltHook(None)"
        })
    }
}

impl Default for Context {
    fn default() -> Self {
        let empty = Value::Map(Vec::new());
        Context {
            grains: empty.clone(),
            pillar: empty.clone(),
            opts: empty,
            saltenv: "base".to_owned(),
            sls: String::new(),
            tplfile: String::new(),
            id: String::new(),
            vars: Value::Map(Vec::new()),
            salt: SaltHook::default(),
        }
    }
}

/// Resolves `salt://` paths for the templates.
pub trait Loader: Send + Sync {
    /// The text of `path` (relative to the environment's roots, no `salt://`) in `saltenv`;
    /// `Ok(None)` when it does not exist.
    fn load(&self, path: &str, saltenv: &str) -> Result<Option<String>, String>;
}

/// A render failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The Jinja stage failed.
    #[error("Jinja error: {0}")]
    Jinja(String),
    /// The YAML stage failed.
    #[error("YAML error: {0}")]
    Yaml(String),
    /// The JSON stage failed.
    #[error("JSON error: {0}")]
    Json(String),
    /// The shebang names a renderer salt-rs does not have.
    #[error("renderer {0:?} is not supported by salt-rs (supported: jinja, yaml, yamlex, json)")]
    Unsupported(String),
}

/// Render `source` with the pipeline of its shebang, or `default` (`jinja|yaml`).
pub fn render(
    source: &str,
    ctx: &Context,
    loader: Arc<dyn Loader>,
    default: &str,
) -> Result<Value, RenderError> {
    let (pipeline, body) = match source.strip_prefix("#!") {
        Some(rest) => {
            let (line, body) = rest.split_once('\n').unwrap_or((rest, ""));
            (line.trim().to_owned(), body.to_owned())
        }
        None => (default.to_owned(), source.to_owned()),
    };
    let stages: Vec<&str> = pipeline.split('|').map(str::trim).collect();
    for s in &stages {
        if !matches!(*s, "jinja" | "yaml" | "yamlex" | "json") {
            return Err(RenderError::Unsupported((*s).to_owned()));
        }
    }
    let mut text = body;
    let mut data: Option<Value> = None;
    for stage in stages {
        match stage {
            "jinja" => {
                if data.is_some() {
                    return Err(RenderError::Unsupported(
                        "jinja after a data renderer".into(),
                    ));
                }
                text = jinja::render(&text, ctx, loader.clone())?;
            }
            "yaml" => {
                data = Some(
                    yaml::load(&text)
                        .map_err(|e| RenderError::Yaml(e.0))?
                        .unwrap_or(Value::Map(Vec::new())),
                );
            }
            "yamlex" => {
                // `deserialize(sls_data) or {}`.
                let v = yamlex::deserialize(&text).map_err(|e| RenderError::Yaml(e.0))?;
                data = Some(
                    v.filter(salt_compat::py_truthy)
                        .unwrap_or(Value::Map(Vec::new())),
                );
            }
            _ => {
                let v: serde_json::Value = if text.trim().is_empty() {
                    serde_json::Value::Object(Default::default())
                } else {
                    serde_json::from_str(&text).map_err(|e| RenderError::Json(e.to_string()))?
                };
                data = Some(salt_compat::json::json_to_msgpack(&v));
            }
        }
    }
    data.ok_or_else(|| {
        RenderError::Unsupported(format!("{pipeline} (ends without a data renderer)"))
    })
}

/// Render `source` through the Jinja stage only (a `template: jinja` file), returning text.
pub fn render_jinja_text(
    source: &str,
    ctx: &Context,
    loader: Arc<dyn Loader>,
) -> Result<String, RenderError> {
    jinja::render(source, ctx, loader)
}

/// Salt 3007.17's python for golden tests, or `None` after `salt_testkit::require` recorded
/// the skip (under CI=true the test fails instead).
#[cfg(test)]
pub(crate) fn venv_python() -> Option<std::path::PathBuf> {
    salt_testkit::require(salt_testkit::salt_venv("3007.17")).map(|v| v.join("bin/python"))
}
