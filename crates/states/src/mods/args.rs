//! Each state function's argument policy (the `REGISTRY` of `mods`): the arguments of
//! Salt's signature it honours, and those it refuses by name unless given Salt's default.
//! The state engine's own keywords (`name`'s `names`, requisites, `onlyif`, `unless`,
//! `creates`, `order`, `retry`, `__id__`, ...; `compile::STATE_INTERNAL_KEYWORDS`) are the
//! engine's, not the function's. `refused` is checked once, before any state function runs.

use rmpv::Value;
use salt_compat::map_get;

/// Salt's default of an argument.
#[derive(Clone, Copy, Debug)]
pub enum Default {
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

impl Default {
    /// Whether `v` is this default (`None` given counts as the default where Salt's default
    /// is falsy).
    pub fn matches(self, v: &Value) -> bool {
        match self {
            Default::None => matches!(v, Value::Nil),
            Default::Bool(b) => matches!(v, Value::Boolean(x) if *x == b) || (!b && v.is_nil()),
            Default::Int(i) => v.as_i64() == Some(i),
            Default::Str(s) => v.as_str() == Some(s) || (s.is_empty() && matches!(v, Value::Nil)),
            Default::EmptyList => v.is_nil() || matches!(v, Value::Array(a) if a.is_empty()),
        }
    }

    /// Python's `repr` of it.
    pub fn repr(self) -> String {
        match self {
            Default::None => "None".to_owned(),
            Default::Bool(b) => if b { "True" } else { "False" }.to_owned(),
            Default::Int(i) => i.to_string(),
            Default::Str(s) => format!("{s:?}"),
            Default::EmptyList => "[]".to_owned(),
        }
    }
}

/// One state function's arguments.
#[derive(Debug)]
pub struct Args {
    /// Arguments of Salt's signature salt-rs honours (the Windows-only ones count: Salt
    /// ignores them on Linux too).
    pub honoured: &'static [&'static str],
    /// Arguments salt-rs does not implement, with Salt's default.
    pub refused: &'static [(&'static str, Default)],
    /// Refused arguments Salt reads only after its `test=True` return: not refused under
    /// `test`.
    pub apply_only: &'static [&'static str],
}

/// The comment refusing the first argument of `low` that `full` (`state.fun`) does not
/// honour, given with a value other than Salt's default.
pub fn refused(full: &str, args: &Args, low: &Value, test: bool) -> Option<String> {
    args.refused.iter().find_map(|(arg, default)| {
        if test && args.apply_only.contains(arg) {
            return None;
        }
        let v = map_get(low, arg)?;
        (!default.matches(v)).then(|| {
            format!(
                "{full} argument '{arg}' is not supported by salt-rs (only its default, {})",
                default.repr()
            )
        })
    })
}
