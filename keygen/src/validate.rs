//! Checking key files before accepting them (Salt's `get_rsa_pub_key` in `Key.accept`).
//!
//! OpenSSL 3's PEM decoder costs about half a millisecond per key (decoder lookup under
//! global locks), which made accepting thousands of keys slow. The check here decodes the
//! PEM and walks the DER structure of an RSA public key (SubjectPublicKeyInfo with
//! `rsaEncryption`, or PKCS#1 `RSAPublicKey`) without OpenSSL: the same keys are accepted
//! as by `load_pem_public_key` for RSA (tested against salt-pki below), at a few
//! microseconds each. The files are read by `KeyStore::check_keys` (on every CPU, each
//! opened from its directory).

use base64::Engine as _;

/// Check that `pem` is one PEM-armored RSA public key ("PUBLIC KEY" SPKI or
/// "RSA PUBLIC KEY" PKCS#1). Surrounding whitespace and CRLF line ends are tolerated.
pub fn rsa_public_key_pem(pem: &[u8]) -> Result<(), &'static str> {
    let text = std::str::from_utf8(pem).map_err(|_| "not text")?;
    let text = text.trim();
    let (label, rest) = text
        .strip_prefix("-----BEGIN ")
        .and_then(|r| r.split_once("-----"))
        .ok_or("no PEM header")?;
    if label != "PUBLIC KEY" && label != "RSA PUBLIC KEY" {
        return Err("not a public key PEM block");
    }
    let body = rest
        .strip_suffix("-----")
        .and_then(|r| r.strip_suffix(label))
        .and_then(|r| r.strip_suffix("-----END "))
        .ok_or("no matching PEM footer")?;
    let b64: Vec<u8> = body.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| "bad base64")?;
    if label == "PUBLIC KEY" {
        spki_rsa(&der)
    } else {
        rsa_public_key(&der)
    }
}

/// OID 1.2.840.113549.1.1.1 (rsaEncryption), content bytes.
const RSA_OID: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

/// One DER TLV: (tag, content, rest).
fn tlv(d: &[u8]) -> Result<(u8, &[u8], &[u8]), &'static str> {
    let (&tag, d) = d.split_first().ok_or("truncated DER")?;
    let (&l0, d) = d.split_first().ok_or("truncated DER")?;
    let (len, d) = if l0 < 0x80 {
        (usize::from(l0), d)
    } else {
        let n = usize::from(l0 & 0x7f);
        if n == 0 || n > 4 || d.len() < n {
            return Err("bad DER length");
        }
        let (lb, d) = d.split_at(n);
        let len = lb.iter().fold(0usize, |a, &b| (a << 8) | usize::from(b));
        if len < 0x80 || lb.first() == Some(&0) {
            return Err("non-minimal DER length");
        }
        (len, d)
    };
    if d.len() < len {
        return Err("truncated DER");
    }
    let (content, rest) = d.split_at(len);
    Ok((tag, content, rest))
}

fn spki_rsa(der: &[u8]) -> Result<(), &'static str> {
    let (tag, spki, rest) = tlv(der)?;
    if tag != 0x30 || !rest.is_empty() {
        return Err("not a SubjectPublicKeyInfo");
    }
    let (tag, alg, after_alg) = tlv(spki)?;
    if tag != 0x30 {
        return Err("bad algorithm identifier");
    }
    let (tag, oid, params) = tlv(alg)?;
    if tag != 0x06 || oid != RSA_OID {
        return Err("not an RSA key");
    }
    if !params.is_empty() && params != [0x05, 0x00] {
        return Err("bad RSA algorithm parameters");
    }
    let (tag, bits, rest) = tlv(after_alg)?;
    if tag != 0x03 || !rest.is_empty() {
        return Err("bad public key bit string");
    }
    let (&unused, key) = bits.split_first().ok_or("empty bit string")?;
    if unused != 0 {
        return Err("bad public key bit string");
    }
    rsa_public_key(key)
}

