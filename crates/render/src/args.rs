//! Command-line arguments turned into data as Salt's CLIs turn them
//! (`salt/utils/args.py`): [`yamlify_arg`] YAML-loads one string with Salt's exceptions,
//! [`parse_kwarg`] splits `key=value`, and [`parse_input`] does both over a whole argument
//! list as `salt`, `salt-run` and `salt-call` do before they publish or call. The one home of
//! these rules: the CLIs and the minion's `load_args_and_kwargs` use them from here.

use rmpv::Value;

/// Salt's `KWARG_REGEX` `^([^\d\W][\w.-]*)=(?!=)(.*)$` (`salt.utils.args.parse_kwarg`): the
/// name and the raw value of a `key=value` string, `None` when it is positional. As Python's
/// `$`, one trailing newline is allowed (and not part of the value); any other newline makes
/// the string positional.
pub fn parse_kwarg(s: &str) -> Option<(&str, &str)> {
    let (k, v) = s.split_once('=')?;
    let v = v.strip_suffix('\n').unwrap_or(v);
    if v.starts_with('=') || k.contains('\n') || v.contains('\n') {
        return None;
    }
    let mut chars = k.chars();
    let first = chars.next()?;
    if !(first.is_alphabetic() || first == '_') {
        return None;
    }
    if !chars.all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '-') {
        return None;
    }
    Some((k, v))
}

/// Salt's `salt.utils.args.yamlify_arg`: a command-line string YAML-loaded (Salt's YAML 1.1),
/// except where Salt keeps the string: blank or document markers, digits with underscores,
/// control characters, a `#` that would load as a comment, a map or list not written in
/// braces/brackets, `|` and `!` (which load as empty), `!!binary`, and anything that fails
/// to load. An integer beyond 64 bits (a Python int, which Salt's msgpack cannot send) stays
/// text.
pub fn yamlify_arg(arg: &str) -> Value {
    let keep = || Value::from(arg);
    let t = arg.trim();
    if matches!(t, "" | "---" | "...")
        || (arg.contains('_') && t.chars().all(|c| c.is_ascii_digit() || c == '_'))
        || arg.contains(['\t', '\r', '\n'])
        // PyYAML loads `!!binary` as bytes, a type Salt keeps the text for; our loader has
        // no bytes (nested in a list or map Salt would keep the bytes: rare enough, and
        // text is what our wire can carry).
        || arg.contains("!!binary")
    {
        return keep();
    }
    if arg == "None" {
        return Value::Nil;
    }
    let Ok(loaded) = crate::yaml::load(arg) else {
        return keep();
    };
    let loaded = loaded.unwrap_or(Value::Nil);
    if arg.contains('#') {
        return match loaded {
            Value::String(_) | Value::Nil => keep(),
            other => other,
        };
    }
    match loaded {
        Value::Map(_) if !arg.starts_with('{') => keep(),
        Value::Array(_) if !arg.starts_with('[') => keep(),
        Value::String(s) if s.as_str() == Some("") && matches!(arg, "|" | "!") => keep(),
        Value::Nil if arg == "!" => keep(),
        Value::Binary(_) | Value::Ext(..) => keep(),
        other => other,
    }
}

/// Salt's `salt.utils.args.parse_input(args, condition=True, no_parse=no_parse)`: each
/// `key=value` string becomes a keyword (its value YAML-loaded unless the key is in
/// `no_parse`), the others stay positional (YAML-loaded); the keywords follow as one map
/// `{"__kwarg__": true, key: value, ...}` (a repeated key keeps its first place and its last
/// value). As `condition_input`, a positional integer that prints as a job id (20
/// characters) is sent as that text.
pub fn parse_input<S: AsRef<str>>(args: &[S], no_parse: &[S]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut kwargs: Vec<(Value, Value)> = Vec::new();
    for a in args {
        let a = a.as_ref();
        match parse_kwarg(a) {
            Some((k, v)) => {
                let v = if no_parse.iter().any(|n| n.as_ref() == k) {
                    Value::from(v)
                } else {
                    yamlify_arg(v)
                };
                match kwargs.iter_mut().find(|(key, _)| key.as_str() == Some(k)) {
                    Some(slot) => slot.1 = v,
                    None => kwargs.push((Value::from(k), v)),
                }
            }
            None => out.push(condition(yamlify_arg(a))),
        }
    }
    if !kwargs.is_empty() {
        kwargs.insert(0, (Value::from("__kwarg__"), Value::Boolean(true)));
        out.push(Value::Map(kwargs));
    }
    out
}

/// `condition_input`: an integer whose text is a job id's length (`salt.utils.jid.is_jid`)
/// is passed as that text.
fn condition(v: Value) -> Value {
    match &v {
        Value::Integer(i) => {
            let text = i.to_string();
            if text.len() == 20 {
                Value::from(text)
            } else {
                v
            }
        }
        _ => v,
    }
}
