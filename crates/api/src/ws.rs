//! `GET /ws[/<session>]`: the master's events over a websocket, as Salt's
//! `WebsocketEndpoint` (rest_cherrypy with ws4py's `SynchronizingWebsocket`) serves them.
//!
//! The session is the path's (`/ws/<session_id>`, for browsers) or the request's
//! (`X-Auth-Token` or the `session_id` cookie); its eauth token must be one the master knows
//! and that has not expired, else 401 before the upgrade. Each message from the client is
//! answered `server received message`; events start flowing once the client has sent
//! `websocket client ready`, each as one text message `data: {"tag", "data"}\n\n`, or, with
//! the `format_events` query parameter, as Salt's `SaltInfo` digests of them (`{"jobs": ..}`,
//! `{"minions": [..]}`). A client too slow for the bus's buffer is disconnected, as `/events`
//! clients are: the master's bus never waits for it.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::Api;
use crate::error::ApiError;
use crate::events::Event;

/// What the client sends to start the stream.
const READY: &str = "websocket client ready";

/// `/ws`.
pub(crate) async fn ws(
    State(api): State<Arc<Api>>,
    headers: HeaderMap,
    query: RawQuery,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    open(api, headers, None, query, upgrade).await
}

/// `/ws/<session>`.
pub(crate) async fn ws_token(
    State(api): State<Arc<Api>>,
    headers: HeaderMap,
    Path(session): Path<String>,
    query: RawQuery,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    open(api, headers, Some(session), query, upgrade).await
}

async fn open(
    api: Arc<Api>,
    headers: HeaderMap,
    session: Option<String>,
    query: RawQuery,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    let upgrade = match upgrade {
        Ok(u) => u,
        // ws4py's `WebSocketTool.upgrade`: `HandshakeError` as a 400.
        Err(e) => {
            return ApiError::bad_request(format!("Invalid WebSocket handshake: {e}"))
                .into_response();
        }
    };
    let sid = session.or_else(|| crate::sessions::requested_id(&headers));
    let token = sid.and_then(|s| api.sessions.token(&s));
    let Some(token) = token else {
        return ApiError::status(StatusCode::UNAUTHORIZED).into_response();
    };
    if !crate::stream::alive(&api, token.as_str()).await {
        return ApiError::status(StatusCode::UNAUTHORIZED).into_response();
    }
    // `"format_events" in kwargs`: the parameter, with or without a value.
    let format = query.0.is_some_and(|q| {
        q.split('&')
            .any(|p| p.split('=').next() == Some("format_events"))
    });
    let token = token.as_str().to_owned();
    upgrade.on_upgrade(move |socket| serve(api, socket, format, token))
}

