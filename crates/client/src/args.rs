//! A runner call's arguments bound to the function's Python signature, as Salt binds them
//! (`salt.minion.load_args_and_kwargs`, then Python's own call): positional values in order,
//! `key=value` keywords by name, and Python's `TypeError` texts when they do not fit.

use serde_json::{Map, Value};

/// A Python signature: the parameters in order, how many of them have no default, and
/// whether the function takes `**kwargs`.
#[derive(Clone, Copy, Debug)]
pub struct Sig {
    /// `module.function`, as `salt-run` names it.
    pub fun: &'static str,
    /// The parameters, in order.
    pub params: &'static [&'static str],
    /// The first `required` parameters have no default.
    pub required: usize,
    /// `**kwargs`: keywords that are no parameter are accepted (and unused).
    pub var_kw: bool,
}

/// `state.event(tagmatch='*', count=-1, quiet=False, sock_dir=None, pretty=False,
/// node='master')`: the master streams, `salt-run` prints.
pub const STATE_EVENT: Sig = Sig {
    fun: "state.event",
    params: &["tagmatch", "count", "quiet", "sock_dir", "pretty", "node"],
    required: 0,
    var_kw: false,
};

/// The values a call gave, by parameter name (parameters left at their default are absent).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bound(Map<String, Value>);

impl Bound {
    /// Parameter `name`, unless it was not given or given as `None`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    /// A parameter as text (Python `str()` of scalars).
    pub fn text(&self, name: &str) -> Option<String> {
        self.get(name).map(salt_compat::py_json_str)
    }

    /// A parameter as a boolean (Python truthiness), `default` when absent.
    pub fn flag(&self, name: &str, default: bool) -> bool {
        match self.get(name) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(Value::Number(n)) => n.as_f64() != Some(0.0),
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::Object(o)) => !o.is_empty(),
            Some(Value::Null) => false,
        }
    }

    /// A parameter as a whole number (an integer, or text holding one).
    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(|v| match v {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        })
    }
}

/// Bind `raw` (positional values, then a map with `"__kwarg__": true` for the keywords, as
/// `salt-run` sends them) to `sig`. The error is the text Salt's `salt-run` prints.
pub fn bind(sig: &Sig, raw: &[Value]) -> Result<Bound, String> {
    let short = sig.fun.rsplit('.').next().unwrap_or(sig.fun);
    let mut positional = Vec::new();
    let mut keywords: Vec<(String, Value)> = Vec::new();
    for a in raw {
        match a {
            Value::Object(m) if m.get("__kwarg__") == Some(&Value::Bool(true)) => keywords.extend(
                m.iter()
                    .filter(|(k, _)| *k != "__kwarg__")
                    .map(|(k, v)| (k.clone(), v.clone())),
            ),
            other => positional.push(other.clone()),
        }
    }
    // `load_args_and_kwargs`: keywords that name no parameter, for a function without
    // `**kwargs` (Salt then prints the function's documentation).
    let invalid: Vec<String> = keywords
        .iter()
        .filter(|(k, _)| !sig.var_kw && !sig.params.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={}", salt_compat::py_json_str(v)))
        .collect();
    if !invalid.is_empty() {
        return Err(format!(
            "The following keyword arguments are not valid: {}",
            invalid.join(", ")
        ));
    }
    let max = sig.params.len();
    if positional.len() > max {
        let n = positional.len();
        let takes = if sig.required == max {
            format!(
                "{max} positional argument{}",
                if max == 1 { "" } else { "s" }
            )
        } else {
            format!("from {} to {max} positional arguments", sig.required)
        };
        let given = if n == 1 { "was" } else { "were" };
        return Err(format!(
            "Passed invalid arguments: {short}() takes {takes} but {n} {given} given"
        ));
    }
    let mut bound = Map::new();
    for (name, v) in sig.params.iter().zip(positional) {
        bound.insert((*name).to_owned(), v);
    }
    for (k, v) in keywords {
        if !sig.params.contains(&k.as_str()) {
            continue;
        }
        if bound.contains_key(&k) {
            return Err(format!(
                "Passed invalid arguments: {short}() got multiple values for argument '{k}'"
            ));
        }
        bound.insert(k, v);
    }
    let missing: Vec<&str> = sig.params[..sig.required]
        .iter()
        .filter(|p| !bound.contains_key(**p))
        .copied()
        .collect();
    match missing.as_slice() {
        [] => Ok(Bound(bound)),
        [one] => Err(format!(
            "Passed invalid arguments: {short}() missing 1 required positional argument: '{one}'"
        )),
        many => {
            let quoted: Vec<String> = many.iter().map(|p| format!("'{p}'")).collect();
            // CPython: `'a' and 'b'`, `'a', 'b', and 'c'`.
            let names = match quoted.split_last() {
                Some((last, [one])) => format!("{one} and {last}"),
                Some((last, rest)) => format!("{}, and {last}", rest.join(", ")),
                None => String::new(),
            };
            Err(format!(
                "Passed invalid arguments: {short}() missing {} required positional arguments: {names}",
                many.len()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const LOOKUP: Sig = Sig {
        fun: "jobs.lookup_jid",
        params: &[
            "jid",
            "ext_source",
            "returned",
            "missing",
            "display_progress",
        ],
        required: 1,
        var_kw: false,
    };

    fn kw(v: Value) -> Value {
        let mut m = v.as_object().cloned().unwrap();
        m.insert("__kwarg__".into(), true.into());
        Value::Object(m)
    }

    #[test]
    fn binds_like_python() {
        let b = bind(&LOOKUP, &[json!("2026"), kw(json!({"missing": true}))]).unwrap();
        assert_eq!(b.text("jid").as_deref(), Some("2026"));
        assert!(b.flag("missing", false));
        assert!(b.flag("returned", true));
        assert_eq!(
            bind(&LOOKUP, &[]).unwrap_err(),
            "Passed invalid arguments: lookup_jid() missing 1 required positional argument: 'jid'"
        );
        assert_eq!(
            bind(&LOOKUP, &[json!(1), kw(json!({"jid": 2}))]).unwrap_err(),
            "Passed invalid arguments: lookup_jid() got multiple values for argument 'jid'"
        );
        assert_eq!(
            bind(&LOOKUP, &[json!(1), kw(json!({"foo": "bar", "x": true}))]).unwrap_err(),
            "The following keyword arguments are not valid: foo=bar, x=True"
        );
        let seven: Vec<Value> = (0..7).map(|i| json!(i)).collect();
        assert_eq!(
            bind(&STATE_EVENT, &seven).unwrap_err(),
            "Passed invalid arguments: event() takes from 0 to 6 positional arguments but 7 were given"
        );
        let none = Sig {
            fun: "manage.versions",
            params: &[],
            required: 0,
            var_kw: false,
        };
        assert_eq!(
            bind(&none, &[json!(1)]).unwrap_err(),
            "Passed invalid arguments: versions() takes 0 positional arguments but 1 was given"
        );
        let open = Sig {
            var_kw: true,
            ..none
        };
        assert!(bind(&open, &[kw(json!({"anything": 1}))]).is_ok());
    }
}
