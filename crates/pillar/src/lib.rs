//! salt-pillar: Salt's pillar compiler (`salt/pillar/__init__.py` `Pillar.compile_pillar`),
//! used by the master for `_pillar` requests and by `salt-call --local`.
//!
//! For one minion: resolve the environments ([`roots`]), render every environment's `top.sls`,
//! keep the SLS whose targets match the minion (Salt's `confirm_top`: compound by default, or
//! the `match:` type), render them with `include:` (`defaults`, `key`), merge with
//! `pillar_source_merging_strategy` and `pillar_merge_lists`, add `_errors`, and merge the
//! minion's `pillar_override` last.
//!
//! `ext_pillar` ([`ext`]): Salt runs the external pillars after the top-file pillar (or
//! before it, `ext_pillar_first`) and merges their data with the same strategy, before
//! `pillar_override`. The modules are `cmd_json`, `cmd_yaml`, `cmd_yamlex`, `http_json`,
//! `http_yaml` ([`http`]), `file_tree` ([`file_tree`]), `postgres` ([`postgres`]) and `git`
//! ([`git`], the checkouts supplied by the master); the config loader refuses the others by
//! name.

mod compiler;
mod ext;
mod file_tree;
mod git;
mod http;
mod postgres;
pub mod roots;
mod stack;

use std::collections::BTreeMap;

use rmpv::Value;

pub use compiler::compile;
pub use git::{GitPillarSource, PillarDir};
pub use salt_render::SaltHook;

/// What the minion sent in its `_pillar` load (or what `salt-call --local` knows).
#[derive(Clone, Debug)]
pub struct Request {
    /// Minion id.
    pub id: String,
    /// Its grains (`id` set to the minion id, as Salt does).
    pub grains: Value,
    /// `saltenv` (or the deprecated `env`).
    pub saltenv: Option<String>,
    /// `pillarenv`.
    pub pillarenv: Option<String>,
    /// `pillar_override` (a map; anything else is ignored as Salt does).
    pub pillar_override: Value,
    /// `ext`: the minion's on-demand external pillar (modules of `on_demand_ext_pillar`).
    pub ext: Option<Value>,
    /// The templates' `salt[...]` beyond the renderer's own functions: a masterless
    /// minion's execution modules (Salt renders `salt-call --local` pillar with them).
    pub salt: SaltHook,
}

/// The options of Salt's `opts` the compiler reads (master or masterless minion).
#[derive(Clone, Debug)]
pub struct Options {
    /// `pillar_roots`: environment -> directories (`__env__` allowed).
    pub pillar_roots: BTreeMap<String, Vec<String>>,
    /// `pillarenv`.
    pub pillarenv: Option<String>,
    /// `pillarenv_from_saltenv`.
    pub pillarenv_from_saltenv: bool,
    /// `pillar_source_merging_strategy` (`smart`, `recurse`, `aggregate`, `overwrite`, `none`).
    pub pillar_source_merging_strategy: String,
    /// `pillar_merge_lists`.
    pub pillar_merge_lists: bool,
    /// `pillar_safe_render_error`.
    pub pillar_safe_render_error: bool,
    /// `pillar_includes_override_sls`.
    pub pillar_includes_override_sls: bool,
    /// `nodegroups`, for `N@` in top files.
    pub nodegroups: Vec<(String, Value)>,
    /// `ext_pillar`: (module, argument) in order.
    pub ext_pillar: Vec<(String, Value)>,
    /// `ext_pillar_first`.
    pub ext_pillar_first: bool,
    /// `on_demand_ext_pillar`.
    pub on_demand_ext_pillar: Vec<String>,
    /// The checkouts of the `git` items of `ext_pillar`, in their order (the master's
    /// salt-fileserver git_pillar; empty in masterless mode, which refuses `git`).
    pub git_pillars: Vec<std::sync::Arc<dyn GitPillarSource>>,
    /// `postgres`: the connection of the `postgres` external pillar.
    pub postgres: salt_config::PgPillarConn,
}

impl Default for Options {
    /// Salt's defaults (`DEFAULT_MINION_OPTS`, which the master's share).
    fn default() -> Self {
        Self {
            pillar_roots: BTreeMap::from([(
                "base".to_owned(),
                vec!["/srv/pillar".to_owned(), "/srv/spm/pillar".to_owned()],
            )]),
            pillarenv: None,
            pillarenv_from_saltenv: false,
            pillar_source_merging_strategy: "smart".to_owned(),
            pillar_merge_lists: false,
            pillar_safe_render_error: true,
            pillar_includes_override_sls: false,
            nodegroups: Vec::new(),
            ext_pillar: Vec::new(),
            ext_pillar_first: false,
            on_demand_ext_pillar: vec!["libvirt".to_owned(), "virtkey".to_owned()],
            git_pillars: Vec::new(),
            postgres: salt_config::PgPillarConn::default(),
        }
    }
}

