//! salt-api-core: Salt's `rest_cherrypy` HTTP API (`salt/netapi/rest_cherrypy/app.py`),
//! served from the master's config as a *client* of the master, as Salt's own salt-api is:
//! the API process holds none of the master's keys. Logins, jobs, runners and wheel calls
//! are Salt's clear commands on the master's request port ([`master`]), with the caller's
//! eauth credentials or token (every authorization is the master's); job returns and
//! `/events` come from the master's event bus ([`events`]).
//!
//! * [`routes`]: the URL map and handlers; [`stream`]: `/events`; [`ws`]: `/ws`;
//! * [`clients`]: `NetapiClient.run` (local, local_async, local_batch, local_subset, runner,
//!   runner_async, wheel, wheel_async; others refused by name);
//! * [`body`]: request bodies and `Accept`; [`sessions`]: CherryPy's sessions;
//! * [`error`]: CherryPy's error pages with Salt's statuses.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod batch;
pub mod body;
pub mod clients;
pub mod error;
pub mod events;
pub mod listener;
pub mod master;
pub mod ratelimit;
pub mod routes;
pub mod sessions;
mod stream;
mod tarball;
mod ws;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use salt_config::{MasterConfig, RestCherrypy};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::ApiError;

/// Request counters for `/stats`.
#[derive(Debug, Default)]
pub struct Stats {
    requests: AtomicU64,
    started: std::sync::OnceLock<std::time::SystemTime>,
}

impl Stats {
    fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// `/stats`: `{}` unless `collect_stats` (as Salt's without CherryPy's cpstats tool on).
    fn report(&self, collect: bool) -> Value {
        if !collect {
            return json!({});
        }
        let start = self
            .started
            .get()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64())
            .unwrap_or_default();
        json!({"CherryPy Applications": {
            "Enabled": true,
            "Start Time": start,
            "Total Requests": self.requests.load(Ordering::Relaxed),
        }})
    }
}

/// What the handlers share.
#[derive(Debug)]
pub struct Api {
    /// `rest_cherrypy`.
    pub rc: RestCherrypy,
    /// `netapi_enable_clients`.
    pub enabled_clients: Vec<String>,
    /// `rest_timeout`.
    pub rest_timeout: Duration,
    /// `external_auth` as written (for the login's `perms`).
    external_auth: Value,
    /// The master's token store (`eauth_tokens`: Salt's `localfs`, or the group's
    /// database), for `/logout` as Salt's `LoadAuth.rm_token`.
    tokens: Box<dyn salt_eauth::TokenStore>,
    /// The master is in a group (`cluster_id`): sessions are named by their eauth token,
    /// so a login through one member's salt-api works on every member's.
    pub group: bool,
    /// Clear requests to the master.
    pub master: master::MasterLink,
    /// The master's event bus.
    pub bus: events::EventBus,
    /// Sessions.
    pub sessions: sessions::Sessions,
    /// Counters.
    pub stats: Stats,
    /// salt-rs's per-token rate limit (`token_rate_limit`; `None`: none, as Salt).
    pub rate_limit: Option<ratelimit::RateLimit>,
}

impl Api {
    /// The API for `cfg` (which must have `rest_cherrypy`); starts reading the event bus.
    ///
    /// # Errors
    /// No `rest_cherrypy`, or libzmq cannot make sockets.
    pub fn new(cfg: &MasterConfig, stop: CancellationToken) -> Result<Self, String> {
        let rc = cfg
            .api
            .rest_cherrypy
            .clone()
            .ok_or("the master's config has no rest_cherrypy block: nothing to serve")?;
        let eauth_opts = salt_compat::json::json_to_msgpack(&Value::Object(cfg.eauth_opts.clone()));
        let eauth = salt_eauth::EauthConfig::from_opts(&eauth_opts, cfg.cachedir.clone()).map_err(
            |errs| {
                errs.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            },
        )?;
        let tokens = salt_pgstore::token_store(cfg, &eauth).map_err(|e| e.to_string())?;
        let master = master::MasterLink::connect(cfg).map_err(|e| e.to_string())?;
        let stats = Stats::default();
        let _ = stats.started.set(std::time::SystemTime::now());
        Ok(Self {
            enabled_clients: cfg.api.netapi_enable_clients.clone(),
            rest_timeout: cfg.api.rest_timeout,
            external_auth: cfg
                .eauth_opts
                .get("external_auth")
                .cloned()
                .unwrap_or(json!({})),
            tokens,
            group: cfg.cluster_id.is_some(),
            master,
            bus: events::EventBus::start(cfg, stop),
            sessions: sessions::Sessions::default(),
            stats,
            rate_limit: ratelimit::RateLimit::from_options(
                rc.token_rate_limit,
                rc.token_rate_burst,
            ),
            rc,
        })
    }

    /// One request of session `id` against `token_rate_limit` (429 past it).
    fn throttle(&self, id: &str) -> Result<(), ApiError> {
        self.rate_limit.as_ref().map_or(Ok(()), |rl| rl.take(id))
    }

    /// `max_request_body_size` (413 past it).
    fn check_size(&self, bytes: &[u8]) -> Result<(), ApiError> {
        let max = self.rc.max_request_body_size;
        if max > 0 && bytes.len() as u64 > max {
            return Err(ApiError::status(axum::http::StatusCode::PAYLOAD_TOO_LARGE));
        }
        Ok(())
    }

    /// `Login.POST`'s `perms`: `sum_permissions` then `sorted_permissions` over the
    /// token's eauth backend in `external_auth`.
    fn perms(&self, token: &Value) -> Value {
        let eauth = token
            .get("eauth")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = token
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let backend = self.external_auth.get(eauth).cloned().unwrap_or(json!({}));
        let list = |k: &str| -> Vec<Value> {
            backend
                .get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let mut perms = list(name);
        perms.extend(list("*"));
        if let Some(groups) = token.get("groups").and_then(Value::as_array)
            && let Some(b) = backend.as_object()
        {
            let mut seen = Vec::new();
            for k in b.keys().filter_map(|k| k.strip_suffix('%')) {
                if groups.iter().any(|g| g.as_str() == Some(k)) && !seen.contains(&k) {
                    seen.push(k);
                    perms.extend(list(&format!("{k}%")));
                }
            }
        }
        let mut strs: Vec<String> = Vec::new();
        let mut others: Vec<Value> = Vec::new();
        for p in perms {
            match p {
                Value::String(s) if !strs.contains(&s) => strs.push(s),
                Value::String(_) => {}
                other if !others.contains(&other) => others.push(other),
                _ => {}
            }
        }
        strs.sort();
        others.sort_by_key(salt_compat::py_json_repr);
        if strs.is_empty() && others.is_empty() {
            return json!({});
        }
        Value::Array(strs.into_iter().map(Value::from).chain(others).collect())
    }

    /// `LoadAuth.rm_token` on the master's token store (blocking: a database call in a
    /// group; the caller runs it on a blocking thread).
    fn rm_token(&self, token: &str) {
        if let Err(e) = self.tokens.rm_token(token) {
            tracing::error!(
                "Logout: failed to revoke Salt eauth token; the cookie has been expired but \
                 the token may still be valid in the eauth_tokens backend until its expiry: {e}"
            );
        }
    }
}

/// Serves `api` on `listener` until `stop`.
///
/// # Errors
/// The server failed.
pub async fn serve(
    api: Arc<Api>,
    listener: listener::ApiListener,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let app = routes::router(api.clone());
    let r = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<listener::Peer>(),
    )
    .with_graceful_shutdown(async move { stop.cancelled().await })
    .await;
    api.master.close();
    r
}
