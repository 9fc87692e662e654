//! `POST /hook[/<tag>]`: rest_cherrypy's `Webhook`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::{reply, session_token};
use crate::Api;
use crate::body;
use crate::error::ApiError;
use axum::response::IntoResponse;

/// `Webhook.POST`: fires `salt/netapi/hook/<tag>` with the body, its data and the headers.
pub(super) async fn hook_post(
    State(api): State<Arc<Api>>,
    headers: HeaderMap,
    tag: Option<Path<String>>,
    bytes: Bytes,
) -> Response {
    let f = try_fmt!(headers);
    if !api.rc.webhook_disable_auth {
        tri!(session_token(&api, &headers).await);
    }
    tri!(api.check_size(&bytes));
    let b = tri!(body::read(&headers, &bytes));
    let data = body::lowstate(b.data.clone()).map_or(json!({}), |l| match b.data {
        Some(Value::Object(_)) => l.get(0).cloned().unwrap_or(json!({})),
        _ => l,
    });
    let data = if data.is_null() { json!({}) } else { data };
    let mut tag_path = "salt/netapi/hook".to_owned();
    if let Some(Path(t)) = tag {
        tag_path.push('/');
        tag_path.push_str(t.trim_matches('/'));
    }
    let hdrs: Map<String, Value> = headers
        .iter()
        .map(|(k, v)| {
            (
                title_case(k.as_str()),
                json!(v.to_str().unwrap_or_default()),
            )
        })
        .collect();
    let ok = api
        .bus
        .fire(
            &tag_path,
            json!({"body": b.raw, "post": data, "headers": hdrs}),
        )
        .await
        .inspect_err(|e| tracing::warn!("firing {tag_path}: {e}"))
        .is_ok();
    reply(f, StatusCode::OK, &json!({"success": ok}))
}

/// CherryPy's header names: `Content-Type`.
fn title_case(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join("-")
}
