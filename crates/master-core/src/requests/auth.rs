//! `_auth`: a minion's sign-in (§3), decided by `proto::auth_master` and answered here.

use salt_proto::auth_master::AcceptKeys;

use std::time::Instant;

use rmpv::Value;
use salt_keystore::KeyState;
use salt_pki::PublicKey;
use salt_proto::auth_master::{
    self, Act, AuthRequest, AuthRequestError, AuthRet, KeyAction, KeyFacts, Pending, Policy,
};
use salt_proto::{ReplayVerdict, encode};

use crate::shared::Shared;

const BAD_LOAD: &str = "bad load";

fn reply_str(s: &str) -> Vec<u8> {
    encode(&Value::from(s))
}

pub(super) fn handle_auth(shared: &Shared, load: &Value, version: i64) -> Vec<u8> {
    let req = match AuthRequest::from_load(load) {
        Ok(r) => r,
        Err(e @ (AuthRequestError::BadSigAlgo(_) | AuthRequestError::BadEncAlgo(_))) => {
            match &e {
                AuthRequestError::BadSigAlgo(a) => tracing::info!(
                    "Minion tried to authenticate with unsupported signing algorithm: {a}"
                ),
                AuthRequestError::BadEncAlgo(a) => tracing::info!(
                    "Minion tried to authenticate with unsupported encryption algorithm: {a}"
                ),
                _ => {}
            }
            return auth_master::unsigned_reply(&e)
                .map_or_else(|| reply_str(BAD_LOAD), |v| encode(&v));
        }
        Err(e) => {
            if shared.log_limit.allow("auth-parse") {
                tracing::warn!("Bad auth load from minion: {e}");
            }
            return reply_str(BAD_LOAD);
        }
    };
    if version < 2 {
        // Unsigned legacy replies are not implemented; such minions are refused.
        return reply_str(BAD_LOAD);
    }
    {
        let mut guard = shared.auth_nonces.lock().unwrap_or_else(|e| e.into_inner());
        if guard.check(&req.nonce, Instant::now()) == ReplayVerdict::Replayed {
            if shared.log_limit.allow("auth-replay") {
                tracing::warn!("Replayed authentication request for {} refused", req.id);
            }
            return reply_str(BAD_LOAD);
        }
    }
    tracing::info!("Authentication request from {}", req.id);
    match auth_reply(shared, &req) {
        Ok(v) => encode(&v),
        Err(e) => {
            tracing::error!(
                "Authentication of {} failed on the master side: {e}",
                req.id
            );
            // A signed refusal keeps the minion's state machine simple.
            fail(shared, &req, AuthRet::Rejected)
        }
    }
}

fn fail(shared: &Shared, req: &AuthRequest, ret: AuthRet) -> Vec<u8> {
    match fail_reply(shared, req, ret) {
        Ok(v) => encode(&v),
        Err(_) => reply_str(BAD_LOAD),
    }
}

/// Signed `{"ret": ret, "nonce": nonce}`.
fn fail_reply(shared: &Shared, req: &AuthRequest, ret: AuthRet) -> Result<Value, salt_pki::Error> {
    auth_master::fail_reply(&shared.keys.key, req, ret)
}

