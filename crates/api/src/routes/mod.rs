//! rest_cherrypy's URL map (`API.url_map`) and handlers, with its tools: `salt_token` and
//! `salt_auth` (a session holding an eauth token, else 401), `hypermedia_in`/`lowdata_fmt`
//! (bodies, [`crate::body`]), `hypermedia_out` (`Accept`), `cors_tool` and
//! `salt_ip_verify` (`authorized_ips`).

use std::sync::Arc;

use axum::Router;
use axum::body::{Body as HttpBody, Bytes};
use axum::extract::{ConnectInfo, Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use crate::Api;
use crate::body::{self, Format};
use crate::error::ApiError;
use crate::sessions::{self, requested_id};

type Shared = State<Arc<Api>>;

/// The router for `api`, mounted at `root_prefix`.
pub fn router(api: Arc<Api>) -> Router {
    let rc = &api.rc;
    let mut r = Router::new()
        .route("/", get(index).post(index_post))
        .route("/run", post(run))
        .route("/token", post(token))
        .route("/keys", get(keys).post(keys_post))
        .route("/keys/{mid}", get(keys_one))
        .route("/events", get(crate::stream::events))
        .route("/ws", get(crate::ws::ws))
        .route("/ws/{session}", get(crate::ws::ws_token))
        .route("/stats", get(stats));
    if rc.enable_sessions {
        r = r
            .route("/login", get(login_get).post(login))
            .route("/logout", post(logout))
            .route("/minions", get(minions).post(minions_post))
            .route("/minions/{mid}", get(minions_one))
            .route("/jobs", get(jobs))
            .route("/jobs/{jid}", get(jobs_one));
    }
    let hook = format!("/{}", rc.webhook_url.trim_matches('/'));
    r = r
        .route(&hook, post(hook_post))
        .route(&format!("{hook}/{{*tag}}"), post(hook_post));
    if let Some(app) = rc.app.clone() {
        let path = format!("/{}", rc.app_path.trim_matches('/'));
        let serve = move || {
            let app = app.clone();
            async move { static_file(&app).await }
        };
        r = r.route(&path, get(serve.clone()));
        r = r.route(&format!("{path}/{{*rest}}"), get(serve));
    }
    if let Some(dir) = rc.static_dir.clone() {
        let path = format!("/{}", rc.static_path.trim_matches('/'));
        r = r.route(
            &format!("{path}/{{*file}}"),
            get(move |Path(file): Path<String>| {
                let dir = dir.clone();
                async move {
                    if file.split('/').any(|c| c == ".." || c.is_empty()) {
                        return ApiError::status(StatusCode::NOT_FOUND).into_response();
                    }
                    static_file(&dir.join(file)).await
                }
            }),
        );
    }
    let r = r
        .fallback(|| async { ApiError::status(StatusCode::NOT_FOUND) })
        .layer(body_limit(rc.max_request_body_size))
        .layer(middleware::from_fn_with_state(api.clone(), tools))
        .with_state(api.clone());
    let prefix = api.rc.root_prefix.trim_end_matches('/');
    if prefix.is_empty() {
        r
    } else {
        Router::new().nest(prefix, r)
    }
}

/// `max_request_body_size` for every body read (0: none); a larger body is a 413 before it
/// is read whole.
fn body_limit(max: u64) -> axum::extract::DefaultBodyLimit {
    match usize::try_from(max) {
        Ok(0) => axum::extract::DefaultBodyLimit::disable(),
        Ok(n) => axum::extract::DefaultBodyLimit::max(n),
        Err(_) => axum::extract::DefaultBodyLimit::disable(),
    }
}

async fn static_file(path: &std::path::Path) -> Response {
    match tokio::fs::read(path).await {
        Ok(bytes) => {
            let ct = match path.extension().and_then(|e| e.to_str()) {
                Some("html" | "htm") => "text/html",
                Some("js") => "application/javascript",
                Some("css") => "text/css",
                Some("json") => "application/json",
                Some("png") => "image/png",
                Some("svg") => "image/svg+xml",
                Some("ico") => "image/x-icon",
                _ => "application/octet-stream",
            };
            ([(header::CONTENT_TYPE, ct)], bytes).into_response()
        }
        Err(_) => ApiError::status(StatusCode::NOT_FOUND).into_response(),
    }
}

/// The tools every request passes: `salt_ip_verify`, `cors_tool`, Accept (406 before work).
async fn tools(
    State(api): Shared,
    ConnectInfo(crate::listener::Peer(peer)): ConnectInfo<crate::listener::Peer>,
    req: Request,
    next: Next,
) -> Response {
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .cloned()
        .unwrap_or(HeaderValue::from_static("*"));
    let mut resp = if !api.rc.authorized_ips.is_empty()
        && !api.rc.authorized_ips.contains(&peer.ip().to_string())
    {
        tracing::error!("Blocked IP: {}", peer.ip());
        ApiError::new(StatusCode::FORBIDDEN, "Bad IP").into_response()
    } else if req.method() == Method::OPTIONS {
        let mut r = StatusCode::OK.into_response();
        let asked = req
            .headers()
            .get("access-control-request-method")
            .and_then(|v| v.to_str().ok());
        if matches!(asked, Some("GET" | "POST")) {
            let h = r.headers_mut();
            h.insert(
                "access-control-allow-methods",
                HeaderValue::from_static("GET, POST"),
            );
            h.insert(
                "access-control-allow-headers",
                HeaderValue::from_static("Content-Type, X-Auth-Token, X-Requested-With"),
            );
            h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
            h.insert("access-control-max-age", HeaderValue::from_static("1400"));
        }
        r
    } else {
        api.stats.request();
        next.run(req).await
    };
    let h = resp.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("GET, POST"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
        HeaderValue::from_static("true"),
    );
    resp
}

/// `hypermedia_out`: `value` in the negotiated format with `status`.
pub(crate) fn reply(format: Format, status: StatusCode, value: &Value) -> Response {
    let mut r = (status, body::render(format, value)).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.media_type()),
    );
    r
}

