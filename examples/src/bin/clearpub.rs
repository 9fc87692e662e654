//! `clearpub`: clear `publish` round trips against a master (ours or Salt's), as
//! `LocalClient.pub` sends them, from a native client whose own CPU is negligible — the
//! master's side of `scripts/bench-clear-publish.sh` (its Python clients cost ~2.6 ms of CPU
//! per round trip, as much as the masters' work on a 2-core box).
//!
//!   clearpub --port RET --key-file CACHEDIR/.root_key --tgt m1,m2 --clients N --secs S
//!
//! N threads, each with its own REQ socket and one publish in flight: the load Salt's clear
//! request channel sends (`{"enc": "clear", "load": {...}, "version": 3}`, `test.ping` to a
//! `list` target, the root key), the reply counted when its `load` carries a `jid`. Prints
//! `RATE <round trips/s> <ok> <failed> <seconds>`, the line `bench_clear_publish.py` prints.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use salt_proto::{Value, ValueExt, decode, encode};

#[derive(Parser)]
struct Cli {
    /// The master's `ret_port` (127.0.0.1).
    #[arg(long)]
    port: u16,
    /// The master's `cachedir/.root_key`.
    #[arg(long)]
    key_file: std::path::PathBuf,
    /// Comma-separated minion ids (a `list` target).
    #[arg(long)]
    tgt: String,
    #[arg(long, default_value_t = 4)]
    clients: usize,
    #[arg(long, default_value_t = 10.0)]
    secs: f64,
}

fn s(v: &str) -> Value {
    Value::from(v)
}

/// The request `salt.channel.client.ReqChannel(crypt="clear").send(load)` puts on the wire.
fn request(key: &str, tgt: &str) -> Vec<u8> {
    let tgt: Vec<Value> = tgt.split(',').map(s).collect();
    let load = Value::Map(vec![
        (s("cmd"), s("publish")),
        (s("tgt"), Value::Array(tgt)),
        (s("tgt_type"), s("list")),
        (s("fun"), s("test.ping")),
        (s("arg"), Value::Array(Vec::new())),
        (s("user"), s("root")),
        (s("ret"), s("")),
        (s("jid"), s("")),
        (s("kwargs"), Value::Map(Vec::new())),
        (s("key"), s(key)),
    ]);
    encode(&Value::Map(vec![
        (s("enc"), s("clear")),
        (s("load"), load),
        (s("version"), Value::from(3)),
    ]))
}

/// One client: publishes until `secs` have passed; (ok, failed, elapsed).
fn client(ctx: &zmq::Context, port: u16, req: &[u8], secs: f64) -> Result<(u64, u64, f64)> {
    let sock = ctx.socket(zmq::REQ)?;
    sock.set_linger(0)?;
    sock.set_rcvtimeo(30_000)?;
    sock.connect(&format!("tcp://127.0.0.1:{port}"))?;
    let (mut ok, mut failed) = (0u64, 0u64);
    let start = Instant::now();
    let until = Duration::from_secs_f64(secs);
    while start.elapsed() < until {
        sock.send(req, 0)?;
        let raw = sock.recv_bytes(0).context("no reply within 30 s")?;
        let jid = decode(&raw).ok().and_then(|r| {
            r.get("load")
                .and_then(|l| l.get("jid"))
                .and_then(|j| j.as_str().map(|j| !j.is_empty()))
        });
        if jid == Some(true) {
            ok += 1;
        } else {
            failed += 1;
        }
    }
    Ok((ok, failed, start.elapsed().as_secs_f64()))
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let key = std::fs::read_to_string(&cli.key_file)
        .with_context(|| format!("reading {}", cli.key_file.display()))?;
    // As Python reads it (`open(...).read()`): the file's text as it is.
    let req = request(&key, &cli.tgt);
    let ctx = zmq::Context::new();
    let results: Vec<Result<(u64, u64, f64)>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..cli.clients.max(1))
            .map(|_| sc.spawn(|| client(&ctx, cli.port, &req, cli.secs)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("client panicked")))
            })
            .collect()
    });
    let (mut ok, mut failed, mut elapsed) = (0, 0, 0f64);
    for r in results {
        let (o, f, e) = r?;
        ok += o;
        failed += f;
        elapsed = elapsed.max(e);
    }
    let rate = if elapsed > 0.0 {
        ok as f64 / elapsed
    } else {
        0.0
    };
    println!("RATE {rate:.1} {ok} {failed} {elapsed:.2}");
    Ok(())
}
