//! The minion side of Salt's `_auth` handshake, sans-IO.
//!
//! [`AuthClient`] builds the clear `_auth` request (salt-wire-protocol.md §3.3) and checks
//! the master's reply in exactly the order `salt.crypt.AsyncAuth.handle_signin_response`
//! does (§3.6):
//!
//! 1. the reply is a map with `load` (an unsigned `bad enc algo` / `bad sig algo` ends here);
//! 2. the inner load decodes;
//! 3. if it carries `pub_key`: *verify_master* (cached key comparison / trust on first use /
//!    `master_sign.pub` signature, `check_auth_deps` both ways, `always_verify_signature`,
//!    AES key decryption, X9.31 `sig` over the key's SHA-256, token echo), then the
//!    session key decryption;
//! 4. the outer PKCS#1 signature with the (possibly just learnt) master key;
//! 5. the nonce;
//! 6. `ret` (pending / rejected / full);
//! 7. `master_finger`.
//!
//! No I/O happens here: the cached `minion_master.pub` text and the `master_sign.pub`
//! key are given to [`AuthClient::new`], and writing `minion_master.pub` comes back as an
//! [`AuthAction`] in the [`Credentials`] (the driver performs it). One deliberate
//! difference from Python: Salt writes `minion_master.pub` during step 3, before the
//! outer signature and nonce are checked; here the write is only requested for a reply
//! that passed every check, so a forged reply can never pin a key.

use rmpv::Value;
use salt_pki::Zeroizing;
use salt_pki::{Crypticle, EncAlgo, HashType, PrivateKey, PublicKey, SigAlgo};

/// Settings that shape the handshake (Salt minion option names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSettings {
    /// `id`.
    pub id: String,
    /// `encryption_algorithm` (`OAEP-SHA1` default).
    pub enc_algo: EncAlgo,
    /// `signing_algorithm` (`PKCS1v15-SHA1` default).
    pub sig_algo: SigAlgo,
    /// `verify_master_pubkey_sign`: trust any master whose key `master_sign.pub` signed.
    pub verify_master_pubkey_sign: bool,
    /// `always_verify_signature`: check `pub_sig` even when the key did not change.
    pub always_verify_signature: bool,
    /// `open_mode`: skip the cached-key comparison.
    pub open_mode: bool,
    /// `master_finger`: expected fingerprint of the master key.
    pub master_finger: Option<String>,
    /// `hash_type` for `master_finger`.
    pub hash_type: HashType,
    /// `rejected_retry`: keep retrying when rejected instead of exiting.
    pub rejected_retry: bool,
    /// `master_sign_key_name` (file name stem of the verification key, for messages).
    pub master_sign_key_name: String,
}

impl AuthSettings {
    /// Salt's defaults for minion `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            enc_algo: EncAlgo::OaepSha1,
            sig_algo: SigAlgo::Pkcs1v15Sha1,
            verify_master_pubkey_sign: false,
            always_verify_signature: false,
            open_mode: false,
            master_finger: None,
            hash_type: HashType::Sha256,
            rejected_retry: false,
            master_sign_key_name: "master_sign".to_owned(),
        }
    }
}

