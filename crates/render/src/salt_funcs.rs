//! The `salt` dunder of templates: `salt['mod.fun'](...)` and `salt.mod.fun(...)` (Salt's
//! `_split_module_dicts`). The renderer answers the functions that read only the template's
//! data (`grains.*`, `pillar.*`, `config.get`, `match.*`), the ones that must change a
//! template's dict in place (`defaults.merge`, `defaults.update`), `log.*` (through
//! `tracing`) and the pure helpers formulas call (`file.join`, `file.dirname`,
//! `file.basename`, `slsutil.serialize`, `defaults.deepcopy`); the rest go to the minion's
//! execution modules ([`crate::Context::salt`]).

use std::sync::Arc;

use minijinja::value::{Enumerator, Kwargs, Object, ObjectRepr, Value as Mj};
use minijinja::{Error, ErrorKind, State};
use rmpv::Value;
use salt_compat::posixpath;

use crate::Context;
use crate::values::{from_jinja, mutable, to_jinja, update_in_place};

fn err(kind: ErrorKind, msg: impl Into<String>) -> Error {
    Error::new(kind, msg.into())
}

fn str_of(v: &Mj) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

/// The `salt` dict of execution functions available to templates.
#[derive(Debug)]
pub(crate) struct SaltFuncs {
    pub(crate) ctx: Arc<Context>,
}

/// The functions the renderer itself answers.
const FUNCS: [&str; 26] = [
    "grains.get",
    "grains.item",
    "grains.items",
    "grains.filter_by",
    "pillar.get",
    "pillar.items",
    "config.get",
    "config.option",
    "match.glob",
    "match.pcre",
    "match.grain",
    "match.list",
    "match.compound",
    "defaults.merge",
    "defaults.update",
    "defaults.deepcopy",
    "log.debug",
    "log.info",
    "log.warning",
    "log.error",
    "log.critical",
    "log.exception",
    "file.join",
    "file.dirname",
    "file.basename",
    "slsutil.serialize",
];

impl Object for SaltFuncs {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    /// `salt['mod.fun']` is the function; `salt.mod` is the module (for `salt.mod.fun`).
    fn get_value(self: &Arc<Self>, key: &Mj) -> Option<Mj> {
        let name = key.as_str()?;
        if !name.contains('.') {
            return Some(Mj::from_object(SaltModule {
                ctx: self.ctx.clone(),
                module: name.to_owned(),
            }));
        }
        Some(Mj::from_object(SaltFn {
            ctx: self.ctx.clone(),
            name: name.to_owned(),
        }))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Str(&FUNCS)
    }
}

/// `salt.<module>`: its functions as attributes.
#[derive(Debug)]
pub(crate) struct SaltModule {
    ctx: Arc<Context>,
    module: String,
}

impl Object for SaltModule {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Mj) -> Option<Mj> {
        Some(Mj::from_object(SaltFn {
            ctx: self.ctx.clone(),
            name: format!("{}.{}", self.module, key.as_str()?),
        }))
    }

    fn call_method(
        self: &Arc<Self>,
        state: &State<'_, '_>,
        method: &str,
        args: &[Mj],
    ) -> Result<Mj, Error> {
        let f = Arc::new(SaltFn {
            ctx: self.ctx.clone(),
            name: format!("{}.{method}", self.module),
        });
        f.call(state, args)
    }
}

/// One execution function, callable from a template.
#[derive(Debug)]
pub(crate) struct SaltFn {
    ctx: Arc<Context>,
    name: String,
}

impl Object for SaltFn {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<function {}>", self.name)
    }

    fn call(self: &Arc<Self>, _state: &State<'_, '_>, args: &[Mj]) -> Result<Mj, Error> {
        let (pos, kw): (&[Mj], Kwargs) = minijinja::value::from_args(args)?;
        call(&self.ctx, &self.name, pos, &kw)
    }
}

struct Args<'a> {
    pos: &'a [Mj],
    kw: &'a Kwargs,
}

impl Args<'_> {
    fn get(&self, i: usize, name: &str) -> Option<Mj> {
        self.pos
            .get(i)
            .cloned()
            .or_else(|| self.kw.get::<Option<Mj>>(name).ok().flatten())
    }

    fn text(&self, i: usize, name: &str, default: &str) -> String {
        self.get(i, name)
            .map_or_else(|| default.to_owned(), |v| str_of(&v))
    }

    fn flag(&self, i: usize, name: &str, default: bool) -> bool {
        self.get(i, name).map_or(default, |v| v.is_true())
    }
}

