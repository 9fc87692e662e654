//! `pkgrepo.managed` and `pkgrepo.absent` (`salt/states/pkgrepo.py` of 3007) for APT,
//! through `salt-execmods`' `apt_sources`/`apt_repo` (Salt's own sources-file parser, as
//! Salt runs without python3-apt). Repository keys (`key_url`, `keyid`/`keyserver`,
//! `key_text`), PPAs and `consolidate` are refused by name.

use rmpv::Value;
use salt_execmods::apt_repo::{self, Kwargs, combine_comments, kwarg, py_truthy};
use salt_execmods::apt_sources::{self as src, SourceEntry};
use salt_execmods::run::which;

use super::args::{Args, Default as D};
use super::{base_ret, name_of, ret};
use crate::compile::STATE_INTERNAL_KEYWORDS;
use crate::engine::Ctx;
use crate::{map, set};

/// `pkgrepo.managed` (`copr` is RedHat's: Salt ignores it on Debian too).
pub const PKGREPO_MANAGED: Args = Args {
    honoured: &["name", "copr", "aptkey"],
    refused: &[("ppa", D::None)],
    apply_only: &[],
};
/// `pkgrepo.absent`.
pub const PKGREPO_ABSENT: Args = Args {
    honoured: &["name"],
    refused: &[],
    apply_only: &[],
};

/// `**kwargs` Salt acts on that salt-rs does not implement (refused when given).
const MANAGED_REFUSED: &[&str] = &[
    "key_url",
    "keyid",
    "keyserver",
    "key_text",
    "consolidate",
    "ppa_auth",
];

/// The state's `**kwargs`: the low chunk without the engine's keywords.
fn kwargs(low: &Value) -> Vec<(String, Value)> {
    let Value::Map(m) = low else {
        return Vec::new();
    };
    m.iter()
        .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), v.clone())))
        .filter(|(k, _)| !k.starts_with("__") && !STATE_INTERNAL_KEYWORDS.contains(&k.as_str()))
        .filter(|(k, _)| !["ppa", "copr", "aptkey"].contains(&k.as_str()))
        .collect()
}

fn fail(r: Value, msg: impl Into<String>) -> Value {
    ret::fail(r, msg.into())
}

