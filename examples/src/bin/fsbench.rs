//! `fsbench`: file-server load against a master (ours or Salt's), as signed-in minions ask
//! for files: `_file_hash` + `_serve_file` of every file of a tree, and a big file served
//! chunk by chunk (`cp.get_file`'s loop). Used by `scripts/bench-fileserver.sh`.
//!
//!   fsbench small --port RET --files LIST --clients N [--threads T] --secs S
//!       (N minions, one request in flight each, polled by T client threads)
//!       (LIST: file of `salt://` relative paths, one a line) → requests/s
//!   fsbench big --port RET --path REL [--chunk BYTES]  → MiB/s, hash checked
//!   fsbench loopback --mib N [--per-chunk] [--crypto]  → MiB/s of a TCP copy over loopback:
//!       plain streaming (the physical ceiling); `--per-chunk`: one request → 1 MiB reply
//!       round trip per chunk, as the fileclient does; `--crypto`: and each reply sealed as
//!       Salt must (AES-192-CBC + HMAC-SHA256 on the server, verify + decrypt on the client)
//!
//! Prints one JSON object per run on stdout. The master must auto-accept the ids.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use salt_pki::{Crypticle, PrivateKey};
use salt_proto::auth_minion::{AuthClient, AuthOutcome, AuthSettings};
use salt_proto::{Value, ValueExt, decode, encode, raw_span};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    Small {
        #[arg(long)]
        port: u16,
        #[arg(long)]
        files: std::path::PathBuf,
        #[arg(long, default_value_t = 4)]
        clients: usize,
        /// Client threads polling the minions' sockets.
        #[arg(long, default_value_t = 1)]
        threads: usize,
        #[arg(long, default_value_t = 10)]
        secs: u64,
    },
    Big {
        #[arg(long)]
        port: u16,
        #[arg(long)]
        path: String,
    },
    Loopback {
        #[arg(long, default_value_t = 100)]
        mib: usize,
        #[arg(long)]
        per_chunk: bool,
        #[arg(long)]
        crypto: bool,
    },
}

/// A signed-in minion identity with its own REQ socket.
struct Client {
    sock: zmq::Socket,
    id: String,
    session: Crypticle,
    tok: Vec<u8>,
    n: u64,
}

impl Client {
    fn sign_in(ctx: &zmq::Context, port: u16, id: &str) -> Result<Self> {
        let sock = ctx.socket(zmq::REQ)?;
        sock.set_linger(0)?;
        sock.set_rcvtimeo(120_000)?;
        sock.connect(&format!("tcp://127.0.0.1:{port}"))?;
        let key = PrivateKey::generate(2048)?;
        let tok = key.x931_sign(b"salt")?;
        let mut auth = AuthClient::new(AuthSettings::new(id), key, None, None);
        for attempt in 0..30 {
            let nonce = format!("{:032x}", rand::random::<u128>());
            let (req, pending) = auth.build_request(&nonce);
            sock.send(encode(&req), 0)?;
            let reply = decode(&sock.recv_bytes(0)?)?;
            match auth.handle_reply(&pending, &reply) {
                Ok(AuthOutcome::Accepted(c)) => {
                    return Ok(Self {
                        sock,
                        id: id.to_owned(),
                        session: c.session,
                        tok,
                        n: 0,
                    });
                }
                _ if attempt < 29 => std::thread::sleep(Duration::from_millis(500)),
                other => bail!("sign-in of {id} failed: {other:?}"),
            }
        }
        bail!("sign-in of {id} failed")
    }

    fn ask(&mut self, load: Vec<(&str, Value)>) -> Result<Value> {
        let nonce = self.send(load)?;
        let mut raw = self.sock.recv_msg(0).context("no reply")?;
        self.open(&mut raw, &nonce)
    }