fn rsa_public_key(der: &[u8]) -> Result<(), &'static str> {
    let (tag, seq, rest) = tlv(der)?;
    if tag != 0x30 || !rest.is_empty() {
        return Err("not an RSAPublicKey");
    }
    let (tag, n, rest) = tlv(seq)?;
    positive_integer(tag, n)?;
    let (tag, e, rest) = tlv(rest)?;
    positive_integer(tag, e)?;
    if !rest.is_empty() {
        return Err("trailing data in RSAPublicKey");
    }
    // A usable modulus: at least 512 bits, odd; exponent odd and > 1.
    let n = strip_sign(n);
    let e = strip_sign(e);
    if n.len() < 64 || n.last().is_none_or(|b| b & 1 == 0) {
        return Err("bad RSA modulus");
    }
    if e.last().is_none_or(|b| b & 1 == 0) || e == [1] {
        return Err("bad RSA exponent");
    }
    Ok(())
}

fn positive_integer(tag: u8, v: &[u8]) -> Result<(), &'static str> {
    if tag != 0x02 || v.is_empty() {
        return Err("expected INTEGER");
    }
    if v[0] & 0x80 != 0 {
        return Err("negative INTEGER");
    }
    if v.len() > 1 && v[0] == 0 && v[1] & 0x80 == 0 {
        return Err("non-minimal INTEGER");
    }
    Ok(())
}

fn strip_sign(v: &[u8]) -> &[u8] {
    match v.split_first() {
        Some((0, rest)) => rest,
        _ => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_openssl_on_real_and_broken_keys() {
        let key = salt_pki::PrivateKey::generate(2048).unwrap();
        let pem = key.public_key().to_pem();
        assert_eq!(rsa_public_key_pem(pem.as_bytes()), Ok(()));
        assert_eq!(
            rsa_public_key_pem(pem.replace('\n', "\r\n").as_bytes()),
            Ok(())
        );
        // PKCS#1 "RSA PUBLIC KEY" form via openssl.
        let pkcs1 = openssl_pkcs1(&pem);
        assert_eq!(rsa_public_key_pem(pkcs1.as_bytes()), Ok(()));
        assert!(salt_pki::PublicKey::from_pem(pkcs1.as_bytes()).is_ok());

        let mut broken = vec![
            "not a key".to_owned(),
            String::new(),
            pem.replace("PUBLIC KEY", "PRIVATE KEY"),
            pem.replace("-----END PUBLIC KEY-----", ""),
        ];
        // Flip or drop bytes in the body.
        let lines: Vec<&str> = pem.lines().collect();
        let mut truncated = lines.clone();
        truncated.remove(3);
        broken.push(truncated.join("\n"));
        let mut altered = lines.clone();
        let l2 = altered[1].replacen('M', "N", 1);
        altered[1] = &l2;
        broken.push(altered.join("\n"));
        for b in &broken {
            assert!(rsa_public_key_pem(b.as_bytes()).is_err(), "{b}");
            assert!(
                salt_pki::PublicKey::from_pem(b.as_bytes()).is_err(),
                "openssl: {b}"
            );
        }
    }

    fn openssl_pkcs1(spki_pem: &str) -> String {
        use base64::Engine as _;
        let body: String = spki_pem
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        // SPKI: SEQ { SEQ {oid, null}, BITSTRING { 00, RSAPublicKey } }
        let (_, spki, _) = tlv(&der).unwrap();
        let (_, _, after) = tlv(spki).unwrap();
        let (_, bits, _) = tlv(after).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&bits[1..]);
        let mut out = String::from("-----BEGIN RSA PUBLIC KEY-----\n");
        for chunk in b64.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(chunk).unwrap());
            out.push('\n');
        }
        out.push_str("-----END RSA PUBLIC KEY-----\n");
        out
    }
}
