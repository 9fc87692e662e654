//! CLI arguments as Salt's `salt` and `salt-run` read them: `salt_render::args::parse_input`
//! (Salt's `parse_input` and `yamlify_arg`, the one home of those rules), carried as JSON over
//! the master's local socket. Shared by `salt` and `salt-run`.

use rmpv::Value as Mp;
use serde_json::Value;

/// Salt's `--no-parse` list: the option, else `SALT_NO_PARSE`, comma-separated.
pub fn no_parse(option: Option<&str>) -> Vec<String> {
    let raw = match option {
        Some(o) => o.to_owned(),
        None => std::env::var("SALT_NO_PARSE").unwrap_or_default(),
    };
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Positional args and `key=value` kwargs as Salt's `parse_input` makes them. An argument
/// that loads as something JSON cannot carry unchanged (a non-finite float, a map key that is
/// no string) is refused by name rather than sent changed.
pub fn parse_args(args: &[String], no_parse: &[String]) -> Result<Vec<Value>, String> {
    let parsed = salt_render::args::parse_input(args, no_parse);
    if !parsed.iter().all(fits_json) {
        let bad = args.iter().find(|a| {
            let one = salt_render::args::parse_input(std::slice::from_ref(*a), no_parse);
            !one.iter().all(fits_json)
        });
        return Err(format!(
            "argument {} loads (as Salt's yamlify_arg loads it) as data that salt-rs's local \
             client socket (JSON) cannot carry unchanged: a non-finite float or a map key that \
             is not a string",
            bad.map_or_else(String::new, |a| format!("{a:?}"))
        ));
    }
    Ok(parsed
        .iter()
        .map(salt_compat::json::msgpack_to_json)
        .collect())
}

/// JSON carries it unchanged: finite floats, string keys, no binary or ext values.
fn fits_json(v: &Mp) -> bool {
    match v {
        Mp::F32(f) => f.is_finite(),
        Mp::F64(f) => f.is_finite(),
        Mp::Binary(_) | Mp::Ext(..) => false,
        Mp::Array(a) => a.iter().all(fits_json),
        Mp::Map(m) => m.iter().all(|(k, v)| k.is_str() && fits_json(v)),
        Mp::Nil | Mp::Boolean(_) | Mp::Integer(_) | Mp::String(_) => true,
    }
}