/// Why a sign-in failed. Each variant names the check of §3.6 that refused the reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The reply is not a map with a `load` (step 1).
    #[error("sign-in reply is not a map with a load")]
    Malformed,
    /// The master cannot use our `encryption_algorithm`.
    #[error("the master does not support the minion's encryption algorithm")]
    BadEncAlgo,
    /// The master cannot sign with our `signing_algorithm`.
    #[error("the master does not support the minion's signing algorithm")]
    BadSigAlgo,
    /// The signed inner load did not decode to a map, or the reply lacks `sig` (step 2).
    #[error("sign-in reply load does not decode")]
    InnerDecode,
    /// `pub_key` in the reply is not a usable public key.
    #[error("the master's public key in the reply is invalid")]
    MasterKeyInvalid,
    /// The master sent `pub_sig` but `verify_master_pubkey_sign` is off, or the reverse.
    #[error(
        "master public-key signing and minion verification disagree (master signs: {master_signs}, minion verifies: {minion_verifies})"
    )]
    AuthDeps {
        /// The reply carried `pub_sig`.
        master_signs: bool,
        /// `verify_master_pubkey_sign` is on.
        minion_verifies: bool,
    },
    /// The master key differs from the cached `minion_master.pub` and no signature vouches for it.
    #[error("the master key has changed, the salt master could have been subverted")]
    MasterKeyChanged,
    /// `verify_master_pubkey_sign` is on but `master_sign.pub` is missing.
    #[error("verification public key {0}.pub does not exist")]
    SignKeyMissing(String),
    /// `pub_sig` does not verify with `master_sign.pub`.
    #[error("signature of the master public key did not verify")]
    PubSigInvalid,
    /// `aes` is missing or does not decrypt with the minion key.
    #[error("the master AES key did not decrypt")]
    AesDecrypt,
    /// The reply has no X9.31 `sig` over the AES key.
    #[error("the master AES key is not signed")]
    AesSigMissing,
    /// The X9.31 `sig` does not recover SHA-256(aes key) with the master key.
    #[error("the master AES key signature does not match")]
    AesSigMismatch,
    /// We sent a token and the master did not echo it back correctly.
    #[error("the master failed to decrypt the random minion token")]
    TokenMismatch,
    /// `session` is missing or does not decrypt.
    #[error("the session key did not decrypt")]
    SessionDecrypt,
    /// The outer PKCS#1 signature over `load` is invalid (step 4).
    #[error("the payload signature did not validate")]
    Signature,
    /// The reply nonce is not the request nonce (step 5).
    #[error("the payload nonce did not validate")]
    Nonce,
    /// The master rejected this minion's key (`ret: False`) and `rejected_retry` is off.
    #[error("the Salt Master has rejected this minion's public key")]
    Rejected,
    /// The master has `max_minions` reached (`ret: "full"`).
    #[error("the Salt Master is full")]
    Full,
    /// `master_finger` does not match the master key (Salt exits 42).
    #[error("master fingerprint mismatch: expected {expected}, got {actual}")]
    FingerMismatch {
        /// Configured fingerprint.
        expected: String,
        /// Fingerprint of the master key.
        actual: String,
    },
    /// `publish_port` missing or not a port number.
    #[error("the sign-in reply has no valid publish_port")]
    PublishPort,
    /// A local crypto operation failed while building the request.
    #[error("local key operation failed")]
    LocalKey,
}

impl AuthError {
    /// True for the failures Salt reports as "The Salt Master server's public key did not
    /// authenticate!" (everything `verify_master` refuses).
    pub fn is_master_key_failure(&self) -> bool {
        matches!(
            self,
            Self::MasterKeyInvalid
                | Self::AuthDeps { .. }
                | Self::MasterKeyChanged
                | Self::SignKeyMissing(_)
                | Self::PubSigInvalid
                | Self::AesDecrypt
                | Self::AesSigMissing
                | Self::AesSigMismatch
                | Self::TokenMismatch
        )
    }
}

/// A file write the driver must perform after a successful sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthAction {
    /// Write `minion_master.pub` (in `pki_dir`) with this text (clean_key form).
    WriteMasterPub(String),
}

/// Log-worthy events of a handshake, in order, for the driver to report at Salt's levels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthNote {
    /// `pub_sig` verified with `master_sign.pub` (Salt: debug).
    PubSigVerified,
    /// The signed master key was accepted (Salt: info "Received signed and verified ...").
    SignedPubkeyReceived,
    /// The AES key is being decrypted (Salt: debug).
    DecryptingAes,
}

/// Keys and port learnt from an accepted sign-in.
#[derive(Clone)]
pub struct Credentials {
    /// The master-wide publish AES key.
    pub aes: Crypticle,
    /// The per-minion session key (protocol v3 requests).
    pub session: Crypticle,
    /// `publish_port` from the reply.
    pub publish_port: u16,
    /// The master's public key (for publish and pillar signatures).
    pub master_pub: PublicKey,
    /// Files to write.
    pub actions: Vec<AuthAction>,
    /// What happened, for logging.
    pub notes: Vec<AuthNote>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("publish_port", &self.publish_port)
            .field("actions", &self.actions)
            .finish_non_exhaustive()
    }
}

/// The outcome of a sign-in reply that passed the checks.
#[derive(Debug, Clone)]
pub enum AuthOutcome {
    /// Signed in.
    Accepted(Box<Credentials>),
    /// Key pending on the master (or rejected with `rejected_retry`): wait and retry.
    Retry,
}

/// What the client must remember between request and reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingAuth {
    nonce: String,
    had_token: bool,
}

impl PendingAuth {
    /// The request nonce.
    pub fn nonce(&self) -> &str {
        &self.nonce
    }
}