fn log_to_tracing(fun: &str, msg: &str) {
    match fun {
        "debug" => tracing::debug!(target: "salt.loaded.int.module.logmod", "{msg}"),
        "info" => tracing::info!(target: "salt.loaded.int.module.logmod", "{msg}"),
        "warning" => tracing::warn!(target: "salt.loaded.int.module.logmod", "{msg}"),
        _ => tracing::error!(target: "salt.loaded.int.module.logmod", "{msg}"),
    }
}

pub(crate) fn call(ctx: &Context, name: &str, pos: &[Mj], kw: &Kwargs) -> Result<Mj, Error> {
    let a = Args { pos, kw };
    let lookup = |data: &Value| -> Option<Value> {
        let key = a.text(0, "key", "");
        let delim = a.text(99, "delimiter", ":");
        salt_matcher::traverse(data, &key, &delim).cloned()
    };
    let default = || a.get(1, "default").unwrap_or_else(|| Mj::from(""));
    let facts = salt_matcher::Facts {
        id: &ctx.id,
        grains: Some(&ctx.grains),
        pillar: Some(&ctx.pillar),
    };
    let matcher = |kind: &str| -> Result<Mj, Error> {
        let tgt = from_jinja(&a.get(0, "tgt").unwrap_or_default());
        salt_matcher::check(facts, &tgt, kind, None, &[])
            .map(|r| Mj::from(r == Some(true)))
            .map_err(|e| err(ErrorKind::InvalidOperation, e.to_string()))
    };
    match name {
        "grains.get" | "grains.item" => {
            Ok(lookup(&ctx.grains).map_or_else(default, |v| to_jinja(&v)))
        }
        "grains.items" => Ok(to_jinja(&ctx.grains)),
        "pillar.items" => Ok(to_jinja(&ctx.pillar)),
        "pillar.get" => {
            let found = lookup(&ctx.pillar);
            let merge = a.get(2, "merge").is_some_and(|m| m.is_true());
            match found {
                None => Ok(default()),
                Some(v) if merge => {
                    let d = from_jinja(&default());
                    if matches!(d, Value::Map(_)) && matches!(v, Value::Map(_)) {
                        Ok(to_jinja(&crate::merge::update(d, v, false)))
                    } else {
                        Ok(to_jinja(&v))
                    }
                }
                Some(v) => Ok(to_jinja(&v)),
            }
        }
        "config.get" => Ok([&ctx.opts, &ctx.grains, &ctx.pillar]
            .into_iter()
            .find_map(lookup)
            .map_or_else(default, |v| to_jinja(&v))),
        // `config.option(value, default='', omit_opts=False, omit_master=False,
        // omit_pillar=False)`: opts, then pillar, by the whole key (no traversal).
        "config.option" => {
            let key = a.text(0, "value", "");
            let flat = |data: &Value| match data {
                Value::Map(m) => m
                    .iter()
                    .find(|(k, _)| k.as_str() == Some(key.as_str()))
                    .map(|(_, v)| v.clone()),
                _ => None,
            };
            let sources = [
                (!a.flag(2, "omit_opts", false)).then_some(&ctx.opts),
                (!a.flag(4, "omit_pillar", false)).then_some(&ctx.pillar),
            ];
            Ok(sources
                .into_iter()
                .flatten()
                .find_map(flat)
                .map_or_else(default, |v| to_jinja(&v)))
        }
        "grains.filter_by" => filter_by(ctx, &a),
        "match.glob" => matcher("glob"),
        "match.pcre" => matcher("pcre"),
        "match.grain" => matcher("grain"),
        "match.list" => matcher("list"),
        "match.compound" => matcher("compound"),
        "defaults.merge" | "defaults.update" => defaults_merge(name, &a),
        "defaults.deepcopy" => Ok(to_jinja(&from_jinja(
            &a.get(0, "source").unwrap_or_default(),
        ))),
        "file.join" => {
            let parts: Vec<String> = pos.iter().map(str_of).collect();
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            let joined = parts
                .split_first()
                .map(|(first, rest)| posixpath::join(first, rest))
                .unwrap_or_default();
            Ok(Mj::from(joined))
        }
        "file.dirname" => Ok(Mj::from(posixpath::dirname(&a.text(0, "path", "")))),
        "file.basename" => {
            let p = a.text(0, "path", "");
            Ok(Mj::from(posixpath::basename(&p)))
        }
        "slsutil.serialize" => serialize(&a),
        _ if name.starts_with("log.") => {
            let level = &name[4..];
            if !matches!(
                level,
                "debug" | "info" | "warning" | "error" | "critical" | "exception"
            ) {
                return hooked(ctx, name, pos, kw);
            }
            log_to_tracing(level, &a.text(0, "message", ""));
            Ok(Mj::from(()))
        }
        other => hooked(ctx, other, pos, kw),
    }
}

