//! Salt's `Crypticle`: AES-192-CBC + HMAC-SHA256 encrypt-then-MAC, used for the publish
//! AES key and per-minion session keys (wire protocol §4).
//!
//! ```text
//! key string = base64(aes_key[24] || hmac_key[32])                 (76 chars, one '=')
//! encrypt(P) = IV[16] || AES-192-CBC(aes_key, IV, P || PKCS#7 pad) || HMAC-SHA256(IV || CT)
//! dumps(obj) = encrypt("pickle::" || [nonce, 32 ASCII chars] || msgpack(obj))
//! ```
//!
//! The per-instance `serial` replay check of Salt's `loads` is *not* here: it belongs to the
//! protocol layer (`salt-proto`), which understands the msgpack body.

use std::fmt;
use std::ops::Range;

use aes::Aes192;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::generic_array::GenericArray;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use hmac::{Hmac, Mac};
use rand::RngCore;
use rand::rngs::OsRng;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::Error;

/// AES-192 key length in bytes (Salt's `key_size=192`).
const AES_KEY_LEN: usize = 24;
/// HMAC-SHA256 key and tag length in bytes.
const MAC_LEN: usize = 32;
/// AES block size, also the IV length.
const BLOCK: usize = 16;
/// The historical marker Salt puts in front of every serialized payload.
pub const PICKLE_PAD: &[u8] = b"pickle::";
/// Length of a Salt nonce (`uuid.uuid4().hex`).
pub const NONCE_LEN: usize = 32;
/// Bytes encrypted before the MAC catches up, in [`Crypticle::seal`] (one SHA-256 block).
const SEAL_GRAIN: usize = 64;
/// msgpack for an empty map: what Salt's `loads` returns when the marker is missing.
const EMPTY_MAP: u8 = 0x80;

type HmacSha256 = Hmac<Sha256>;

/// Generate a fresh Crypticle key string: base64 of 56 random bytes (76 ASCII chars).
pub fn generate_key_string() -> Zeroizing<String> {
    let mut raw = Zeroizing::new([0u8; AES_KEY_LEN + MAC_LEN]);
    OsRng.fill_bytes(raw.as_mut());
    Zeroizing::new(STANDARD.encode(raw.as_ref()))
}

/// A CBC IV: unpredictable, from the thread's CSPRNG (`rand`'s `ThreadRng`, ChaCha12 seeded
/// and periodically reseeded from the OS) rather than a `getrandom` system call per message;
/// keys still come from the OS directly.
fn fresh_iv() -> [u8; BLOCK] {
    let mut iv = [0u8; BLOCK];
    rand::thread_rng().fill_bytes(&mut iv);
    iv
}

/// A Crypticle key: the AES-192 key, the HMAC-SHA256 key and the key string they came from.
///
/// All three are zeroized on drop; `Debug` prints nothing secret.
#[derive(Clone)]
pub struct Crypticle {
    key_string: Zeroizing<String>,
    aes_key: Zeroizing<[u8; AES_KEY_LEN]>,
    hmac_key: Zeroizing<[u8; MAC_LEN]>,
}

impl Crypticle {
    /// A Crypticle over a fresh random key.
    pub fn generate() -> Self {
        let ks = generate_key_string();
        // A freshly encoded 56-byte key always parses.
        Self::from_key_string(&ks).unwrap_or_else(|_| unreachable!("fresh key string parses"))
    }

    /// Parse a key string (surrounding whitespace ignored). [`Error::BadKeyString`] unless
    /// it is standard base64 of exactly 56 bytes.
    pub fn from_key_string(s: &str) -> Result<Self, Error> {
        let s = s.trim();
        let raw = Zeroizing::new(STANDARD.decode(s).map_err(|_| Error::BadKeyString)?);
        if raw.len() != AES_KEY_LEN + MAC_LEN {
            return Err(Error::BadKeyString);
        }
        let mut aes_key = Zeroizing::new([0u8; AES_KEY_LEN]);
        let mut hmac_key = Zeroizing::new([0u8; MAC_LEN]);
        aes_key.copy_from_slice(&raw[..AES_KEY_LEN]);
        hmac_key.copy_from_slice(&raw[AES_KEY_LEN..]);
        Ok(Self {
            key_string: Zeroizing::new(s.to_owned()),
            aes_key,
            hmac_key,
        })
    }

