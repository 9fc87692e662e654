//! `GET /events`: the master's events as Server-Sent Events (`retry: 400`, then
//! `tag: <tag>` and `data: {"tag", "data"}` per event). Salt 3007.17 takes the session from
//! `X-Auth-Token` or the `session_id` cookie only (an `EventSource` sends the cookie) and
//! refuses query parameters (400). The token is checked with the master before the stream
//! and again as events flow (at most once a second); a client too slow for the bus's buffer
//! is disconnected (and reconnects after 400 ms).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::Api;
use crate::error::ApiError;
use crate::routes::{Query, stream_body};

const QUERY_REFUSED: &str = "The /events endpoint takes no query parameters; in particular, \
     tokens must not be passed via the query string -- they end up in access logs and the \
     Referer header. Use the 'X-Auth-Token' header (for non-browser clients) or the session \
     cookie set by /login (for browser EventSource clients) instead.";

/// `Events._is_valid_token`: a session's token (or the value itself as an eauth token) the
/// master knows and that has not expired.
pub(crate) async fn valid(api: &Api, auth: &str) -> bool {
    let hex = !auth.is_empty() && auth.chars().all(|c| c.is_ascii_hexdigit());
    if !hex {
        return false;
    }
    let token = api
        .sessions
        .token(auth)
        .map_or_else(|| auth.to_owned(), |t| t.as_str().to_owned());
    alive(api, &token).await
}

/// `LoadAuth.get_tok`: an eauth token the master knows and that has not expired.
pub(crate) async fn alive(api: &Api, token: &str) -> bool {
    let mut load = serde_json::Map::new();
    load.insert("cmd".into(), json!("get_token"));
    load.insert("token".into(), json!(token));
    let Ok(data) = api.master.call(load).await else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default();
    data.get("expire")
        .and_then(Value::as_f64)
        .is_some_and(|e| e > now)
}

/// The handler.
pub(crate) async fn events(
    State(api): State<Arc<Api>>,
    headers: HeaderMap,
    query: Query,
) -> Response {
    if query.0.is_some_and(|q| !q.is_empty()) {
        return ApiError::bad_request(QUERY_REFUSED).into_response();
    }
    let auth = crate::sessions::requested_id(&headers).unwrap_or_default();
    if !valid(&api, &auth).await {
        return ApiError::status(StatusCode::UNAUTHORIZED).into_response();
    }
    let rx = api.bus.subscribe();
    struct St {
        api: Arc<Api>,
        auth: String,
        rx: tokio::sync::broadcast::Receiver<Arc<crate::events::Event>>,
        started: bool,
        checked: Instant,
    }
    let st = St {
        api,
        auth,
        rx,
        started: false,
        checked: Instant::now(),
    };
    let stream = futures_util::stream::unfold(st, |mut st| async move {
        if !st.started {
            st.started = true;
            return Some((Ok("retry: 400\n".to_owned()), st));
        }
        let ev = match st.rx.recv().await {
            Ok(ev) => ev,
            Err(RecvError::Lagged(n)) => {
                tracing::info!("an /events client fell {n} events behind; disconnecting it");
                return None;
            }
            Err(RecvError::Closed) => return None,
        };
        if st.checked.elapsed() >= Duration::from_secs(1) {
            if !valid(&st.api, &st.auth).await {
                tracing::debug!("Token is no longer valid");
                return None;
            }
            st.checked = Instant::now();
        }
        let full = json!({"tag": ev.tag, "data": ev.data});
        let line = format!(
            "tag: {}\ndata: {}\n\n",
            ev.tag,
            crate::body::render(crate::body::Format::Json, &full)
        );
        Some((Ok(line), st))
    });
    let mut r = stream_body(stream).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream;charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
    r
}