async fn serve(api: Arc<Api>, socket: WebSocket, format: bool, token: String) {
    let (mut tx, mut rx) = socket.split();
    let mut events: Option<tokio::sync::broadcast::Receiver<Arc<Event>>> = None;
    let mut info = SaltInfo::default();
    loop {
        tokio::select! {
            msg = rx.next() => {
                let Some(Ok(msg)) = msg else { return };
                let text = match &msg {
                    Message::Text(t) => t.as_str().to_owned(),
                    Message::Binary(b) => String::from_utf8_lossy(b).into_owned(),
                    Message::Close(_) => return,
                    Message::Ping(_) | Message::Pong(_) => continue,
                };
                if text == READY && events.is_none() {
                    events = Some(api.bus.subscribe());
                }
                if tx.send(Message::text("server received message")).await.is_err() {
                    return;
                }
            }
            ev = next_event(&mut events) => {
                let ev = match ev {
                    Ok(ev) => ev,
                    Err(RecvError::Lagged(n)) => {
                        tracing::info!("a /ws client fell {n} events behind; disconnecting it");
                        let _ = tx.send(Message::Close(None)).await;
                        return;
                    }
                    Err(RecvError::Closed) => return,
                };
                let out = if format {
                    info.process(&api, &ev, &token)
                } else {
                    let full = json!({"tag": ev.tag, "data": ev.data});
                    vec![format!(
                        "data: {}\n\n",
                        crate::body::render(crate::body::Format::Json, &full)
                    )]
                };
                for m in out {
                    if tx.send(Message::text(m)).await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// The next event once the stream has started (never before).
async fn next_event(
    events: &mut Option<tokio::sync::broadcast::Receiver<Arc<Event>>>,
) -> Result<Arc<Event>, RecvError> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

fn dumps(v: &Value) -> String {
    crate::body::render(crate::body::Format::Json, v)
}

/// Salt's `event_processor.SaltInfo`: a running view of jobs and minions, sent whole on
/// each change.
#[derive(Debug, Default)]
struct SaltInfo {
    jobs: Map<String, Value>,
    /// Minion -> its info (`grains`), in Salt's dict order (insertion).
    minions: Vec<(String, Map<String, Value>)>,
}

impl SaltInfo {
    fn minion(&mut self, mid: &str) -> &mut Map<String, Value> {
        let i = match self.minions.iter().position(|(m, _)| m == mid) {
            Some(i) => i,
            None => {
                self.minions.push((mid.to_owned(), Map::new()));
                self.minions.len() - 1
            }
        };
        &mut self.minions[i].1
    }

    fn publish_minions(&self) -> String {
        let list: Vec<Value> = self
            .minions
            .iter()
            .map(|(mid, info)| {
                let mut m = info.clone();
                m.insert("id".into(), json!(mid));
                Value::Object(m)
            })
            .collect();
        dumps(&json!({"minions": list}))
    }

    fn publish_jobs(&self) -> String {
        dumps(&json!({"jobs": self.jobs}))
    }

    /// `SaltInfo.process`: the messages this event makes. An event without the fields
    /// Salt reads is skipped (Salt's would raise in its event process and stop the stream).
    fn process(&mut self, api: &Arc<Api>, ev: &Event, token: &str) -> Vec<String> {
        let parts: Vec<&str> = ev.tag.split('/').collect();
        let mut out = Vec::new();
        if parts.len() < 2 {
            return out;
        }
        let d = &ev.data;
        if parts[1] == "job" && parts.len() > 3 {
            let fun = d.get("fun").and_then(Value::as_str);
            if parts[3] == "new" {
                if let Some(m) = self.new_job(d) {
                    out.push(m);
                }
                if fun == Some("grains.items") {
                    self.minions.clear();
                }
            } else if parts[3] == "ret" && parts.len() > 4 {
                if let Some(m) = self.ret_job(parts[2], parts[4], d) {
                    out.push(m);
                }
                if fun == Some("grains.items") && parts.len() == 5 {
                    let grains = d.get("return").cloned().unwrap_or(Value::Null);
                    self.minion(parts[4]).insert("grains".into(), grains);
                    out.push(self.publish_minions());
                }
            }
        }
        if parts[1] == "key" {
            let id = d.get("id").and_then(Value::as_str).unwrap_or_default();
            match d.get("act").and_then(Value::as_str) {
                Some("delete") => self.minions.retain(|(m, _)| m != id),
                Some("accept") => {
                    self.minion(id);
                }
                _ => {}
            }
            out.push(self.publish_minions());
        }
        if parts[1] == "presence"
            && let Some(present) = d.get("present").and_then(Value::as_array)
        {
            let present: Vec<&str> = present.iter().filter_map(Value::as_str).collect();
            let before = self.minions.len();
            self.minions.retain(|(m, _)| present.contains(&m.as_str()));
            let mut changed = before != self.minions.len();
            let new: Vec<&str> = present
                .iter()
                .copied()
                .filter(|p| !self.minions.iter().any(|(m, _)| m == p))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            if !new.is_empty() {
                changed = true;
                // Salt's own chunk, as it sends it (`expr_type` is no parameter of
                // `LocalClient.cmd`: it rides along as a keyword argument).
                let chunk = json!({
                    "fun": "grains.items", "tgt": new.join(","), "expr_type": "list",
                    "mode": "client", "client": "local", "asynchronous": "local_async",
                    "token": token,
                });
                let api = api.clone();
                tokio::spawn(async move {
                    if let Value::Object(c) = chunk
                        && let Err(e) = crate::clients::run(&api, c).await
                    {
                        tracing::error!("/ws format_events: grains.items for new minions: {e}");
                    }
                });
            }
            if changed {
                out.push(self.publish_minions());
            }
        }
        out
    }

    /// `process_new_job_event`.
    fn new_job(&mut self, d: &Value) -> Option<String> {
        let jid = d.get("jid")?.as_str()?.to_owned();
        let minions: BTreeMap<String, Value> = d
            .get("minions")?
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .map(|m| (m.to_owned(), json!({"success": false})))
            .collect();
        let job = json!({
            "jid": jid,
            "start_time": d.get("_stamp")?,
            "minions": minions,
            "fun": d.get("fun")?,
            "tgt": d.get("tgt")?,
            "tgt_type": d.get("tgt_type")?,
            "state": "running",
        });
        self.jobs.insert(jid, job);
        Some(self.publish_jobs())
    }

    /// `process_ret_job_event`.
    fn ret_job(&mut self, jid: &str, mid: &str, d: &Value) -> Option<String> {
        let (ret, retcode, success) = (d.get("return")?, d.get("retcode")?, d.get("success")?);
        let job = self
            .jobs
            .entry(jid.to_owned())
            .or_insert_with(|| json!({}))
            .as_object_mut()?;
        let minions = job
            .entry("minions")
            .or_insert_with(|| json!({}))
            .as_object_mut()?;
        let m = minions
            .entry(mid.to_owned())
            .or_insert_with(|| json!({}))
            .as_object_mut()?;
        m.insert("return".into(), ret.clone());
        m.insert("retcode".into(), retcode.clone());
        m.insert("success".into(), success.clone());
        let complete = minions
            .values()
            .all(|m| m.get("success").is_some_and(crate::clients::truthy));
        if complete {
            job.insert("state".into(), json!("complete"));
        }
        Some(self.publish_jobs())
    }
}
