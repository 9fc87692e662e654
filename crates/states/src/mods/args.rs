//! Each state function's argument policy (the `REGISTRY` of `mods`): the arguments of
//! Salt's signature it honours, and those it refuses by name unless given Salt's default.
//! The state engine's own keywords (`name`'s `names`, requisites, `onlyif`, `unless`,
//! `creates`, `order`, `retry`, `__id__`, ...; `compile::STATE_INTERNAL_KEYWORDS`) are the
//! engine's, not the function's. `refused` is checked once, before any state function runs.

use rmpv::Value;
use salt_compat::map_get;

use crate::compile::STATE_INTERNAL_KEYWORDS;

/// Salt's default of an argument (one home: the execution modules' signatures use it too).
pub use salt_execmods::ArgDefault as Default;

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

/// The state functions whose Salt signature has no `**kwargs` (checked against Salt's by
/// `tests/state_args.rs`): Salt's `format_call` refuses any other keyword of their low chunk
/// (the engine's own keywords aside).
pub const NO_KWARGS: &[&str] = &[
    "alternatives.auto",
    "alternatives.install",
    "alternatives.remove",
    "alternatives.set",
    "cron.env_absent",
    "cron.env_present",
    "cron.present",
    "file.append",
    "file.blockreplace",
    "file.comment",
    "file.line",
    "file.replace",
    "file.touch",
    "file.uncomment",
    "group.absent",
    "group.present",
    "host.absent",
    "host.present",
    "ini.options_absent",
    "ini.options_present",
    "ini.sections_absent",
    "ini.sections_present",
    "locale.present",
    "locale.system",
    "ssh_auth.absent",
    "ssh_known_hosts.absent",
    "ssh_known_hosts.present",
    "sysctl.present",
    "timezone.system",
    "user.absent",
    "user.present",
];

/// Salt's `SaltInvocationError` of `format_call` for the keywords of `low` that `full`, a
/// function without `**kwargs`, does not take: `'x' is an invalid keyword argument for
/// 'state.fun'` (`'x' and 'y' are invalid keyword arguments ...` for several).
pub fn invalid_keywords(full: &str, args: &Args, low: &Value) -> Option<String> {
    if !NO_KWARGS.contains(&full) {
        return None;
    }
    let Value::Map(entries) = low else {
        return None;
    };
    let extra: Vec<&str> = entries
        .iter()
        .filter_map(|(k, _)| k.as_str())
        .filter(|k| {
            *k != "name"
                && !k.starts_with("__")
                && !args.honoured.contains(k)
                && !args.refused.iter().any(|(r, _)| r == k)
                && !STATE_INTERNAL_KEYWORDS.contains(k)
        })
        .collect();
    match extra.as_slice() {
        [] => None,
        [one] => Some(format!(
            "'{one}' is an invalid keyword argument for '{full}'"
        )),
        [init @ .., last] => Some(format!(
            "{} and '{last}' are invalid keyword arguments for '{full}'",
            init.iter()
                .map(|k| format!("'{k}'"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
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
