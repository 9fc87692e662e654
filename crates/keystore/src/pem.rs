//! Light PEM handling: the replaceable key validator, Salt's `clean_key` and `pem_finger`.
//!
//! The store does not parse RSA keys itself (that is `salt-pki`'s job); it only needs to
//! refuse files that are obviously not public keys before moving them to `minions/`, as
//! `salt-key -a` does with `salt.crypt.get_rsa_pub_key`. A caller that can parse keys
//! plugs a stricter [`KeyValidator`] in.

use std::fmt;

use base64::Engine as _;
use sha2::Digest as _;

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

/// Salt's `salt.crypt.clean_key`: strip surrounding whitespace, LF line endings, no
/// trailing newline. Two keys are "the same" for the master when their clean forms match.
pub(crate) fn clean_key(key: &str) -> String {
    // Python's str.splitlines also splits on \r, \x0b, \x0c, \x1c-\x1e, \x85, \u2028/9;
    // PEM text only ever holds \n and \r\n, for which this is identical.
    key.trim()
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Hash used for key fingerprints (Salt's `hash_type`, default sha256).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub enum FingerprintHash {
    /// md5 (Salt before 2019.2 default).
    Md5,
    /// sha1.
    Sha1,
    /// sha224.
    Sha224,
    /// sha256, Salt's default `hash_type`.
    #[default]
    Sha256,
    /// sha384.
    Sha384,
    /// sha512.
    Sha512,
}

impl std::str::FromStr for FingerprintHash {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "md5" => Self::Md5,
            "sha1" => Self::Sha1,
            "sha224" => Self::Sha224,
            "sha256" => Self::Sha256,
            "sha384" => Self::Sha384,
            "sha512" => Self::Sha512,
            other => return Err(format!("unsupported hash_type {other:?}")),
        })
    }
}

/// Salt's `salt.utils.crypt.pem_finger` (3007): CRLF → LF, blank lines dropped; when the
/// first/last lines are PEM armor, hash the body lines each followed by `\n`, else hash the
/// bytes as they are. Output: lowercase hex pairs joined by `:`.
pub(crate) fn pem_finger(key: &[u8], hash: FingerprintHash) -> String {
    let normalized = replace_crlf(key);
    let lines: Vec<&[u8]> = normalized
        .split(|&b| b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .collect();
    let data: Vec<u8> = match (lines.first(), lines.last()) {
        (Some(first), Some(last))
            if lines.len() >= 2
                && first.trim_ascii().starts_with(b"-----BEGIN")
                && last.trim_ascii().starts_with(b"-----END") =>
        {
            let body = &lines[1..lines.len() - 1];
            let mut v = Vec::with_capacity(key.len());
            for l in body {
                v.extend_from_slice(l);
                v.push(b'\n');
            }
            v
        }
        _ => key.to_vec(),
    };
    let digest: Vec<u8> = match hash {
        FingerprintHash::Md5 => md5::Md5::digest(&data).to_vec(),
        FingerprintHash::Sha1 => sha1::Sha1::digest(&data).to_vec(),
        FingerprintHash::Sha224 => sha2::Sha224::digest(&data).to_vec(),
        FingerprintHash::Sha256 => sha2::Sha256::digest(&data).to_vec(),
        FingerprintHash::Sha384 => sha2::Sha384::digest(&data).to_vec(),
        FingerprintHash::Sha512 => sha2::Sha512::digest(&data).to_vec(),
    };
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(digest.len() * 3);
    for (i, b) in digest.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

fn replace_crlf(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut it = data.iter().peekable();
    while let Some(&b) = it.next() {
        if b == b'\r' && it.peek() == Some(&&b'\n') {
            continue;
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn clean_key_matches_salt() {
        assert_eq!(clean_key(PEM), PEM.trim_end());
        assert_eq!(clean_key(&PEM.replace('\n', "\r\n")), PEM.trim_end());
        assert_eq!(clean_key("  a\n\nb \n"), "a\n\nb");
    }

    #[test]
    fn finger_ignores_armor_newlines() {
        let a = pem_finger(PEM.as_bytes(), FingerprintHash::Sha256);
        assert_eq!(a.len(), 95);
        assert_eq!(
            a,
            pem_finger(PEM.trim_end().as_bytes(), FingerprintHash::Sha256)
        );
        assert_eq!(
            a,
            pem_finger(
                PEM.replace('\n', "\r\n").as_bytes(),
                FingerprintHash::Sha256
            )
        );
        assert_eq!(pem_finger(PEM.as_bytes(), FingerprintHash::Md5).len(), 47);
    }
}
