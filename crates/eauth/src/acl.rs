//! Salt's ACL grammar and the checks that read it (`salt/utils/minions.py` `CkMinions`).
//!
//! An auth list is what one user may do, gathered from `external_auth` (or `publisher_acl`):
//!
//! ```yaml
//! - '.*'                       # a function regex, any minion            (AclEntry::Name)
//! - '@runner'                  # every runner (also '@runners', '@wheel', '@jobs' = module)
//! - 'web*':                    # functions allowed when every target matches 'web*'
//!     - test.*
//!     - cmd.run:               # ... with argument patterns
//!         args: ['ls.*', null] # positional, null = anything
//!         kwargs: {cwd: '/tmp'}
//! - '@jobs':                   # runner/wheel module scoped: functions of jobs.*
//!     - list_jobs
//! ```
//!
//! The checks ([`auth_check`], [`spec_check`], [`fill_auth_list`]) follow Salt's code line by
//! line, quirks included (a function regex is `re.match`ed, so anchored at the start only; a
//! `{target: ...}` entry allows when the publish targets no minion at all). What Salt skips as
//! malformed (a map with more than one key, a number) is kept as [`AclEntry::Ignored`] and
//! matches nothing. Target expressions in `{target: ...}` entries are resolved by the master
//! through [`MinionResolver`], as Salt's `check_minions(valid, "compound")`.

use rmpv::Value;
use salt_proto::ValueExt;

use crate::pyre::{expr_match, match_check, match_check_all};

/// One entry of an auth list.
#[derive(Clone, Debug, PartialEq)]
pub enum AclEntry {
    /// A string: a function regex allowed on every minion, or `@runner`, `@wheel`, `@jobs`,
    /// `@<module>` for runner and wheel calls.
    Name(String),
    /// `{key: conditions}`: `key` is a minion target (compound) for publishes, or `@form` /
    /// `@module` for runner and wheel calls.
    Scoped {
        /// The target or `@...` key.
        key: String,
        /// What is allowed under it.
        conds: Vec<FunCond>,
    },
    /// What Salt skips: a map without exactly one key, or any other value.
    Ignored,
}

/// One function condition under a scoped entry.
#[derive(Clone, Debug, PartialEq)]
pub enum FunCond {
    /// A function regex.
    Name(String),
    /// `{fun_regex: {args: [...], kwargs: {...}}}` (or a list of such maps).
    WithArgs {
        /// Function regex.
        fun: String,
        /// Alternatives; one must hold.
        alternatives: Vec<ArgsCond>,
    },
    /// Skipped by Salt (a map without exactly one key, a number...).
    Ignored,
}

/// `{args: [...], kwargs: {...}}`.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgsCond {
    /// A condition map.
    Patterns {
        /// Positional patterns, `None` = anything (but the argument must exist).
        args: Vec<ArgPattern>,
        /// Keyword patterns, in config order.
        kwargs: Vec<(String, ArgPattern)>,
    },
    /// Not a map: Salt skips it.
    Ignored,
}

/// A pattern for one argument value.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgPattern {
    /// `null`: any value (the argument must be present).
    Any,
    /// A regex `re.match`ed against Python's `str()` of the value.
    Regex(String),
    /// Not a string: Salt's `re.match` raises, the pattern never matches.
    Never,
}

/// An auth list, in the order Salt builds it.
pub type AuthList = Vec<AclEntry>;

/// Resolves a target expression to minion ids, as Salt's `CkMinions.check_minions`.
pub trait MinionResolver {
    /// The minions `expr` (of `tgt_type`, e.g. `compound`) addresses.
    fn check_minions(&self, expr: &str, tgt_type: &str) -> Vec<String>;
}

// === parsing ===

impl AclEntry {
    /// Read one entry of a config list.
    pub fn from_value(v: &Value) -> Self {
        if let Some(s) = v.as_text() {
            return Self::Name(s.to_owned());
        }
        match one_key_map(v) {
            Some((key, conds)) => Self::Scoped {
                key,
                conds: FunCond::list(conds),
            },
            None => Self::Ignored,
        }
    }

    /// Read a config list (a single value counts as a one-entry list, as `list.extend` of a
    /// string would not; Salt's config always has lists here).
    pub fn list(v: &Value) -> AuthList {
        match v.as_items() {
            Some(items) => items.iter().map(Self::from_value).collect(),
            None => Vec::new(),
        }
    }

    /// The entry as Salt's config data (for tokens with `keep_acl_in_token`, and logs).
    pub fn to_value(&self) -> Value {
        match self {
            Self::Name(s) => Value::from(s.as_str()),
            Self::Scoped { key, conds } => Value::Map(vec![(
                Value::from(key.as_str()),
                Value::Array(conds.iter().map(FunCond::to_value).collect()),
            )]),
            Self::Ignored => Value::Nil,
        }
    }
}

