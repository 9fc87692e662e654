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
//! No I/O and no cryptography happen here: every RSA operation goes through the
//! [`salt_pki::KeyPairOps`] the client is given (the minion's key pair; the same trait the
//! master's half in [`crate::auth_master`] takes), the messages are read and written by
//! [`crate::msg`]'s `AuthRequest`, `AuthResponse` and `AuthReply`. The cached
//! `minion_master.pub` text and the `master_sign.pub` key are given to [`AuthClient::new`], and writing `minion_master.pub` comes back as an
//! [`AuthAction`] in the [`Credentials`] (the driver performs it). One deliberate
//! difference from Python: Salt writes `minion_master.pub` during step 3, before the
//! outer signature and nonce are checked; here the write is only requested for a reply
//! that passed every check, so a forged reply can never pin a key.

use salt_pki::{Crypticle, EncAlgo, HashType, PublicKey, SigAlgo};

mod client;

pub use client::{AuthClient, PendingAuth};

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
