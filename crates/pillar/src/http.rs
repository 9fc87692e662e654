//! `http_json` and `http_yaml` (Salt's `salt/pillar/http_json.py`, `http_yaml.py`): the
//! pillar is the body of a GET of `url` (`%s` the quoted minion id; with `with_grains`,
//! `<grain>` the quoted grain value), decoded as JSON or YAML, under `namespace` if given
//! (`http_json` only).
//! An answer that is not a success is logged and adds nothing, as Salt's `http.query` does;
//! a body that does not decode fails the module (`_errors`). `ureq` without TLS: an
//! `https://` URL is refused by name (the failure names it in `_errors`).

use std::io::Read as _;
use std::time::Duration;

use rmpv::Value;

use crate::Request;

/// Parameters after `minion_id, pillar`, in order (`http_yaml` has no `namespace`).
const PARAMS: &[&str] = &[
    "url",
    "with_grains",
    "header_dict",
    "auth",
    "username",
    "password",
    "namespace",
];
/// Most bytes of a body read.
const MAX_BODY: u64 = 64 << 20;
/// Longest a query may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `http_json` (`yaml` false) or `http_yaml` with its configured argument.
pub(crate) fn ext_pillar(req: &Request, arg: &Value, yaml: bool) -> Result<Value, String> {
    let params = if yaml {
        &PARAMS[..PARAMS.len() - 1]
    } else {
        PARAMS
    };
    let mut a = crate::ext::bind(arg, params, 1)?;
    a.resize(PARAMS.len(), None);
    let text = |i: usize| a[i].as_ref().map(salt_compat::py_str);
    let mut url = text(0).unwrap_or_default().replace("%s", &quote(&req.id));
    if a[1].as_ref().is_some_and(truthy) {
        while let Some(start) = url.find('<') {
            let Some(len) = url[start..].find('>') else {
                break;
            };
            let name = url[start + 1..start + len].to_owned();
            let value = grain(&req.grains, &name).filter(truthy);
            let Some(value) = value else {
                tracing::error!("Unable to get minion '{}' grain: {name}", req.id);
                return Ok(Value::Map(Vec::new()));
            };
            url = url.replace(&format!("<{name}>"), &quote(&salt_compat::py_str(&value)));
        }
    }
    if url.starts_with("https://") {
        return Err(format!(
            "https:// URLs are not implemented by salt-rs (no TLS in its HTTP client): {url}"
        ));
    }
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(TIMEOUT))
        .http_status_as_error(false)
        .build()
        .new_agent();
    let mut get = agent.get(&url);
    if let Some(Value::Map(headers)) = &a[2] {
        for (k, v) in headers {
            get = get.header(salt_compat::py_str(k), salt_compat::py_str(v));
        }
    }
    let creds = match (&a[3], text(4), text(5)) {
        (Some(Value::Array(pair)), _, _) if pair.len() == 2 => {
            Some((salt_compat::py_str(&pair[0]), salt_compat::py_str(&pair[1])))
        }
        (_, Some(u), Some(p)) => Some((u, p)),
        _ => None,
    };
    if let Some((u, p)) = creds {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        get = get.header("Authorization", format!("Basic {token}"));
    }
    let resp = match get.call() {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(
                "Error on minion '{}' http query: {url}\nMore Info:\n",
                req.id
            );
            tracing::error!("error: {e}");
            return Ok(Value::Map(Vec::new()));
        }
    };
    let status = resp.status().as_u16();
    let mut body = Vec::new();
    resp.into_body()
        .into_reader()
        .take(MAX_BODY)
        .read_to_end(&mut body)
        .map_err(|e| format!("{url}: {e}"))?;
    if !(200..300).contains(&status) {
        tracing::error!(
            "Error on minion '{}' http query: {url}\nMore Info:\n",
            req.id
        );
        tracing::error!("status: {status}");
        return Ok(Value::Map(Vec::new()));
    }
    let body = String::from_utf8_lossy(&body);
    let data = if yaml {
        salt_render::yaml::load(&body)
            .map_err(|e| e.to_string())?
            .unwrap_or(Value::Nil)
    } else {
        let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        salt_compat::json::json_to_msgpack(&v)
    };
    Ok(match text(6).filter(|n| !n.is_empty()) {
        Some(ns) => Value::Map(vec![(Value::from(ns), data)]),
        None => data,
    })
}

/// `grains.get`: a `:`-separated path into the grains.
fn grain(grains: &Value, name: &str) -> Option<Value> {
    let mut cur = grains;
    for part in name.split(':') {
        cur = salt_compat::map_get(cur, part)?;
    }
    Some(cur.clone())
}

/// Python's `urllib.parse.quote` (safe `/`).
fn quote(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"_.-~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

use salt_compat::py_truthy as truthy;