    /// The key string, exactly as it goes on the wire (OAEP-encrypted) or into a file. Secret.
    pub fn key_string(&self) -> &str {
        &self.key_string
    }

    /// `IV || CT || HMAC` with a random IV.
    pub fn encrypt(&self, plain: &[u8]) -> Vec<u8> {
        self.encrypt_with_iv(plain, &fresh_iv())
    }

    /// [`Crypticle::encrypt`] with a caller-chosen IV. Only for reproducible tests and
    /// vectors: reusing an IV with the same key leaks plaintext equality.
    pub fn encrypt_with_iv(&self, plain: &[u8], iv: &[u8; BLOCK]) -> Vec<u8> {
        let mut out = Vec::with_capacity(BLOCK + plain.len() + BLOCK + MAC_LEN);
        out.extend_from_slice(&[0u8; BLOCK]);
        out.extend_from_slice(plain);
        self.seal_with_iv(&mut out, 0, iv);
        out
    }

    /// Check the HMAC (constant time) and decrypt. [`Error::BadMac`] on a wrong or missing
    /// tag, [`Error::Malformed`] on an authenticated but impossible ciphertext.
    ///
    /// Like Salt, padding is removed by dropping `last byte` bytes without checking them;
    /// the MAC has already authenticated the sender.
    pub fn decrypt(&self, data: &[u8]) -> Result<Zeroizing<Vec<u8>>, Error> {
        let mut buf = Zeroizing::new(data.to_vec());
        let plain = self.decrypt_in_place(&mut buf)?;
        narrow(&mut buf, plain);
        Ok(buf)
    }

    /// [`decrypt`](Self::decrypt) in the caller's buffer; returns where the plaintext lies
    /// in `data`.
    fn decrypt_in_place(&self, data: &mut [u8]) -> Result<Range<usize>, Error> {
        let split = data.len().checked_sub(MAC_LEN).ok_or(Error::BadMac)?;
        let (body, tag) = data.split_at_mut(split);
        self.mac()
            .chain_update(&*body)
            .verify_slice(tag)
            .map_err(|_| Error::BadMac)?;
        if body.len() < 2 * BLOCK || body.len() % BLOCK != 0 {
            return Err(Error::Malformed("ciphertext length"));
        }
        let (iv, ct) = body.split_at_mut(BLOCK);
        let dec = cbc::Decryptor::<Aes192>::new_from_slices(self.aes_key.as_ref(), iv)
            .map_err(|_| Error::Malformed("iv length"))?;
        let plain = dec
            .decrypt_padded_mut::<NoPadding>(ct)
            .map_err(|_| Error::Malformed("ciphertext length"))?;
        // Python's `data[:-data[-1]]`: a pad byte of 0 or beyond the length leaves nothing.
        let pad = usize::from(plain.last().copied().unwrap_or(0));
        let keep = if pad == 0 {
            0
        } else {
            plain.len().saturating_sub(pad)
        };
        Ok(BLOCK..BLOCK + keep)
    }

