//! Benchmark of the key store on a large pki_dir (default 100,000 pending keys).
//!
//! ```text
//! cargo run --release -p salt-keystore --example bench100k -- [--n N] [--dir DIR] [--generate-only] [--mmap-key]
//! ```
//!
//! `--mmap-key`: the keys go to Salt 3008's `mmap_key` index files (default geometry)
//! instead of one file per key (`keys.cache_driver: mmap_key`).
//!
//! Creates N pending keys (`minion-000000`...) holding the same real RSA public key in
//! `DIR/pki` (a temp dir unless `--dir` is given; a given dir is kept), then times: open
//! (one readdir per state), listing, `state()` lookups, fingerprinting every key
//! (`salt-key -F`), accepting a glob subset with key validation (`salt-key -a
//! 'minion-*0'`) and accepting all the rest (`salt-key -A`). `--generate-only` stops
//! after creating the keys (used by `scripts/bench-salt-key.sh` to time real salt-key on
//! the same layout).
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::PathBuf;
use std::time::Instant;

use salt_keystore::{AcceptFrom, FingerprintHash, KeyState, KeyStore, MmapGeometry, OpenOptions};

const PEM: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAsdn2nZbnVJsOKkkYceyh
8Df1wXt9u6WxwhJxG6/OsYXVbt+i6knzFQa6UE7Mpd5WasYOhQ0B8WG2MGHLSuJC
4N8Pjyni6wKnpJb1wMjI8NwP/2LjzO/UtEKwfubtREXjoq5X/4400BpyESUZg8ya
P7e6tetkrZSKlS/z5J0lIfxIbPchPYNG2+rSVA0b7XQF3qQEYUXayvRbuFRBKEIP
pdmJpJwtHCZorOTy+z8BfcOmWRjCNNVDhI1yZmNUx9srD8Ed9fowbCn1vQsmzuLr
z+jN/wVDmk+hRMs6RXMcgbcG9y4ZO+71tMxptGENlZlR9MxLqPmeOzX1uBAsPYpY
mwIDAQAB
-----END PUBLIC KEY-----";

fn main() {
    let mut n: usize = 100_000;
    let mut dir: Option<PathBuf> = None;
    let mut generate_only = false;
    let mut mmap = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--n" => n = args.next().and_then(|v| v.parse().ok()).expect("--n N"),
            "--dir" => dir = Some(args.next().expect("--dir DIR").into()),
            "--generate-only" => generate_only = true,
            "--mmap-key" => mmap = Some(MmapGeometry::default()),
            other => panic!("unknown argument {other}"),
        }
    }
    let tmp;
    let root = match dir {
        Some(d) => d,
        None => {
            tmp = tempfile::tempdir().unwrap();
            tmp.path().to_owned()
        }
    };
    let pki = root.join("pki");

    let t = Instant::now();
    let open = || OpenOptions::new().mmap_key(mmap).open(&pki).unwrap();
    if mmap.is_some() {
        let items: Vec<(KeyState, String, String)> = (0..n)
            .map(|i| (KeyState::Pending, format!("minion-{i:06}"), PEM.to_owned()))
            .collect();
        open().put_new_many(&items).unwrap();
    } else {
        // Create the layout, then the files directly (no fsync: setup, not what we measure).
        drop(open());
        let pre = pki.join(KeyState::Pending.dir_name());
        for i in 0..n {
            fs::write(pre.join(format!("minion-{i:06}")), PEM).unwrap();
        }
    }
    println!("generate {n} pending keys: {:>8.1} ms", ms(t));
    if generate_only {
        println!("layout kept in {}", pki.display());
        return;
    }

    let t = Instant::now();
    let ks: KeyStore = open();
    println!("open (readdir x4 or mmap_key index):     {:>8.1} ms", ms(t));

    let t = Instant::now();
    let listed = ks.list_all();
    println!(
        "list all ({} pending):      {:>8.1} ms",
        listed[&KeyState::Pending].len(),
        ms(t)
    );

    let t = Instant::now();
    let probes = 10_000.min(n);
    for i in 0..probes {
        let st = ks
            .state(&format!("minion-{:06}", i * (n / probes)))
            .unwrap();
        assert_eq!(st, Some(KeyState::Pending));
    }
    println!(
        "state(id) x{probes} (stat):       {:>8.1} ms ({:.1} us each)",
        ms(t),
        ms(t) * 1000.0 / probes as f64
    );

    let t = Instant::now();
    let m = ks.matching("minion-*0", &[KeyState::Pending]).unwrap();
    println!(
        "glob 'minion-*0' ({} hits): {:>8.1} ms",
        m.get(&KeyState::Pending).map_or(0, Vec::len),
        ms(t)
    );

    let t = Instant::now();
    let f = ks
        .fingerprints(&KeyState::ALL, FingerprintHash::Sha256)
        .unwrap();
    println!(
        "fingerprint all ({}):     {:>8.1} ms",
        f.values().map(Vec::len).sum::<usize>(),
        ms(t)
    );

    let t = Instant::now();
    let r = ks
        .accept_matching("minion-*0", AcceptFrom::default())
        .unwrap();
    assert!(r.errors.is_empty());
    println!(
        "accept glob subset ({}, validated): {:>8.1} ms",
        r.changed.len(),
        ms(t)
    );

    let t = Instant::now();
    let r = ks.accept_all().unwrap();
    assert!(r.errors.is_empty());
    println!(
        "accept all remaining (-A, {}): {:>8.1} ms",
        r.changed.len(),
        ms(t)
    );

    let t = Instant::now();
    ks.refresh().unwrap();
    let acc = ks.list(KeyState::Accepted).len();
    println!("refresh + list ({acc} accepted): {:>8.1} ms", ms(t));
    assert_eq!(acc, n);
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}
