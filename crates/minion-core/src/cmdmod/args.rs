//! Binding `cmd.*` arguments by Salt's signatures, and the value conversions `_run` makes.

use std::collections::BTreeMap;

use rmpv::Value;
use salt_proto::value::ValueExt as _;

use crate::modules::{Args, CallOutcome, text};

/// Salt's positional parameters of each function (`inspect.signature`, Salt 3007.17).
#[rustfmt::skip]
pub fn params(fun: &str) -> &'static [&'static str] {
    match fun {
        "cmd.run" => &[
            "cmd", "cwd", "stdin", "runas", "group", "shell", "python_shell", "env", "clean_env",
            "template", "rstrip", "umask", "output_encoding", "output_loglevel", "log_callback",
            "hide_output", "timeout", "reset_system_locale", "ignore_retcode", "saltenv",
            "use_vt", "redirect_stderr", "bg", "password", "encoded_cmd", "raise_err",
            "prepend_path", "success_retcodes", "success_stdout", "success_stderr",
        ],
        "cmd.run_stdout" => &[
            "cmd", "cwd", "stdin", "runas", "group", "shell", "python_shell", "env", "clean_env",
            "template", "rstrip", "umask", "output_encoding", "output_loglevel", "log_callback",
            "hide_output", "timeout", "reset_system_locale", "ignore_retcode", "saltenv",
            "use_vt", "password", "prepend_path", "success_retcodes", "success_stdout",
            "success_stderr",
        ],
        "cmd.run_all" => &[
            "cmd", "cwd", "stdin", "runas", "group", "shell", "python_shell", "env", "clean_env",
            "template", "rstrip", "umask", "output_encoding", "output_loglevel", "log_callback",
            "hide_output", "timeout", "reset_system_locale", "ignore_retcode", "saltenv",
            "use_vt", "redirect_stderr", "password", "encoded_cmd", "prepend_path",
            "success_retcodes", "success_stdout", "success_stderr",
        ],
        _ => &[
            "cmd", "cwd", "stdin", "runas", "group", "shell", "python_shell", "env", "clean_env",
            "template", "umask", "output_encoding", "output_loglevel", "log_callback", "timeout",
            "reset_system_locale", "ignore_retcode", "saltenv", "use_vt", "password",
            "success_retcodes", "success_stdout", "success_stderr",
        ],
    }
}

/// A failure Salt reports as `ERROR: …` (`CommandExecutionError`) or
/// `ERROR executing 'fun': …` (`SaltInvocationError`), or a Python `TypeError` on binding.
pub(super) enum Refusal {
    Exec(String),
    Invocation(String),
    Binding(String),
}

impl Refusal {
    pub(super) fn outcome(self, fun: &str) -> CallOutcome {
        match self {
            Self::Exec(m) => CallOutcome::error(format!("ERROR: {m}")),
            Self::Invocation(m) => CallOutcome::error(format!("ERROR executing '{fun}': {m}")),
            Self::Binding(m) => {
                CallOutcome::error(format!("Passed invalid arguments to {fun}: {m}\n"))
            }
        }
    }
}

/// The bound arguments of one call.
pub(super) struct Bound<'a> {
    vals: BTreeMap<&'static str, &'a Value>,
}

impl<'a> Bound<'a> {
    pub(super) fn bind(fun: &str, args: &'a Args) -> Result<Self, Refusal> {
        let names = params(fun);
        let short = fun.rsplit('.').next().unwrap_or(fun);
        if args.args.len() > names.len() {
            return Err(Refusal::Binding(format!(
                "{short}() takes from 1 to {} positional arguments but {} were given",
                names.len(),
                args.args.len()
            )));
        }
        let mut vals = BTreeMap::new();
        for (name, v) in names.iter().zip(&args.args) {
            vals.insert(*name, v);
        }
        for (k, v) in &args.kwargs {
            let Some(name) = names.iter().find(|n| **n == k.as_str()) else {
                continue; // Salt's **kwargs: __pub_* and anything else, unused.
            };
            if vals.insert(name, v).is_some() {
                return Err(Refusal::Binding(format!(
                    "{short}() got multiple values for argument '{name}'"
                )));
            }
        }
        if !vals.contains_key("cmd") {
            return Err(Refusal::Binding(format!(
                "{short}() missing 1 required positional argument: 'cmd'"
            )));
        }
        Ok(Self { vals })
    }

    pub(super) fn get(&self, name: &str) -> Option<&'a Value> {
        self.vals.get(name).copied().filter(|v| !v.is_nil())
    }

    pub(super) fn string(&self, name: &str) -> Option<String> {
        self.get(name).map(text)
    }

    pub(super) fn flag(&self, name: &str, default: bool) -> bool {
        self.get(name).map_or(default, |v| v.is_truthy())
    }
}

/// Salt's `split_input`: a list, or a comma-separated string (brackets tolerated).
pub(super) fn split_input(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a.iter().map(text).collect(),
        other => text(other)
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .map(|s| s.trim().trim_matches(|c| c == '\'' || c == '"').to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
    }
}

/// `env` as a map: a map, a list of one-key maps, or a YAML flow-map string from the CLI.
pub(super) fn parse_env(v: Option<&Value>) -> Result<Vec<(String, String)>, Refusal> {
    let bad = || Refusal::Invocation("Invalid 'env' argument: must be a dict".into());
    let pairs = |m: &[(Value, Value)]| -> Vec<(String, String)> {
        m.iter()
            .map(|(k, v)| (text(k), if v.is_nil() { String::new() } else { text(v) }))
            .collect()
    };
    match v {
        None => Ok(Vec::new()),
        Some(Value::Map(m)) => Ok(pairs(m)),
        Some(Value::Array(items)) => items.iter().try_fold(Vec::new(), |mut acc, it| match it {
            Value::Map(m) => {
                acc.extend(pairs(m));
                Ok(acc)
            }
            _ => Err(bad()),
        }),
        Some(Value::String(s)) => {
            let m: BTreeMap<String, Option<String>> =
                serde_saphyr::from_str(s.as_str().unwrap_or_default()).map_err(|_| bad())?;
            Ok(m.into_iter()
                .map(|(k, v)| (k, v.unwrap_or_default()))
                .collect())
        }
        Some(_) => Err(bad()),
    }
}