/// `salt_auth`: the session's eauth token, else 401 (429 past `token_rate_limit`). In a group
/// a session is named by its eauth token (`/login`): one this process does not know, made
/// through another member's salt-api, is adopted when the master knows the token.
async fn session_token(api: &Api, headers: &HeaderMap) -> Result<String, ApiError> {
    let unauthorized = || ApiError::status(StatusCode::UNAUTHORIZED);
    let id = requested_id(headers).ok_or_else(unauthorized)?;
    let token = match api.sessions.token(&id) {
        Some(t) => t.as_str().to_owned(),
        None if api.group && crate::stream::valid(api, &id).await => {
            api.sessions.adopt(&id);
            id.clone()
        }
        None => return Err(unauthorized()),
    };
    api.throttle(&id).map(|()| token)
}

/// The lowstate of a POST body (`hypermedia_in` + `lowdata_fmt`), bounded by
/// `max_request_body_size`.
fn lowstate_of(api: &Api, headers: &HeaderMap, bytes: &Bytes) -> Result<Option<Value>, ApiError> {
    api.check_size(bytes)?;
    Ok(body::lowstate(body::read(headers, bytes)?.data))
}

macro_rules! try_fmt {
    ($headers:expr) => {
        match body::negotiate(&$headers) {
            Ok(f) => f,
            Err(e) => return e.into_response(),
        }
    };
}

macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return ApiError::into_response(e),
        }
    };
}

async fn index(headers: HeaderMap) -> Response {
    let f = try_fmt!(headers);
    reply(
        f,
        StatusCode::OK,
        &json!({"return": "Welcome", "clients": crate::clients::CLIENTS}),
    )
}

