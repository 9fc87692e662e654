//! The Jinja stage: minijinja set up the way Salt sets up Jinja2 (StrictUndefined, no
//! autoescape, Python methods, Salt's filters and `salt[...]` functions).

use std::sync::Arc;

use minijinja::value::{Enumerator, Kwargs, Object, ObjectRepr, Rest, Value as Mj};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, State, UndefinedBehavior};
use rmpv::Value;

use crate::pyjson::{self, JsonOpts};
use crate::values::{from_jinja, mutable, to_jinja};
use crate::{Context, Loader, RenderError, prepass, yaml};

fn err(kind: ErrorKind, msg: impl Into<String>) -> Error {
    Error::new(kind, msg.into())
}

/// `indent=N` as `json.dumps` takes it: a negative one is no indentation, on new lines.
fn indent_of(n: Option<i64>) -> Option<usize> {
    n.map(|n| usize::try_from(n).unwrap_or(0))
}

/// Salt's `json` filter, `format_json(value, sort_keys=True, indent=None)`:
/// `salt.utils.json.dumps`, so non-ASCII is kept.
fn json_filter(
    v: Mj,
    sort_keys: Option<bool>,
    indent: Option<i64>,
    kw: Kwargs,
) -> Result<String, Error> {
    let sort_keys = kw
        .get::<Option<bool>>("sort_keys")?
        .or(sort_keys)
        .unwrap_or(true);
    let indent = indent_of(kw.get::<Option<i64>>("indent")?.or(indent));
    kw.assert_all_used()?;
    let opts = JsonOpts {
        sort_keys,
        ensure_ascii: false,
        indent,
    };
    Ok(pyjson::dumps(&from_jinja(&v), opts))
}

/// Salt's `tojson` filter, `tojson(val, indent=None, **options)`: `json.dumps` with
/// `ensure_ascii=True` unless told otherwise, then `<`, `>`, `&` and `'` escaped for HTML.
fn tojson_filter(v: Mj, indent: Option<i64>, kw: Kwargs) -> Result<String, Error> {
    let opts = JsonOpts {
        sort_keys: kw.get::<Option<bool>>("sort_keys")?.unwrap_or(false),
        ensure_ascii: kw.get::<Option<bool>>("ensure_ascii")?.unwrap_or(true),
        indent: indent_of(kw.get::<Option<i64>>("indent")?.or(indent)),
    };
    let known = ["indent", "sort_keys", "ensure_ascii"];
    if let Some(other) = kw.args().find(|k| !known.contains(k)) {
        return Err(err(
            ErrorKind::InvalidOperation,
            format!(
                "tojson: option {other:?} is not supported by salt-rs (supported: indent, sort_keys, ensure_ascii)"
            ),
        ));
    }
    Ok(pyjson::dumps(&from_jinja(&v), opts)
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\'', "\\u0027"))
}

/// Salt's `yaml` filter, `format_yaml(value, flow_style=True)`: PyYAML's `safe_dump`.
fn yaml_filter(v: Mj, flow_style: Option<bool>, kw: Kwargs) -> Result<String, Error> {
    let flow = kw
        .get::<Option<bool>>("flow_style")?
        .or(flow_style)
        .unwrap_or(true);
    kw.assert_all_used()?;
    Ok(crate::yaml_dump::safe_dump(&from_jinja(&v), flow))
}

/// Render one template to text.
pub(crate) fn render(
    text: &str,
    ctx: &Context,
    loader: Arc<dyn Loader>,
) -> Result<String, RenderError> {
    let env = environment(ctx, loader);
    let src = prepass::rewrite(text).map_err(RenderError::Jinja)?;
    let name = if ctx.tplfile.is_empty() {
        "<template>"
    } else {
        &ctx.tplfile
    };
    env.render_named_str(name, &src, ())
        .map_err(|e| RenderError::Jinja(describe(&e)))
}

fn describe(e: &Error) -> String {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(&format!(": {s}"));
        src = s.source();
    }
    msg
}