/// A function of the minion's execution modules.
fn hooked(ctx: &Context, fun: &str, pos: &[Mj], kw: &Kwargs) -> Result<Mj, Error> {
    let hooked = ctx.salt.0.as_ref().and_then(|h| {
        let args: Vec<Value> = pos.iter().map(from_jinja).collect();
        let kwargs: Vec<(String, Value)> = kw
            .args()
            .filter_map(|k| {
                let v = kw.get::<Mj>(k).ok()?;
                Some((k.to_owned(), from_jinja(&v)))
            })
            .collect();
        h.call(fun, &args, &kwargs)
    });
    match hooked {
        Some(Ok(v)) => Ok(to_jinja(&v)),
        Some(Err(e)) => Err(err(
            ErrorKind::InvalidOperation,
            format!("salt['{fun}'] failed: {e}"),
        )),
        None => Err(err(
            ErrorKind::UnknownFunction,
            format!("'{fun}' is not available."),
        )),
    }
}

/// `defaults.merge(dest, src, merge_lists=False, in_place=True, convert_none=True)` and
/// `defaults.update(dest, defaults, merge_lists=True, in_place=True, convert_none=True)`.
fn defaults_merge(name: &str, a: &Args<'_>) -> Result<Mj, Error> {
    let is_update = name == "defaults.update";
    let (dest_name, src_name) = if is_update {
        ("dest", "defaults")
    } else {
        ("dest", "src")
    };
    let dest = a.get(0, dest_name).unwrap_or_default();
    let src = a.get(1, src_name).unwrap_or_default();
    let merge_lists = a.flag(2, "merge_lists", is_update);
    let in_place = a.flag(3, "in_place", true);
    let convert_none = a.flag(4, "convert_none", true);
    let none = |v: &Mj| v.is_none() || v.is_undefined();
    let src = if none(&src) && convert_none {
        mutable(&Mj::from_serialize(serde_json::json!({})))
    } else {
        src
    };
    if is_update {
        // defaults.update: `defaults` merged under `dest` (dest wins), in place.
        let dest = if none(&dest) && convert_none && !in_place {
            mutable(&Mj::from_serialize(serde_json::json!({})))
        } else {
            dest
        };
        if none(&dest) {
            return Err(err(
                ErrorKind::InvalidOperation,
                "TypeError: Can't perform in-place merge into NoneType",
            ));
        }
        let merged = to_jinja(&crate::merge::update(
            from_jinja(&src),
            from_jinja(&dest),
            merge_lists,
        ));
        let target = if in_place {
            dest
        } else {
            to_jinja(&from_jinja(&dest))
        };
        update_in_place(&target, &merged, false)?;
        return Ok(target);
    }
    let dest = if none(&dest) && convert_none {
        if in_place {
            return Err(err(
                ErrorKind::InvalidOperation,
                "TypeError: Can't perform in-place merge into NoneType",
            ));
        }
        mutable(&Mj::from_serialize(serde_json::json!({})))
    } else if in_place {
        dest
    } else {
        to_jinja(&from_jinja(&dest))
    };
    update_in_place(&dest, &src, merge_lists)?;
    Ok(dest)
}

