//! `pillar.*` (`get`, `items`, `item`, `raw`, `keys`, `ls`, `data`), `saltutil.refresh_pillar`
//! and `saltutil.sync_grains`, as Salt's `salt/modules/pillar.py` and `saltutil.py` have them.
//!
//! `pillar.items`/`ls`/`data` ask the master for a fresh pillar (`_pillar`; masterless: compile
//! it here), as Salt does;
//! `get`, `item`, `raw` and `keys` read the minion's in-memory pillar unless `pillarenv` or
//! `saltenv` is given.

use rmpv::Value;

use super::{Call, CallOutcome, Func, Run, Spec, text};
use crate::matcher::traverse;

const fn f(name: &'static str, spec: Spec, run: Run) -> Func {
    Func { name, spec, run }
}

const FRESH: Spec = Spec {
    params: &["pillar", "pillar_enc", "pillarenv", "saltenv"],
    required: 0,
    varargs: true,
    varkw: false,
};

/// The functions of this file.
pub const FUNCS: &[Func] = &[
    f(
        "pillar.get",
        Spec::of(
            &[
                "key",
                "default",
                "merge",
                "merge_nested_lists",
                "delimiter",
                "pillarenv",
                "saltenv",
            ],
            1,
        ),
        Run::Blocking(get),
    ),
    f("pillar.items", FRESH, Run::Blocking(items)),
    f("pillar.data", FRESH, Run::Blocking(items)),
    f("pillar.ls", FRESH, Run::Blocking(ls)),
    f(
        "pillar.item",
        Spec {
            params: &["default", "delimiter", "pillarenv", "saltenv"],
            required: 0,
            varargs: true,
            varkw: false,
        },
        Run::Blocking(item),
    ),
    f("pillar.raw", Spec::of(&["key"], 0), Run::Inline(raw)),
    f(
        "pillar.keys",
        Spec::of(&["key", "delimiter"], 1),
        Run::Inline(keys),
    ),
    f("saltutil.refresh_pillar", Spec::ANY, Run::Blocking(refresh)),
    f(
        "saltutil.sync_grains",
        Spec::ANY,
        Run::Blocking(sync_grains),
    ),
];

fn nested(ret: Value) -> CallOutcome {
    CallOutcome {
        ret,
        retcode: 0,
        out: Some("nested"),
    }
}

/// A fresh pillar from the master (`items`), for `saltenv`/`pillarenv`/`pillar=`.
fn fresh(c: &Call) -> Result<Value, CallOutcome> {
    if c.args.kw("pillar_enc").is_some_and(|v| !v.is_nil()) {
        return Err(CallOutcome::error(format!(
            "{}: pillar_enc is not supported by salt-rs",
            c.fun
        )));
    }
    let s = |k: &str| c.args.kw(k).filter(|v| !v.is_nil()).map(text);
    let over = match c.args.kw("pillar") {
        None | Some(Value::Nil) => Value::Map(Vec::new()),
        Some(m @ Value::Map(_)) => m.clone(),
        Some(_) => {
            return Err(CallOutcome::error(
                "Pillar data must be formatted as a dictionary, unless pillar_enc is specified."
                    .into(),
            ));
        }
    };
    match c
        .ctx
        .fresh_pillar(s("saltenv").as_deref(), s("pillarenv").as_deref(), over)
    {
        None => Ok(c.ctx.pillar_now()),
        Some(r) => r.map_err(CallOutcome::error),
    }
}

fn env_given(c: &Call) -> bool {
    ["pillarenv", "saltenv"]
        .iter()
        .any(|k| c.args.kw(k).is_some_and(|v| !v.is_nil()))
}

fn get(c: &Call) -> CallOutcome {
    let pillar = if env_given(c) {
        match fresh(c) {
            Ok(p) => p,
            Err(e) => return e,
        }
    } else {
        c.ctx.pillar_now()
    };
    let key = c.args.param(0, "key").map(text).unwrap_or_default();
    let default = c
        .args
        .param(1, "default")
        .cloned()
        .unwrap_or(Value::from(""));
    let merge = c.args.param(2, "merge").is_some_and(salt_states::truthy);
    let delim = c.args.param(4, "delimiter").map_or(":".to_owned(), text);
    let found = traverse(&pillar, &key, &delim).cloned();
    let ret = match (merge, found, default) {
        (true, Some(v @ Value::Map(_)), d @ Value::Map(_)) => {
            salt_render::merge::update(d, v, false)
        }
        (true, Some(Value::Array(v)), Value::Array(mut d)) => {
            for x in v {
                if !d.contains(&x) {
                    d.push(x);
                }
            }
            Value::Array(d)
        }
        (_, Some(v), _) => v,
        (_, None, d) => d,
    };
    CallOutcome::ok(ret)
}

