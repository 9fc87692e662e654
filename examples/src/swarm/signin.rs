//! Sign-in for simulated minions: the request, and two ways to check the reply.
//!
//! * [`Mode::Strict`]: every check a real minion makes, through
//!   [`salt_proto::auth_minion::AuthClient`] (three RSA private operations per sign-in on
//!   the minion side: AES key, session key and, when a token was sent, the token echo).
//! * [`Mode::Lean`] (default): the checks that cost only public-key operations (outer
//!   signature, nonce, `ret`, `pub_sig` once per master key); the publish AES key is
//!   decrypted once per distinct key (recognised by its X9.31 `sig`, which is the same in
//!   every reply until the master rotates) and the session key when it is first needed.
//!   A load generator that spends three private operations per sign-in on the same two
//!   cores as the master would measure itself, not the master.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmpv::Value;
use salt_compat::map_get;
use salt_pki::{Crypticle, EncAlgo, PrivateKey, PublicKey, SigAlgo};
use salt_proto::ValueExt;
use salt_proto::auth_minion::{AuthClient, AuthOutcome, PendingAuth};

/// How thoroughly a sign-in reply is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Public-key checks; private-key work shared or deferred (see the module docs).
    #[default]
    Lean,
    /// Every check, through `AuthClient`.
    Strict,
}

/// A sign-in reply, checked.
#[derive(Debug)]
pub enum Reply {
    /// Signed in.
    Accepted(Box<Accepted>),
    /// Pending key (or other retryable refusal): try again later.
    Retry,
    /// Refused for good (rejected, full, bad signature...).
    Failed(String),
}

/// What a successful sign-in yields.
pub struct Accepted {
    /// Publish AES key.
    pub aes: Crypticle,
    /// The session key, or its ciphertext still to be decrypted (lean mode).
    pub session: SessionKey,
    /// The master's public key.
    pub master_pub: PublicKey,
    /// Its text, for the token of the next sign-in.
    pub master_pub_text: Arc<str>,
}

impl std::fmt::Debug for Accepted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accepted").finish_non_exhaustive()
    }
}

/// The per-minion session key, decrypted now or later.
#[derive(Clone)]
pub enum SessionKey {
    /// Ready to use.
    Ready(Crypticle),
    /// OAEP ciphertext for the minion key.
    Encrypted(Vec<u8>),
}

impl SessionKey {
    /// Decrypt if needed (one RSA private operation).
    pub fn open(&mut self, key: &PrivateKey, enc: EncAlgo) -> Option<Crypticle> {
        match self {
            Self::Ready(c) => Some(c.clone()),
            Self::Encrypted(ct) => {
                let plain = key.decrypt_oaep(enc, ct).ok()?;
                let c = Crypticle::from_key_string(std::str::from_utf8(&plain).ok()?).ok()?;
                *self = Self::Ready(c.clone());
                Some(c)
            }
        }
    }
}

/// Per-minion state of the sign-in.
pub enum Client {
    /// Lean: the cached master key (for the token), our key and token.
    Lean {
        /// `minion_master.pub` as learnt from the first sign-in.
        master_pub: Option<Arc<str>>,
    },
    /// Strict: the full client.
    Strict(Box<AuthClient>),
}

/// The sign-in request in flight.
pub enum Pending {
    /// Lean request.
    Lean {
        /// Nonce sent.
        nonce: String,
    },
    /// Strict request.
    Strict(PendingAuth),
}

/// A master key seen in a reply: parsed, its text, and whether its `pub_sig` verified.
type MasterEntry = (PublicKey, Arc<str>, bool);