impl FunCond {
    /// `__fun_check`'s `valid`: a list, or one condition (wrapped into a list).
    fn list(v: &Value) -> Vec<Self> {
        match v.as_items() {
            Some(items) => items.iter().map(Self::from_value).collect(),
            None => vec![Self::from_value(v)],
        }
    }

    fn from_value(v: &Value) -> Self {
        if let Some(s) = v.as_text() {
            return Self::Name(s.to_owned());
        }
        match one_key_map(v) {
            Some((fun, conds)) => {
                let alternatives = match conds.as_items() {
                    Some(items) => items.iter().map(ArgsCond::from_value).collect(),
                    None => vec![ArgsCond::from_value(conds)],
                };
                Self::WithArgs { fun, alternatives }
            }
            None => Self::Ignored,
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Self::Name(s) => Value::from(s.as_str()),
            Self::WithArgs { fun, alternatives } => Value::Map(vec![(
                Value::from(fun.as_str()),
                Value::Array(alternatives.iter().map(ArgsCond::to_value).collect()),
            )]),
            Self::Ignored => Value::Nil,
        }
    }
}

impl ArgsCond {
    fn from_value(v: &Value) -> Self {
        let Some(entries) = v.as_entries() else {
            return Self::Ignored;
        };
        let field = |name: &str| {
            entries
                .iter()
                .rev()
                .find(|(k, _)| k.as_text() == Some(name))
                .map(|(_, v)| v)
        };
        let args = match field("args") {
            Some(Value::Array(items)) => items.iter().map(ArgPattern::from_value).collect(),
            // Salt enumerates what is there; anything but a list cannot be read sensibly.
            Some(_) => vec![ArgPattern::Never],
            None => Vec::new(),
        };
        let kwargs = match field("kwargs") {
            Some(Value::Map(kv)) => kv
                .iter()
                .filter_map(|(k, v)| Some((k.as_text()?.to_owned(), ArgPattern::from_value(v))))
                .collect(),
            Some(_) => vec![(String::new(), ArgPattern::Never)],
            None => Vec::new(),
        };
        Self::Patterns { args, kwargs }
    }

    fn to_value(&self) -> Value {
        match self {
            Self::Patterns { args, kwargs } => Value::Map(vec![
                (
                    Value::from("args"),
                    Value::Array(args.iter().map(ArgPattern::to_value).collect()),
                ),
                (
                    Value::from("kwargs"),
                    Value::Map(
                        kwargs
                            .iter()
                            .map(|(k, p)| (Value::from(k.as_str()), p.to_value()))
                            .collect(),
                    ),
                ),
            ]),
            Self::Ignored => Value::Nil,
        }
    }
}

impl ArgPattern {
    fn from_value(v: &Value) -> Self {
        match v {
            Value::Nil => Self::Any,
            v => match v.as_text() {
                Some(s) => Self::Regex(s.to_owned()),
                None => Self::Never,
            },
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Self::Any => Value::Nil,
            Self::Regex(s) => Value::from(s.as_str()),
            Self::Never => Value::Boolean(false),
        }
    }

    fn matches(&self, value: &Value) -> bool {
        match self {
            Self::Any => true,
            Self::Regex(re) => match_check(re, &py_str(value)),
            Self::Never => false,
        }
    }
}

/// A map with exactly one text key.
fn one_key_map(v: &Value) -> Option<(String, &Value)> {
    match v.as_entries()? {
        [(k, inner)] => Some((k.as_text()?.to_owned(), inner)),
        _ => None,
    }
}

/// Python's `str()` of an argument value, as `__args_check` compares it.
pub fn py_str(v: &Value) -> String {
    match v {
        Value::String(_) | Value::Binary(_) => match v.as_text() {
            Some(s) => s.to_owned(),
            None => py_repr(v),
        },
        other => py_repr(other),
    }
}

/// Python's `repr()` of a decoded msgpack value (nested values inside lists and dicts).
fn py_repr(v: &Value) -> String {
    match v {
        Value::Nil => "None".into(),
        Value::Boolean(true) => "True".into(),
        Value::Boolean(false) => "False".into(),
        Value::Integer(i) => i.to_string(),
        Value::F32(f) => salt_compat::py_float_repr(f64::from(*f)),
        Value::F64(f) => salt_compat::py_float_repr(*f),
        Value::String(_) | Value::Binary(_) => match v.as_text() {
            Some(s) => salt_compat::py_str_repr(s),
            None => format!("{:?}", v.as_bytes().unwrap_or_default()),
        },
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(py_repr).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Map(kv) => {
            let inner: Vec<String> = kv
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr(k), py_repr(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        Value::Ext(..) => "<ext>".into(),
    }
}

// === the checks ===

/// The call being authorised by [`auth_check`]: one function or a compound list.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// Function names (one, or the list of a compound command).
    pub funs: &'a [&'a str],
    /// One argument list per function (Salt's `arg`, packed kwargs last with `__kwarg__`).
    pub args: &'a [&'a [Value]],
}

