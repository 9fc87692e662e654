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

fn main() -> Result<(), salt_pki::Error> {
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
    Ok(())
}