/// Caches shared by all minions of a swarm: parsed master keys, verified `pub_sig`s and
/// publish AES keys by their X9.31 signature.
#[derive(Default)]
pub struct Shared {
    masters: Mutex<HashMap<Vec<u8>, MasterEntry>>,
    aes: Mutex<HashMap<Vec<u8>, Crypticle>>,
    /// `master_sign.pub` when the master signs its key (`master_sign_pubkey: True`).
    pub sign_pub: Option<PublicKey>,
    /// Our `encryption_algorithm`.
    pub enc: EncAlgo,
    /// Our `signing_algorithm`.
    pub sig: SigAlgo,
}

impl Shared {
    /// Caches for one swarm.
    pub fn new(sign_pub: Option<PublicKey>) -> Self {
        Self {
            sign_pub,
            ..Self::default()
        }
    }
}

/// Build the clear `_auth` envelope for `id` (what `AuthClient::build_request` sends; in lean
/// mode the token is encrypted to the master key learnt earlier, as the Python minion does).
pub fn build_request(
    client: &Client,
    id: &str,
    key_pub_text: &str,
    token: &str,
    nonce: &str,
    shared: &Shared,
) -> (Vec<u8>, Pending) {
    match client {
        Client::Strict(c) => {
            let (env, p) = c.build_request(nonce);
            (salt_proto::encode(&env), Pending::Strict(p))
        }
        Client::Lean { master_pub } => {
            let mut load: Vec<(Value, Value)> = vec![
                ("cmd".into(), "_auth".into()),
                ("id".into(), id.into()),
                ("nonce".into(), nonce.into()),
                ("enc_algo".into(), shared.enc.as_str().into()),
                ("sig_algo".into(), shared.sig.as_str().into()),
            ];
            if let Some(t) = master_pub
                .as_deref()
                .and_then(|m| PublicKey::from_pem(m.as_bytes()).ok())
                .and_then(|k| k.encrypt_oaep(shared.enc, token.as_bytes()).ok())
            {
                load.push(("token".into(), Value::Binary(t)));
            }
            load.push(("pub".into(), key_pub_text.into()));
            let env = Value::Map(vec![
                ("enc".into(), "clear".into()),
                ("load".into(), Value::Map(load)),
                ("version".into(), 3.into()),
            ]);
            (
                salt_proto::encode(&env),
                Pending::Lean {
                    nonce: nonce.to_owned(),
                },
            )
        }
    }
}

