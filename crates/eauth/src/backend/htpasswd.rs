//! Password hashes of an htpasswd file, recognised in the order of passlib's
//! `htpasswd_context` (what Salt's `HtpasswdFile` uses): `apr_md5_crypt` (`$apr1$`),
//! `bcrypt` (`$2$`, `$2a$`, `$2b$`, `$2x$`, `$2y$`), `sha256_crypt` (`$5$`), `sha512_crypt`
//! (`$6$`), `des_crypt` (13 characters of `./0-9A-Za-z`), `ldap_sha1` (`{SHA}`), and
//! anything else as plaintext.
//!
//! bcrypt is the `bcrypt` crate's, `sha256_crypt`/`sha512_crypt` the `sha-crypt` crate's;
//! `{SHA}` is base64(SHA-1); apr1 is md5-crypt with the `$apr1$` magic (written here, 40
//! lines over the `md-5` crate: no maintained crate has it without pulling a second, older
//! RustCrypto stack). `des_crypt` hashes are not implemented: such a line refuses the login
//! and says so by name.

use base64::Engine;
use md5::{Digest, Md5};
use sha1::Sha1;
use zeroize::Zeroizing;

use super::file::constant_eq;

const ITOA64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Whether `password` matches the htpasswd `hash`.
pub fn verify_htpasswd_hash(password: &str, hash: &str) -> bool {
    if let Some(rest) = hash.strip_prefix("$apr1$") {
        let salt = rest.split('$').next().unwrap_or_default();
        let computed = Zeroizing::new(apr1_crypt(password.as_bytes(), salt));
        return constant_eq(&computed, hash);
    }
    if ["$2$", "$2a$", "$2b$", "$2x$", "$2y$"]
        .iter()
        .any(|p| hash.starts_with(p))
    {
        return bcrypt::verify(password, hash).unwrap_or_else(|e| {
            tracing::error!("salt.auth.file: unreadable bcrypt hash in htpasswd file: {e}");
            false
        });
    }
    if hash.starts_with("$5$") || hash.starts_with("$6$") {
        use sha_crypt::{PasswordVerifier, ShaCrypt};
        return match ShaCrypt::default().verify_password(password.as_bytes(), hash) {
            Ok(()) => true,
            Err(sha_crypt::password_hash::Error::PasswordInvalid) => false,
            Err(e) => {
                tracing::error!("salt.auth.file: unreadable sha-crypt hash in htpasswd file: {e}");
                false
            }
        };
    }
    if is_des_crypt(hash) {
        tracing::error!("salt.auth.file: htpasswd des_crypt hashes are not implemented");
        return false;
    }
    if let Some(b64) = hash.strip_prefix("{SHA}") {
        let computed = Zeroizing::new(
            base64::engine::general_purpose::STANDARD.encode(Sha1::digest(password.as_bytes())),
        );
        return constant_eq(&computed, b64);
    }
    constant_eq(hash, password)
}

/// passlib's `des_crypt` identification: a 2-character salt and an optional 11-character
/// checksum of `./0-9A-Za-z`.
fn is_des_crypt(hash: &str) -> bool {
    (hash.len() == 13 || hash.len() == 2)
        && hash
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'/')
}

/// Apache's `$apr1$` md5-crypt of `password` with `salt` (at most 8 characters used).
pub fn apr1_crypt(password: &[u8], salt: &str) -> String {
    const MAGIC: &[u8] = b"$apr1$";
    let salt = &salt.as_bytes()[..salt.len().min(8)];
    let mut ctx = Md5::new();
    ctx.update(password);
    ctx.update(MAGIC);
    ctx.update(salt);
    let mut alt = Md5::new();
    alt.update(password);
    alt.update(salt);
    alt.update(password);
    let alt = alt.finalize();
    let mut left = password.len();
    while left > 0 {
        ctx.update(&alt[..left.min(16)]);
        left = left.saturating_sub(16);
    }
    let mut i = password.len();
    while i > 0 {
        if i & 1 == 1 {
            ctx.update([0u8]);
        } else {
            ctx.update(&password[..1]);
        }
        i >>= 1;
    }
    let mut fin = ctx.finalize();
    for round in 0..1000 {
        let mut c = Md5::new();
        if round & 1 == 1 {
            c.update(password);
        } else {
            c.update(fin);
        }
        if round % 3 != 0 {
            c.update(salt);
        }
        if round % 7 != 0 {
            c.update(password);
        }
        if round & 1 == 1 {
            c.update(fin);
        } else {
            c.update(password);
        }
        fin = c.finalize();
    }
    let mut out = String::from("$apr1$");
    out.push_str(&String::from_utf8_lossy(salt));
    out.push('$');
    let mut to64 = |mut v: u32, n: usize| {
        for _ in 0..n {
            out.push(char::from(ITOA64[(v & 0x3f) as usize]));
            v >>= 6;
        }
    };
    for (a, b, c) in [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)] {
        to64(
            (u32::from(fin[a]) << 16) | (u32::from(fin[b]) << 8) | u32::from(fin[c]),
            4,
        );
    }
    to64(u32::from(fin[11]), 2);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apr1_known_vector() {
        // `openssl passwd -apr1 -salt saltsalt password`
        assert_eq!(
            apr1_crypt(b"password", "saltsalt"),
            "$apr1$saltsalt$yAAkm4libquA.ZWLHbSBq/"
        );
    }

    #[test]
    fn schemes() {
        assert!(verify_htpasswd_hash(
            "password",
            "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="
        ));
        assert!(!verify_htpasswd_hash(
            "passwore",
            "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="
        ));
        assert!(verify_htpasswd_hash("plain-text!", "plain-text!"));
        assert!(
            !verify_htpasswd_hash("abcdefghijklm", "abcdefghijklm"),
            "reads as des_crypt"
        );
    }
}
