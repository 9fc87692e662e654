//! Fuzz entry point over the master's real request handler, `salt_master_core::requests::handle`:
//! the code that meets every byte a peer sends to port 4506.
//!
//! The fixture is a real master state in a temp dir: a real key store (`pki/`), the master's
//! keys, the job cache and session files, and one accepted minion (`fuzzminion`, whose key is
//! the fixed test key of `keys.rs`) signed in through `handle` itself, so the fuzzer also
//! reaches every AES command with a valid session key and `tok`.
//!
//! `data[0] % 3` picks the shape, the rest is the input:
//! * 0: the raw request body;
//! * 1: `{enc: clear, load: <msgpack of the rest>, version: 3}`;
//! * 2: the rest as the AES load (a map gets `nonce`, `ts`, `tok`, `id` as a minion
//!   stamps them), encrypted with the session key: the commands a signed-in minion sends.
//!
//! Invariants: no panic; every reply is one msgpack value.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmpv::Value;
use salt_compat::map_get;
use salt_config::{LoadOptions, MasterConfig};
use salt_master_core::requests::handle;
use salt_master_core::shared::{LogLimiter, Shared};
use salt_pki::{Crypticle, EncAlgo, PrivateKey};
use salt_proto::{decode, encode};

const MINION: &str = "fuzzminion";

struct Fixture {
    shared: Shared,
    session: Crypticle,
    tok: Vec<u8>,
}

fn t(s: &str) -> Value {
    Value::from(s)
}

fn bytes(v: Option<&Value>) -> Vec<u8> {
    match v {
        Some(Value::String(s)) => s.as_bytes().to_vec(),
        Some(Value::Binary(b)) => b.clone(),
        other => panic!("fuzz fixture: expected bytes, got {other:?}"),
    }
}

fn fixture() -> &'static Fixture {
    static FX: OnceLock<Fixture> = OnceLock::new();
    FX.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("salt-fuzz-request-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("pki/minions")).expect("fuzz fixture: mkdir");
        let yaml = format!(
            "id: fuzzmaster\nroot_dir: {r}\npki_dir: {r}/pki\ncachedir: {r}/cache\n\
             sock_dir: {r}/sock\npublish_port: 4505\nfile_roots:\n  base: ['{r}/srv']\n",
            r = root.display()
        );
        let cfg = MasterConfig::from_yaml_str(&yaml, &LoadOptions::new(&root))
            .expect("fuzz fixture: config")
            .config;
        std::fs::create_dir_all(root.join("srv")).expect("fuzz fixture: file_roots");
        let _ = std::fs::write(root.join("srv/top.sls"), b"base:\n  '*': [web]\n");
        let minion = PrivateKey::from_pem(crate::keys::SIGN_PRIVATE_PEM.as_bytes(), None)
            .expect("fuzz fixture: minion key");
        let pub_pem = salt_pki::clean_key(&minion.public_key().to_pem());
        std::fs::write(root.join("pki/minions").join(MINION), &pub_pem)
            .expect("fuzz fixture: accept key");
        let mut shared = Shared::open(cfg).expect("fuzz fixture: master state");
        // Quiet: a fuzzer sends bad input all the time.
        shared.log_limit = LogLimiter::new(Duration::from_secs(3600));
        // Sign in through the handler, as a minion does.
        let auth = encode(&Value::Map(vec![
            (t("enc"), t("clear")),
            (
                t("load"),
                Value::Map(vec![
                    (t("cmd"), t("_auth")),
                    (t("id"), t(MINION)),
                    (t("nonce"), t("00000000000000000000000000000001")),
                    (t("enc_algo"), t("OAEP-SHA1")),
                    (t("sig_algo"), t("PKCS1v15-SHA1")),
                    (t("pub"), t(&pub_pem)),
                ]),
            ),
            (t("version"), Value::from(3)),
        ]));
        let reply = decode(&handle(&shared, &auth)).expect("fuzz fixture: auth reply");
        let inner = decode(&bytes(map_get(&reply, "load"))).expect("fuzz fixture: auth load");
        let session_key = minion
            .decrypt_oaep(EncAlgo::OaepSha1, &bytes(map_get(&inner, "session")))
            .expect("fuzz fixture: session key");
        let session = Crypticle::from_key_string(
            std::str::from_utf8(&session_key).expect("fuzz fixture: session key text"),
        )
        .expect("fuzz fixture: session crypticle");
        let tok = minion.x931_sign(b"salt").expect("fuzz fixture: tok");
        Fixture {
            shared,
            session,
            tok,
        }
    })
}

fn nonce() -> String {
    static N: AtomicU64 = AtomicU64::new(1 << 32);
    format!("{:032x}", N.fetch_add(1, Ordering::Relaxed))
}

/// One request. See the module doc for the shape byte.
pub fn request(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let fx = fixture();
    let body = match mode % 3 {
        0 => rest.to_vec(),
        1 => {
            let Ok(load) = decode(rest) else { return };
            encode(&Value::Map(vec![
                (t("enc"), t("clear")),
                (t("load"), load),
                (t("version"), Value::from(3)),
            ]))
        }
        _ => {
            let Ok(mut load) = decode(rest) else { return };
            if let Value::Map(m) = &mut load {
                let stamp = |m: &mut Vec<(Value, Value)>, k: &str, v: Value| {
                    if !m.iter().any(|(key, _)| key.as_str() == Some(k)) {
                        m.push((t(k), v));
                    }
                };
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                stamp(m, "nonce", t(&nonce()));
                stamp(m, "ts", Value::from(now));
                stamp(m, "tok", Value::Binary(fx.tok.clone()));
                stamp(m, "id", t(MINION));
            }
            let ct = fx.session.dumps(&encode(&load), None);
            encode(&Value::Map(vec![
                (t("enc"), t("aes")),
                (t("load"), Value::Binary(ct)),
                (t("version"), Value::from(3)),
                (t("id"), t(MINION)),
                (t("enc_algo"), t("OAEP-SHA1")),
                (t("sig_algo"), t("PKCS1v15-SHA1")),
            ]))
        }
    };
    let reply = handle(&fx.shared, &body);
    if let Err(e) = decode(&reply) {
        panic!("reply is not one msgpack value: {e}");
    }
}