/// Minion-side sign-in state: its key, its token and what it knows of the master.
pub struct AuthClient {
    settings: AuthSettings,
    key: PrivateKey,
    pub_text: String,
    token: Zeroizing<String>,
    cached_master_pub: Option<String>,
    sign_pub: Option<PublicKey>,
}

impl std::fmt::Debug for AuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthClient")
            .field("id", &self.settings.id)
            .field("has_cached_master_pub", &self.cached_master_pub.is_some())
            .finish_non_exhaustive()
    }
}

fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Map(m) => m
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

/// Bytes of a str-family or bin value (Py sends binary blobs with the str family).
fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::String(s) => Some(s.as_bytes()),
        Value::Binary(b) => Some(b),
        _ => None,
    }
}

fn text(v: &Value) -> Option<String> {
    bytes(v).map(|b| String::from_utf8_lossy(b).into_owned())
}

/// Python truthiness of a `ret` value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Nil => false,
        Value::Boolean(b) => *b,
        Value::Integer(i) => i.as_i64() != Some(0) && i.as_u64() != Some(0),
        Value::F32(f) => *f != 0.0,
        Value::F64(f) => *f != 0.0,
        Value::String(s) => !s.as_bytes().is_empty(),
        Value::Binary(b) => !b.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Map(m) => !m.is_empty(),
        Value::Ext(..) => true,
    }
}

impl AuthClient {
    /// Create a client with a fresh random token (Salt's per-process `self.token`).
    ///
    /// `cached_master_pub` is the text of `minion_master.pub` if it exists;
    /// `sign_pub` is `master_sign.pub` if it exists.
    pub fn new(
        settings: AuthSettings,
        key: PrivateKey,
        cached_master_pub: Option<String>,
        sign_pub: Option<PublicKey>,
    ) -> Self {
        let token = salt_pki::generate_key_string();
        Self::with_token(settings, key, cached_master_pub, sign_pub, token)
    }

    /// As [`AuthClient::new`] with a given token (tests).
    pub fn with_token(
        settings: AuthSettings,
        key: PrivateKey,
        cached_master_pub: Option<String>,
        sign_pub: Option<PublicKey>,
        token: Zeroizing<String>,
    ) -> Self {
        let pub_text = salt_pki::clean_key(&key.public_key().to_pem());
        Self {
            settings,
            key,
            pub_text,
            token,
            cached_master_pub,
            sign_pub,
        }
    }

    /// The settings in use.
    pub fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// The cached master key text (`minion_master.pub`), as this client knows it.
    pub fn cached_master_pub(&self) -> Option<&str> {
        self.cached_master_pub.as_deref()
    }

    /// Build the clear `_auth` request envelope `{enc, load, version: 3}` for `nonce`
    /// (32 lowercase hex chars, uuid4 in Salt).
    pub fn build_request(&self, nonce: &str) -> (Value, PendingAuth) {
        let s = &self.settings;
        let mut load: Vec<(Value, Value)> = vec![
            ("cmd".into(), "_auth".into()),
            ("id".into(), s.id.as_str().into()),
            ("nonce".into(), nonce.into()),
            ("enc_algo".into(), s.enc_algo.as_str().into()),
            ("sig_algo".into(), s.sig_algo.as_str().into()),
        ];
        // Salt: token only when minion_master.pub exists and encrypting to it works.
        let token = self
            .cached_master_pub
            .as_deref()
            .and_then(|pem| PublicKey::from_pem(pem.as_bytes()).ok())
            .and_then(|mpub| mpub.encrypt_oaep(s.enc_algo, self.token.as_bytes()).ok());
        let had_token = token.is_some();
        if let Some(t) = token {
            load.push(("token".into(), Value::Binary(t)));
        }
        load.push(("pub".into(), self.pub_text.as_str().into()));
        let env = Value::Map(vec![
            ("enc".into(), "clear".into()),
            ("load".into(), Value::Map(load)),
            ("version".into(), 3.into()),
        ]);
        (
            env,
            PendingAuth {
                nonce: nonce.to_owned(),
                had_token,
            },
        )
    }

