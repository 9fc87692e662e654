//! The master's `_auth` replies (§3.5): the signed failure and success replies, written by
//! [`crate::msg`]'s types, every RSA operation through the caller's [`KeyPairOps`].

use rmpv::Value;
use salt_pki::{EncAlgo, KeyPairOps, PublicKey, SigAlgo};

use super::{AuthRequest, AuthRequestError, AuthRet};
use crate::msg::{AuthFailure, AuthResponse, AuthSuccess, SignedClearReply};

/// The fields of a successful sign-in reply, in clear: [`accept_reply`] encrypts them.
#[derive(Clone, Copy, Debug)]
pub struct AcceptKeys<'a> {
    /// `clean_key(master.pub)`.
    pub pub_key: &'a str,
    /// `publish_port`.
    pub publish_port: u16,
    /// `pub_sig` (base64 + "\n" for `master_sign_pubkey`, the file text otherwise).
    pub pub_sig: Option<&'a [u8]>,
    /// The publish AES key string (encrypted to the minion as `aes`).
    pub aes_key: &'a str,
    /// X9.31 signature by master.pem over hex(sha256(publish key string)), made once per
    /// key rotation by the caller.
    pub aes_sig: &'a [u8],
    /// The minion's session key string (encrypted to the minion as `session`).
    pub session_key: &'a str,
}

/// The fields of a successful sign-in reply, crypto already done (fuzzing, vectors).
#[derive(Clone, Copy, Debug)]
pub struct AcceptInner<'a> {
    /// `clean_key(master.pub)`.
    pub pub_key: &'a str,
    /// `publish_port`.
    pub publish_port: u16,
    /// `pub_sig` (base64 + "\n" for `master_sign_pubkey`, the file text otherwise).
    pub pub_sig: Option<&'a [u8]>,
    /// The request token re-encrypted to the minion (present iff the request had one
    /// that decrypted).
    pub token: Option<&'a [u8]>,
    /// Publish AES key string, OAEP-encrypted to the minion.
    pub aes: &'a [u8],
    /// Session key string, OAEP-encrypted to the minion.
    pub session: &'a [u8],
    /// X9.31 signature by master.pem over hex(sha256(publish key string)).
    pub sig: &'a [u8],
    /// The request nonce.
    pub nonce: &'a str,
}

/// INNER bytes of a failure reply: `{"ret": ret, "nonce": nonce}` (§3.5).
pub fn fail_inner(nonce: &str, ret: AuthRet) -> Vec<u8> {
    crate::encode(
        &AuthFailure {
            ret,
            nonce: Some(nonce.to_owned()),
        }
        .to_value(),
    )
}

/// INNER bytes of a success reply (§3.5), in Python's key order:
/// `enc, pub_key, publish_port, [pub_sig], [token], aes, session, sig, nonce`.
pub fn accept_inner(f: &AcceptInner<'_>) -> Vec<u8> {
    crate::encode(
        &AuthSuccess {
            pub_key: f.pub_key.to_owned(),
            publish_port: f.publish_port,
            pub_sig: f.pub_sig.map(<[u8]>::to_vec),
            token: f.token.map(<[u8]>::to_vec),
            aes: f.aes.to_vec(),
            session: f.session.to_vec(),
            sig: Some(f.sig.to_vec()),
            nonce: Some(f.nonce.to_owned()),
        }
        .to_value(),
    )
}

/// The signed clear reply `{"enc": "clear", "load": inner, "sig": sig}`.
pub fn signed_reply(inner: Vec<u8>, sig: Vec<u8>) -> Value {
    SignedClearReply { load: inner, sig }.to_value()
}

/// The unsigned replies Salt sends when it cannot use the requested algorithm:
/// `{"enc": "clear", "load": {"ret": "bad enc algo" | "bad sig algo"}}`.
pub fn unsigned_reply(err: &AuthRequestError) -> Option<Value> {
    match err {
        AuthRequestError::BadEncAlgo(_) => Some(AuthResponse::BadEncAlgo.to_value()),
        AuthRequestError::BadSigAlgo(_) => Some(AuthResponse::BadSigAlgo.to_value()),
        _ => None,
    }
}

/// The request's `sig_algo` (validated by [`AuthRequest::from_load`]).
pub fn sig_algo_of(req: &AuthRequest) -> SigAlgo {
    req.sig_algo.parse().unwrap_or(SigAlgo::Pkcs1v15Sha1)
}

/// The request's `enc_algo` (validated by [`AuthRequest::from_load`]).
pub fn enc_algo_of(req: &AuthRequest) -> EncAlgo {
    req.enc_algo.parse().unwrap_or(EncAlgo::OaepSha1)
}

/// The signed refusal / pending / full reply for `req`, signed with `keys`.
///
/// # Errors
/// The signing failure.
pub fn fail_reply(
    keys: &dyn KeyPairOps,
    req: &AuthRequest,
    ret: AuthRet,
) -> Result<Value, salt_pki::Error> {
    let inner = fail_inner(&req.nonce, ret);
    let sig = keys.sign(sig_algo_of(req), &inner)?;
    Ok(signed_reply(inner, sig))
}

/// The signed success reply for `req`: the token echoed (decrypted with `keys`,
/// re-encrypted to `minion_pub`; omitted, as Salt does, when it does not decrypt), the
/// publish and session keys encrypted to `minion_pub`, the whole signed with `keys`.
///
/// # Errors
/// An encryption or signing failure.
pub fn accept_reply(
    keys: &dyn KeyPairOps,
    req: &AuthRequest,
    minion_pub: &PublicKey,
    a: &AcceptKeys<'_>,
) -> Result<Value, salt_pki::Error> {
    let (enc, sig_algo) = (enc_algo_of(req), sig_algo_of(req));
    let token = match &req.token {
        Some(ct) => match keys.decrypt(enc, ct) {
            Ok(plain) => Some(keys.encrypt_to(minion_pub, enc, &plain)?),
            Err(_) => None,
        },
        None => None,
    };
    let aes = keys.encrypt_to(minion_pub, enc, a.aes_key.as_bytes())?;
    let session = keys.encrypt_to(minion_pub, enc, a.session_key.as_bytes())?;
    let inner = accept_inner(&AcceptInner {
        pub_key: a.pub_key,
        publish_port: a.publish_port,
        pub_sig: a.pub_sig,
        token: token.as_deref(),
        aes: &aes,
        session: &session,
        sig: a.aes_sig,
        nonce: &req.nonce,
    });
    let sig = keys.sign(sig_algo, &inner)?;
    Ok(signed_reply(inner, sig))
}