/// `hypermedia_handler`'s answer to an error: Salt's unexpected exception is a 500 with
/// `{status, return}` in the negotiated format; the others are CherryPy's error pages.
fn failed(f: Format, e: ApiError) -> Response {
    if e == ApiError::internal() {
        return reply(
            f,
            StatusCode::INTERNAL_SERVER_ERROR,
            &json!({"status": 500, "return": e.message}),
        );
    }
    e.into_response()
}

async fn index_post(State(api): Shared, headers: HeaderMap, bytes: Bytes) -> Response {
    let f = try_fmt!(headers);
    let token = tri!(session_token(&api, &headers).await);
    let low = tri!(lowstate_of(&api, &headers, &bytes));
    match crate::clients::exec_lowstate(&api, low, None, Some(&token)).await {
        Ok(ret) => reply(f, StatusCode::OK, &json!({"return": ret})),
        Err(e) => failed(f, e),
    }
}

async fn run(State(api): Shared, headers: HeaderMap, bytes: Bytes) -> Response {
    let f = try_fmt!(headers);
    let low = tri!(lowstate_of(&api, &headers, &bytes));
    match crate::clients::exec_lowstate(&api, low, None, None).await {
        Ok(ret) => reply(f, StatusCode::OK, &json!({"return": ret})),
        Err(e) => failed(f, e),
    }
}

/// `Token.POST`: each chunk's credentials through the runner `auth.mk_token` (so the user
/// needs the right to call it); the list of the tokens' data.
async fn token(State(api): Shared, headers: HeaderMap, bytes: Bytes) -> Response {
    let f = try_fmt!(headers);
    let low = tri!(lowstate_of(&api, &headers, &bytes));
    let Some(Value::Array(mut chunks)) = low else {
        return ApiError::bad_request("Lowstates must be a list").into_response();
    };
    for chunk in &mut chunks {
        let creds = chunk.as_object().and_then(|c| {
            let get = |k: &str| c.get(k).cloned();
            Some(
                json!({"username": get("username")?, "password": get("password")?,
                        "eauth": get("eauth")?}),
            )
        });
        let (Some(kwarg), Some(c)) = (creds, chunk.as_object_mut()) else {
            return ApiError::bad_request(r#"Require "username", "password", and "eauth" params"#)
                .into_response();
        };
        c.insert("client".into(), json!("runner"));
        c.insert("fun".into(), json!("auth.mk_token"));
        c.insert("kwarg".into(), kwarg);
    }
    let ret =
        tri!(crate::clients::exec_lowstate(&api, Some(Value::Array(chunks)), None, None).await);
    reply(f, StatusCode::OK, &Value::Array(ret))
}

async fn login_get(headers: HeaderMap) -> Response {
    let f = try_fmt!(headers);
    let mut r = reply(
        f,
        StatusCode::OK,
        &json!({"status": 200, "return": "Please log in"}),
    );
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Session"),
    );
    r
}

