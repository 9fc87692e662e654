//! Every call of this crate's functions from outside (the command line, a publish, a
//! template's `salt[...]`, `module.run`) is bound and checked against Salt's signature of the
//! function ([`SIGNATURES`], generated from Salt's modules) before it runs: positional
//! arguments are bound to Salt's parameter names (so every function reads its arguments by
//! name), and an argument salt-rs does not honour is refused by name unless it is Salt's
//! default ([`REFUSED`]); a keyword argument a `**kwargs` function is given beyond its
//! signature is refused by name too unless salt-rs reads it ([`KWARGS`]). Arity and unknown
//! keywords of a function without `**kwargs` are the caller's to report in Salt's words
//! ([`Sig`] says what Salt's binding would).

use rmpv::Value;

pub use crate::salt_sigs::SIGNATURES;

/// Salt's default of an argument.
#[derive(Clone, Copy, Debug)]
pub enum ArgDefault {
    /// `None`.
    None,
    /// `True`/`False`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A string.
    Str(&'static str),
    /// An empty list (`None` counts as it).
    EmptyList,
}

impl ArgDefault {
    /// Whether `v` is this default (`None` given counts as the default where Salt's default
    /// is falsy).
    pub fn matches(self, v: &Value) -> bool {
        match self {
            ArgDefault::None => matches!(v, Value::Nil),
            ArgDefault::Bool(b) => matches!(v, Value::Boolean(x) if *x == b) || (!b && v.is_nil()),
            ArgDefault::Int(i) => v.as_i64() == Some(i),
            ArgDefault::Str(s) => {
                v.as_str() == Some(s) || (s.is_empty() && matches!(v, Value::Nil))
            }
            ArgDefault::EmptyList => v.is_nil() || matches!(v, Value::Array(a) if a.is_empty()),
        }
    }

    /// Python's `repr` of it.
    pub fn repr(self) -> String {
        match self {
            ArgDefault::None => "None".to_owned(),
            ArgDefault::Bool(b) => if b { "True" } else { "False" }.to_owned(),
            ArgDefault::Int(i) => i.to_string(),
            ArgDefault::Str(s) => format!("'{s}'"),
            ArgDefault::EmptyList => "[]".to_owned(),
        }
    }
}

/// A Python signature: the named parameters in order (`None`: required, else Salt's
/// default), `*args`, `**kwargs`.
#[derive(Clone, Copy, Debug)]
pub struct Sig {
    /// The named parameters in order.
    pub params: &'static [(&'static str, Option<ArgDefault>)],
    /// `*args`.
    pub varargs: bool,
    /// `**kwargs`.
    pub varkw: bool,
}

impl Sig {
    /// The parameter names.
    pub fn names(&self) -> Vec<&'static str> {
        self.params.iter().map(|(n, _)| *n).collect()
    }

    /// How many parameters are required (the first ones).
    pub fn required(&self) -> usize {
        self.params.iter().take_while(|(_, d)| d.is_none()).count()
    }
}

/// Salt's signature of `fun`.
pub fn signature(fun: &str) -> Option<&'static Sig> {
    SIGNATURES.iter().find(|(f, _)| *f == fun).map(|(_, s)| s)
}

/// Parameters of Salt's signatures salt-rs does not honour, per function: refused by name
/// unless given Salt's default. Every other parameter is read by the function.
pub const REFUSED: &[(&str, &[&str])] = &[
    (
        "cron.rm",
        &["minute", "hour", "daymonth", "month", "dayweek"],
    ),
    (
        "cron.rm_job",
        &["minute", "hour", "daymonth", "month", "dayweek"],
    ),
    ("disk.usage", &["args"]),
    ("file.mkdir", &["user", "group"]),
    ("file.readlink", &["canonicalize"]),
    (
        "file.replace",
        &[
            "bufsize",
            "ignore_if_missing",
            "preserve_inode",
            "backslash_literal",
            "encoding",
        ],
    ),
    (
        "file.search",
        &["flags", "bufsize", "ignore_if_missing", "multiline"],
    ),
    ("file.stats", &["hash_type", "follow_symlinks"]),
    ("file.symlink", &["force", "atomic", "follow_symlinks"]),
    ("file.touch", &["atime", "mtime"]),
    ("group.add", &["root", "non_unique", "local"]),
    ("group.adduser", &["root"]),
    ("group.delete", &["root", "local"]),
    ("group.deluser", &["root"]),
    ("group.getent", &["root"]),
    ("group.info", &["root"]),
    ("network.ip_addrs", &["interface", "cidr", "type"]),
    ("network.ip_addrs6", &["interface", "cidr"]),
    (
        "pkg.install",
        &[
            "debconf",
            "sources",
            "reinstall",
            "downloadonly",
            "ignore_epoch",
            "normalize",
        ],
    ),
    ("pkg.list_pkgs", &["purge_desired"]),
    ("pkg.refresh_db", &["cache_valid_time", "failhard"]),
    ("pkg.version_cmp", &["ignore_epoch"]),
    ("service.disable", &["root"]),
    ("service.disabled", &["root"]),
    ("service.enable", &["unmask", "unmask_runtime", "root"]),
    ("service.enabled", &["root"]),
    ("service.get_all", &["root"]),
    ("service.reload", &["unmask", "unmask_runtime"]),
    ("service.restart", &["unmask", "unmask_runtime"]),
    ("service.start", &["unmask", "unmask_runtime"]),
    ("service.status", &["sig"]),
    (
        "user.add",
        &["root", "loginclass", "nologinit", "local", "usergroup"],
    ),
    ("user.chgid", &["root"]),
    ("user.chgroups", &["root"]),
    ("user.chhome", &["root"]),
    ("user.chshell", &["root"]),
    ("user.chuid", &["root"]),
    ("user.delete", &["root", "local"]),
    ("user.getent", &["root"]),
    ("user.info", &["root"]),
];

