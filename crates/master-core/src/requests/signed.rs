//! Signed `_return`s (`require_minion_sign_messages`, `drop_messages_signature_fail`), as
//! Salt 3008's `AESFuncs._return` checks them, with its log lines. Only `_return` is checked,
//! as in Salt; a `sig` on any other request is carried and ignored.

use rmpv::Value;
use salt_keystore::KeyState;
use salt_pki::{PublicKey, SigAlgo};
use salt_proto::msg::{LoadSignature, check_load};

use crate::shared::Shared;

/// Whether the `_return` `load` from `id` (its `nonce` and `tok` already removed) may be
/// stored. `false`: refused, and Salt's reply to the minion is `False`. `sig_algo` is the
/// request envelope's (the algorithm the minion signed with), used when the master's own
/// `signing_algorithm` is not set.
pub(super) fn return_admitted(
    shared: &Shared,
    id: &str,
    load: &mut Value,
    sig_algo: SigAlgo,
) -> bool {
    let has_sig = matches!(load, Value::Map(m) if m.iter().any(|(k, _)| k.as_str() == Some("sig")));
    if !has_sig {
        if shared.cfg.require_minion_sign_messages {
            tracing::error!(
                critical = true,
                "_return: Master is requiring minions to sign their messages, but there is no \
                 signature in this payload from {id}."
            );
            return false;
        }
        return true;
    }
    let key = minion_key(shared, id);
    let alg = shared.cfg.signing_algorithm.unwrap_or(sig_algo);
    match check_load(load, key.as_ref(), alg) {
        LoadSignature::Valid | LoadSignature::Unsigned => return true,
        LoadSignature::NoKey => tracing::error!("Failed to fetch pub key for minion {id}."),
        LoadSignature::Invalid => {
            tracing::info!("Failed to verify event signature from minion {id}.");
        }
    }
    if shared.cfg.drop_messages_signature_fail {
        tracing::error!(
            critical = true,
            "drop_messages_signature_fail is enabled, dropping message from {id}"
        );
        return false;
    }
    tracing::info!("But 'drop_message_signature_fail' is disabled, so message is still accepted.");
    true
}

/// The minion's accepted key, if it can be read.
fn minion_key(shared: &Shared, id: &str) -> Option<PublicKey> {
    let pem = shared.store.read_key(KeyState::Accepted, id).ok()??;
    PublicKey::from_pem(pem.as_bytes()).ok()
}
