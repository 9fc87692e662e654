//! Signed minion messages (`minion_sign_messages` on the minion, `require_minion_sign_messages`
//! and `drop_messages_signature_fail` on the master), as Salt 3008 fixed them:
//!
//! * the minion attaches `nonce`, `ts`, `tok` and `id` to the load, then signs
//!   `msgpack(load without nonce and tok)` with `minion.pem` (RSASSA-PKCS1-v1_5,
//!   `signing_algorithm`) and appends the signature as `sig` (`salt/channel/client.py`
//!   `_package_load`);
//! * the master's request server removes `nonce` and `tok`; `AESFuncs._return` pops `sig`,
//!   re-serializes the rest with `salt.serializers.msgpack` ([`encode_bin_type`]) and verifies
//!   it with the minion's accepted key, then puts `sig` back at the end of the load.
//!
//! Sans-IO: the keys come in, a verdict comes out.

use rmpv::Value;
use salt_pki::{PrivateKey, PublicKey, SigAlgo};

use crate::codec::encode_bin_type;
use crate::value::map_remove;

/// The load fields the signature does not cover (the request server strips them).
const UNSIGNED_FIELDS: [&str; 3] = ["nonce", "tok", "sig"];

/// The bytes a signed load's signature covers: `load` without `nonce`, `tok` and `sig`, in
/// its key order, as `salt.serializers.msgpack.serialize` writes it.
pub fn signed_bytes(load: &Value) -> Vec<u8> {
    match load {
        Value::Map(entries) => encode_bin_type(&Value::Map(
            entries
                .iter()
                .filter(|(k, _)| !k.as_str().is_some_and(|k| UNSIGNED_FIELDS.contains(&k)))
                .cloned()
                .collect(),
        )),
        other => encode_bin_type(other),
    }
}

/// Signs `load` (a map carrying its channel fields already) and appends `sig`, as a 3008
/// minion with `minion_sign_messages` does.
///
/// # Errors
/// The RSA operation failed.
pub fn sign_load(load: &mut Value, key: &PrivateKey, alg: SigAlgo) -> Result<(), salt_pki::Error> {
    let sig = key.sign(alg, &signed_bytes(load))?;
    if let Value::Map(entries) = load {
        entries.retain(|(k, _)| k.as_str() != Some("sig"));
        entries.push((Value::from("sig"), Value::Binary(sig)));
    }
    Ok(())
}

/// What the master found about a load's signature.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum LoadSignature {
    /// No `sig` in the load.
    Unsigned,
    /// `sig` verifies with the minion's key.
    Valid,
    /// `sig` is there but does not verify (or is not bytes).
    Invalid,
    /// `sig` is there but the minion's key could not be read.
    NoKey,
}

/// Checks the `sig` of a received load (its `nonce` and `tok` already removed) against the
/// minion's key, as `AESFuncs._return` does: `sig` is taken out for the check and put back
/// at the end of the load.
pub fn check_load(load: &mut Value, key: Option<&PublicKey>, alg: SigAlgo) -> LoadSignature {
    let Some(sig) = map_remove(load, "sig") else {
        return LoadSignature::Unsigned;
    };
    let verdict = match (key, &sig) {
        (None, _) => LoadSignature::NoKey,
        (Some(key), Value::Binary(s)) => verdict(key, alg, load, s),
        (Some(key), Value::String(s)) => verdict(key, alg, load, s.as_bytes()),
        (Some(_), _) => LoadSignature::Invalid,
    };
    if let Value::Map(entries) = load {
        entries.push((Value::from("sig"), sig));
    }
    verdict
}

fn verdict(key: &PublicKey, alg: SigAlgo, load: &Value, sig: &[u8]) -> LoadSignature {
    match key.verify(alg, &signed_bytes(load), sig) {
        Ok(()) => LoadSignature::Valid,
        Err(_) => LoadSignature::Invalid,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn text_is_str_and_other_bytes_are_bin_and_channel_fields_are_left_out() {
        let load = Value::Map(vec![
            (Value::from("cmd"), Value::from("_return")),
            (Value::from("nonce"), Value::from("abc")),
            (Value::from("ts"), Value::from(1_700_000_000)),
            (Value::from("tok"), Value::Binary(vec![0xff, 0])),
            (Value::from("b"), Value::Binary(vec![0xff])),
            (Value::from("t"), Value::Binary(b"ok".to_vec())),
        ]);
        let bytes = signed_bytes(&load);
        let mut want = vec![0x84];
        want.extend_from_slice(b"\xa3cmd\xa7_return\xa2ts\xce");
        want.extend_from_slice(&1_700_000_000u32.to_be_bytes());
        want.extend_from_slice(b"\xa1b\xc4\x01\xff\xa1t\xa2ok");
        assert_eq!(bytes, want);
        let long = Value::Map(vec![(Value::from("k"), Value::from("x".repeat(40)))]);
        assert_eq!(&signed_bytes(&long)[..4], b"\x81\xa1k\xd9");
    }
}
