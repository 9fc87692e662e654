//! The minion's AES request channel to its master, for execution modules: file server
//! requests (`_serve_file`, `_file_list`, ...), `_pillar`, `_file_recv`.
//!
//! The driver hands a [`MasterLink`] (session keys and the long-lived REQ client of the
//! master in use) to each job; `salt-call` builds one after its own sign-in.

use std::sync::Arc;
use std::time::Duration;

use rmpv::Value;
use salt_pki::{EncAlgo, PrivateKey, SigAlgo};

use crate::channel::{Session, open_pillar};
use crate::net;

/// What a module needs to send requests to the master it is connected to.
#[derive(Clone)]
pub struct MasterLink {
    /// Session keys of the sign-in.
    pub session: Session,
    /// The REQ client to the master's `ret_port`.
    pub req: salt_transport::ReqClient,
    /// The minion key (opens `_pillar` replies).
    pub key: Arc<PrivateKey>,
    /// `encryption_algorithm`.
    pub enc_algo: EncAlgo,
    /// `signing_algorithm`.
    pub sig_algo: SigAlgo,
    /// One try's timeout.
    pub timeout: Duration,
    /// Tries per request.
    pub tries: u32,
}

impl std::fmt::Debug for MasterLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MasterLink")
            .field("id", &self.session.id)
            .finish_non_exhaustive()
    }
}

fn nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl MasterLink {
    /// Send command map `load` (Salt's `channel.send(load)`), return the opened reply.
    pub async fn send(&self, load: &Value) -> Result<Value, String> {
        let mut last = String::from("request timed out");
        for _ in 0..self.tries.max(1) {
            let n = nonce();
            let body = self.session.aes_request(load, &n, unix_now());
            match net::request(&self.req, body, self.timeout).await {
                Ok(mut reply) => {
                    return self
                        .session
                        .open_reply(&mut reply, &n)
                        .map_err(|e| e.to_string());
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(format!("request to the master failed: {last}"))
    }

    /// [`Self::send`] from blocking code (a state run on a blocking thread).
    pub fn send_blocking(&self, load: &Value) -> Result<Value, String> {
        crate::blocking::wait(self.send(load))?
    }

    /// `_pillar` (ver 2) with `grains`, `saltenv`, `pillarenv` and a `pillar_override` map.
    pub async fn pillar(
        &self,
        grains: &Value,
        saltenv: Option<&str>,
        pillarenv: Option<&str>,
        pillar_override: Value,
    ) -> Result<Value, String> {
        let load = pillar_request(
            &self.session.id,
            grains,
            saltenv,
            pillarenv,
            pillar_override,
        );
        let mut last = String::from("request timed out");
        for _ in 0..self.tries.max(1) {
            let n = nonce();
            let body = self.session.aes_request(&load, &n, unix_now());
            match net::request(&self.req, body, self.timeout).await {
                Ok(reply) => {
                    return open_pillar(
                        &reply,
                        &n,
                        &self.key,
                        &self.session.master_pub,
                        self.enc_algo,
                        self.sig_algo,
                    )
                    .map_err(|e| format!("pillar request failed: {e}"));
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(format!("pillar request failed: {last}"))
    }
}

/// The `_pillar` (ver 2) request load, in the Python minion's key order
/// (`RemotePillar.compile_pillar`).
pub fn pillar_request(
    id: &str,
    grains: &Value,
    saltenv: Option<&str>,
    pillarenv: Option<&str>,
    pillar_override: Value,
) -> Value {
    salt_proto::msg::PillarRequest {
        id: id.to_owned(),
        grains: grains.clone(),
        saltenv: saltenv.map(str::to_owned),
        pillarenv: pillarenv.map(str::to_owned),
        pillar_override,
        extra_minion_data: Value::Map(vec![]),
        ver: Some("2".to_owned()),
        clean_cache: None,
        ext: None,
        extra: Vec::new(),
    }
    .to_value()
}