    /// Send one AES request; returns the nonce its reply must carry.
    fn send(&mut self, load: Vec<(&str, Value)>) -> Result<String> {
        self.n += 1;
        let nonce = format!("{:016x}{:016x}", rand::random::<u64>(), self.n);
        let mut m: Vec<(Value, Value)> = load.into_iter().map(|(k, v)| (k.into(), v)).collect();
        m.push(("nonce".into(), nonce.as_str().into()));
        m.push(("tok".into(), Value::Binary(self.tok.clone())));
        m.push(("id".into(), self.id.as_str().into()));
        let ct = self.session.dumps(&encode(&Value::Map(m)), None);
        let env = Value::Map(vec![
            ("enc".into(), "aes".into()),
            ("load".into(), Value::Binary(ct)),
            ("version".into(), 3.into()),
            ("id".into(), self.id.as_str().into()),
        ]);
        self.sock.send(encode(&env), 0)?;
        Ok(nonce)
    }

    /// Check and decrypt a reply to the request that carried `nonce`, in the buffer it
    /// arrived in (as the minion's channel does).
    fn open(&self, raw: &mut [u8], nonce: &str) -> Result<Value> {
        let span = raw_span(raw).context("reply is not encrypted")?;
        let plain = self
            .session
            .open_in_place(&mut raw[span], Some(nonce))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(decode(plain)?)
    }
}

fn serve_load(path: &str, loc: u64) -> Vec<(&'static str, Value)> {
    vec![
        ("cmd", "_serve_file".into()),
        ("path", path.into()),
        ("saltenv", "base".into()),
        ("loc", loc.into()),
    ]
}

/// One minion of the small-file run: which file it is at and what it waits for.
struct Flight {
    c: Client,
    k: usize,
    /// The nonce of the request in flight and whether it is the `_serve_file` half.
    waiting: Option<(String, bool)>,
}

impl Flight {
    fn next(&mut self, list: &[String]) -> Result<()> {
        let p = list[self.k % list.len()].as_str();
        let serve = matches!(self.waiting, Some((_, false)));
        let nonce = if serve {
            self.c.send(serve_load(p, 0))?
        } else {
            self.c.send(vec![
                ("cmd", "_file_hash".into()),
                ("path", p.into()),
                ("saltenv", "base".into()),
            ])?
        };
        self.waiting = Some((nonce, serve));
        Ok(())
    }

    /// Read and check the reply that is ready (a `_serve_file` one moves on to the next file).
    fn finish(&mut self, list: &[String]) -> Result<()> {
        let mut raw = self.c.sock.recv_msg(0).context("no reply")?;
        let (nonce, serve) = self.waiting.as_ref().context("a reply nobody waits for")?;
        let v = self.c.open(&mut raw, nonce)?;
        let p = &list[self.k % list.len()];
        if *serve {
            if v.get("data")
                .and_then(ValueExt::as_bytes)
                .is_none_or(<[u8]>::is_empty)
            {
                bail!("no data for {p}");
            }
            self.k += 1;
        } else if v.get("hsum").is_none() {
            bail!("no hash for {p}: {v}");
        }
        Ok(())
    }
}

/// The client's own CPU seconds so far (user + system, /proc/self/stat in USER_HZ = 100).
fn own_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    f.iter().sum::<f64>() / 100.0
}