/// Errors on the master's side of a sign-in.
#[derive(Debug, thiserror::Error)]
enum AuthSideError {
    #[error("key store: {0}")]
    Store(#[from] salt_keystore::KeyStoreError),
    #[error("{0}")]
    Pki(#[from] salt_pki::Error),
    #[error("{0}")]
    Session(#[from] crate::keys::sessions::SessionError),
}

fn key_facts(shared: &Shared, id: &str) -> Result<KeyFacts, AuthSideError> {
    let store = &shared.store;
    let rejected = store.has_key(KeyState::Rejected, id)?;
    let accepted = store.read_key(KeyState::Accepted, id)?;
    // `decide` looks at the pending key only when no key is accepted: a returning minion
    // (the common case) is spared its two look-ups.
    // A directory in place of the pending key is looked for only when reading fails: one
    // system call less on a new minion's sign-in.
    let pending = if accepted.is_some() {
        Pending::Absent
    } else {
        match store.read_key(KeyState::Pending, id) {
            Ok(Some(k)) => Pending::File(k),
            Ok(None) => Pending::Absent,
            Err(_) if store.key_path(KeyState::Pending, id)?.is_dir() => Pending::Directory,
            Err(e) => return Err(e.into()),
        }
    };
    Ok(KeyFacts {
        rejected,
        accepted,
        pending,
    })
}

/// A new minion at the descriptor ceiling: answered "full" (a failover minion moves on, a
/// single-master one comes back after its retry wait) before the key store is read, so the
/// descriptors left serve the minions already signed in.
fn at_fd_ceiling(shared: &Shared, req: &AuthRequest) -> Result<Option<Value>, AuthSideError> {
    let id = &req.id;
    if shared
        .connected
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(id)
    {
        return Ok(None);
    }
    let Err(at) = shared.fd_ceiling.admit() else {
        return Ok(None);
    };
    shared.metrics.signin("full");
    shared.metrics.limit_hit("max_open_files");
    if shared.log_limit.allow("fd-ceiling") {
        tracing::warn!(
            "Too many open files: {} of the max open files soft setting ({}, max_open_files) \
             are in use and {} are kept for the key store, job cache and files. Rejecting \
             connection from id {id} as full; the minions already connected are still served.",
            at.open,
            at.soft,
            at.reserve
        );
    }
    shared.events.fire_auth(id, "full", false, &req.pub_key);
    Ok(Some(fail_reply(shared, req, AuthRet::Full)?))
}

fn auth_reply(shared: &Shared, req: &AuthRequest) -> Result<Value, AuthSideError> {
    let cfg = &shared.cfg;
    if !auth_master::valid_id(&req.id) {
        tracing::info!("Authentication request from invalid id {:?}", req.id);
        shared.metrics.signin("refused");
        return Ok(fail_reply(shared, req, AuthRet::Rejected)?);
    }
    // The presented key is parsed before anything is written: an unusable or weak key
    // (under 2048 bits, which Salt itself never generates) is refused and leaves no trace.
    let minion_pub = match PublicKey::from_pem(req.pub_key.as_bytes()) {
        Ok(k) if k.bits() >= salt_pki::MIN_KEY_BITS => k,
        Ok(k) => {
            if shared.log_limit.allow("weak-key") {
                tracing::warn!(
                    "Authentication request from {} refused: {}-bit key (minimum {})",
                    req.id,
                    k.bits(),
                    salt_pki::MIN_KEY_BITS
                );
            }
            shared.metrics.signin("refused");
            return Ok(fail_reply(shared, req, AuthRet::Rejected)?);
        }
        Err(e) => {
            if shared.log_limit.allow("bad-key") {
                tracing::warn!("Public key of {} cannot be loaded: {e}", req.id);
            }
            shared.metrics.signin("refused");
            return Ok(fail_reply(shared, req, AuthRet::Rejected)?);
        }
    };
    let full = match cfg.max_minions {
        Some(max) if max > 0 => {
            let connected = shared.connected.lock().unwrap_or_else(|e| e.into_inner());
            connected.len() >= max as usize && !connected.contains(&req.id)
        }
        _ => false,
    };
    if !full && let Some(reply) = at_fd_ceiling(shared, req)? {
        return Ok(reply);
    }
    let facts = key_facts(shared, &req.id)?;
    let new_or_pending = !facts.rejected && facts.accepted.is_none();
    let auto_reject =
        new_or_pending && shared.matches_list_file(cfg.autoreject_file.as_deref(), &req.id);
    let mut auto_sign = cfg.auto_accept
        || (new_or_pending && shared.matches_list_file(cfg.autosign_file.as_deref(), &req.id));
    if !auto_sign && new_or_pending && !full && !auto_reject {
        auto_sign = shared
            .store
            .consume_autosign_stub(&req.id, cfg.autosign_timeout)?;
    }
    let policy = Policy {
        open_mode: cfg.open_mode,
        auto_sign,
        auto_reject,
        full,
    };
    let decision = auth_master::decide(req, &facts, &policy);
    shared.metrics.signin(match decision.act {
        Act::Accept => "accepted",
        Act::Pend => "pending",
        Act::Reject => "rejected",
        Act::Denied => "denied",
        Act::Full => "full",
        Act::Invalid => "refused",
    });
    let id = &req.id;
    let write = match decision.action {
        KeyAction::None => None,
        KeyAction::WritePending => Some(KeyState::Pending),
        KeyAction::WriteDenied => Some(KeyState::Denied),
        KeyAction::WriteRejected | KeyAction::MovePendingToRejected => Some(KeyState::Rejected),
        KeyAction::WriteAccepted | KeyAction::PendingToAccepted => Some(KeyState::Accepted),
    };
    if let Some(state) = write {
        match shared.key_changes().put(state, id, &req.pub_key) {
            Ok(()) => {}
            // A group whose database is down: a pending or denied record waits for the
            // minion's next sign-in; granting access does not.
            Err(e @ salt_keystore::KeyStoreError::Backend { .. })
                if matches!(state, KeyState::Pending | KeyState::Denied) =>
            {
                if shared.log_limit.allow("group-write") {
                    tracing::warn!("{state} key of {id} not recorded: {e}");
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    match (decision.act, decision.outcome) {
        (Act::Denied, _) => tracing::error!(
            "Authentication attempt from {id} failed, the public keys did not match. This may \
             be an attempt to compromise the Salt cluster."
        ),
        (Act::Pend, _) if decision.action == KeyAction::WritePending => {
            tracing::info!("New public key for {id} placed in pending");
        }
        (Act::Pend, _) => tracing::info!(
            "Authentication failed from host {id}, the key is in pending and needs to be accepted with salt-key -a {id}"
        ),
        (Act::Reject, _) => {
            tracing::warn!("Public key rejected for {id}: key is in the rejected keys")
        }
        (Act::Full, _) => {
            shared.metrics.limit_hit("max_minions");
            tracing::info!(
                "Too many minions connected (max_minions={}). Rejecting connection from id {id}",
                cfg.max_minions.unwrap_or(0)
            )
        }
        (Act::Invalid, _) => {
            tracing::warn!("Authentication request from {id} refused: invalid key state")
        }
        (Act::Accept, _) => {}
    }
    if let Err(ret) = decision.outcome {
        // Salt 3008's `act` and `result` for each refusal; an invalid id fires nothing, a key
        // state Salt has no branch for is its "Unaccounted for authentication failure".
        let (act, result) = match decision.act {
            Act::Pend => (Some("pend"), true),
            Act::Reject => (Some("reject"), false),
            Act::Denied => (Some("denied"), false),
            Act::Full => (Some("full"), false),
            Act::Invalid if !auth_master::valid_id(id) => (None, false),
            Act::Accept | Act::Invalid => (Some("error"), false),
        };
        if let Some(act) = act {
            shared.events.fire_auth(id, act, result, &req.pub_key);
        }
        return Ok(fail_reply(shared, req, ret)?);
    }
    let session = shared.sessions.get_or_create(id)?;
    let aes = shared.aes.current();
    let pub_sig = shared.keys.pub_sig(auth_master::sig_algo_of(req))?;
    let reply = auth_master::accept_reply(
        &shared.keys.key,
        req,
        &minion_pub,
        &AcceptKeys {
            pub_key: &shared.keys.pub_clean,
            publish_port: cfg.publish_port,
            pub_sig: pub_sig.as_deref().map(Vec::as_slice),
            aes_key: aes.crypticle.key_string(),
            aes_sig: &aes.sig,
            session_key: session.key_string(),
        },
    )?;
    shared
        .connected
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id.clone());
    shared.jobs.store().seen(id);
    tracing::info!("Authentication accepted from {id}");
    shared.events.fire_auth(id, "accept", true, &req.pub_key);
    Ok(reply)
}