/// `CkMinions.auth_check(auth_list, funs, args, tgt, tgt_type, minions=minions,
/// whitelist=whitelist)` as `ClearFuncs.publish` calls it: `minions` are the minions the
/// publish targets (already resolved), and `whitelist` functions always pass.
///
/// `auth.enable_expanded_auth_matching` is refused at config load, so this is the only path.
pub fn auth_check(
    auth_list: &[AclEntry],
    call: Call<'_>,
    minions: &[String],
    whitelist: &[&str],
    resolver: &dyn MinionResolver,
) -> bool {
    for (num, fun) in call.funs.iter().enumerate() {
        if whitelist.contains(fun) {
            return true;
        }
        for entry in auth_list {
            match entry {
                AclEntry::Name(regex) => {
                    if match_check(regex, fun) {
                        return true;
                    }
                }
                AclEntry::Scoped { key, conds } => {
                    if validate_tgt(key, minions, resolver) {
                        let fun_args = call.args.get(num).copied().unwrap_or_default();
                        let (args, kwargs) = split_packed_kwargs(fun_args);
                        if fun_check(conds, fun, Some(args), kwargs) {
                            return true;
                        }
                    }
                }
                AclEntry::Ignored => {}
            }
        }
    }
    false
}

/// `validate_tgt(valid, ..., minions=minions)`: every targeted minion is one `valid` names
/// (so no targeted minion at all passes).
fn validate_tgt(valid: &str, minions: &[String], resolver: &dyn MinionResolver) -> bool {
    if minions.is_empty() {
        return true;
    }
    let allowed = resolver.check_minions(valid, "compound");
    minions.iter().all(|m| allowed.contains(m))
}

/// Split `[arg..., {"__kwarg__": True, ...}]` into positional args and the kwargs map.
fn split_packed_kwargs(args: &[Value]) -> (&[Value], Option<&Value>) {
    match args.split_last() {
        Some((last, rest)) if last.is_map() && last.get("__kwarg__").is_some() => {
            (rest, Some(last))
        }
        _ => (args, None),
    }
}

/// Why [`spec_check`] refused, when it is not a plain "no".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecVerdict {
    /// Allowed.
    Allowed,
    /// Not allowed.
    Denied,
    /// `fun` is not `module.function`: Salt answers a syntax error, not an auth error.
    BadSyntax,
}

/// `CkMinions.spec_check(auth_list, fun, args, form)` for `runner` and `wheel` (`form`);
/// `load` is the request load, whose `arg`/`kwarg` the argument patterns read.
pub fn spec_check(auth_list: &[AclEntry], fun: &str, load: &Value, form: &str) -> SpecVerdict {
    if auth_list.is_empty() {
        return SpecVerdict::Denied;
    }
    let comps: Vec<&str> = fun.split('.').collect();
    let [mod_name, fun_name] = comps[..] else {
        return SpecVerdict::BadSyntax;
    };
    let forms = format!("@{form}s");
    let args = load.get("arg").and_then(|a| a.as_items());
    let kwargs = load.get("kwarg");
    for entry in auth_list {
        match entry {
            AclEntry::Name(s) => {
                if let Some(rest) = s.strip_prefix('@')
                    && (rest == mod_name || rest == form || *s == forms)
                {
                    return SpecVerdict::Allowed;
                }
            }
            AclEntry::Scoped { key, conds } => {
                let Some(rest) = key.strip_prefix('@') else {
                    continue;
                };
                if rest == mod_name && fun_check(conds, fun_name, args, kwargs) {
                    return SpecVerdict::Allowed;
                }
                if (rest == form || *key == forms) && fun_check(conds, fun, args, kwargs) {
                    return SpecVerdict::Allowed;
                }
            }
            AclEntry::Ignored => {}
        }
    }
    SpecVerdict::Denied
}

/// `CkMinions.__fun_check(valid, fun, args, kwargs)`.
fn fun_check(conds: &[FunCond], fun: &str, args: Option<&[Value]>, kwargs: Option<&Value>) -> bool {
    conds.iter().any(|cond| match cond {
        FunCond::Name(regex) => match_check_all(regex, &[fun]),
        FunCond::WithArgs {
            fun: re,
            alternatives,
        } => match_check(re, fun) && args_check(alternatives, args, kwargs),
        FunCond::Ignored => false,
    })
}