/// `slsutil.serialize(serializer, obj, **kwargs)` for `yaml` and `json`.
fn serialize(a: &Args<'_>) -> Result<Mj, Error> {
    let kind = a.text(0, "serializer", "");
    let obj = from_jinja(&a.get(1, "obj").unwrap_or_default());
    let known: &[&str] = match kind.as_str() {
        "json" => &["sort_keys", "indent"],
        "yaml" => &["default_flow_style", "allow_unicode"],
        _ => {
            return Err(err(
                ErrorKind::InvalidOperation,
                format!(
                    "slsutil.serialize: serializer {kind:?} is not supported by salt-rs (supported: yaml, json)"
                ),
            ));
        }
    };
    if let Some(other) =
        a.kw.args()
            .find(|k| !known.contains(k) && *k != "serializer" && *k != "obj")
    {
        return Err(err(
            ErrorKind::InvalidOperation,
            format!("slsutil.serialize: option {other:?} is not supported by salt-rs"),
        ));
    }
    let kw_bool = |k: &str| a.kw.get::<Option<bool>>(k).ok().flatten();
    if kind == "json" {
        let indent = a.kw.get::<Option<i64>>("indent").ok().flatten();
        let opts = crate::pyjson::JsonOpts {
            sort_keys: kw_bool("sort_keys").unwrap_or(false),
            ensure_ascii: true,
            indent: indent.map(|n| usize::try_from(n).unwrap_or(0)),
        };
        return Ok(Mj::from(crate::pyjson::dumps(&obj, opts)));
    }
    // salt.serializers.yaml.serialize: `yaml.dump` with Salt's SafeDumper, the final newline
    // dropped.
    let Some(flow) = kw_bool("default_flow_style") else {
        return Err(err(
            ErrorKind::InvalidOperation,
            "slsutil.serialize: yaml with default_flow_style=None (block style only where needed) is not supported by salt-rs; pass default_flow_style=True or False",
        ));
    };
    if kw_bool("allow_unicode") == Some(true) && !ascii_only(&obj) {
        return Err(err(
            ErrorKind::InvalidOperation,
            "slsutil.serialize: yaml with allow_unicode=True of non-ASCII text is not supported by salt-rs",
        ));
    }
    Ok(Mj::from(crate::yaml_dump::safe_dump(&obj, flow)))
}

fn ascii_only(v: &Value) -> bool {
    match v {
        Value::String(s) => s.as_bytes().is_ascii(),
        Value::Array(a) => a.iter().all(ascii_only),
        Value::Map(m) => m.iter().all(|(k, v)| ascii_only(k) && ascii_only(v)),
        _ => true,
    }
}

/// `salt.utils.data.filter_by` as `grains.filter_by` calls it.
fn filter_by(ctx: &Context, a: &Args<'_>) -> Result<Mj, Error> {
    let lookup = from_jinja(&a.get(0, "lookup_dict").unwrap_or_default());
    let Value::Map(entries) = &lookup else {
        return Err(err(
            ErrorKind::InvalidOperation,
            "filter_by: lookup_dict must be a dict",
        ));
    };
    let grain = a.text(1, "grain", "os_family");
    // Salt's `if merge:`: a false value (None, '', {}) is no merge.
    let merge = a
        .get(2, "merge")
        .filter(|m| m.is_true())
        .map(|m| from_jinja(&m));
    let default = a.text(3, "default", "default");
    let base = a
        .get(4, "base")
        .map(|b| str_of(&b))
        .filter(|b| !b.is_empty());
    let get = |k: &str| {
        entries
            .iter()
            .find(|(e, _)| e.as_str() == Some(k))
            .map(|(_, v)| v.clone())
    };
    let val = salt_matcher::traverse(&ctx.grains, &grain, ":").cloned();
    let candidates: Vec<Value> = match val {
        Some(Value::Array(items)) => items,
        Some(v) => vec![v],
        None => vec![Value::Array(Vec::new())],
    };
    let mut ret: Option<Value> = None;
    'outer: for each in &candidates {
        let each = salt_compat::py_str(each);
        for (k, v) in entries {
            if salt_matcher::fnmatch(&each, &salt_compat::py_str(k)) {
                ret = Some(v.clone());
                break 'outer;
            }
        }
    }
    if ret.is_none() {
        ret = get(&default);
    }
    if let Some(base_values) = base.as_deref().and_then(get) {
        ret = match ret {
            None => Some(base_values),
            Some(r) if matches!(base_values, Value::Map(_)) => {
                if !matches!(r, Value::Map(_)) {
                    return Err(err(
                        ErrorKind::InvalidOperation,
                        "filter_by default and look-up values must both be dictionaries.",
                    ));
                }
                Some(crate::merge::update(base_values, r, false))
            }
            r => r,
        };
    }
    if let Some(m) = merge {
        if !matches!(m, Value::Map(_)) {
            return Err(err(
                ErrorKind::InvalidOperation,
                "filter_by merge argument must be a dictionary.",
            ));
        }
        ret = Some(match ret {
            None => m,
            Some(r) => crate::merge::update(r, m, false),
        });
    }
    Ok(ret.map_or_else(|| Mj::from(()), |v| to_jinja(&v)))
}
