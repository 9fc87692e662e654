//! Microbenchmark of salt-pki's hot operations, single thread.
//!
//! ```text
//! cargo run --release -p salt-pki --example bench [seconds-per-op, default 2]
//! ```
//!
//! Compare the sign figure with `openssl speed -seconds 3 rsa2048`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use salt_pki::{Crypticle, EncAlgo, PrivateKey, SigAlgo};

/// CPU time (user + system) of this thread, from /proc (Linux; 10 ms ticks), in seconds.
/// `openssl speed` divides by CPU user time unless given `-elapsed`, so on a busy machine
/// only the CPU-time figure is comparable with it.
fn thread_cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the ")" that closes the command name; utime and stime are fields 14, 15.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn rate(name: &str, unit: &str, per_iter: f64, budget: Duration, mut f: impl FnMut()) {
    f(); // warm up
    let cpu0 = thread_cpu_secs();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < budget {
        f();
        n += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    let work = n as f64 * per_iter;
    let cpu = match (cpu0, thread_cpu_secs()) {
        (Some(a), Some(b)) if b > a => format!("{:>12.1} {unit} per CPU-second", work / (b - a)),
        _ => String::new(),
    };
    println!("{name:<30} {:>12.1} {unit} wall {cpu}", work / secs);
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let budget = Duration::from_secs_f64(secs);
    let key = PrivateKey::generate(2048)?;
    let public = key.public_key();
    let msg = b"a 64-hex-char digest would go here, this is about that long.....";
    let sig = key.sign(SigAlgo::Pkcs1v15Sha1, msg)?;
    let aes_key = [7u8; 56];
    let ct = public.encrypt_oaep(EncAlgo::OaepSha1, &aes_key)?;
    let x931 = key.x931_sign(b"salt")?;

    println!("RSA-2048 (OpenSSL backend), one thread, {secs} s per line");
    rate("PKCS1v15-SHA1 sign", "ops/s", 1.0, budget, || {
        black_box(key.sign(SigAlgo::Pkcs1v15Sha1, msg).ok());
    });
    rate("OAEP-SHA1 decrypt", "ops/s", 1.0, budget, || {
        black_box(key.decrypt_oaep(EncAlgo::OaepSha1, &ct).ok());
    });
    rate("X9.31 private_encrypt (tok)", "ops/s", 1.0, budget, || {
        black_box(key.x931_sign(b"salt").ok());
    });
    rate("OAEP-SHA1 encrypt", "ops/s", 1.0, budget, || {
        black_box(public.encrypt_oaep(EncAlgo::OaepSha1, &aes_key).ok());
    });
    // A first sign-in: the presented key read from its PEM, then two OAEP encryptions.
    let pem = public.to_pem();
    rate("PEM public key read", "ops/s", 1.0, budget, || {
        black_box(salt_pki::PublicKey::from_pem(pem.as_bytes()).ok());
    });
    rate("PEM read (OpenSSL's decoder)", "ops/s", 1.0, budget, || {
        black_box(salt_pki::backend::public_from_pem(pem.as_bytes()).ok());
    });
    rate("PEM read + 2 OAEP encrypt", "ops/s", 1.0, budget, || {
        let k = salt_pki::PublicKey::from_pem(pem.as_bytes()).ok();
        for _ in 0..2 {
            black_box(
                k.as_ref()
                    .map(|k| k.encrypt_oaep(EncAlgo::OaepSha1, &aes_key)),
            );
        }
    });
    rate("same, OpenSSL's decoder", "ops/s", 1.0, budget, || {
        let k = salt_pki::backend::public_from_pem(pem.as_bytes())
            .ok()
            .map(|k| salt_pki::PublicKey::from_ops(std::sync::Arc::new(k)));
        for _ in 0..2 {
            black_box(
                k.as_ref()
                    .map(|k| k.encrypt_oaep(EncAlgo::OaepSha1, &aes_key)),
            );
        }
    });
    rate("PKCS1v15-SHA1 verify", "ops/s", 1.0, budget, || {
        black_box(public.verify(SigAlgo::Pkcs1v15Sha1, msg, &sig).ok());
    });
    rate("X9.31 public_decrypt", "ops/s", 1.0, budget, || {
        black_box(public.x931_recover(&x931).ok());
    });

    let c = Crypticle::generate();
    for size in [1024usize, 64 * 1024] {
        let plain = vec![0x5au8; size];
        let data = c.encrypt(&plain);
        let mb = size as f64 / 1e6;
        rate(
            &format!("Crypticle encrypt {} KiB", size / 1024),
            "MB/s",
            mb,
            budget,
            || {
                black_box(c.encrypt(black_box(&plain)));
            },
        );
        rate(
            &format!("Crypticle decrypt {} KiB", size / 1024),
            "MB/s",
            mb,
            budget,
            || {
                black_box(c.decrypt(black_box(&data)).ok());
            },
        );
    }
    bulk(budget)?;
    Ok(())
}

/// The file-server bulk path: 1 MiB chunks, AES-192-CBC + HMAC-SHA256 as Crypticle does it,
/// RustCrypto (what Crypticle uses) next to OpenSSL's EVP, each half on its own line.
fn bulk(budget: Duration) -> Result<(), Box<dyn std::error::Error>> {
    use openssl::hash::MessageDigest;
    use openssl::pkey::PKey;
    use openssl::sign::Signer;
    use openssl::symm::{Cipher, Crypter, Mode};

    const SIZE: usize = 1 << 20;
    let mb = SIZE as f64 / 1e6;
    let c = Crypticle::generate();
    let plain = vec![0x5au8; SIZE];
    let data = c.encrypt(&plain);
    println!("Bulk path, {} KiB messages", SIZE / 1024);
    rate("RustCrypto encrypt+HMAC", "MB/s", mb, budget, || {
        black_box(c.encrypt(black_box(&plain)));
    });
    let mut buf = Vec::with_capacity(SIZE + 64);
    rate(
        "RustCrypto in place encrypt+HMAC",
        "MB/s",
        mb,
        budget,
        || {
            buf.clear();
            let start = Crypticle::begin_dumps(&mut buf, None);
            buf.extend_from_slice(black_box(&plain));
            c.seal(&mut buf, start);
            black_box(&buf);
        },
    );
    rate("RustCrypto HMAC-verify+decrypt", "MB/s", mb, budget, || {
        black_box(c.decrypt(black_box(&data)).ok());
    });
    {
        use aes::Aes192;
        use cbc::cipher::block_padding::NoPadding;
        use cbc::cipher::{BlockEncryptMut, KeyIvInit};
        use hmac::{Hmac, Mac};
        let mut inplace = plain.clone();
        rate(
            "RustCrypto AES-192-CBC encrypt only",
            "MB/s",
            mb,
            budget,
            || {
                let enc = cbc::Encryptor::<Aes192>::new(&[3u8; 24].into(), &[5u8; 16].into());
                let _ = enc.encrypt_padded_mut::<NoPadding>(black_box(&mut inplace), SIZE);
            },
        );
        // AES-CBC and HMAC are each one long dependency chain; fed in small interleaved
        // pieces the CPU can overlap them.
        for grain in [64usize, 256, 1024, 4096, 65536] {
            let mut buf = plain.clone();
            rate(
                &format!("RustCrypto interleaved seal, {grain} B pieces"),
                "MB/s",
                mb,
                budget,
                || {
                    use cbc::cipher::generic_array::GenericArray;
                    let mut enc =
                        cbc::Encryptor::<Aes192>::new(&[3u8; 24].into(), &[5u8; 16].into());
                    let mut m = <Hmac<sha2::Sha256> as Mac>::new_from_slice(&[4u8; 32])
                        .unwrap_or_else(|_| unreachable!());
                    for piece in buf.chunks_mut(grain) {
                        for b in piece.chunks_exact_mut(16) {
                            enc.encrypt_block_mut(GenericArray::from_mut_slice(b));
                        }
                        m.update(piece);
                    }
                    black_box(m.finalize().into_bytes());
                },
            );
        }
        rate("RustCrypto HMAC-SHA256 only", "MB/s", mb, budget, || {
            let mut m = <Hmac<sha2::Sha256> as Mac>::new_from_slice(&[4u8; 32])
                .unwrap_or_else(|_| unreachable!());
            m.update(black_box(&plain));
            black_box(m.finalize().into_bytes());
        });
    }

    let (aes_key, mac_key, iv) = ([3u8; 24], [4u8; 32], [5u8; 16]);
    let mac_pkey = PKey::hmac(&mac_key)?;
    let cipher = Cipher::aes_192_cbc();
    let mut out = vec![0u8; SIZE + 2 * 16];
    let mut ossl_encrypt = || -> Result<usize, openssl::error::ErrorStack> {
        let mut cr = Crypter::new(cipher, Mode::Encrypt, &aes_key, Some(&iv))?;
        let n = cr.update(&plain, &mut out)?;
        let n = n + cr.finalize(&mut out[n..])?;
        let mut mac = Signer::new(MessageDigest::sha256(), &mac_pkey)?;
        mac.update(&iv)?;
        mac.update(&out[..n])?;
        black_box(mac.sign_to_vec()?);
        Ok(n)
    };
    ossl_encrypt()?;
    rate("OpenSSL encrypt+HMAC", "MB/s", mb, budget, || {
        black_box(ossl_encrypt().ok());
    });
    let ct = openssl::symm::encrypt(cipher, &aes_key, Some(&iv), &plain)?;
    let mut back = vec![0u8; SIZE + 2 * 16];
    let mut ossl_decrypt = || -> Result<usize, openssl::error::ErrorStack> {
        let mut mac = Signer::new(MessageDigest::sha256(), &mac_pkey)?;
        mac.update(&iv)?;
        mac.update(&ct)?;
        black_box(mac.sign_to_vec()?);
        let mut cr = Crypter::new(cipher, Mode::Decrypt, &aes_key, Some(&iv))?;
        let n = cr.update(&ct, &mut back)?;
        Ok(n + cr.finalize(&mut back[n..])?)
    };
    ossl_decrypt()?;
    rate("OpenSSL HMAC-verify+decrypt", "MB/s", mb, budget, || {
        black_box(ossl_decrypt().ok());
    });
    // The halves, to see where the time goes.
    rate(
        "OpenSSL AES-192-CBC encrypt only",
        "MB/s",
        mb,
        budget,
        || {
            black_box(openssl::symm::encrypt(cipher, &aes_key, Some(&iv), &plain).ok());
        },
    );
    rate("OpenSSL HMAC-SHA256 only", "MB/s", mb, budget, || {
        let r = Signer::new(MessageDigest::sha256(), &mac_pkey)
            .and_then(|mut m| m.update(&plain).and_then(|()| m.sign_to_vec()));
        black_box(r.ok());
    });
    Ok(())
}
