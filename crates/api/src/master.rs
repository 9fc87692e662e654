//! The master, seen from salt-api: Salt's clear commands on its request port (`mk_token`,
//! `get_token`, `publish`, `runner`, `wheel`), sent as Salt's `ReqChannel(crypt="clear")`
//! sends them: `{"enc": "clear", "load": <load>, "version": 3}`. The API holds no key of the
//! master's: every request carries the caller's eauth credentials or token, and the master
//! decides.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use salt_config::MasterConfig;
use salt_transport::{ReqClient, ReqOptions, TransportError};
use serde_json::{Map, Value, json};

use crate::error::ApiError;

/// How long one clear request may take (Salt's request channel: 60 s).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// REQ sockets kept open: a REQ socket has one request in flight, the API has many.
const POOL: usize = 8;

/// Salt's text when the master cannot be reached.
pub const NOT_AVAILABLE: &str = "Salt Master is not available.";

/// Clear requests to the master's `ret_port`.
#[derive(Debug)]
pub struct MasterLink {
    pool: Vec<ReqClient>,
    next: AtomicUsize,
}

/// The master's request endpoint as Salt's clients compute it (`interface`, with the
/// wildcard addresses replaced by loopback).
pub fn request_endpoint(cfg: &MasterConfig) -> String {
    let host = match cfg.interface {
        std::net::IpAddr::V4(a) if a.is_unspecified() => "127.0.0.1".to_owned(),
        std::net::IpAddr::V6(a) if a.is_unspecified() => "::1".to_owned(),
        a => a.to_string(),
    };
    salt_transport::tcp_endpoint(&host, cfg.ret_port)
}

impl MasterLink {
    /// Opens the sockets (connected in the background).
    ///
    /// # Errors
    /// libzmq cannot create sockets.
    pub fn connect(cfg: &MasterConfig) -> Result<Self, TransportError> {
        let endpoint = request_endpoint(cfg);
        let opts = ReqOptions {
            fail_fast: true,
            ..ReqOptions::default()
        };
        let pool = (0..POOL)
            .map(|_| ReqClient::connect(&endpoint, opts.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            pool,
            next: AtomicUsize::new(0),
        })
    }

    /// Sends one clear load and returns the master's answer as JSON.
    ///
    /// # Errors
    /// 503 with Salt's text when the master does not answer.
    pub async fn call(&self, load: Map<String, Value>) -> Result<Value, ApiError> {
        let envelope = json!({"enc": "clear", "load": Value::Object(load), "version": 3});
        let body = salt_proto::encode(&salt_compat::json::json_to_msgpack(&envelope));
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.pool.len();
        let reply = self.pool[i]
            .request(body, REQUEST_TIMEOUT)
            .await
            .map_err(|e| {
                tracing::warn!("clear request to the master: {e}");
                ApiError::unavailable(NOT_AVAILABLE)
            })?;
        let value = salt_proto::decode(&reply).map_err(|e| {
            tracing::warn!("the master's answer is not msgpack: {e}");
            ApiError::internal()
        })?;
        Ok(salt_compat::json::msgpack_to_json(&value))
    }

    /// `SyncClientMixin.master_call`: the answer, or the exception its `error` names.
    ///
    /// # Errors
    /// The master's error, or no master.
    pub async fn master_call(&self, load: Map<String, Value>) -> Result<Value, ApiError> {
        let ret = self.call(load).await?;
        if let Some(err) = ret.get("error") {
            return Err(raised(err));
        }
        Ok(ret)
    }

    /// Closes the sockets.
    pub fn close(&self) {
        for c in &self.pool {
            c.close();
        }
    }
}

/// `salt.utils.error.raise_error(**error)` as the API sees it.
pub fn raised(err: &Value) -> ApiError {
    let name = err
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("Exception");
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match err {
        Value::Object(_) => ApiError::from_salt(name, message),
        other => {
            tracing::warn!("the master answered an error: {other}");
            ApiError::internal()
        }
    }
}