/// `CkMinions.__args_check(valid, args, kwargs)`.
fn args_check(alternatives: &[ArgsCond], args: Option<&[Value]>, kwargs: Option<&Value>) -> bool {
    alternatives.iter().any(|cond| {
        let ArgsCond::Patterns {
            args: want_args,
            kwargs: want_kwargs,
        } = cond
        else {
            return false;
        };
        let args_ok = want_args.iter().enumerate().all(|(i, pat)| {
            args.and_then(|a| a.get(i))
                .is_some_and(|value| pat.matches(value))
        });
        args_ok
            && want_kwargs.iter().all(|(k, pat)| {
                kwargs
                    .and_then(|kw| kw.get(k))
                    .is_some_and(|value| pat.matches(value))
            })
    })
}

/// `CkMinions.fill_auth_list(auth_provider, name, groups, permissive=permissive_acl)`: the
/// entries of every key naming the user (`expr_match(key, name)`, Salt's argument order), of
/// every `group%` key of one of the user's groups, and of `*` for a user no key named.
pub fn fill_auth_list(
    provider: &[(String, AuthList)],
    name: &str,
    groups: &[String],
    permissive: bool,
) -> AuthList {
    let mut auth_list = Vec::new();
    let mut name_matched = false;
    for (key, entries) in provider {
        if key == "*" && !permissive {
            continue;
        }
        if let Some(group) = key.strip_suffix('%') {
            // `match.rstrip("%")`: every trailing % goes.
            let group = group.trim_end_matches('%');
            if groups.iter().any(|g| g == group) {
                auth_list.extend(entries.iter().cloned());
            }
        } else if expr_match(key, name) {
            name_matched = true;
            auth_list.extend(entries.iter().cloned());
        }
    }
    if !permissive
        && !name_matched
        && let Some((_, entries)) = provider.iter().find(|(k, _)| k == "*")
    {
        auth_list.extend(entries.iter().cloned());
    }
    auth_list
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ids(Vec<&'static str>);

    impl MinionResolver for Ids {
        fn check_minions(&self, expr: &str, _tgt_type: &str) -> Vec<String> {
            self.0
                .iter()
                .filter(|m| salt_compat::fnmatch(m, expr))
                .map(|m| (*m).to_owned())
                .collect()
        }
    }

    fn list(yamlish: Value) -> AuthList {
        AclEntry::list(&yamlish)
    }

    fn s(x: &str) -> Value {
        Value::from(x)
    }

    fn map(k: &str, v: Value) -> Value {
        Value::Map(vec![(s(k), v)])
    }

    #[test]
    fn scoped_entries_need_every_minion() {
        let acl = list(Value::Array(vec![map(
            "web*",
            Value::Array(vec![s("test.*")]),
        )]));
        let ids = Ids(vec!["web1", "web2", "db1"]);
        let call = Call {
            funs: &["test.ping"],
            args: &[&[]],
        };
        let web = ["web1".to_owned(), "web2".to_owned()];
        let mixed = ["web1".to_owned(), "db1".to_owned()];
        assert!(auth_check(&acl, call, &web, &[], &ids));
        assert!(!auth_check(&acl, call, &mixed, &[], &ids));
        assert!(
            auth_check(&acl, call, &[], &[], &ids),
            "no minion: Salt allows"
        );
    }

    #[test]
    fn runner_forms() {
        let acl = list(Value::Array(vec![
            s("@jobs"),
            map("@wheel", Value::Array(vec![s("key.list.*")])),
        ]));
        let load = Value::Map(vec![]);
        assert_eq!(
            spec_check(&acl, "jobs.list_jobs", &load, "runner"),
            SpecVerdict::Allowed
        );
        assert_eq!(
            spec_check(&acl, "manage.up", &load, "runner"),
            SpecVerdict::Denied
        );
        assert_eq!(
            spec_check(&acl, "key.list_all", &load, "wheel"),
            SpecVerdict::Allowed
        );
        assert_eq!(
            spec_check(&acl, "key.accept", &load, "wheel"),
            SpecVerdict::Denied
        );
        assert_eq!(
            spec_check(&acl, "nodots", &load, "wheel"),
            SpecVerdict::BadSyntax
        );
        assert_eq!(
            spec_check(&[], "nodots", &load, "wheel"),
            SpecVerdict::Denied
        );
    }

    #[test]
    fn python_str_of_arguments() {
        assert_eq!(py_str(&Value::from(1)), "1");
        assert_eq!(py_str(&Value::Boolean(true)), "True");
        assert_eq!(py_str(&Value::Nil), "None");
        assert_eq!(
            py_str(&Value::Array(vec![s("a"), Value::from(1)])),
            "['a', 1]"
        );
    }
}