fn environment(ctx: &Context, loader: Arc<dyn Loader>) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_keep_trailing_newline(true);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    let saltenv = ctx.saltenv.clone();
    let l = loader.clone();
    env.set_loader(move |name| {
        let name = name.strip_prefix("salt://").unwrap_or(name);
        match l.load(name, &saltenv) {
            Ok(Some(src)) => prepass::rewrite(&src)
                .map(Some)
                .map_err(|e| err(ErrorKind::SyntaxError, e)),
            Ok(None) => Ok(None),
            Err(e) => Err(err(ErrorKind::TemplateNotFound, e)),
        }
    });
    env.set_path_join_callback(|name, parent| join(name, parent).into());

    env.add_function("__mut", |v: Mj| mutable(&v));
    for kind in ["yaml", "json", "text"] {
        env.add_function(
            format!("__import_{kind}"),
            move |state: &State<'_, '_>, path: String| -> Result<Mj, Error> {
                let name = join(&path, state.name());
                let text = state.env().get_template(&name)?.render(())?;
                load_text(kind, &text)
            },
        );
        env.add_filter(format!("__load_{kind}"), move |text: String| {
            load_text(kind, &text)
        });
    }
    env.add_filter("load_yaml", |text: String| load_text("yaml", &text));
    env.add_filter("load_json", |text: String| load_text("json", &text));
    env.add_filter("yaml", yaml_filter);
    env.add_filter("json", json_filter);
    env.add_filter("tojson", tojson_filter);
    env.add_filter("yaml_dquote", |v: Mj| {
        crate::yaml_dump::dquote(&crate::pytext::py_text(&v))
    });
    env.add_filter("yaml_squote", |v: Mj| {
        crate::yaml_dump::squote(&crate::pytext::py_text(&v))
    });
    env.add_filter("yaml_encode", |v: Mj| -> Result<String, Error> {
        let v = from_jinja(&v);
        crate::yaml_dump::encode_scalar(&v).ok_or_else(|| {
            let ty = if matches!(v, Value::Map(_)) {
                "dict"
            } else {
                "list"
            };
            err(
                ErrorKind::InvalidOperation,
                format!(
                    "yaml_encode() only works with YAML scalar data; failed for <class '{ty}'>"
                ),
            )
        })
    });
    env.add_filter("unique", |v: Mj| -> Result<Mj, Error> {
        let mut out: Vec<Mj> = Vec::new();
        for x in v.try_iter()? {
            if !out.contains(&x) {
                out.push(x);
            }
        }
        Ok(mutable(&Mj::from(out)))
    });
    env.add_filter("sequence", |v: Mj| match v.kind() {
        minijinja::value::ValueKind::Seq => v,
        _ => mutable(&Mj::from(vec![v])),
    });
    env.set_formatter(crate::pytext::formatter);
    env.add_filter("string", |v: Mj| crate::pytext::string_filter(&v));
    env.add_filter("round", crate::pytext::round_filter);
    env.add_filter("format", crate::pytext::format_filter);
    crate::salt_filters::add(&mut env);
    env.add_filter("to_bool", |v: Mj| match v.as_str() {
        Some(s) => matches!(s.to_lowercase().as_str(), "true" | "1" | "yes" | "on" | "y"),
        None => v.is_true(),
    });

    let sls = ctx.sls.clone();
    let tplfile = ctx.tplfile.clone();
    let tpldir = tplfile
        .rsplit_once('/')
        .map(|(d, _)| d.to_owned())
        .unwrap_or_default();
    let slspath = if sls.is_empty() {
        String::new()
    } else if tplfile.ends_with("/init.sls") || tplfile == "init.sls" {
        sls.replace('.', "/")
    } else {
        sls.rsplit_once('.')
            .map(|(d, _)| d.replace('.', "/"))
            .unwrap_or_default()
    };
    let data = Arc::new(ctx.clone());
    env.add_global("grains", to_jinja(&ctx.grains));
    env.add_global("pillar", to_jinja(&ctx.pillar));
    env.add_global("opts", to_jinja(&ctx.opts));
    env.add_global("saltenv", ctx.saltenv.clone());
    env.add_global("env", ctx.saltenv.clone());
    env.add_global("sls", sls);
    env.add_global("sls_path", slspath.replace('/', "_"));
    env.add_global("slspath", slspath);
    env.add_global("tpldot", tpldir.replace('/', "."));
    env.add_global(
        "tplroot",
        tpldir.split('/').next().unwrap_or_default().to_owned(),
    );
    env.add_global("tpldir", tpldir);
    env.add_global("tplpath", tplfile.clone());
    env.add_global("tplfile", tplfile);
    env.add_global("salt", Mj::from_object(SaltFuncs { ctx: data }));
    if let Value::Map(vars) = &ctx.vars {
        for (k, v) in vars {
            if let Some(name) = k.as_str() {
                env.add_global(name.to_owned(), to_jinja(v));
            }
        }
    }
    env
}