/// The nonce of a sign-in reply (its signed inner load is clear msgpack), to route a reply
/// that arrived on a socket shared by several minions. `None`: not a sign-in reply.
pub fn reply_nonce(reply: &Value) -> Option<String> {
    let load = map_get(reply, "load").and_then(ValueExt::as_bytes)?;
    let inner = salt_proto::decode(load).ok()?;
    map_get(&inner, "nonce")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Check a sign-in reply.
pub fn handle_reply(
    client: &mut Client,
    pending: &Pending,
    key: &PrivateKey,
    reply: &Value,
    shared: &Shared,
) -> Reply {
    match (client, pending) {
        (Client::Strict(c), Pending::Strict(p)) => match c.handle_reply(p, reply) {
            Ok(AuthOutcome::Accepted(cred)) => {
                let text: Arc<str> = c.cached_master_pub().unwrap_or_default().into();
                Reply::Accepted(Box::new(Accepted {
                    aes: cred.aes,
                    session: SessionKey::Ready(cred.session),
                    master_pub: cred.master_pub,
                    master_pub_text: text,
                }))
            }
            Ok(_) => Reply::Retry,
            Err(e) => Reply::Failed(e.to_string()),
        },
        (Client::Lean { master_pub }, Pending::Lean { nonce }) => {
            match lean_reply(nonce, key, reply, shared) {
                Ok(Some(a)) => {
                    *master_pub = Some(a.master_pub_text.clone());
                    Reply::Accepted(Box::new(a))
                }
                Ok(None) => Reply::Retry,
                Err(e) => Reply::Failed(e.to_owned()),
            }
        }
        _ => Reply::Failed("request and client mode differ".to_owned()),
    }
}

fn lean_reply(
    nonce: &str,
    key: &PrivateKey,
    reply: &Value,
    shared: &Shared,
) -> Result<Option<Accepted>, &'static str> {
    let signed = map_get(reply, "load")
        .and_then(ValueExt::as_bytes)
        .ok_or("reply has no load")?;
    let outer_sig = map_get(reply, "sig")
        .and_then(ValueExt::as_bytes)
        .ok_or("reply is not signed")?;
    let inner = salt_proto::decode(signed).map_err(|_| "inner load does not decode")?;
    if map_get(&inner, "nonce").and_then(Value::as_str) != Some(nonce) {
        return Err("nonce mismatch");
    }
    let Some(pk) = map_get(&inner, "pub_key").and_then(ValueExt::as_bytes) else {
        // No keys: pending (truthy ret), rejected or full.
        return match map_get(&inner, "ret") {
            Some(Value::Boolean(false)) | Some(Value::Nil) => Err("rejected"),
            Some(r) if r.as_str() == Some("full") => Err("master full"),
            _ => Ok(None),
        };
    };
    let pub_sig = map_get(&inner, "pub_sig").and_then(ValueExt::as_bytes);
    let (master_pub, text) = {
        let mut cache = shared.masters.lock().unwrap_or_else(|e| e.into_inner());
        let entry = match cache.get(pk) {
            Some(e) => e.clone(),
            None => {
                let k = PublicKey::from_pem(pk).map_err(|_| "master key invalid")?;
                let text: Arc<str> = String::from_utf8_lossy(pk).into_owned().into();
                let e = (k, text, false);
                cache.insert(pk.to_vec(), e.clone());
                e
            }
        };
        // pub_sig: checked once per master key (it is the same in every reply).
        if let Some(sign_pub) = &shared.sign_pub {
            if !entry.2 {
                let ps = pub_sig.ok_or("master did not sign its key")?;
                salt_pki::pubsig::verify_master_pubkey(sign_pub, pk, ps, shared.sig)
                    .map_err(|_| "pub_sig invalid")?;
                if let Some(e) = cache.get_mut(pk) {
                    e.2 = true;
                }
            }
        } else if pub_sig.is_some() {
            return Err("master signs its key but no master_sign.pub was given");
        }
        (entry.0, entry.1)
    };
    master_pub
        .verify(shared.sig, signed, outer_sig)
        .map_err(|_| "outer signature invalid")?;
    let aes_sig = map_get(&inner, "sig")
        .and_then(ValueExt::as_bytes)
        .ok_or("aes key unsigned")?;
    let cached = shared
        .aes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(aes_sig)
        .cloned();
    let aes = match cached {
        Some(c) => c,
        None => {
            let ct = map_get(&inner, "aes")
                .and_then(ValueExt::as_bytes)
                .ok_or("no aes")?;
            let plain = key
                .decrypt_oaep(shared.enc, ct)
                .map_err(|_| "aes does not decrypt")?;
            let digest = hex_sha256(&plain);
            let rec = master_pub
                .x931_recover(aes_sig)
                .map_err(|_| "aes sig invalid")?;
            if rec != digest.as_bytes() {
                return Err("aes sig mismatch");
            }
            let s = std::str::from_utf8(&plain).map_err(|_| "aes not text")?;
            let c = Crypticle::from_key_string(s).map_err(|_| "aes key malformed")?;
            shared
                .aes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(aes_sig.to_vec(), c.clone());
            c
        }
    };
    let session = map_get(&inner, "session")
        .and_then(ValueExt::as_bytes)
        .ok_or("no session key")?
        .to_vec();
    Ok(Some(Accepted {
        aes,
        session: SessionKey::Encrypted(session),
        master_pub,
        master_pub_text: text,
    }))
}

fn hex_sha256(data: &[u8]) -> String {
    let d = salt_pki::HashType::Sha256.digest(data);
    d.iter().map(|b| format!("{b:02x}")).collect()
}