/// `refresh_db` as `mod_repo`/`del_repo` call it (Salt's clears the pkg states' rtag).
fn refresh_db() -> Result<(), String> {
    super::pkg::clear_rtag();
    salt_execmods::pkg::refresh_db().map(|_| ())
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// Python's `set()` of a list, comparable.
fn set_of(v: &[String]) -> Vec<String> {
    let mut v = sorted(v);
    v.dedup();
    v
}

/// The sorted-comps words of a line (`split()[3:]` sorted).
fn line_words(line: &str) -> Vec<String> {
    let mut w: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    if w.len() > 3 {
        w[3..].sort();
    }
    w
}

/// Salt's loop over the sanitized arguments: whether `pre` is already `want`.
fn configured(pre: &SourceEntry, want: &SourceEntry, kw: &Kwargs) -> bool {
    if sorted(&want.comps) != sorted(&pre.comps)
        || want.disabled != pre.disabled
        || want.dist != pre.dist
        || want.kind != pre.kind
        || want.uri != pre.uri
    {
        return false;
    }
    if !want.disabled {
        let pre_line = pre.line.trim();
        let (repo, comments) = pre_line.split_once('#').unwrap_or((pre_line, ""));
        if line_words(want.line.trim()) != line_words(repo.trim()) {
            return false;
        }
        if let Some(c) = kwarg(kw, "comments")
            && combine_comments(c) != comments.trim()
        {
            return false;
        }
    }
    let archs = if want.architectures.is_empty() {
        want.architectures == pre.architectures
    } else {
        set_of(&want.architectures) == set_of(&pre.architectures)
    };
    archs && want.signedby == pre.signedby
}

/// `{key: {new, old}}` for each of `keys` whose value differs.
fn diff(keys: &[&str], new: Option<&Value>, old: &Value) -> Value {
    let get = |m: Option<&Value>, k: &str| {
        m.and_then(|m| salt_compat::map_get(m, k))
            .cloned()
            .unwrap_or(Value::Nil)
    };
    map(keys
        .iter()
        .filter_map(|k| {
            let (n, o) = (get(new, k), get(Some(old), k));
            (n != o).then(|| (*k, map(vec![("new", n), ("old", o)])))
        })
        .collect())
}

const KEYS: &[&str] = &[
    "file",
    "comps",
    "disabled",
    "dist",
    "type",
    "uri",
    "line",
    "architectures",
    "signedby",
];

fn managed(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = name_of(low);
    let mut r = base_ret(low);
    set(&mut r, "result", Value::Nil);
    let aptkey = salt_compat::map_get(low, "aptkey").is_none_or(py_truthy) && which("apt-key");
    let mut kw = kwargs(low);
    if let Some(k) = MANAGED_REFUSED.iter().find(|k| {
        kwarg(&kw, k).is_some_and(|v| !v.is_nil() && (**k != "consolidate" || py_truthy(v)))
    }) {
        return fail(
            r,
            format!("pkgrepo.managed argument '{k}' is not supported by salt-rs"),
        );
    }
    if kwarg(&kw, "repo").is_some() {
        return fail(
            r,
            "'repo' is not a supported argument for this state. The 'name' argument is probably what was intended.",
        );
    }
    let enabled = kwarg(&kw, "enabled").filter(|v| !v.is_nil()).cloned();
    let disabled = kwarg(&kw, "disabled").filter(|v| !v.is_nil()).cloned();
    if enabled.is_some() && disabled.is_some() {
        return fail(r, "Only one of enabled/disabled is allowed");
    }
    let disabled = match (enabled, disabled) {
        (Some(e), _) => !salt_execmods::is_true(&e),
        (None, Some(d)) => salt_execmods::is_true(&d),
        (None, None) => false,
    };
    kw.retain(|(k, _)| {
        !["enabled", "disabled", "allow_insecure_key", "name"].contains(&k.as_str())
    });
    kw.insert(0, ("name".into(), Value::from(name.clone())));
    kw.push(("disabled".into(), Value::Boolean(disabled)));
    let pre = match src::get_repo(&name) {
        Ok(p) => p,
        Err(e) => return fail(r, format!("Failed to examine repo '{name}': {e}")),
    };
    let want = match apt_repo::expand_repo_def(&name, &kw) {
        Ok(w) => w,
        Err(e) => return fail(r, e),
    };
    let clean_file = kwarg(&kw, "clean_file").is_some_and(py_truthy);
    let file = kwarg(&kw, "file")
        .filter(|v| py_truthy(v))
        .map(salt_execmods::text);
    let mut reconfigure = false;
    if let (Some(_), true, Some(f)) = (&pre, clean_file, &file)
        && let Ok(text) = std::fs::read_to_string(f)
    {
        reconfigure = text
            .lines()
            .map(str::trim)
            .any(|l| !l.is_empty() && !l.starts_with('#') && l != name.trim());
    }
    let keys: &[&str] = if reconfigure { KEYS } else { &KEYS[1..] };
    if let Some(p) = &pre
        && !reconfigure
        && configured(p, &want, &kw)
    {
        set(&mut r, "result", Value::Boolean(true));
        ret::comment(&mut r, format!("Package repo '{name}' already configured"));
        return r;
    }
    let want_v = want.to_value();
    if ctx.opts.test {
        ret::comment(
            &mut r,
            format!(
                "Package repo '{name}' would be configured. This may cause pkg states to behave \
                 differently than stated if this action is repeated without test=True, due to \
                 the differences in the configured repositories."
            ),
        );
        let changes = match &pre {
            Some(p) => diff(keys, Some(&want_v), &p.to_value()),
            None => map(vec![("repo", Value::from(name.clone()))]),
        };
        set(&mut r, "changes", changes);
        return r;
    }
    if clean_file {
        let Some(f) = &file else {
            return fail(r, "KeyError: 'file'");
        };
        if let Err(e) = std::fs::write(f, "") {
            return fail(r, format!("{f}: {e}"));
        }
    }
    if let Err(e) = apt_repo::mod_repo(&name, aptkey, &kw, &refresh_db) {
        return fail(r, format!("Failed to configure repo '{name}': {e}"));
    }
    let post = match src::get_repo(&name) {
        Ok(p) => p.map(|p| p.to_value()),
        Err(e) => return fail(r, format!("Failed to confirm config of repo '{name}': {e}")),
    };
    let changes = match &pre {
        Some(p) => diff(keys, post.as_ref(), &p.to_value()),
        None => map(vec![("repo", Value::from(name.clone()))]),
    };
    set(&mut r, "changes", changes);
    set(&mut r, "result", Value::Boolean(true));
    ret::comment(&mut r, format!("Configured package repo '{name}'"));
    r
}

/// `salt.utils.pkg.deb.strip_uri`.
fn strip_uri(repo: &str) -> String {
    repo.split_whitespace()
        .map(|w| {
            if ["http://", "https://", "ftp://"]
                .iter()
                .any(|p| w.starts_with(p))
            {
                w.trim_end_matches('/')
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn absent(ctx: &Ctx<'_>, low: &Value) -> Value {
    let name = name_of(low);
    let mut r = base_ret(low);
    set(&mut r, "result", Value::Nil);
    let kw = kwargs(low);
    let os = salt_compat::map_get(&ctx.opts.grains, "os").map(salt_execmods::text);
    let mut refused: Vec<&str> = vec!["keyid", "keyid_ppa"];
    if matches!(os.as_deref(), Some("Ubuntu" | "Mint")) {
        refused.push("ppa");
    }
    if let Some(k) = refused
        .iter()
        .find(|k| kwarg(&kw, k).is_some_and(|v| !v.is_nil()))
    {
        return fail(
            r,
            format!("pkgrepo.absent argument '{k}' is not supported by salt-rs"),
        );
    }
    let strip = strip_uri(&name);
    let repo = match src::get_repo(&strip) {
        Ok(p) => p,
        Err(e) => return fail(r, format!("Failed to configure repo '{name}': {e}")),
    };
    let want_archs = match src::split_repo_str(&strip) {
        Ok(e) => e.architectures,
        Err(e) => return fail(r, e),
    };
    let repo = repo.filter(|p| set_of(&p.architectures) == set_of(&want_archs));
    if repo.is_none() {
        set(&mut r, "result", Value::Boolean(true));
        ret::comment(&mut r, format!("Package repo {name} is absent"));
        return r;
    }
    if ctx.opts.test {
        ret::comment(
            &mut r,
            format!(
                "Package repo '{name}' will be removed. This may cause pkg states to behave \
                 differently than stated if this action is repeated without test=True, due to \
                 the differences in the configured repositories."
            ),
        );
        return r;
    }
    if let Err(e) = apt_repo::del_repo(&strip, &refresh_db) {
        return fail(r, e);
    }
    let still = src::list_repos().is_ok_and(|l| l.iter().any(|s| s.uri == strip));
    if still {
        return fail(r, format!("Failed to remove repo {name}"));
    }
    set(
        &mut r,
        "changes",
        map(vec![("repo", Value::from(name.clone()))]),
    );
    set(&mut r, "result", Value::Boolean(true));
    ret::comment(&mut r, format!("Removed repo {name}"));
    r
}

/// Dispatch `pkgrepo.<fun>`.
pub fn call(ctx: &Ctx<'_>, fun: &str, low: &Value) -> Value {
    match fun {
        "managed" => managed(ctx, low),
        "absent" => absent(ctx, low),
        other => {
            let mut r = base_ret(low);
            ret::comment(&mut r, format!("'pkgrepo.{other}' is not available."));
            r
        }
    }
}
