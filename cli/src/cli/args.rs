//! CLI arguments as Salt's `salt.utils.args.parse_input`: `key=value` becomes a keyword
//! argument (a trailing map with `"__kwarg__": true`), everything is YAML-ified the minimal
//! way (ints, floats, booleans, null). Shared by `salt` and `salt-run`.

use serde_json::{Map, Value, json};

/// Salt's minimal YAML-ification of CLI arguments: ints, floats and booleans.
fn yamlify(s: &str) -> Value {
    if let Ok(i) = s.parse::<i64>() {
        return json!(i);
    }
    match s {
        "True" | "true" => return json!(true),
        "False" | "false" => return json!(false),
        "None" | "null" => return Value::Null,
        _ => {}
    }
    if s.contains('.')
        && !s.starts_with('.')
        && !s.ends_with('.')
        && let Some(f) = s.parse::<f64>().ok().filter(|f| f.is_finite())
    {
        return json!(f);
    }
    Value::String(s.to_owned())
}

/// Positional args and `key=value` kwargs (`salt.utils.args.parse_input`).
pub fn parse_args(args: &[String]) -> Vec<Value> {
    #[allow(clippy::unwrap_used)] // constant, valid expression
    let kw = regex::Regex::new(r"^([A-Za-z_][\w.-]*)=([^=].*|)$").unwrap();
    let mut out = Vec::new();
    let mut kwargs = Map::new();
    for a in args {
        match kw.captures(a) {
            Some(c) => {
                kwargs.insert(c[1].to_owned(), yamlify(&c[2]));
            }
            None => out.push(yamlify(a)),
        }
    }
    if !kwargs.is_empty() {
        kwargs.insert("__kwarg__".into(), json!(true));
        out.push(Value::Object(kwargs));
    }
    out
}