/// `./x` and `../x` relative to the including template's directory; others as given.
fn join(name: &str, parent: &str) -> String {
    let name = name.strip_prefix("salt://").unwrap_or(name);
    if !(name.starts_with("./") || name.starts_with("../")) {
        return name.to_owned();
    }
    let mut parts: Vec<&str> = parent.split('/').collect();
    parts.pop();
    for seg in name.split('/') {
        match seg {
            "." | "" => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

fn str_of(v: &Mj) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

fn load_text(kind: &str, text: &str) -> Result<Mj, Error> {
    match kind {
        "yaml" => {
            let v = yaml::load(text).map_err(|e| err(ErrorKind::InvalidOperation, e.0))?;
            Ok(to_jinja(&v.unwrap_or(Value::Nil)))
        }
        "json" => {
            let v: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| err(ErrorKind::InvalidOperation, format!("JSON: {e}")))?;
            Ok(to_jinja(&salt_compat::json::json_to_msgpack(&v)))
        }
        _ => Ok(Mj::from(text)),
    }
}

/// The `salt` dict of execution functions available to templates.
#[derive(Debug)]
struct SaltFuncs {
    ctx: Arc<Context>,
}

const FUNCS: [&str; 12] = [
    "grains.get",
    "grains.item",
    "grains.items",
    "grains.filter_by",
    "pillar.get",
    "pillar.items",
    "config.get",
    "match.glob",
    "match.pcre",
    "match.grain",
    "match.list",
    "match.compound",
];

impl Object for SaltFuncs {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Mj) -> Option<Mj> {
        let name = key.as_str()?.to_owned();
        let ctx = self.ctx.clone();
        Some(Mj::from_function(move |args: Rest<Mj>, kwargs: Kwargs| {
            call(&ctx, &name, &args, &kwargs)
        }))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Str(&FUNCS)
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
}

fn call(ctx: &Context, name: &str, pos: &[Mj], kw: &Kwargs) -> Result<Mj, Error> {
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
        "grains.filter_by" => filter_by(ctx, &a),
        "match.glob" => matcher("glob"),
        "match.pcre" => matcher("pcre"),
        "match.grain" => matcher("grain"),
        "match.list" => matcher("list"),
        "match.compound" => matcher("compound"),
        other => {
            let hooked = ctx.salt.0.as_ref().and_then(|h| {
                let args: Vec<Value> = pos.iter().map(from_jinja).collect();
                let kwargs: Vec<(String, Value)> = kw
                    .args()
                    .filter_map(|k| {
                        let v = kw.get::<Mj>(k).ok()?;
                        Some((k.to_owned(), from_jinja(&v)))
                    })
                    .collect();
                h.call(other, &args, &kwargs)
            });
            match hooked {
                Some(Ok(v)) => Ok(to_jinja(&v)),
                Some(Err(e)) => Err(err(
                    ErrorKind::InvalidOperation,
                    format!("salt['{other}'] failed: {e}"),
                )),
                None => Err(err(
                    ErrorKind::UnknownFunction,
                    format!("'{other}' is not available."),
                )),
            }
        }
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
    let merge = a
        .get(2, "merge")
        .map(|m| from_jinja(&m))
        .filter(|m| *m != Value::Nil);
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
