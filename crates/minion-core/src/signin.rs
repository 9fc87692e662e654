//! A one-shot sign-in for `salt-call` against a master: the minion's keys, Salt's `_auth`
//! exchange (the same [`AuthClient`] the daemon uses), then a [`MasterLink`] on the master's
//! request port. Masters are tried in the configured order; a key the master has not accepted
//! yet is retried every `acceptance_wait_time` within `auth_timeout` x `auth_tries`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use salt_proto::auth_minion::{AuthAction, AuthClient, AuthOutcome};

use crate::channel::{Session, minion_tok};
use crate::driver::MinionSettings;
use crate::master_link::MasterLink;
use crate::net;

/// Sign in to the first master that accepts this minion.
pub async fn sign_in(s: &MinionSettings) -> Result<MasterLink, String> {
    let key = salt_pki::files::load_or_generate(&s.pki_dir, "minion", s.keysize)
        .map_err(|e| format!("minion key: {e}"))?;
    let tok = Arc::new(minion_tok(&key).map_err(|e| format!("minion key: {e}"))?);
    let cached = std::fs::read_to_string(s.pki_dir.join("minion_master.pub")).ok();
    let sign_pub = salt_pki::files::read_public_key(
        &s.pki_dir
            .join(format!("{}.pub", s.auth.master_sign_key_name)),
    )
    .ok();
    let mut auth = AuthClient::new(s.auth.clone(), key.clone(), cached, sign_pub);
    let timeout = s.failover.auth_timeout.max(Duration::from_secs(5));
    let deadline = Instant::now() + timeout * s.failover.auth_tries.max(1);
    let mut last = String::from("no master configured");
    for addr in &s.failover.masters {
        let ip = match tokio::net::lookup_host((addr.host.as_str(), addr.port)).await {
            Ok(mut it) => match it.next() {
                Some(sa) => sa.ip().to_string(),
                None => {
                    last = format!("{}: no address", addr.host);
                    continue;
                }
            },
            Err(e) => {
                last = format!("{}: {e}", addr.host);
                continue;
            }
        };
        let uri = net::tcp_uri(&ip, addr.port);
        loop {
            let n = uuid::Uuid::new_v4().simple().to_string();
            let (req, pending) = auth.build_request(&n);
            let body = salt_proto::encode(&req);
            let reply = match net::request_once(&s.id, &uri, body, timeout, true, s.keepalive).await
            {
                Ok(r) => r,
                Err(e) => {
                    last = format!("{uri}: {e}");
                    break;
                }
            };
            let v = salt_proto::decode(&reply).map_err(|_| "malformed sign-in reply".to_owned())?;
            match auth.handle_reply(&pending, &v) {
                Ok(AuthOutcome::Accepted(creds)) => {
                    for AuthAction::WriteMasterPub(text) in &creds.actions {
                        let path = s.pki_dir.join("minion_master.pub");
                        if let Err(e) = salt_pki::files::atomic_write(&path, text.as_bytes(), 0o644)
                        {
                            tracing::error!("Unable to write {}: {e}", path.display());
                        }
                    }
                    let session = Session {
                        id: s.id.clone(),
                        aes: creds.aes.clone(),
                        session: creds.session.clone(),
                        master_pub: creds.master_pub.clone(),
                        tok: tok.clone(),
                        enc_algo: s.auth.enc_algo,
                        sig_algo: s.auth.sig_algo,
                        signer: s.minion_sign_messages.then(|| key.clone()),
                    };
                    let req =
                        net::req_client(&s.id, &uri, s.keepalive).map_err(|e| e.to_string())?;
                    return Ok(MasterLink {
                        session,
                        req,
                        key: Arc::new(key),
                        enc_algo: s.auth.enc_algo,
                        sig_algo: s.auth.sig_algo,
                        timeout: s.return_timeout.max(Duration::from_secs(60)),
                        tries: s.return_tries,
                    });
                }
                Ok(_) => {
                    if Instant::now() >= deadline {
                        return Err(format!(
                            "The Salt Master at {uri} has not accepted this minion's key ({})",
                            s.id
                        ));
                    }
                    tokio::time::sleep(
                        s.failover
                            .acceptance_wait_time
                            .clamp(Duration::from_millis(200), Duration::from_secs(10)),
                    )
                    .await;
                }
                Err(e) => {
                    last = format!("{uri}: {e}");
                    break;
                }
            }
        }
    }
    Err(format!("Unable to sign in to a master: {last}"))
}
