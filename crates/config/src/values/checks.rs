//! The last steps of Salt's `apply_master_config` that can raise: `_update_ssl_config`,
//! `_update_discovery_config` and the `publish_signing_algorithm` check, with Salt's
//! messages.

use serde_json::{Map, Value, json};

use super::ValuesError;

/// Python 3.11's `ssl.CERT_*` constants, in `dir(ssl)` order.
const CERT: &[(&str, i64)] = &[("CERT_NONE", 0), ("CERT_OPTIONAL", 1), ("CERT_REQUIRED", 2)];

/// Python 3.11's `ssl.PROTOCOL_*` constants, in `dir(ssl)` order.
const PROTOCOL: &[(&str, i64)] = &[
    ("PROTOCOL_SSLv23", 2),
    ("PROTOCOL_TLS", 2),
    ("PROTOCOL_TLS_CLIENT", 16),
    ("PROTOCOL_TLS_SERVER", 17),
    ("PROTOCOL_TLSv1", 3),
    ("PROTOCOL_TLSv1_1", 4),
    ("PROTOCOL_TLSv1_2", 5),
];

/// `salt.crypt.VALID_SIGNING_ALGORITHMS`.
const SIGNING_ALGORITHMS: &[&str] = &["PKCS1v15-SHA1", "PKCS1v15-SHA224"];

/// Python's `v in (None, False)`: `None`, `False` and zero.
fn none_or_false(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null | Value::Bool(false)) => true,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(_) => false,
    }
}

/// `_update_ssl_config`: `ssl` off is `None`, `True` is `{}`, and in a mapping `cert_reqs`
/// and `ssl_version` name `ssl` constants (`CERT_REQUIRED`, `PROTOCOL_TLSv1_2`), replaced by
/// their values.
pub(super) fn update_ssl_config(opts: &mut Map<String, Value>) -> Result<(), ValuesError> {
    if none_or_false(opts.get("ssl")) {
        opts.insert("ssl".into(), Value::Null);
        return Ok(());
    }
    let ssl = match opts.get_mut("ssl") {
        Some(Value::Bool(true)) => {
            opts.insert("ssl".into(), json!({}));
            return Ok(());
        }
        Some(Value::Object(m)) => m,
        other => {
            return Err(ValuesError::Invalid(format!(
                "'{}' object has no attribute 'get'",
                py_type(other.map(|v| &*v))
            )));
        }
    };
    for (key, prefix, table) in [
        ("cert_reqs", "CERT_", CERT),
        ("ssl_version", "PROTOCOL_", PROTOCOL),
    ] {
        let Some(val) = ssl.get(key).filter(|v| !v.is_null()) else {
            continue;
        };
        let found = val
            .as_str()
            .filter(|v| v.starts_with(prefix))
            .and_then(|v| table.iter().find(|(name, _)| *name == v));
        match found {
            Some((_, n)) => {
                ssl.insert(key.into(), json!(n));
            }
            None => {
                let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
                return Err(ValuesError::Invalid(format!(
                    "SSL option '{key}' must be set to one of the following values: '{}'.",
                    names.join("', '")
                )));
            }
        }
    }
    Ok(())
}

/// `_update_discovery_config` for the master: `discovery` on is `{port: 4520, mapping: {}}`
/// merged with what is given; an unknown option raises.
pub(super) fn update_discovery_config(opts: &mut Map<String, Value>) -> Result<(), ValuesError> {
    if none_or_false(opts.get("discovery")) {
        return Ok(());
    }
    let given = match opts.get("discovery") {
        Some(Value::Bool(true)) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        // Python iterates a string's characters or a list's items: none is an option.
        Some(Value::String(s)) => {
            let first = s.chars().next().map(String::from).unwrap_or_default();
            return Err(unknown(&first));
        }
        Some(Value::Array(a)) => {
            let first = a.first().map(salt_compat::py_json_str).unwrap_or_default();
            return Err(unknown(&first));
        }
        other => {
            return Err(ValuesError::Invalid(format!(
                "'{}' object is not iterable",
                py_type(other)
            )));
        }
    };
    let mut merged = Map::new();
    merged.insert("port".into(), json!(4520));
    merged.insert("mapping".into(), json!({}));
    for key in given.keys() {
        if !matches!(
            key.as_str(),
            "attempts" | "pause" | "port" | "match" | "mapping"
        ) {
            return Err(unknown(key));
        }
    }
    dictupdate(&mut merged, given);
    opts.insert("discovery".into(), Value::Object(merged));
    Ok(())
}

fn unknown(key: &str) -> ValuesError {
    ValuesError::Invalid(format!("Unknown discovery option: {key}"))
}

/// `salt.utils.dictupdate.update(dest, upd, recursive_update=True, merge_lists=True)`.
pub(super) fn dictupdate(dest: &mut Map<String, Value>, upd: Map<String, Value>) {
    for (key, value) in upd {
        match (dest.get_mut(&key), value) {
            (Some(Value::Object(d)), Value::Object(u)) => dictupdate(d, u),
            (Some(Value::Array(d)), Value::Array(u)) => {
                for item in u {
                    if !d.contains(&item) {
                        d.push(item);
                    }
                }
            }
            (_, value) => {
                dest.insert(key, value);
            }
        }
    }
}

/// `publish_signing_algorithm` must be one of `salt.crypt.VALID_SIGNING_ALGORITHMS`.
pub(super) fn check_signing_algorithm(opts: &Map<String, Value>) -> Result<(), ValuesError> {
    let algo = opts.get("publish_signing_algorithm");
    if algo
        .and_then(Value::as_str)
        .is_some_and(|a| SIGNING_ALGORITHMS.contains(&a))
    {
        return Ok(());
    }
    Err(ValuesError::Invalid(format!(
        "The  publish signging algorithm '{}' is not valid. Please specify one of {}.",
        algo.map(salt_compat::py_json_str).unwrap_or_default(),
        SIGNING_ALGORITHMS.join(",")
    )))
}

/// The Python type name of a JSON value.
fn py_type(v: Option<&Value>) -> &'static str {
    match v {
        None | Some(Value::Null) => "NoneType",
        Some(Value::Bool(_)) => "bool",
        Some(Value::Number(n)) if n.is_f64() => "float",
        Some(Value::Number(_)) => "int",
        Some(Value::String(_)) => "str",
        Some(Value::Array(_)) => "list",
        Some(Value::Object(_)) => "dict",
    }
}
