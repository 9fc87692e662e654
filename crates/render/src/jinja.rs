//! The Jinja stage: minijinja set up the way Salt sets up Jinja2 (StrictUndefined, no
//! autoescape, Python methods, Salt's filters and `salt[...]` functions).

use std::sync::Arc;

use minijinja::value::{Kwargs, Rest, Value as Mj};
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
    // Salt's render_jinja_tmpl: Jinja drops a template's final newline (the main one's,
    // and those of includes and imports); Salt puts the main one's back.
    let mut out = env
        .render_named_str(name, &src, ())
        .map_err(|e| RenderError::Jinja(describe(&e)))?;
    if text.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
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
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_unknown_method_callback(crate::pymethods::unknown_method);
    env.add_function("__pyfmt", |fmt: &str, arg: Mj| {
        crate::pyformat::pyfmt(fmt, arg)
    });
    env.add_function("__pyfmt_t", |fmt: &str, args: Rest<Mj>| {
        crate::pyformat::pyfmt_tuple(fmt, args)
    });
    // Python's `callable()`: functions, macros, `salt` functions (plain objects).
    env.add_test("callable", |v: Mj| {
        v.kind() == minijinja::value::ValueKind::Plain
            && v.downcast_object_ref::<crate::salt_funcs::SaltModule>()
                .is_none()
    });
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

    let sls_context = sls_context(&ctx.sls, &ctx.tplfile);
    let data = Arc::new(ctx.clone());
    env.add_global("grains", to_jinja(&ctx.grains));
    env.add_global("pillar", to_jinja(&ctx.pillar));
    env.add_global("opts", to_jinja(&ctx.opts));
    env.add_global("saltenv", ctx.saltenv.clone());
    // A template outside an SLS (a `file.managed` template) has no `sls` variables.
    if !(ctx.sls.is_empty() && ctx.tplfile.is_empty()) {
        env.add_global("sls", ctx.sls.clone());
        for (k, v) in sls_context {
            env.add_global(k, v);
        }
    }
    env.add_global(
        "salt",
        Mj::from_object(crate::salt_funcs::SaltFuncs { ctx: data }),
    );
    if let Value::Map(vars) = &ctx.vars {
        for (k, v) in vars {
            if let Some(name) = k.as_str() {
                env.add_global(name.to_owned(), to_jinja(v));
            }
        }
        // PillarStack's `__stack__` (crates/pillar `stack`): its `traverse` is Salt's
        // `traverse_dict_and_list`, as the `traverse` filter.
        if let Some((_, Value::Map(m))) = vars.iter().find(|(k, _)| k.as_str() == Some("__stack__"))
        {
            let mut g: std::collections::BTreeMap<String, Mj> = m
                .iter()
                .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), to_jinja(v))))
                .collect();
            g.insert(
                "traverse".to_owned(),
                Mj::from_function(crate::salt_filters::traverse),
            );
            env.add_global("__stack__", Mj::from(g));
        }
    }
    env
}

/// `salt.utils.templates.generate_sls_context(tmplpath, sls)`: `tplfile`, `tpldir` (`.` at
/// the root), `tpldot`, `tplpath`, `slspath`, `slsdotpath`, `slscolonpath`, `sls_path`.
/// Without a template path (a string rendered on its own) only the `sls*` ones.
fn sls_context(sls: &str, tplfile: &str) -> Vec<(&'static str, String)> {
    let mut slspath = sls.replace('.', "/");
    let mut out = Vec::new();
    if !tplfile.is_empty() {
        let template = if sls.is_empty() {
            tplfile.rsplit('/').next().unwrap_or(tplfile).to_owned()
        } else {
            tplfile.to_owned()
        };
        slspath = template
            .rsplit_once('/')
            .map(|(d, _)| d.to_owned())
            .unwrap_or_default();
        out.push(("tplpath", tplfile.to_owned()));
        out.push(("tplfile", template));
        out.push((
            "tpldir",
            if slspath.is_empty() {
                ".".to_owned()
            } else {
                slspath.clone()
            },
        ));
        out.push(("tpldot", slspath.replace('/', ".")));
    }
    out.push(("slsdotpath", slspath.replace('/', ".")));
    out.push(("slscolonpath", slspath.replace('/', ":")));
    out.push(("sls_path", slspath.replace('/', "_")));
    out.push(("slspath", slspath));
    out
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