    /// Salt's `dumps` for an already msgpack-encoded body: encrypt
    /// `"pickle::" || [nonce] || body`. An empty nonce counts as none, as in Salt.
    pub fn dumps(&self, msgpack_body: &[u8], nonce: Option<&str>) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            BLOCK + PICKLE_PAD.len() + NONCE_LEN + msgpack_body.len() + BLOCK + MAC_LEN,
        );
        let start = Self::begin_dumps(&mut out, nonce);
        out.extend_from_slice(msgpack_body);
        self.seal(&mut out, start);
        out
    }

    /// Start Salt's `dumps` built in place at the end of `buf`: reserves the IV and writes
    /// `"pickle::" || nonce`. Append the msgpack body to `buf` next, then call
    /// [`seal`](Self::seal) with the returned offset. Bulk replies (file chunks) are built
    /// this way in one buffer, with no copy of the body.
    pub fn begin_dumps(buf: &mut Vec<u8>, nonce: Option<&str>) -> usize {
        let start = buf.len();
        buf.extend_from_slice(&[0u8; BLOCK]);
        buf.extend_from_slice(PICKLE_PAD);
        buf.extend_from_slice(nonce.filter(|n| !n.is_empty()).unwrap_or("").as_bytes());
        start
    }

    /// Finish an in-place `dumps` begun at `start`: PKCS#7-pad `buf[start + 16..]`, encrypt
    /// it in place under a fresh IV written at `buf[start..start + 16]`, append the HMAC.
    /// `buf[start..]` is then exactly what [`dumps`](Self::dumps) returns.
    pub fn seal(&self, buf: &mut Vec<u8>, start: usize) {
        self.seal_with_iv(buf, start, &fresh_iv());
    }

    fn seal_with_iv(&self, buf: &mut Vec<u8>, start: usize, iv: &[u8; BLOCK]) {
        let body = start + BLOCK;
        let plain_len = buf.len().saturating_sub(body);
        let pad = BLOCK - plain_len % BLOCK;
        // `pad` is 1..=16, so it fits a byte.
        buf.resize(buf.len() + pad, pad as u8);
        buf[start..body].copy_from_slice(iv);
        let mut enc = cbc::Encryptor::<Aes192>::new(self.aes_key.as_ref().into(), iv.into());
        let mut mac = self.mac().chain_update(iv);
        // AES-CBC and SHA-256 are each one long dependency chain (every block waits for the
        // previous one); fed in small alternating pieces, the CPU overlaps the two: ~1.3x the
        // throughput of encrypting everything and then MACing it (docs/benchmarks.md).
        // The length is a multiple of the block size, so every piece is whole blocks.
        for piece in buf[body..].chunks_mut(SEAL_GRAIN) {
            encrypt_blocks(&mut enc, piece);
            mac.update(piece);
        }
        let tag = mac.finalize().into_bytes();
        buf.extend_from_slice(&tag);
    }

    /// Salt's `loads` up to (not including) msgpack decoding: decrypt, strip `"pickle::"`,
    /// check the nonce if one is expected, return the msgpack body.
    ///
    /// A plaintext without the marker yields `0x80` (an empty map), which is what Salt
    /// returns. A wrong nonce is [`Error::NonceMismatch`].
    pub fn loads(&self, data: &[u8], nonce: Option<&str>) -> Result<Zeroizing<Vec<u8>>, Error> {
        let mut buf = Zeroizing::new(data.to_vec());
        match self.body_in_place(&mut buf, nonce)? {
            Some(body) => {
                narrow(&mut buf, body);
                Ok(buf)
            }
            None => Ok(Zeroizing::new(vec![EMPTY_MAP])),
        }
    }

    /// [`loads`](Self::loads) in the caller's buffer: check the HMAC (constant time),
    /// decrypt `data` in place, strip `"pickle::"` and check the nonce; returns the msgpack
    /// body, a part of `data` (or an empty map when the marker is missing, as Salt). Nothing
    /// is copied or allocated, and nothing is zeroized: for bulk replies (file chunks) in a
    /// buffer the caller owns. On an error `data` may hold a partly decrypted ciphertext.
    pub fn open_in_place<'a>(
        &self,
        data: &'a mut [u8],
        nonce: Option<&str>,
    ) -> Result<&'a [u8], Error> {
        Ok(match self.body_in_place(data, nonce)? {
            Some(body) => &data[body],
            None => &[EMPTY_MAP],
        })
    }

    /// Where the msgpack body lies in `data` once opened in place; `None` when the plaintext
    /// lacks the `"pickle::"` marker (Salt's `loads` then answers an empty map).
    fn body_in_place(
        &self,
        data: &mut [u8],
        nonce: Option<&str>,
    ) -> Result<Option<Range<usize>>, Error> {
        let plain = self.decrypt_in_place(data)?;
        if !data[plain.clone()].starts_with(PICKLE_PAD) {
            return Ok(None);
        }
        let rest = plain.start + PICKLE_PAD.len()..plain.end;
        match nonce.filter(|n| !n.is_empty()) {
            Some(expected) => {
                let got = &data[rest.start..rest.end.min(rest.start + NONCE_LEN)];
                if got != expected.as_bytes() {
                    return Err(Error::NonceMismatch);
                }
                Ok(Some(rest.start + got.len()..rest.end))
            }
            None => Ok(Some(rest)),
        }
    }

    /// The first `len` bytes of the msgpack body of [`loads`](Self::loads) (after
    /// `"pickle::"`, no nonce expected), decrypted from the first blocks **without checking
    /// the MAC**: a routing hint (which command a request names) for a caller that then
    /// handles the request with [`loads`](Self::loads), never data to act on. `None` when the
    /// ciphertext is too short or the marker is not there.
    pub fn peek_body(&self, data: &[u8], len: usize) -> Option<Zeroizing<Vec<u8>>> {
        let ct_end = data.len().checked_sub(MAC_LEN)?;
        let want = (PICKLE_PAD.len() + len).div_ceil(BLOCK) * BLOCK;
        let end = (BLOCK + want).min(ct_end - ct_end % BLOCK);
        if end < 2 * BLOCK {
            return None;
        }
        let (iv, ct) = (&data[..BLOCK], &data[BLOCK..end]);
        let mut dec = cbc::Decryptor::<Aes192>::new_from_slices(self.aes_key.as_ref(), iv).ok()?;
        let mut plain = Zeroizing::new(ct.to_vec());
        for b in plain.chunks_exact_mut(BLOCK) {
            dec.decrypt_block_mut(GenericArray::from_mut_slice(b));
        }
        if !plain.starts_with(PICKLE_PAD) {
            return None;
        }
        plain.drain(..PICKLE_PAD.len());
        plain.truncate(len);
        Some(plain)
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC accepts keys of any length; ours is always 32 bytes.
        <HmacSha256 as Mac>::new_from_slice(self.hmac_key.as_ref())
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"))
    }
}

