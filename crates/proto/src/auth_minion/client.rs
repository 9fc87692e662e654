//! [`AuthClient`]: the request and the ordered checks of the master's reply.

use std::sync::Arc;

use rmpv::Value;
use salt_pki::{Crypticle, KeyPairOps, PublicKey, Zeroizing};

use super::{AuthAction, AuthError, AuthNote, AuthOutcome, AuthSettings, Credentials};
use crate::msg::{
    AuthReply, AuthRequest, AuthResponse, AuthRet, AuthSuccess, InvalidMessage, RequestEnvelope,
};

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

/// Minion-side sign-in state: its key pair, its token and what it knows of the master.
pub struct AuthClient {
    settings: AuthSettings,
    keys: Arc<dyn KeyPairOps>,
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

/// The reading error of a signed inner reply, as the check of §3.6 it stands for.
fn success_field_error(e: &InvalidMessage) -> AuthError {
    let field = match e {
        InvalidMessage::MissingField { field, .. }
        | InvalidMessage::WrongType { field, .. }
        | InvalidMessage::BadValue { field, .. } => *field,
        _ => "",
    };
    match field {
        "pub_key" => AuthError::MasterKeyInvalid,
        "aes" | "pub_sig" | "token" | "sig" => AuthError::AesDecrypt,
        "session" => AuthError::SessionDecrypt,
        "publish_port" => AuthError::PublishPort,
        "nonce" => AuthError::Nonce,
        _ => AuthError::InnerDecode,
    }
}

impl AuthClient {
    /// Create a client with a fresh random token (Salt's per-process `self.token`).
    ///
    /// `keys` is the minion's key pair (a [`salt_pki::PrivateKey`] in the daemons);
    /// `cached_master_pub` is the text of `minion_master.pub` if it exists;
    /// `sign_pub` is `master_sign.pub` if it exists.
    pub fn new(
        settings: AuthSettings,
        keys: impl KeyPairOps + 'static,
        cached_master_pub: Option<String>,
        sign_pub: Option<PublicKey>,
    ) -> Self {
        let token = salt_pki::generate_key_string();
        Self::with_token(settings, keys, cached_master_pub, sign_pub, token)
    }