    /// Check a decoded reply. On success the client's idea of the cached master key is
    /// updated (the driver must perform the returned [`AuthAction`]s).
    pub fn handle_reply(
        &mut self,
        pending: &PendingAuth,
        reply: &Value,
    ) -> Result<AuthOutcome, AuthError> {
        // 1. shape; unsigned algorithm refusals.
        let load = get(reply, "load").ok_or(AuthError::Malformed)?;
        if let Some(ret) = get(load, "ret") {
            match ret.as_str() {
                Some("bad enc algo") => return Err(AuthError::BadEncAlgo),
                Some("bad sig algo") => return Err(AuthError::BadSigAlgo),
                _ => {}
            }
        }
        // 2. inner load + outer signature bytes.
        let signed = bytes(load).ok_or(AuthError::InnerDecode)?;
        let outer_sig = get(reply, "sig")
            .and_then(bytes)
            .ok_or(AuthError::InnerDecode)?;
        let inner = crate::decode(signed).map_err(|_| AuthError::InnerDecode)?;
        if !inner.is_map() {
            return Err(AuthError::InnerDecode);
        }

        let mut notes = Vec::new();
        // The effective minion_master.pub after verify_master (Salt writes the file there).
        let mut mpub = self.cached_master_pub.clone();
        let mut keys: Option<(Zeroizing<String>, Crypticle)> = None;

        // 3. verify_master + session.
        if let Some(pk) = get(&inner, "pub_key") {
            let remote_raw = text(pk).ok_or(AuthError::MasterKeyInvalid)?;
            let aes = self.verify_master(
                &inner,
                &remote_raw,
                pending.had_token,
                &mut mpub,
                &mut notes,
            )?;
            let session_ct = get(&inner, "session")
                .and_then(bytes)
                .ok_or(AuthError::SessionDecrypt)?;
            let session_str = self
                .key
                .decrypt_oaep(self.settings.enc_algo, session_ct)
                .map_err(|_| AuthError::SessionDecrypt)?;
            let session = std::str::from_utf8(&session_str)
                .ok()
                .and_then(|s| Crypticle::from_key_string(s).ok())
                .ok_or(AuthError::SessionDecrypt)?;
            keys = Some((aes, session));
        }

        // 4. outer signature with the (effective) cached master key.
        let master_pub = match mpub.as_deref() {
            Some(pem) => {
                let k = PublicKey::from_pem(pem.as_bytes()).map_err(|_| AuthError::Signature)?;
                k.verify(self.settings.sig_algo, signed, outer_sig)
                    .map_err(|_| AuthError::Signature)?;
                Some(k)
            }
            None => None,
        };

        // 5. nonce.
        if get(&inner, "nonce").and_then(Value::as_str) != Some(pending.nonce.as_str()) {
            return Err(AuthError::Nonce);
        }

        // 6. ret.
        if let Some(ret) = get(&inner, "ret") {
            if !truthy(ret) {
                return if self.settings.rejected_retry {
                    Ok(AuthOutcome::Retry)
                } else {
                    Err(AuthError::Rejected)
                };
            }
            if ret.as_str() == Some("full") {
                return Err(AuthError::Full);
            }
            return Ok(AuthOutcome::Retry);
        }

        // 7. master_finger.
        if let (Some(expected), Some(pem)) = (&self.settings.master_finger, mpub.as_deref()) {
            let actual = salt_pki::pem_finger(pem.as_bytes(), self.settings.hash_type);
            if &actual != expected {
                return Err(AuthError::FingerMismatch {
                    expected: expected.clone(),
                    actual,
                });
            }
        }

        let (Some((aes_str, session)), Some(master_pub)) = (keys, master_pub) else {
            // A success reply always has pub_key; without it there are no keys.
            return Err(AuthError::AesDecrypt);
        };
        let aes = Crypticle::from_key_string(&aes_str).map_err(|_| AuthError::AesDecrypt)?;
        let publish_port = get(&inner, "publish_port")
            .and_then(Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
            .ok_or(AuthError::PublishPort)?;
        let mut actions = Vec::new();
        if mpub != self.cached_master_pub {
            if let Some(m) = &mpub {
                actions.push(AuthAction::WriteMasterPub(m.clone()));
            }
            self.cached_master_pub = mpub;
        }
        Ok(AuthOutcome::Accepted(Box::new(Credentials {
            aes,
            session,
            publish_port,
            master_pub,
            actions,
            notes,
        })))
    }

    /// Salt's `verify_master`: returns the AES key string.
    fn verify_master(
        &self,
        inner: &Value,
        remote_raw: &str,
        had_token: bool,
        mpub: &mut Option<String>,
        notes: &mut Vec<AuthNote>,
    ) -> Result<Zeroizing<String>, AuthError> {
        let s = &self.settings;
        let remote = salt_pki::clean_key(remote_raw);
        match mpub.clone() {
            Some(local_raw) if had_token && !s.open_mode => {
                let local = salt_pki::clean_key(&local_raw);
                if remote != local {
                    self.check_auth_deps(inner)?;
                    if s.verify_master_pubkey_sign {
                        self.verify_signing_master(inner, remote_raw, notes)?;
                        *mpub = Some(remote_raw.to_owned());
                        self.extract_aes(inner, false, mpub.as_deref(), notes)
                    } else {
                        Err(AuthError::MasterKeyChanged)
                    }
                } else {
                    self.check_auth_deps(inner)?;
                    if s.always_verify_signature {
                        // Salt rewrites the file with the same key here; nothing changes.
                        self.verify_signing_master(inner, remote_raw, notes)?;
                    }
                    self.extract_aes(inner, true, mpub.as_deref(), notes)
                }
            }
            existing => {
                self.check_auth_deps(inner)?;
                if s.verify_master_pubkey_sign {
                    self.verify_signing_master(inner, remote_raw, notes)?;
                    *mpub = Some(remote_raw.to_owned());
                } else if existing.is_none() {
                    *mpub = Some(remote);
                }
                self.extract_aes(inner, false, mpub.as_deref(), notes)
            }
        }
    }

    fn check_auth_deps(&self, inner: &Value) -> Result<(), AuthError> {
        let master_signs = get(inner, "pub_sig").is_some();
        let minion_verifies = self.settings.verify_master_pubkey_sign;
        if master_signs == minion_verifies {
            Ok(())
        } else {
            Err(AuthError::AuthDeps {
                master_signs,
                minion_verifies,
            })
        }
    }

    fn verify_signing_master(
        &self,
        inner: &Value,
        remote_raw: &str,
        notes: &mut Vec<AuthNote>,
    ) -> Result<(), AuthError> {
        let sign_pub = self
            .sign_pub
            .as_ref()
            .ok_or_else(|| AuthError::SignKeyMissing(self.settings.master_sign_key_name.clone()))?;
        let pub_sig = get(inner, "pub_sig")
            .and_then(bytes)
            .ok_or(AuthError::PubSigInvalid)?;
        salt_pki::pubsig::verify_master_pubkey(
            sign_pub,
            remote_raw.as_bytes(),
            pub_sig,
            self.settings.sig_algo,
        )
        .map_err(|_| AuthError::PubSigInvalid)?;
        notes.push(AuthNote::PubSigVerified);
        notes.push(AuthNote::SignedPubkeyReceived);
        Ok(())
    }

    /// Salt's `extract_aes` / `decrypt_aes`.
    fn extract_aes(
        &self,
        inner: &Value,
        check_token: bool,
        mpub: Option<&str>,
        notes: &mut Vec<AuthNote>,
    ) -> Result<Zeroizing<String>, AuthError> {
        notes.push(AuthNote::DecryptingAes);
        let alg = self.settings.enc_algo;
        let aes_ct = get(inner, "aes")
            .and_then(bytes)
            .ok_or(AuthError::AesDecrypt)?;
        let key_bytes = self
            .key
            .decrypt_oaep(alg, aes_ct)
            .map_err(|_| AuthError::AesDecrypt)?;
        let sig = get(inner, "sig")
            .and_then(bytes)
            .ok_or(AuthError::AesSigMissing)?;
        if let Some(pem) = mpub {
            let mkey =
                PublicKey::from_pem(pem.as_bytes()).map_err(|_| AuthError::MasterKeyInvalid)?;
            let digest = sha256_hex(&key_bytes);
            let recovered = mkey
                .x931_recover(sig)
                .map_err(|_| AuthError::AesSigMismatch)?;
            if recovered != digest.as_bytes() {
                return Err(AuthError::AesSigMismatch);
            }
        }
        let key_str = Zeroizing::new(
            String::from_utf8(key_bytes.to_vec()).map_err(|_| AuthError::AesDecrypt)?,
        );
        if check_token {
            let tok_ct = get(inner, "token")
                .and_then(bytes)
                .ok_or(AuthError::TokenMismatch)?;
            let tok = self
                .key
                .decrypt_oaep(alg, tok_ct)
                .map_err(|_| AuthError::TokenMismatch)?;
            if tok.as_slice() != self.token.as_bytes() {
                return Err(AuthError::TokenMismatch);
            }
        }
        Ok(key_str)
    }
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(HashType::Sha256.digest(data))
}
