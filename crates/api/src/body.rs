//! Request bodies and response formats as rest_cherrypy's tools read and write them:
//! `hypermedia_in` (JSON, YAML, form-encoded, `text/plain` read as JSON when it is JSON),
//! `lowdata_fmt` (one mapping becomes a one-chunk lowstate, a lone `arg` a list) and
//! `hypermedia_out` (`Accept`: JSON or YAML, 406 otherwise).

use axum::http::{HeaderMap, StatusCode, header};
use serde_json::{Map, Value};

use crate::error::ApiError;

/// A request body as read (`unserialized_data`) with its text (`raw_body`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Body {
    /// The data (`None`: no body).
    pub data: Option<Value>,
    /// The text as sent.
    pub raw: String,
}

fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// `salt.utils.args.yamlify_arg`, for the values Salt's form reader passes through it.
fn yamlify(s: &str) -> Value {
    if s.contains('\n') || s.trim().is_empty() {
        return Value::from(s);
    }
    match serde_saphyr::from_str::<Value>(s) {
        Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Array(_) | Value::Object(_))) => v,
        Ok(Value::Null) if s == "None" || s == "null" || s == "~" => Value::Null,
        _ => Value::from(s),
    }
}

/// `hypermedia_in` + the processors: the body of a POST.
///
/// # Errors
/// 400 for a bad JSON/YAML document, 406 for another content type.
pub fn read(headers: &HeaderMap, bytes: &[u8]) -> Result<Body, ApiError> {
    if bytes.is_empty() {
        return Ok(Body::default());
    }
    let raw = String::from_utf8_lossy(bytes).into_owned();
    let data = match content_type(headers).as_str() {
        "application/json" => serde_json::from_str::<Value>(&raw)
            .map_err(|_| ApiError::bad_request("Invalid JSON document"))?,
        "application/x-yaml" | "text/yaml" => serde_saphyr::from_str::<Value>(&raw)
            .map_err(|_| ApiError::bad_request("Invalid YAML document"))?,
        "text/plain" => {
            serde_json::from_str::<Value>(&raw).unwrap_or_else(|_| Value::from(raw.as_str()))
        }
        "application/x-www-form-urlencoded" => form(&raw),
        _ => {
            return Err(ApiError::new(
                StatusCode::NOT_ACCEPTABLE,
                "Content type not supported",
            ));
        }
    };
    Ok(Body {
        data: Some(data),
        raw,
    })
}

/// `urlencoded_processor`.
fn form(raw: &str) -> Value {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw).unwrap_or_default();
    let mut out: Map<String, Value> = Map::new();
    for (k, v) in pairs {
        match out.get_mut(&k) {
            Some(Value::Array(list)) => list.push(Value::from(v)),
            Some(one) => {
                let first = one.take();
                *one = Value::Array(vec![first, Value::from(v)]);
            }
            None => {
                out.insert(k, Value::from(v));
            }
        }
    }
    if let Some(Value::String(s)) = out.get("kwarg") {
        let v = yamlify(s);
        out.insert("kwarg".into(), v);
    }
    match out.get_mut("arg") {
        Some(Value::Array(list)) => {
            for v in list.iter_mut() {
                if let Value::String(s) = v {
                    *v = yamlify(s);
                }
            }
        }
        Some(one) => {
            let v = match &*one {
                Value::String(s) => yamlify(s),
                other => other.clone(),
            };
            *one = Value::Array(vec![v]);
        }
        None => {}
    }
    Value::Object(out)
}

/// `lowdata_fmt`: the lowstate of a POST (a mapping becomes one chunk).
pub fn lowstate(data: Option<Value>) -> Option<Value> {
    match data {
        Some(Value::Object(mut m)) if !m.is_empty() => {
            if let Some(arg) = m.get_mut("arg")
                && !arg.is_array()
            {
                let one = arg.take();
                *arg = Value::Array(vec![one]);
            }
            Some(Value::Array(vec![Value::Object(m)]))
        }
        other => other,
    }
}

/// The formats `hypermedia_out` emits, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/json`.
    Json,
    /// `application/x-yaml`.
    Yaml,
}