async fn login(State(api): Shared, headers: HeaderMap, bytes: Bytes) -> Response {
    let f = try_fmt!(headers);
    let low = tri!(lowstate_of(&api, &headers, &bytes));
    let creds = match low {
        Some(Value::Array(mut l)) if !l.is_empty() => l.swap_remove(0),
        Some(other) => other,
        None => Value::Null,
    };
    let Value::Object(mut load) = creds else {
        return ApiError::internal().into_response();
    };
    load.insert("cmd".into(), json!("mk_token"));
    let token = tri!(api.master.call(load).await);
    let Some(salt_token) = token.get("token").and_then(Value::as_str) else {
        return ApiError::unauthorized("Could not authenticate using provided credentials")
            .into_response();
    };
    // In a group the session is named by the eauth token, so every member's salt-api
    // knows it (`session_token`).
    let id = if api.group {
        api.sessions.adopt(salt_token);
        salt_token.to_owned()
    } else {
        api.sessions.create(salt_token)
    };
    let perms = api.perms(&token);
    let body = json!({"return": [{
        "token": id,
        "expire": token.get("expire").cloned().unwrap_or(Value::Null),
        "start": token.get("start").cloned().unwrap_or(Value::Null),
        "user": token.get("name").cloned().unwrap_or(Value::Null),
        "eauth": token.get("eauth").cloned().unwrap_or(Value::Null),
        "perms": perms,
    }]});
    let mut r = reply(f, StatusCode::OK, &body);
    if let Ok(v) = HeaderValue::from_str(&id) {
        r.headers_mut().insert("x-auth-token", v);
    }
    if let Ok(v) = HeaderValue::from_str(&sessions::set_cookie(&id)) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

async fn logout(State(api): Shared, headers: HeaderMap) -> Response {
    let f = try_fmt!(headers);
    tri!(session_token(&api, &headers).await);
    let id = requested_id(&headers).unwrap_or_default();
    if let Some(token) = api.sessions.remove(&id) {
        let api = api.clone();
        let _ = tokio::task::spawn_blocking(move || api.rm_token(&token)).await;
    }
    let mut r = reply(
        f,
        StatusCode::OK,
        &json!({"return": "Your token has been cleared"}),
    );
    if let Ok(v) = HeaderValue::from_str(&sessions::expired_cookie(&id)) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

async fn minions_for(api: &Api, headers: &HeaderMap, mid: Option<String>) -> Response {
    let f = try_fmt!(headers);
    let token = tri!(session_token(api, headers).await);
    let low = json!([{"client": "local", "tgt": mid.unwrap_or_else(|| "*".into()), "fun": "grains.items"}]);
    let ret = tri!(crate::clients::exec_lowstate(api, Some(low), None, Some(&token)).await);
    reply(f, StatusCode::OK, &json!({"return": ret}))
}

async fn minions(State(api): Shared, headers: HeaderMap) -> Response {
    minions_for(&api, &headers, None).await
}

async fn minions_one(State(api): Shared, headers: HeaderMap, Path(mid): Path<String>) -> Response {
    minions_for(&api, &headers, Some(mid)).await
}

async fn minions_post(State(api): Shared, headers: HeaderMap, bytes: Bytes) -> Response {
    let f = try_fmt!(headers);
    let token = tri!(session_token(&api, &headers).await);
    let low = tri!(lowstate_of(&api, &headers, &bytes));
    let ret =
        tri!(crate::clients::exec_lowstate(&api, low, Some("local_async"), Some(&token)).await);
    let links: Vec<Value> = ret
        .iter()
        .filter_map(|r| r.get("jid"))
        .map(|jid| json!({"href": format!("/jobs/{}", jid.as_str().unwrap_or_default())}))
        .collect();
    reply(
        f,
        StatusCode::ACCEPTED,
        &json!({"return": ret, "_links": {"jobs": links}}),
    )
}

async fn jobs_for(api: &Api, headers: &HeaderMap, jid: Option<String>) -> Response {
    let f = try_fmt!(headers);
    let token = tri!(session_token(api, headers).await);
    let low = match &jid {
        Some(j) => json!([{"client": "runner", "fun": "jobs.list_job", "jid": j}]),
        None => json!([{"client": "runner", "fun": "jobs.list_jobs"}]),
    };
    let mut ret = tri!(crate::clients::exec_lowstate(api, Some(low), None, Some(&token)).await);
    let first = if ret.is_empty() {
        Value::Null
    } else {
        ret.swap_remove(0)
    };
    if jid.is_none() {
        return reply(f, StatusCode::OK, &json!({"return": [first]}));
    }
    let mut minion_ret = Map::new();
    if let Some(Value::Object(results)) = first.get("Result") {
        for (m, r) in results {
            minion_ret.insert(m.clone(), r.get("return").cloned().unwrap_or(Value::Null));
        }
    } else {
        return ApiError::internal().into_response();
    }
    reply(
        f,
        StatusCode::OK,
        &json!({"info": [first], "return": [minion_ret]}),
    )
}

async fn jobs(State(api): Shared, headers: HeaderMap) -> Response {
    jobs_for(&api, &headers, None).await
}

async fn jobs_one(State(api): Shared, headers: HeaderMap, Path(jid): Path<String>) -> Response {
    jobs_for(&api, &headers, Some(jid)).await
}

async fn keys_for(api: &Api, headers: &HeaderMap, mid: Option<String>) -> Response {
    let f = try_fmt!(headers);
    let token = tri!(session_token(api, headers).await);
    let low = match mid {
        Some(m) => json!([{"client": "wheel", "fun": "key.finger", "match": m}]),
        None => json!([{"client": "wheel", "fun": "key.list_all"}]),
    };
    let ret = tri!(crate::clients::exec_lowstate(api, Some(low), None, Some(&token)).await);
    let inner = ret
        .first()
        .and_then(|r| r.pointer("/data/return"))
        .cloned()
        .unwrap_or(json!({}));
    reply(f, StatusCode::OK, &json!({"return": inner}))
}

async fn keys(State(api): Shared, headers: HeaderMap) -> Response {
    keys_for(&api, &headers, None).await
}

async fn keys_one(State(api): Shared, headers: HeaderMap, Path(mid): Path<String>) -> Response {
    keys_for(&api, &headers, Some(mid)).await
}

/// `Keys.POST`: `key.gen_accept` with the request's credentials, answered as a tarball of
/// `minion.pub` and `minion.pem`.
async fn keys_post(State(api): Shared, headers: HeaderMap, bytes: Bytes) -> Response {
    let low = tri!(lowstate_of(&api, &headers, &bytes));
    let Some(Value::Array(mut chunks)) = low else {
        return ApiError::bad_request("Lowstates must be a list").into_response();
    };
    let Some(Value::Object(first)) = chunks.first_mut() else {
        return ApiError::internal().into_response();
    };
    first.insert("client".into(), json!("wheel"));
    first.insert("fun".into(), json!("key.gen_accept"));
    if let Some(mid) = first.remove("mid") {
        first.insert("id_".into(), mid);
    }
    let id = first
        .get("id_")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    // `hypermedia_out` is off for this handler: Salt's exceptions are not mapped to their
    // statuses but answered 500 by CherryPy (its own HTTP errors keep theirs).
    let ret =
        match crate::clients::exec_lowstate(&api, Some(Value::Array(chunks)), None, None).await {
            Ok(r) => r,
            Err(e)
                if matches!(
                    e.message.as_str(),
                    "Lowstates must be a list" | "Invalid token"
                ) =>
            {
                return e.into_response();
            }
            Err(_) => {
                return ApiError::status(StatusCode::INTERNAL_SERVER_ERROR).into_response();
            }
        };
    let inner = ret.first().and_then(|r| r.pointer("/data/return"));
    let field = |k: &str| {
        inner
            .and_then(|r| r.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let tar = crate::tarball::two_files(
        ("minion.pub", field("pub").as_bytes()),
        ("minion.pem", field("priv").as_bytes()),
    );
    let mut r = tar.into_response();
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"saltkeys-{id}.tar\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-tar"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

async fn stats(State(api): Shared, headers: HeaderMap) -> Response {
    let f = try_fmt!(headers);
    if !api.rc.stats_disable_auth {
        tri!(session_token(&api, &headers).await);
    }
    reply(f, StatusCode::OK, &api.stats.report(api.rc.collect_stats))
}

/// `RawQuery` is re-exported for the event stream.
pub(crate) type Query = RawQuery;

/// A response body from a stream.
pub(crate) fn stream_body<S>(s: S) -> HttpBody
where
    S: futures_util::Stream<Item = Result<String, std::io::Error>> + Send + 'static,
{
    HttpBody::from_stream(s)
}

mod hook;
use hook::hook_post;