    /// As [`AuthClient::new`] with a given token (tests).
    pub fn with_token(
        settings: AuthSettings,
        keys: impl KeyPairOps + 'static,
        cached_master_pub: Option<String>,
        sign_pub: Option<PublicKey>,
        token: Zeroizing<String>,
    ) -> Self {
        let pub_text = keys.public_text();
        Self {
            settings,
            keys: Arc::new(keys),
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
        // Salt: token only when minion_master.pub exists and encrypting to it works.
        let token = self
            .cached_master_pub
            .as_deref()
            .and_then(|pem| self.keys.peer_key(pem).ok())
            .and_then(|mpub| {
                self.keys
                    .encrypt_to(&mpub, s.enc_algo, self.token.as_bytes())
                    .ok()
            });
        let had_token = token.is_some();
        let req = AuthRequest {
            enc_algo: s.enc_algo.as_str().to_owned(),
            sig_algo: s.sig_algo.as_str().to_owned(),
            token,
            ..AuthRequest::new(&s.id, nonce, &self.pub_text)
        };
        (
            RequestEnvelope::Clear(req.to_envelope()).to_value(),
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
        let signed = match AuthResponse::from_value(reply) {
            Ok(AuthResponse::Signed(s)) => s,
            Ok(AuthResponse::BadEncAlgo) => return Err(AuthError::BadEncAlgo),
            Ok(AuthResponse::BadSigAlgo) => return Err(AuthError::BadSigAlgo),
            Err(
                InvalidMessage::NotAMap { .. } | InvalidMessage::MissingField { field: "load", .. },
            ) => return Err(AuthError::Malformed),
            Err(_) => return Err(AuthError::InnerDecode),
        };
        // 2. inner load.
        let inner = AuthReply::from_bytes(&signed.load).map_err(|e| match e {
            InvalidMessage::Decode { .. } | InvalidMessage::NotAMap { .. } => {
                AuthError::InnerDecode
            }
            other => success_field_error(&other),
        })?;

        let mut notes = Vec::new();
        // The effective minion_master.pub after verify_master (Salt writes the file there).
        let mut mpub = self.cached_master_pub.clone();
        let mut keys: Option<(Zeroizing<String>, Crypticle)> = None;

        // 3. verify_master + session.
        if let AuthReply::Accepted(ok) = &inner {
            let aes = self.verify_master(ok, pending.had_token, &mut mpub, &mut notes)?;
            let session_str = self
                .keys
                .decrypt(self.settings.enc_algo, &ok.session)
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
                let k = self.keys.peer_key(pem).map_err(|_| AuthError::Signature)?;
                self.keys
                    .verify_from(&k, self.settings.sig_algo, &signed.load, &signed.sig)
                    .map_err(|_| AuthError::Signature)?;
                Some(k)
            }
            None => None,
        };

        // 5. nonce.
        if inner.nonce() != Some(pending.nonce.as_str()) {
            return Err(AuthError::Nonce);
        }

        // 6. ret.
        let ok = match inner {
            AuthReply::Failed(f) => {
                return match f.ret {
                    AuthRet::Rejected if self.settings.rejected_retry => Ok(AuthOutcome::Retry),
                    AuthRet::Rejected => Err(AuthError::Rejected),
                    AuthRet::Full => Err(AuthError::Full),
                    AuthRet::Pending => Ok(AuthOutcome::Retry),
                };
            }
            AuthReply::Accepted(ok) => ok,
        };

        // 7. master_finger.
        if let (Some(expected), Some(pem)) = (&self.settings.master_finger, mpub.as_deref()) {
            let actual = self.keys.finger(pem, self.settings.hash_type);
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
            publish_port: ok.publish_port,
            master_pub,
            actions,
            notes,
        })))
    }

    /// Salt's `verify_master`: returns the AES key string.
    fn verify_master(
        &self,
        ok: &AuthSuccess,
        had_token: bool,
        mpub: &mut Option<String>,
        notes: &mut Vec<AuthNote>,
    ) -> Result<Zeroizing<String>, AuthError> {
        let s = &self.settings;
        let remote_raw = ok.pub_key.as_str();
        let remote = salt_pki::clean_key(remote_raw);
        match mpub.clone() {
            Some(local_raw) if had_token && !s.open_mode => {
                let local = salt_pki::clean_key(&local_raw);
                self.check_auth_deps(ok)?;
                if remote != local {
                    if s.verify_master_pubkey_sign {
                        self.verify_signing_master(ok, notes)?;
                        *mpub = Some(remote_raw.to_owned());
                        self.extract_aes(ok, false, mpub.as_deref(), notes)
                    } else {
                        Err(AuthError::MasterKeyChanged)
                    }
                } else {
                    if s.always_verify_signature {
                        // Salt rewrites the file with the same key here; nothing changes.
                        self.verify_signing_master(ok, notes)?;
                    }
                    self.extract_aes(ok, true, mpub.as_deref(), notes)
                }
            }
            existing => {
                self.check_auth_deps(ok)?;
                if s.verify_master_pubkey_sign {
                    self.verify_signing_master(ok, notes)?;
                    *mpub = Some(remote_raw.to_owned());
                } else if existing.is_none() {
                    *mpub = Some(remote);
                }
                self.extract_aes(ok, false, mpub.as_deref(), notes)
            }
        }
    }

    fn check_auth_deps(&self, ok: &AuthSuccess) -> Result<(), AuthError> {
        let master_signs = ok.pub_sig.is_some();
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
        ok: &AuthSuccess,
        notes: &mut Vec<AuthNote>,
    ) -> Result<(), AuthError> {
        let sign_pub = self
            .sign_pub
            .as_ref()
            .ok_or_else(|| AuthError::SignKeyMissing(self.settings.master_sign_key_name.clone()))?;
        let pub_sig = ok.pub_sig.as_deref().ok_or(AuthError::PubSigInvalid)?;
        self.keys
            .verify_pub_sig(
                sign_pub,
                ok.pub_key.as_bytes(),
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
        ok: &AuthSuccess,
        check_token: bool,
        mpub: Option<&str>,
        notes: &mut Vec<AuthNote>,
    ) -> Result<Zeroizing<String>, AuthError> {
        notes.push(AuthNote::DecryptingAes);
        let alg = self.settings.enc_algo;
        let key_bytes = self
            .keys
            .decrypt(alg, &ok.aes)
            .map_err(|_| AuthError::AesDecrypt)?;
        let sig = ok.sig.as_deref().ok_or(AuthError::AesSigMissing)?;
        if let Some(pem) = mpub {
            let mkey = self
                .keys
                .peer_key(pem)
                .map_err(|_| AuthError::MasterKeyInvalid)?;
            self.keys
                .verify_key_sig(&mkey, &key_bytes, sig)
                .map_err(|_| AuthError::AesSigMismatch)?;
        }
        let key_str = Zeroizing::new(
            String::from_utf8(key_bytes.to_vec()).map_err(|_| AuthError::AesDecrypt)?,
        );
        if check_token {
            let tok_ct = ok.token.as_deref().ok_or(AuthError::TokenMismatch)?;
            let tok = self
                .keys
                .decrypt(alg, tok_ct)
                .map_err(|_| AuthError::TokenMismatch)?;
            if tok.as_slice() != self.token.as_bytes() {
                return Err(AuthError::TokenMismatch);
            }
        }
        Ok(key_str)
    }
}
