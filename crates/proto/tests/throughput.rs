//! Rough codec throughput (ignored by default; run with
//! `cargo test -p salt-proto --release --test throughput -- --ignored --nocapture`).

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // a timing test reads the clock

use std::time::Instant;

use salt_proto::{MapBuilder, Value, decode, encode};

fn measure(name: &str, v: &Value, iters: u32) {
    let bytes = encode(v);
    let t = Instant::now();
    for _ in 0..iters {
        std::hint::black_box(decode(std::hint::black_box(&bytes)).unwrap());
    }
    let dec = t.elapsed();
    let t = Instant::now();
    for _ in 0..iters {
        std::hint::black_box(
            rmpv::decode::read_value(&mut std::hint::black_box(&bytes[..])).unwrap(),
        );
    }
    let rmpv_dec = t.elapsed();
    let t = Instant::now();
    for _ in 0..iters {
        std::hint::black_box(encode(std::hint::black_box(v)));
    }
    let enc = t.elapsed();
    let mb = bytes.len() as f64 * f64::from(iters) / 1e6;
    println!(
        "{name}: {} bytes; decode {:.1} us/msg ({:.0} MB/s); encode {:.1} us/msg ({:.0} MB/s); rmpv::read_value {:.1} us/msg",
        bytes.len(),
        dec.as_secs_f64() * 1e6 / f64::from(iters),
        mb / dec.as_secs_f64(),
        enc.as_secs_f64() * 1e6 / f64::from(iters),
        mb / enc.as_secs_f64(),
        rmpv_dec.as_secs_f64() * 1e6 / f64::from(iters),
    );
}

#[test]
#[ignore = "timing, run by hand"]
fn codec_throughput() {
    let json: serde_json::Value =
        serde_json::from_str(include_str!("vectors/payload.json")).unwrap();
    let ret = json["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "return_load")
        .unwrap();
    let ret = decode(&hex::decode(ret["hex"].as_str().unwrap()).unwrap()).unwrap();
    measure("return_load vector", &ret, 20_000);
    let blob = MapBuilder::new()
        .str("enc", "aes")
        .bytes("load", &vec![0xffu8; 1 << 20])
        .build();
    measure("1 MiB ciphertext envelope", &blob, 500);
    let ints = Value::Array(
        (0..100_000i64)
            .map(|i| Value::from(i * 7919 - 50_000))
            .collect(),
    );
    measure("100k ints", &ints, 100);
}
