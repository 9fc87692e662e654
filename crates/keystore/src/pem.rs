//! Light PEM handling: the replaceable key validator. Key text (`clean_key`), fingerprints
//! (`pem_finger`) and hash types are `salt-pki`'s.
//!
//! The store does not parse RSA keys itself (that is `salt-pki`'s job); it only needs to
//! refuse files that are obviously not public keys before moving them to `minions/`, as
//! `salt-key -a` does with `salt.crypt.get_rsa_pub_key`. A caller that can parse keys
//! plugs a stricter [`KeyValidator`] in.

use std::fmt;

use base64::Engine as _;

/// Decides whether text is an acceptable minion public key.
///
/// The default, [`PemArmorValidator`], checks the PEM armor and the base64 body only. The
/// master or `salt-key` can install one that really parses the RSA key.
pub trait KeyValidator: Send + Sync + fmt::Debug {
    /// `Ok(())` when `pem` is acceptable, else a short human-readable reason.
    fn validate(&self, pem: &str) -> Result<(), String>;
}

/// Accepts `-----BEGIN PUBLIC KEY-----` (SPKI) and `-----BEGIN RSA PUBLIC KEY-----`
/// (PKCS#1) armor around a non-empty, well-formed base64 body; the forms Salt reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct PemArmorValidator;

impl KeyValidator for PemArmorValidator {
    fn validate(&self, pem: &str) -> Result<(), String> {
        let lines: Vec<&str> = pem
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let (first, rest) = lines.split_first().ok_or("empty")?;
        let (last, body) = rest.split_last().ok_or("no END line")?;
        let label = first
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
            .ok_or("no '-----BEGIN ...-----' line")?;
        if label != "PUBLIC KEY" && label != "RSA PUBLIC KEY" {
            return Err(format!("PEM label is {label:?}, not a public key"));
        }
        let end = last
            .strip_prefix("-----END ")
            .and_then(|l| l.strip_suffix("-----"))
            .ok_or("no '-----END ...-----' line")?;
        if end != label {
            return Err(format!("BEGIN {label:?} closed by END {end:?}"));
        }
        let b64: String = body.concat();
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64.as_bytes())
            .map_err(|e| format!("bad base64 body: {e}"))?;
        // SEQUENCE tag, and something inside it.
        if der.len() < 16 || der.first() != Some(&0x30) {
            return Err("body is not a DER key".to_owned());
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A 2048-bit SPKI public key.
    pub(crate) const PEM: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAsdn2nZbnVJsOKkkYceyh
8Df1wXt9u6WxwhJxG6/OsYXVbt+i6knzFQa6UE7Mpd5WasYOhQ0B8WG2MGHLSuJC
4N8Pjyni6wKnpJb1wMjI8NwP/2LjzO/UtEKwfubtREXjoq5X/4400BpyESUZg8ya
P7e6tetkrZSKlS/z5J0lIfxIbPchPYNG2+rSVA0b7XQF3qQEYUXayvRbuFRBKEIP
pdmJpJwtHCZorOTy+z8BfcOmWRjCNNVDhI1yZmNUx9srD8Ed9fowbCn1vQsmzuLr
z+jN/wVDmk+hRMs6RXMcgbcG9y4ZO+71tMxptGENlZlR9MxLqPmeOzX1uBAsPYpY
mwIDAQAB
-----END PUBLIC KEY-----
";

    #[test]
    fn validator() {
        let v = PemArmorValidator;
        v.validate(PEM).unwrap();
        v.validate(PEM.trim_end()).unwrap();
        v.validate(&PEM.replace('\n', "\r\n")).unwrap();
        v.validate(&PEM.replace("PUBLIC KEY", "RSA PUBLIC KEY"))
            .unwrap();
        assert!(v.validate("").is_err());
        assert!(v.validate("hello").is_err());
        assert!(
            v.validate(&PEM.replace("PUBLIC KEY", "RSA PRIVATE KEY"))
                .is_err()
        );
        assert!(v.validate(&PEM.replace("mwIDAQAB", "mwIDAQA!")).is_err());
        assert!(
            v.validate("-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----")
                .is_err()
        );
    }
}