/// Parameters that change nothing salt-rs returns or does, so honoured by construction: a
/// read buffer's size, a cache salt-rs does not keep.
pub const INERT: &[(&str, &[&str])] = &[
    ("file.get_hash", &["chunk_size"]),
    ("group.getent", &["refresh"]),
    ("user.getent", &["refresh"]),
];

/// Keyword arguments beyond Salt's signature that salt-rs reads from a `**kwargs`
/// function's keywords (as Salt's function does); any other is refused by name.
pub const KWARGS: &[(&str, &[&str])] = &[
    ("file.append", &["args"]),
    ("file.write", &["args"]),
    ("pkg.install", &["version", "install_recommends"]),
    ("pkg.latest_version", &["refresh"]),
];

fn listed(table: &'static [(&str, &'static [&'static str])], fun: &str) -> &'static [&'static str] {
    table
        .iter()
        .find(|(f, _)| *f == fun)
        .map_or(&[], |(_, a)| *a)
}

/// The parameters of `fun` salt-rs refuses unless given Salt's default.
pub fn refused_params(fun: &str) -> &'static [&'static str] {
    listed(REFUSED, fun)
}

/// The keywords beyond Salt's signature `fun` reads.
pub fn extra_kwargs(fun: &str) -> &'static [&'static str] {
    listed(KWARGS, fun)
}

/// Positional and keyword arguments, bound.
pub type Bound = (Vec<Value>, Vec<(String, Value)>);

/// `pos`/`kw` bound as Salt binds them: for a function without `*args`, each positional
/// argument becomes the keyword of its parameter (a keyword given too wins, as the function
/// reads it first); a function with `*args` keeps its positionals. Then the first argument
/// salt-rs does not honour is refused: a refused parameter given with a value other than
/// Salt's default, or a keyword beyond the signature of a `**kwargs` function that salt-rs
/// does not read (Salt's own `__pub_*` keywords pass). `Ok((pos, kw))` to call with;
/// `Err(comment)` names the argument. Arity and unknown keywords of a function without
/// `**kwargs` are checked by the caller beforehand, in Salt's words.
pub fn bind(fun: &str, pos: &[Value], kw: &[(String, Value)]) -> Result<Bound, String> {
    let Some(sig) = signature(fun) else {
        return Ok((pos.to_vec(), kw.to_vec()));
    };
    let (pos, mut kw) = if sig.varargs {
        (pos.to_vec(), kw.to_vec())
    } else {
        let mut bound: Vec<(String, Value)> = sig
            .params
            .iter()
            .zip(pos)
            .filter(|((n, _), _)| !kw.iter().any(|(k, _)| k == n))
            .map(|((n, _), v)| ((*n).to_owned(), v.clone()))
            .collect();
        bound.extend(kw.iter().cloned());
        (Vec::new(), bound)
    };
    let refused = refused_params(fun);
    let extra = extra_kwargs(fun);
    for (k, v) in &kw {
        match sig.params.iter().find(|(n, _)| n == k) {
            Some((n, dflt)) if refused.contains(n) => {
                let d = dflt.unwrap_or(ArgDefault::None);
                if !d.matches(v) {
                    return Err(format!(
                        "{fun}: argument '{k}' is not supported by salt-rs (only its default, {})",
                        d.repr()
                    ));
                }
            }
            Some(_) => {}
            None if sig.varkw && !k.starts_with("__") && !extra.contains(&k.as_str()) => {
                return Err(format!("{fun}: argument '{k}' is not supported by salt-rs"));
            }
            None => {}
        }
    }
    // The refused ones at their defaults are dropped: the function never reads them.
    kw.retain(|(k, _)| !refused.contains(&k.as_str()));
    Ok((pos, kw))
}