/// Keep only `range` of `buf`, moved to its front in place (one move, not a second copy of
/// a possibly large body; what is cut off stays in the capacity a `Zeroizing` wipes).
fn narrow(buf: &mut Vec<u8>, range: Range<usize>) {
    buf.truncate(range.end);
    buf.drain(..range.start);
}

/// CBC-encrypt `piece` (whole blocks) in place, continuing `enc`'s chain.
fn encrypt_blocks(enc: &mut cbc::Encryptor<Aes192>, piece: &mut [u8]) {
    for b in piece.chunks_exact_mut(BLOCK) {
        enc.encrypt_block_mut(GenericArray::from_mut_slice(b));
    }
}

impl fmt::Debug for Crypticle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Crypticle").finish_non_exhaustive()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn key_string_shape() {
        let ks = generate_key_string();
        assert_eq!(ks.len(), 76);
        assert!(ks.ends_with('=') && !ks.ends_with("=="));
        let c = Crypticle::from_key_string(&ks).unwrap();
        assert_eq!(c.key_string(), ks.as_str());
        assert_eq!(format!("{c:?}"), "Crypticle { .. }");
    }

    #[test]
    fn round_trip_and_lengths() {
        let c = Crypticle::generate();
        for n in [0usize, 1, 15, 16, 17, 1000] {
            let p = vec![7u8; n];
            let x = c.encrypt(&p);
            assert_eq!(x.len(), 16 + (n / 16 + 1) * 16 + 32);
            assert_eq!(c.decrypt(&x).unwrap().as_slice(), p.as_slice());
        }
    }

    #[test]
    fn in_place_dumps_equals_dumps() {
        let c = Crypticle::generate();
        let iv = [9u8; BLOCK];
        for n in [0usize, 1, 15, 16, 17, 4096, 100_000] {
            let body = vec![0xa5u8; n];
            for nonce in [None, Some("0123456789abcdef0123456789abcdef")] {
                let mut buf = b"head".to_vec();
                let start = Crypticle::begin_dumps(&mut buf, nonce);
                buf.extend_from_slice(&body);
                c.seal_with_iv(&mut buf, start, &iv);
                let mut plain = PICKLE_PAD.to_vec();
                plain.extend_from_slice(nonce.unwrap_or("").as_bytes());
                plain.extend_from_slice(&body);
                assert_eq!(&buf[..4], b"head");
                assert_eq!(&buf[4..], c.encrypt_with_iv(&plain, &iv).as_slice());
                assert_eq!(
                    c.loads(&buf[4..], nonce).unwrap().as_slice(),
                    body.as_slice()
                );
            }
        }
    }

    #[test]
    fn peek_body_is_the_start_of_loads() {
        let c = Crypticle::from_key_string(&generate_key_string()).unwrap();
        for n in [0usize, 1, 7, 8, 23, 24, 40, 200] {
            let body: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let ct = c.dumps(&body, None);
            for len in [0usize, 5, 8, 24, 48, 300] {
                let got = c.peek_body(&ct, len).unwrap();
                // The body's start (then, when the body is shorter, its padding).
                assert!(got.starts_with(&body[..len.min(n)]), "body {n}, peek {len}");
                assert!(got.len() <= len);
            }
        }
        assert!(c.peek_body(&[0u8; 40], 8).is_none());
        let other = Crypticle::from_key_string(&generate_key_string()).unwrap();
        assert!(other.peek_body(&c.dumps(b"abc", None), 3).is_none());
    }

    #[test]
    fn loads_without_marker_is_empty_map() {
        let c = Crypticle::generate();
        let x = c.encrypt(b"\x81\xa1a\x01");
        assert_eq!(c.loads(&x, None).unwrap().as_slice(), &[0x80]);
    }

    #[test]
    fn nonce_checked() {
        let c = Crypticle::generate();
        let n = "0123456789abcdef0123456789abcdef";
        let x = c.dumps(b"\xc0", Some(n));
        assert_eq!(c.loads(&x, Some(n)).unwrap().as_slice(), b"\xc0");
        let other = "f123456789abcdef0123456789abcdef";
        assert!(matches!(
            c.loads(&x, Some(other)),
            Err(Error::NonceMismatch)
        ));
        // Without an expected nonce the nonce stays in the body, as in Salt.
        assert_eq!(c.loads(&x, None).unwrap().len(), 33);
    }

    #[test]
    fn open_in_place_is_loads_without_the_copies() {
        let c = Crypticle::generate();
        let n = "0123456789abcdef0123456789abcdef";
        for len in [0usize, 1, 15, 16, 17, 1000, 300_000] {
            let body: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            for nonce in [None, Some(n)] {
                let sealed = c.dumps(&body, nonce);
                let mut buf = sealed.clone();
                let opened = c.open_in_place(&mut buf, nonce).unwrap().to_vec();
                assert_eq!(opened, body, "{len} bytes, nonce {nonce:?}");
                assert_eq!(c.loads(&sealed, nonce).unwrap().as_slice(), &body[..]);
            }
        }
        // No marker: Salt's empty map, from both.
        let bare = c.encrypt(b"no marker here");
        assert_eq!(
            c.open_in_place(&mut bare.clone(), None).unwrap(),
            [EMPTY_MAP]
        );
        assert_eq!(c.loads(&bare, None).unwrap().as_slice(), [EMPTY_MAP]);
        // A bad MAC is found before anything is decrypted: the buffer is as it came.
        let mut bad = c.dumps(b"secret", Some(n));
        let last = bad.len() - 1;
        bad[last] ^= 1;
        let before = bad.clone();
        assert!(matches!(
            c.open_in_place(&mut bad, Some(n)),
            Err(Error::BadMac)
        ));
        assert_eq!(bad, before);
        assert!(matches!(
            c.open_in_place(&mut c.dumps(b"x", Some(n)), Some(&n.replace('0', "f"))),
            Err(Error::NonceMismatch)
        ));
        assert!(matches!(
            c.open_in_place(&mut [0u8; 10], None),
            Err(Error::BadMac)
        ));
    }
}