impl Format {
    /// The media type.
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Yaml => "application/x-yaml",
        }
    }
}

/// `cherrypy.lib.cptools.accept(["application/json", "application/x-yaml"])`.
///
/// # Errors
/// 406 with CherryPy's text when neither is acceptable.
pub fn negotiate(headers: &HeaderMap) -> Result<Format, ApiError> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Ok(Format::Json);
    };
    if accept.trim().is_empty() {
        return Ok(Format::Json);
    }
    let mut best: Option<(f32, usize, Format)> = None;
    for item in accept.split(',') {
        let mut parts = item.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if q <= 0.0 {
            continue;
        }
        let candidates: &[Format] = match media.as_str() {
            "*/*" | "application/*" => &[Format::Json, Format::Yaml],
            "application/json" => &[Format::Json],
            "application/x-yaml" => &[Format::Yaml],
            _ => &[],
        };
        for (rank, f) in candidates.iter().enumerate() {
            let better = match best {
                None => true,
                Some((bq, brank, _)) => q > bq || (q == bq && rank < brank),
            };
            if better {
                best = Some((q, rank, *f));
            }
        }
    }
    best.map(|(_, _, f)| f).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_ACCEPTABLE,
            format!(
                "Your client sent this Accept header: {accept}. But this resource only emits \
                 these media types: application/json, application/x-yaml."
            ),
        )
    })
}

/// The answer in `format`: `salt.utils.json.dumps` or `yaml.safe_dump(default_flow_style=False)`.
pub fn render(format: Format, v: &Value) -> String {
    match format {
        Format::Json => salt_render::py_json(
            &salt_compat::json::json_to_msgpack(v),
            salt_render::JsonOpts::SALT,
        ),
        // `format_yaml` is the Jinja filter's text: the dump without its final newline.
        Format::Yaml => {
            salt_render::yaml_dump::safe_dump(&salt_compat::json::json_to_msgpack(v), false) + "\n"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn h(k: header::HeaderName, v: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(k, v.parse().unwrap());
        m
    }

    #[test]
    fn forms_are_read_as_salt_reads_them() {
        let b = read(
            &h(header::CONTENT_TYPE, "application/x-www-form-urlencoded"),
            b"client=local&tgt=*&fun=test.arg&arg=1&arg=a",
        )
        .unwrap();
        assert_eq!(
            b.data.unwrap(),
            json!({"client": "local", "tgt": "*", "fun": "test.arg", "arg": [1, "a"]})
        );
    }

    #[test]
    fn text_plain_json_and_mappings_become_lowstates() {
        let b = read(
            &h(header::CONTENT_TYPE, "text/plain"),
            br#"{"fun": "x", "arg": 1}"#,
        )
        .unwrap();
        assert_eq!(lowstate(b.data).unwrap(), json!([{"fun": "x", "arg": [1]}]));
        let e = read(&h(header::CONTENT_TYPE, "application/json"), b"{").unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        let e = read(&h(header::CONTENT_TYPE, "image/png"), b"x").unwrap_err();
        assert_eq!(e.status, StatusCode::NOT_ACCEPTABLE);
    }

    #[test]
    fn yaml_is_pyyamls_safe_dump() {
        let v = json!({"return": [{"m": true, "n": {"a": [1, "x y"], "b": null}}], "s": "yes"});
        assert_eq!(
            render(Format::Yaml, &v),
            "return:\n- m: true\n  n:\n    a:\n    - 1\n    - x y\n    b: null\ns: 'yes'\n"
        );
    }

    #[test]
    fn accept_picks_json_or_yaml() {
        assert_eq!(negotiate(&HeaderMap::new()).unwrap(), Format::Json);
        let y = h(header::ACCEPT, "application/x-yaml");
        assert_eq!(negotiate(&y).unwrap(), Format::Yaml);
        let q = h(header::ACCEPT, "application/json;q=0.5, application/x-yaml");
        assert_eq!(negotiate(&q).unwrap(), Format::Yaml);
        let bad = h(header::ACCEPT, "text/html");
        assert_eq!(
            negotiate(&bad).unwrap_err().status,
            StatusCode::NOT_ACCEPTABLE
        );
    }
}