/// `clients` minions, each with its own connection and one request in flight at a time (a
/// REQ socket, as a minion's fileclient), driven by `threads` threads that poll their share
/// of the sockets: many minions without a client thread woken per reply.
fn small(
    port: u16,
    files: &std::path::Path,
    clients: usize,
    threads: usize,
    secs: u64,
) -> Result<()> {
    let list: Vec<String> = std::fs::read_to_string(files)?
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    if list.is_empty() {
        bail!("no files in {}", files.display());
    }
    let ctx = zmq::Context::new();
    let threads = threads.clamp(1, clients.max(1));
    let mut groups: Vec<Vec<Flight>> = (0..threads).map(|_| Vec::new()).collect();
    for i in 0..clients {
        groups[i % threads].push(Flight {
            c: Client::sign_in(&ctx, port, &format!("fsbench-{}-{i}", std::process::id()))?,
            k: i * list.len() / clients.max(1),
            waiting: None,
        });
    }
    let cpu0 = own_cpu();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let t0 = Instant::now();
    let results: Vec<Result<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = groups
            .into_iter()
            .map(|mut fl| {
                let list = &list;
                s.spawn(move || -> Result<u64> {
                    let mut done = 0u64;
                    for f in &mut fl {
                        f.next(list)?;
                    }
                    let mut busy = fl.len();
                    while busy > 0 {
                        let mut items: Vec<zmq::PollItem> = fl
                            .iter()
                            .map(|f| {
                                f.c.sock.as_poll_item(if f.waiting.is_some() {
                                    zmq::POLLIN
                                } else {
                                    zmq::PollEvents::empty()
                                })
                            })
                            .collect();
                        if zmq::poll(&mut items, 120_000)? == 0 {
                            bail!("no reply within 120 s");
                        }
                        let ready: Vec<usize> = (0..items.len())
                            .filter(|&i| items[i].is_readable())
                            .collect();
                        drop(items);
                        let more = Instant::now() < deadline;
                        for i in ready {
                            let f = &mut fl[i];
                            f.finish(list)?;
                            done += 1;
                            if more {
                                f.next(list)?;
                            } else {
                                f.waiting = None;
                                busy -= 1;
                            }
                        }
                    }
                    Ok(done)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("panicked")))
            })
            .collect()
    });
    let secs = t0.elapsed().as_secs_f64();
    let cpu = own_cpu() - cpu0;
    let mut total = 0;
    for r in results {
        total += r?;
    }
    println!(
        "{{\"mode\":\"small\",\"clients\":{clients},\"threads\":{threads},\"requests\":{total},\"secs\":{secs:.2},\"rps\":{:.0},\"client_cpu_us\":{:.0}}}",
        total as f64 / secs,
        1e6 * cpu / total.max(1) as f64
    );
    Ok(())
}

fn big(port: u16, path: &str) -> Result<()> {
    let ctx = zmq::Context::new();
    let mut c = Client::sign_in(&ctx, port, &format!("fsbench-big-{}", std::process::id()))?;
    let h = c.ask(vec![
        ("cmd", "_file_hash".into()),
        ("path", path.into()),
        ("saltenv", "base".into()),
    ])?;
    let want = h
        .get("hsum")
        .and_then(ValueExt::as_text)
        .context("no hash")?
        .to_owned();
    let t0 = Instant::now();
    let mut loc = 0u64;
    // The bench's own check, not the fileclient's work (Salt's `get_file` writes each chunk
    // out and hashes nothing on the way): the chunks are hashed on a second thread as they
    // arrive, off the request loop that is measured, and the file is not kept in memory.
    let (chunk_tx, chunk_rx) = std::sync::mpsc::channel::<Value>();
    let hasher = std::thread::spawn(move || {
        let mut h = openssl::sha::Sha256::new();
        for d in chunk_rx {
            h.update(
                d.get("data")
                    .and_then(ValueExt::as_bytes)
                    .unwrap_or_default(),
            );
        }
        hex_of(&h.finish())
    });
    let mut chunks = 0;
    // Where the time goes: waiting for a reply (the master's work and the transport) vs
    // this client checking, decrypting and decoding it.
    let (mut wait, mut open) = (Duration::ZERO, Duration::ZERO);
    loop {
        let t = Instant::now();
        let nonce = c.send(serve_load(path, loc))?;
        let mut raw = c.sock.recv_msg(0).context("no reply")?;
        let t2 = Instant::now();
        wait += t2 - t;
        let d = c.open(&mut raw, &nonce)?;
        drop(raw);
        open += t2.elapsed();
        let len = d
            .get("data")
            .and_then(ValueExt::as_bytes)
            .map_or(0, <[u8]>::len);
        if len == 0 {
            break;
        }
        loc += len as u64;
        chunks += 1;
        chunk_tx.send(d).context("hash thread gone")?;
    }
    let secs = t0.elapsed().as_secs_f64();
    drop(chunk_tx);
    let got = hasher
        .join()
        .map_err(|_| anyhow::anyhow!("hash thread panicked"))?;
    if got != want {
        bail!("hash mismatch: {got} != {want}");
    }
    let mib = loc as f64 / 1048576.0;
    println!(
        "{{\"mode\":\"big\",\"bytes\":{loc},\"chunks\":{chunks},\"secs\":{secs:.2},\"mib_s\":{:.1},\"wait_ms_per_mib\":{:.2},\"open_ms_per_mib\":{:.2}}}",
        mib / secs,
        1e3 * wait.as_secs_f64() / mib,
        1e3 * open.as_secs_f64() / mib
    );
    Ok(())
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A plain TCP copy of `mib` MiB over loopback in 1 MiB writes: the ceiling for serving.
fn loopback(mib: usize) -> Result<()> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let t0 = Instant::now();
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        let mut s = std::net::TcpStream::connect(addr)?;
        let buf = vec![0x5au8; 1 << 20];
        for _ in 0..mib {
            s.write_all(&buf)?;
        }
        Ok(())
    });
    let (mut r, _) = l.accept()?;
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0usize;
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        got += n;
    }
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("writer panicked"))??;
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "{{\"mode\":\"loopback\",\"bytes\":{got},\"secs\":{secs:.3},\"mib_s\":{:.1}}}",
        got as f64 / secs / 1048576.0
    );
    Ok(())
}