impl From<&salt_config::MasterConfig> for Options {
    fn from(cfg: &salt_config::MasterConfig) -> Self {
        Self {
            pillar_roots: cfg.pillar_roots.clone(),
            pillarenv: cfg.pillarenv.clone(),
            pillarenv_from_saltenv: cfg.pillarenv_from_saltenv,
            pillar_source_merging_strategy: cfg.pillar_source_merging_strategy.clone(),
            pillar_merge_lists: cfg.pillar_merge_lists,
            pillar_safe_render_error: cfg.pillar_safe_render_error,
            pillar_includes_override_sls: cfg.pillar_includes_override_sls,
            nodegroups: cfg
                .fileserver
                .nodegroups
                .iter()
                .map(|(k, v)| (k.clone(), salt_compat::json::json_to_msgpack(v)))
                .collect(),
            ext_pillar: cfg
                .ext_pillar
                .iter()
                .map(|e| (e.module.clone(), salt_compat::json::json_to_msgpack(&e.arg)))
                .collect(),
            ext_pillar_first: cfg.ext_pillar_first,
            on_demand_ext_pillar: cfg.on_demand_ext_pillar.clone(),
            git_pillars: Vec::new(),
            postgres: cfg.postgres.clone(),
        }
    }
}

impl Options {
    /// From a masterless minion's `opts` map (its config file as loaded): the keys Salt's
    /// pillar reads, Salt's defaults for the others. A key of the wrong type is an error
    /// naming it.
    pub fn from_opts(opts: &Value) -> Result<Self, String> {
        let mut o = Self::default();
        let get = |k: &str| salt_compat::map_get(opts, k).filter(|v| !v.is_nil());
        let boolean = |k: &str, dflt: bool| match get(k) {
            None => Ok(dflt),
            Some(Value::Boolean(b)) => Ok(*b),
            Some(other) => Err(format!("{k}: expected a boolean, got {other}")),
        };
        if let Some(roots) = get("pillar_roots") {
            let Value::Map(envs) = roots else {
                return Err(format!("pillar_roots: expected a map, got {roots}"));
            };
            o.pillar_roots = envs
                .iter()
                .map(|(env, dirs)| {
                    let dirs = match dirs {
                        Value::Array(d) => d.iter().map(salt_compat::py_str).collect(),
                        other => vec![salt_compat::py_str(other)],
                    };
                    (salt_compat::py_str(env), dirs)
                })
                .collect();
        }
        o.pillarenv = get("pillarenv").map(salt_compat::py_str);
        o.pillarenv_from_saltenv = boolean("pillarenv_from_saltenv", false)?;
        if let Some(s) = get("pillar_source_merging_strategy") {
            o.pillar_source_merging_strategy = salt_compat::py_str(s);
        }
        o.pillar_merge_lists = boolean("pillar_merge_lists", false)?;
        o.pillar_safe_render_error = boolean("pillar_safe_render_error", true)?;
        o.pillar_includes_override_sls = boolean("pillar_includes_override_sls", false)?;
        match get("nodegroups") {
            None => {}
            Some(Value::Map(m)) => {
                o.nodegroups = m
                    .iter()
                    .map(|(k, v)| (salt_compat::py_str(k), v.clone()))
                    .collect();
            }
            // Salt's `repack_dictlist`: a list of one-key maps.
            Some(Value::Array(items)) => {
                for item in items {
                    let Value::Map(m) = item else {
                        return Err(format!("nodegroups: expected a map, got {item}"));
                    };
                    o.nodegroups
                        .extend(m.iter().map(|(k, v)| (salt_compat::py_str(k), v.clone())));
                }
            }
            Some(other) => return Err(format!("nodegroups: expected a map, got {other}")),
        }
        o.ext_pillar_first = boolean("ext_pillar_first", false)?;
        match get("ext_pillar") {
            None => {}
            Some(Value::Array(items)) => {
                for item in items {
                    let Value::Map(m) = item else {
                        return Err("The \"ext_pillar\" option is malformed".to_owned());
                    };
                    for (k, v) in m {
                        let module = salt_compat::py_str(k);
                        salt_config::check_ext_pillar_module(&module)
                            .map_err(|e| format!("ext_pillar: {e}"))?;
                        if module == "git" || module == "postgres" {
                            return Err(format!(
                                "ext_pillar: module `{module}` on a masterless minion is not \
                                 implemented by salt-rs"
                            ));
                        }
                        o.ext_pillar.push((module, v.clone()));
                    }
                }
            }
            Some(_) => return Err("The \"ext_pillar\" option is malformed".to_owned()),
        }
        if let Some(v) = get("on_demand_ext_pillar") {
            let Value::Array(items) = v else {
                return Err(format!("on_demand_ext_pillar: expected a list, got {v}"));
            };
            o.on_demand_ext_pillar = items.iter().map(salt_compat::py_str).collect();
        }
        Ok(o)
    }

    /// Salt's `merge` with `pillar_source_merging_strategy` and `pillar_merge_lists`.
    pub(crate) fn merge(&self, a: Value, b: Value) -> Value {
        salt_render::merge::merge(
            a,
            b,
            &self.pillar_source_merging_strategy,
            self.pillar_merge_lists,
        )
    }
}