fn items(c: &Call) -> CallOutcome {
    if !c.args.args.is_empty() {
        return item(c);
    }
    match fresh(c) {
        Ok(p) => nested(p),
        Err(e) => e,
    }
}

fn ls(c: &Call) -> CallOutcome {
    match fresh(c) {
        Ok(Value::Map(m)) => CallOutcome::ok(Value::Array(m.into_iter().map(|(k, _)| k).collect())),
        Ok(_) => CallOutcome::ok(Value::Array(Vec::new())),
        Err(e) => e,
    }
}

fn item(c: &Call) -> CallOutcome {
    let pillar = if env_given(c) {
        match fresh(c) {
            Ok(p) => p,
            Err(e) => return e,
        }
    } else {
        c.ctx.pillar_now()
    };
    let default = c
        .args
        .kw("default")
        .filter(|v| !v.is_nil())
        .cloned()
        .unwrap_or(Value::from(""));
    let delim = c.args.kw("delimiter").map_or(":".to_owned(), text);
    let out = c
        .args
        .args
        .iter()
        .map(|a| {
            let k = text(a);
            let v = traverse(&pillar, &k, &delim)
                .cloned()
                .unwrap_or_else(|| default.clone());
            (Value::from(k), v)
        })
        .collect();
    nested(Value::Map(out))
}

fn raw(c: &Call) -> CallOutcome {
    let pillar = c.ctx.pillar_now();
    match c.args.param(0, "key") {
        None | Some(Value::Nil) => nested(pillar),
        Some(k) => nested(
            salt_compat::map_get(&pillar, &text(k))
                .cloned()
                .unwrap_or_else(|| Value::Map(Vec::new())),
        ),
    }
}

fn keys(c: &Call) -> CallOutcome {
    let key = c.args.param(0, "key").map(text).unwrap_or_default();
    let delim = c.args.param(1, "delimiter").map_or(":".to_owned(), text);
    let pillar = c.ctx.pillar_now();
    match traverse(&pillar, &key, &delim) {
        Some(Value::Map(m)) => {
            CallOutcome::ok(Value::Array(m.iter().map(|(k, _)| k.clone()).collect()))
        }
        Some(_) => CallOutcome::error(format!(
            "ERROR executing 'pillar.keys': Pillar value must be a dictionary: {key}"
        )),
        None => CallOutcome::error(format!(
            "ERROR executing 'pillar.keys': Pillar key not found: {key}"
        )),
    }
}

/// `saltutil.refresh_pillar`: a fresh `_pillar` replaces the minion's (targeting included).
fn refresh(c: &Call) -> CallOutcome {
    if c.ctx.master.is_none() && c.ctx.local.is_none() {
        return CallOutcome::error(
            "saltutil.refresh_pillar: this salt-rs minion is not connected to a master".into(),
        );
    }
    match fresh(c) {
        Ok(p) => {
            crate::matcher::refuse_resources(&p);
            *c.ctx.pillar.write().unwrap_or_else(|e| e.into_inner()) = Some(p);
            CallOutcome::ok(Value::Boolean(true))
        }
        Err(e) => e,
    }
}

/// `saltutil.sync_grains`: salt-rs grains are static (config `grains:` and its own); custom
/// `_grains` modules are Python and are refused by name.
fn sync_grains(c: &Call) -> CallOutcome {
    let client = match super::state::remote_client(c) {
        Ok(cl) => cl,
        Err(e) => return e,
    };
    let saltenv = c
        .args
        .param(0, "saltenv")
        .map_or_else(|| "base".to_owned(), text);
    match client.list("_file_list", &saltenv, "_grains/") {
        Ok(files) if files.is_empty() => CallOutcome::ok(Value::Array(Vec::new())),
        Ok(files) => CallOutcome::error(format!(
            "ERROR: saltutil.sync_grains: custom grains modules need Python and are not \
             available in salt-rs: {}",
            files.join(", ")
        )),
        Err(e) => CallOutcome::error(e),
    }
}