/// The fileclient's shape over plain TCP: the client asks for each 1 MiB chunk (a small
/// request) and waits for it; with `crypto`, the server seals each chunk as a Salt reply
/// (`Crypticle` in place: AES-192-CBC + HMAC-SHA256) and the client checks and decrypts it.
/// No ZeroMQ, no msgpack, no file: what is left is the mandatory work of the protocol.
fn loopback_per_chunk(mib: usize, crypto: bool) -> Result<()> {
    const CHUNK: usize = 1 << 20;
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let key = Crypticle::generate();
    let server_key = key.clone();
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = l.accept()?;
        s.set_nodelay(true)?;
        let data = vec![0x5au8; CHUNK];
        let mut ask = [0u8; 64];
        let mut buf = Vec::with_capacity(CHUNK + 128);
        loop {
            if s.read_exact(&mut ask).is_err() {
                return Ok(());
            }
            buf.clear();
            buf.extend_from_slice(&[0u8; 4]);
            if crypto {
                let start = Crypticle::begin_dumps(&mut buf, Some(&"0".repeat(32)));
                buf.extend_from_slice(&data);
                server_key.seal(&mut buf, start);
            } else {
                buf.extend_from_slice(&data);
            }
            let n = u32::try_from(buf.len() - 4).unwrap_or(u32::MAX);
            buf[..4].copy_from_slice(&n.to_be_bytes());
            s.write_all(&buf)?;
        }
    });
    let mut c = std::net::TcpStream::connect(addr)?;
    c.set_nodelay(true)?;
    let t0 = Instant::now();
    let mut got = 0usize;
    let mut buf = vec![0u8; CHUNK + 128];
    for _ in 0..mib {
        c.write_all(&[1u8; 64])?;
        let mut len = [0u8; 4];
        c.read_exact(&mut len)?;
        let n = u32::from_be_bytes(len) as usize;
        buf.resize(n, 0);
        c.read_exact(&mut buf)?;
        got += if crypto {
            key.open_in_place(&mut buf, Some(&"0".repeat(32)))
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .len()
        } else {
            n
        };
    }
    let secs = t0.elapsed().as_secs_f64();
    drop(c);
    server
        .join()
        .map_err(|_| anyhow::anyhow!("server panicked"))??;
    println!(
        "{{\"mode\":\"loopback\",\"per_chunk\":true,\"crypto\":{crypto},\"bytes\":{got},\"secs\":{secs:.3},\"mib_s\":{:.1}}}",
        got as f64 / secs / 1048576.0
    );
    Ok(())
}

fn main() -> Result<()> {
    match Cli::parse().what {
        What::Small {
            port,
            files,
            clients,
            threads,
            secs,
        } => small(port, &files, clients, threads, secs),
        What::Big { port, path } => big(port, &path),
        What::Loopback {
            mib,
            per_chunk: false,
            crypto: false,
        } => loopback(mib),
        What::Loopback { mib, crypto, .. } => loopback_per_chunk(mib, crypto),
    }
}
