//! In-process tests of the request handler: `_auth` decisions and replies, AES requests,
//! clear ping, bad input. No sockets: bodies go straight into `request::handle`.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use rmpv::Value;
use salt_compat::map_get;
use salt_config::{LoadOptions, MasterConfig};
use salt_master_core::job_cache::local_cache::jid_dir;
use salt_master_core::keys::aes::PublishKey;
use salt_master_core::keys::master::MasterKeys;
use salt_master_core::requests::handle;
use salt_master_core::shared::Shared;
use salt_pki::{Crypticle, EncAlgo, PrivateKey, PublicKey, SigAlgo};
use salt_proto::{decode, encode};
use sha2::{Digest, Sha256};

fn t(s: &str) -> Value {
    Value::from(s)
}

fn shared(root: &Path, extra: &str) -> Shared {
    let yaml = format!(
        "id: testmaster\nroot_dir: {r}\npki_dir: {r}/pki\ncachedir: {r}/cache\nsock_dir: {r}/sock\n\
         publish_port: 4505\n{extra}",
        r = root.display()
    );
    let cfg = MasterConfig::from_yaml_str(&yaml, &LoadOptions::new(root))
        .unwrap()
        .config;
    Shared::open(cfg).unwrap()
}

struct Minion {
    id: String,
    key: PrivateKey,
    pub_pem: String,
}

impl Minion {
    fn new(id: &str) -> Self {
        let key = PrivateKey::generate(2048).unwrap();
        let pub_pem = salt_pki::clean_key(&key.public_key().to_pem());
        Minion {
            id: id.into(),
            key,
            pub_pem,
        }
    }

    fn auth(&self, nonce: &str, token: Option<Vec<u8>>, version: i64) -> Vec<u8> {
        let mut load = vec![
            (t("cmd"), t("_auth")),
            (t("id"), t(&self.id)),
            (t("nonce"), t(nonce)),
            (t("enc_algo"), t("OAEP-SHA1")),
            (t("sig_algo"), t("PKCS1v15-SHA1")),
        ];
        if let Some(tok) = token {
            load.push((t("token"), Value::Binary(tok)));
        }
        load.push((t("pub"), t(&self.pub_pem)));
        encode(&Value::Map(vec![
            (t("enc"), t("clear")),
            (t("load"), Value::Map(load)),
            (t("version"), Value::from(version)),
        ]))
    }

    fn aes_request(
        &self,
        session: &Crypticle,
        load: Vec<(Value, Value)>,
        nonce: &str,
        tok: Vec<u8>,
    ) -> Vec<u8> {
        self.aes_request_at(session, load, nonce, tok, Value::from(0))
    }

    /// An AES request whose load carries `ts` (Unix seconds, as Salt's minion stamps it).
    fn aes_request_at(
        &self,
        session: &Crypticle,
        mut load: Vec<(Value, Value)>,
        nonce: &str,
        tok: Vec<u8>,
        ts: Value,
    ) -> Vec<u8> {
        load.push((t("nonce"), t(nonce)));
        load.push((t("ts"), ts));
        load.push((t("tok"), Value::Binary(tok)));
        load.push((t("id"), t(&self.id)));
        let ct = session.dumps(&encode(&Value::Map(load)), None);
        encode(&Value::Map(vec![
            (t("enc"), t("aes")),
            (t("load"), Value::Binary(ct)),
            (t("version"), Value::from(3)),
            (t("id"), t(&self.id)),
            (t("enc_algo"), t("OAEP-SHA1")),
            (t("sig_algo"), t("PKCS1v15-SHA1")),
        ]))
    }
}

fn bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Binary(b) => b.clone(),
        other => panic!("not bytes: {other:?}"),
    }
}

/// Check the outer signature with master.pub and return INNER.
fn open_signed(s: &Shared, reply: &[u8]) -> Value {
    let reply = decode(reply).unwrap();
    assert_eq!(map_get(&reply, "enc"), Some(&t("clear")));
    let load = bytes(map_get(&reply, "load").unwrap());
    let sig = bytes(map_get(&reply, "sig").unwrap());
    let master_pub = PublicKey::from_pem(s.keys.pub_clean.as_bytes()).unwrap();
    master_pub
        .verify(SigAlgo::Pkcs1v15Sha1, &load, &sig)
        .unwrap();
    decode(&load).unwrap()
}

#[test]
fn sign_in_pending_then_accepted_reply_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let s = shared(dir.path(), "master_sign_pubkey: True\n");
    let m = Minion::new("m1");

    // New key: pending, ret True, key written to minions_pre.
    let inner = open_signed(
        &s,
        &handle(&s, &m.auth("00000000000000000000000000000001", None, 3)),
    );
    assert_eq!(map_get(&inner, "ret"), Some(&Value::Boolean(true)));
    assert_eq!(
        map_get(&inner, "nonce"),
        Some(&t("00000000000000000000000000000001"))
    );
    let pre = dir.path().join("pki/minions_pre/m1");
    assert_eq!(std::fs::read_to_string(&pre).unwrap(), m.pub_pem);

    // Still pending on retry.
    let inner = open_signed(
        &s,
        &handle(&s, &m.auth("00000000000000000000000000000002", None, 3)),
    );
    assert_eq!(map_get(&inner, "ret"), Some(&Value::Boolean(true)));

    // Accept (as salt-key would), sign in with a token.
    std::fs::rename(&pre, dir.path().join("pki/minions/m1")).unwrap();
    let master_pub = PublicKey::from_pem(s.keys.pub_clean.as_bytes()).unwrap();
    let token_plain = salt_pki::generate_key_string();
    let token = master_pub
        .encrypt_oaep(EncAlgo::OaepSha1, token_plain.as_bytes())
        .unwrap();
    let nonce = "0123456789abcdef0123456789abcdef";
    let inner = open_signed(&s, &handle(&s, &m.auth(nonce, Some(token), 3)));
    let keys: Vec<&str> = inner
        .as_map()
        .unwrap()
        .iter()
        .map(|(k, _)| k.as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "enc",
            "pub_key",
            "publish_port",
            "pub_sig",
            "token",
            "aes",
            "session",
            "sig",
            "nonce"
        ]
    );
    assert_eq!(map_get(&inner, "enc"), Some(&t("pub")));
    assert_eq!(map_get(&inner, "publish_port"), Some(&Value::from(4505)));
    assert_eq!(map_get(&inner, "nonce"), Some(&t(nonce)));
    let pub_key = bytes(map_get(&inner, "pub_key").unwrap());
    assert_eq!(pub_key, s.keys.pub_clean.as_bytes());
    // pub_sig verifies with master_sign.pub over pub_key.
    let sign_pub =
        salt_pki::files::read_public_key(&dir.path().join("pki/master_sign.pub")).unwrap();
    salt_pki::pubsig::verify_master_pubkey(
        &sign_pub,
        &pub_key,
        &bytes(map_get(&inner, "pub_sig").unwrap()),
        SigAlgo::Pkcs1v15Sha1,
    )
    .unwrap();
    // Token echoed to the minion.
    let tok = m
        .key
        .decrypt_oaep(EncAlgo::OaepSha1, &bytes(map_get(&inner, "token").unwrap()))
        .unwrap();
    assert_eq!(&tok[..], token_plain.as_bytes());
    // aes = publish key, sig = X9.31 over hex(sha256(aes)).
    let aes = m
        .key
        .decrypt_oaep(EncAlgo::OaepSha1, &bytes(map_get(&inner, "aes").unwrap()))
        .unwrap();
    assert_eq!(&aes[..], s.aes.current().crypticle.key_string().as_bytes());
    let recovered = master_pub
        .x931_recover(&bytes(map_get(&inner, "sig").unwrap()))
        .unwrap();
    assert_eq!(
        recovered,
        hex::encode(Sha256::digest(&aes[..])).into_bytes()
    );
    // session = the file in cachedir/sessions, 0600.
    let session = m
        .key
        .decrypt_oaep(
            EncAlgo::OaepSha1,
            &bytes(map_get(&inner, "session").unwrap()),
        )
        .unwrap();
    let on_disk = std::fs::read(dir.path().join("cache/sessions/m1")).unwrap();
    assert_eq!(&session[..], &on_disk[..]);

    // Replayed nonce: refused.
    assert_eq!(
        decode(&handle(&s, &m.auth(nonce, None, 3))).unwrap(),
        t("bad load")
    );

    // AES requests with the session key.
    let session = Crypticle::from_key_string(std::str::from_utf8(&session).unwrap()).unwrap();
    let tok = m.key.x931_sign(b"salt").unwrap();
    let ret_nonce = "fedcba9876543210fedcba9876543210";
    let mut waiter = s.jobs.subscribe("20250101000000000001");
    let body = m.aes_request(
        &session,
        vec![
            (t("cmd"), t("_return")),
            (t("success"), Value::Boolean(true)),
            (t("return"), Value::Boolean(true)),
            (t("retcode"), Value::from(0)),
            (t("jid"), t("20250101000000000001")),
            (t("fun"), t("test.ping")),
            (t("fun_args"), Value::Array(vec![])),
        ],
        ret_nonce,
        tok.clone(),
    );
    let reply = decode(&handle(&s, &body)).unwrap();
    let plain = session.loads(&bytes(&reply), Some(ret_nonce)).unwrap();
    assert_eq!(decode(&plain).unwrap(), Value::Nil);
    s.jobs.flush(); // returns are delivered and written by the return sink's thread
    let (id, load) = waiter.try_recv().unwrap();
    assert_eq!(id, "m1");
    assert_eq!(map_get(&load, "return"), Some(&Value::Boolean(true)));
    assert!(map_get(&load, "tok").is_none());
    assert!(
        jid_dir(
            &dir.path().join("cache/jobs"),
            "20250101000000000001",
            salt_pki::HashType::Sha256
        )
        .join("m1/return.p")
        .is_file()
    );

    // _mine (stored in the data cache) → True, unknown → {}, _pillar → send_private map.
    let reply = decode(&handle(
        &s,
        &m.aes_request(
            &session,
            vec![
                (t("cmd"), t("_mine")),
                (
                    t("data"),
                    Value::Map(vec![(t("test.ping"), Value::Boolean(true))]),
                ),
            ],
            ret_nonce,
            tok.clone(),
        ),
    ))
    .unwrap();
    assert_eq!(
        decode(&session.loads(&bytes(&reply), Some(ret_nonce)).unwrap()).unwrap(),
        Value::Boolean(true)
    );
    let reply = decode(&handle(
        &s,
        &m.aes_request(
            &session,
            vec![(t("cmd"), t("_nope"))],
            ret_nonce,
            tok.clone(),
        ),
    ))
    .unwrap();
    assert_eq!(
        decode(&session.loads(&bytes(&reply), Some(ret_nonce)).unwrap()).unwrap(),
        Value::Map(vec![])
    );
    let reply = decode(&handle(
        &s,
        &m.aes_request(
            &session,
            vec![
                (t("cmd"), t("_pillar")),
                (t("ver"), t("2")),
                (t("grains"), Value::Map(vec![])),
            ],
            ret_nonce,
            tok.clone(),
        ),
    ))
    .unwrap();
    let k = m
        .key
        .decrypt_oaep(EncAlgo::OaepSha1, &bytes(map_get(&reply, "key").unwrap()))
        .unwrap();
    let pcrypt = Crypticle::from_key_string(std::str::from_utf8(&k).unwrap()).unwrap();
    let signed = decode(
        &pcrypt
            .loads(&bytes(map_get(&reply, "pillar").unwrap()), None)
            .unwrap(),
    )
    .unwrap();
    let data = bytes(map_get(&signed, "data").unwrap());
    master_pub
        .verify(
            SigAlgo::Pkcs1v15Sha1,
            &data,
            &bytes(map_get(&signed, "sig").unwrap()),
        )
        .unwrap();
    let data = decode(&data).unwrap();
    assert_eq!(map_get(&data, "nonce"), Some(&t(ret_nonce)));
    assert_eq!(map_get(&data, "pillar"), Some(&Value::Map(vec![])));

    // A bad token, or a token by another key: bad load.
    let other = Minion::new("m1");
    let bad_tok = other.key.x931_sign(b"salt").unwrap();
    let reply = handle(
        &s,
        &m.aes_request(&session, vec![(t("cmd"), t("_mine"))], ret_nonce, bad_tok),
    );
    assert_eq!(decode(&reply).unwrap(), t("bad load"));
}

/// With a key accepted, a leftover pending entry (file or directory) is not consulted, as
/// in Salt's `_auth` (accepted is checked first): the minion signs in and the entry stays.
#[test]
fn accepted_key_wins_over_a_leftover_pending_entry() {
    let dir = tempfile::tempdir().unwrap();
    let s = shared(dir.path(), "");
    for (i, id) in ["m1", "m2"].into_iter().enumerate() {
        let m = Minion::new(id);
        std::fs::write(dir.path().join("pki/minions").join(id), &m.pub_pem).unwrap();
        let pre = dir.path().join("pki/minions_pre").join(id);
        if i == 0 {
            std::fs::write(&pre, "some other key").unwrap();
        } else {
            std::fs::create_dir(&pre).unwrap();
        }
        let nonce = format!("{:032x}", i + 1);
        let inner = open_signed(&s, &handle(&s, &m.auth(&nonce, None, 3)));
        assert_eq!(map_get(&inner, "enc"), Some(&t("pub")), "{id}");
        assert!(map_get(&inner, "aes").is_some(), "{id}");
        assert_eq!(pre.is_dir(), i == 1, "{id}");
        if i == 0 {
            assert_eq!(std::fs::read_to_string(&pre).unwrap(), "some other key");
        }
    }
}

#[test]
fn denied_rejected_full_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let s = shared(dir.path(), "auto_accept: True\nmax_minions: 1\n");
    let m1 = Minion::new("m1");
    let inner = open_signed(
        &s,
        &handle(&s, &m1.auth("10000000000000000000000000000001", None, 3)),
    );
    assert!(
        map_get(&inner, "aes").is_some(),
        "auto_accept signs in at once"
    );
    assert!(dir.path().join("pki/minions/m1").is_file());

    // Same id, other key: denied, key recorded, ret False.
    let impostor = Minion::new("m1");
    let inner = open_signed(
        &s,
        &handle(
            &s,
            &impostor.auth("10000000000000000000000000000002", None, 3),
        ),
    );
    assert_eq!(map_get(&inner, "ret"), Some(&Value::Boolean(false)));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("pki/minions_denied/m1")).unwrap(),
        impostor.pub_pem
    );

    // max_minions = 1 and m1 is connected: a new minion gets "full"; m1 still signs in.
    let m2 = Minion::new("m2");
    let inner = open_signed(
        &s,
        &handle(&s, &m2.auth("10000000000000000000000000000003", None, 3)),
    );
    assert_eq!(map_get(&inner, "ret"), Some(&t("full")));
    let inner = open_signed(
        &s,
        &handle(&s, &m1.auth("10000000000000000000000000000004", None, 3)),
    );
    assert!(map_get(&inner, "aes").is_some());

    // Rejected key: ret False.
    let m3 = Minion::new("m3");
    std::fs::write(dir.path().join("pki/minions_rejected/m3"), &m3.pub_pem).unwrap();
    s.connected.lock().unwrap().clear();
    let inner = open_signed(
        &s,
        &handle(&s, &m3.auth("10000000000000000000000000000005", None, 3)),
    );
    assert_eq!(map_get(&inner, "ret"), Some(&Value::Boolean(false)));

    // Invalid id.
    let bad = Minion::new("../etc");
    let inner = open_signed(
        &s,
        &handle(&s, &bad.auth("10000000000000000000000000000006", None, 3)),
    );
    assert_eq!(map_get(&inner, "ret"), Some(&Value::Boolean(false)));

    // Protocol version 2 < minimum_auth_version 3.
    assert_eq!(
        decode(&handle(
            &s,
            &m1.auth("10000000000000000000000000000007", None, 2)
        ))
        .unwrap(),
        t("bad load")
    );
    // Garbage, non-maps, unknown enc, bad algorithm.
    for body in [
        vec![0xc1],
        encode(&t("x")),
        encode(&Value::Map(vec![
            (t("enc"), t("zzz")),
            (t("load"), t("")),
            (t("version"), Value::from(3)),
        ])),
    ] {
        assert_eq!(decode(&handle(&s, &body)).unwrap(), t("bad load"));
    }
    let body = encode(&Value::Map(vec![
        (t("enc"), t("clear")),
        (
            t("load"),
            Value::Map(vec![
                (t("cmd"), t("_auth")),
                (t("id"), t("m1")),
                (t("nonce"), t("n")),
                (t("sig_algo"), t("MD5")),
                (t("pub"), t(&m1.pub_pem)),
            ]),
        ),
        (t("version"), Value::from(3)),
    ]));
    let reply = decode(&handle(&s, &body)).unwrap();
    assert_eq!(
        map_get(map_get(&reply, "load").unwrap(), "ret"),
        Some(&t("bad sig algo"))
    );
    // AES request from an id without a session: bad load.
    let sess = Crypticle::generate();
    let body = Minion::new("ghost").aes_request(&sess, vec![(t("cmd"), t("_mine"))], "n", vec![1]);
    assert_eq!(decode(&handle(&s, &body)).unwrap(), t("bad load"));

    // Clear ping echoes the load.
    let load = Value::Map(vec![(t("cmd"), t("ping")), (t("id"), t("m1"))]);
    let body = encode(&Value::Map(vec![
        (t("enc"), t("clear")),
        (t("load"), load.clone()),
        (t("version"), Value::from(3)),
    ]));
    assert_eq!(decode(&handle(&s, &body)).unwrap(), load);
}

#[test]
fn pubkey_signature_file_is_checked_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().display();
    let cfg = |extra: &str| {
        let yaml = format!("pki_dir: {r}/pki\ncachedir: {r}/cache\n{extra}");
        MasterConfig::from_yaml_str(&yaml, &LoadOptions::new(dir.path()))
            .unwrap()
            .config
    };
    std::fs::create_dir_all(dir.path().join("pki")).unwrap();
    // Missing file: a clear error.
    let use_file = cfg("master_use_pubkey_signature: True\n");
    assert!(matches!(
        MasterKeys::load(&use_file),
        Err(salt_master_core::keys::master::KeyError::SignatureMissing(
            _
        ))
    ));
    // Generate master_sign and a correct signature file: loads, pub_sig is the file text.
    let signing = MasterKeys::load(&cfg("master_sign_pubkey: True\n")).unwrap();
    let sign_key =
        salt_pki::files::read_private_key(&dir.path().join("pki/master_sign.pem"), None).unwrap();
    let sig =
        salt_pki::pubsig::sign_master_pubkey(&sign_key, &signing.pub_clean, SigAlgo::Pkcs1v15Sha1)
            .unwrap();
    let sig_file = dir.path().join("pki/master_pubkey_signature");
    std::fs::write(&sig_file, salt_pki::pubsig::signature_file(&sig)).unwrap();
    let keys = MasterKeys::load(&use_file).unwrap();
    let sent = keys.pub_sig(SigAlgo::Pkcs1v15Sha224).unwrap().unwrap();
    assert_eq!(
        sent.as_slice(),
        salt_pki::clean_key(&std::fs::read_to_string(&sig_file).unwrap()).as_bytes()
    );
    // A signature by another key: refused at start.
    let other = PrivateKey::generate(2048).unwrap();
    let bad =
        salt_pki::pubsig::sign_master_pubkey(&other, &signing.pub_clean, SigAlgo::Pkcs1v15Sha1)
            .unwrap();
    std::fs::write(&sig_file, salt_pki::pubsig::signature_file(&bad)).unwrap();
    assert!(matches!(
        MasterKeys::load(&use_file),
        Err(salt_master_core::keys::master::KeyError::SignatureInvalid { .. })
    ));
    // Dynamic signing caches one signature per algorithm.
    let a = signing.pub_sig(SigAlgo::Pkcs1v15Sha1).unwrap().unwrap();
    let b = signing.pub_sig(SigAlgo::Pkcs1v15Sha1).unwrap().unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
}

/// Not a benchmark harness, just a figure in the test log: the cost of one accepted sign-in
/// (2048-bit keys: one PKCS#1 signature and three OAEP encryptions; the `aes` X9.31 `sig`
/// and `pub_sig` are cached), and of one `_return` (decrypt, token check, job-cache write).
#[test]
fn sign_in_and_return_cost() {
    let dir = tempfile::tempdir().unwrap();
    let s = shared(dir.path(), "auto_accept: True\nmaster_sign_pubkey: True\n");
    let m = Minion::new("m1");
    let n = 30;
    let start = std::time::Instant::now();
    for i in 0..n {
        let reply = handle(&s, &m.auth(&format!("{i:032x}"), None, 3));
        assert!(reply.len() > 1000);
    }
    let per_auth = start.elapsed() / n;
    let session = Crypticle::from_key_string(
        std::str::from_utf8(&std::fs::read(dir.path().join("cache/sessions/m1")).unwrap()).unwrap(),
    )
    .unwrap();
    let tok = m.key.x931_sign(b"salt").unwrap();
    let start = std::time::Instant::now();
    for i in 0..n {
        let body = m.aes_request(
            &session,
            vec![
                (t("cmd"), t("_return")),
                (t("return"), Value::Boolean(true)),
                (t("retcode"), Value::from(0)),
                (t("jid"), t(&format!("2025010100000000{i:04}"))),
            ],
            &format!("{i:032x}"),
            tok.clone(),
        );
        let reply = decode(&handle(&s, &body)).unwrap();
        assert!(matches!(reply, Value::String(_) | Value::Binary(_)));
    }
    let per_return = start.elapsed() / n;
    println!(
        "accepted sign-in: {per_auth:?} each; _return: {per_return:?} each (debug-profile test build, opt-level 1)"
    );
}

/// A version-2 request (encrypted with the publish key, no session key): after a rotation
/// the previous key still works inside `aes_rotation_grace`, and a minion whose key was
/// deleted is refused at once whichever key it uses.
#[test]
fn previous_publish_key_is_honoured_for_the_grace_window_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = shared(
        dir.path(),
        "auto_accept: True\nminimum_auth_version: 2\naes_rotation_grace: 60\n",
    );
    let m = Minion::new("m2");
    let reply = handle(&s, &m.auth("0123456789abcdef0123456789abcdef", None, 3));
    assert!(map_get(&open_signed(&s, &reply), "aes").is_some());
    let tok = m.key.x931_sign(b"salt").unwrap();
    let v2 = |key: &Crypticle, nonce: &str| {
        let load = Value::Map(vec![
            (t("cmd"), t("_mine")),
            (t("data"), Value::Map(vec![])),
            (t("id"), t("m2")),
            (t("nonce"), t(nonce)),
            (t("tok"), Value::Binary(tok.clone())),
        ]);
        encode(&Value::Map(vec![
            (t("enc"), t("aes")),
            (t("load"), Value::Binary(key.dumps(&encode(&load), None))),
            (t("version"), Value::from(2)),
        ]))
    };
    let answered = |key: &Crypticle, nonce: &str| {
        // The reply is the encrypted body, or the string "bad load".
        let reply = bytes(&decode(&handle(&s, &v2(key, nonce))).unwrap());
        key.loads(&reply, Some(nonce))
            .is_ok_and(|p| decode(&p).unwrap() == Value::Boolean(true))
    };
    let old = s.aes.current().crypticle.clone();
    assert!(
        answered(&old, "11111111111111111111111111111111"),
        "the current key works"
    );

    let t0 = std::time::Instant::now();
    s.aes
        .rotate_at(PublishKey::generate(&s.keys.key).unwrap(), t0);
    let new = s.aes.current().crypticle.clone();
    assert!(
        answered(&new, "22222222222222222222222222222222"),
        "the new key works"
    );
    assert!(
        answered(&old, "33333333333333333333333333333333"),
        "the previous key works inside the window"
    );

    // Window over (rotated 61 s ago): the previous key is refused.
    s.aes.rotate_at(
        PublishKey::generate(&s.keys.key).unwrap(),
        t0 - Duration::from_secs(61),
    );
    let newest = s.aes.current().crypticle.clone();
    assert!(
        !answered(&new, "44444444444444444444444444444444"),
        "previous key refused after the window"
    );
    assert!(answered(&newest, "55555555555555555555555555555555"));

    // A deleted key: refused with the current key too (token check against minions/).
    std::fs::remove_file(dir.path().join("pki/minions/m2")).unwrap();
    s.aes
        .rotate_at(PublishKey::generate(&s.keys.key).unwrap(), t0);
    assert!(
        !answered(&newest, "66666666666666666666666666666666"),
        "previous key, deleted minion"
    );
    assert!(
        !answered(
            &s.aes.current().crypticle.clone(),
            "77777777777777777777777777777777"
        ),
        "current key, deleted minion"
    );
}

/// `request_server_ttl` (CVE-2024-38823): a v3 AES request stamped longer ago than the ttl is
/// refused with `bad load` and its return is not stored; a fresh one is served. The handler
/// reads the wall clock itself, so the requests carry `ts` relative to now.
#[test]
fn request_older_than_request_server_ttl_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = shared(dir.path(), "auto_accept: True\nrequest_server_ttl: 60\n");
    assert_eq!(s.cfg.request_server_ttl, Some(Duration::from_secs(60)));
    let m = Minion::new("m3");
    let reply = handle(&s, &m.auth("0123456789abcdef0123456789abcdef", None, 3));
    assert!(map_get(&open_signed(&s, &reply), "session").is_some());
    let session = Crypticle::from_key_string(
        std::str::from_utf8(&std::fs::read(dir.path().join("cache/sessions/m3")).unwrap()).unwrap(),
    )
    .unwrap();
    let tok = m.key.x931_sign(b"salt").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let ret = |jid: &str| {
        vec![
            (t("cmd"), t("_return")),
            (t("return"), Value::Boolean(true)),
            (t("retcode"), Value::from(0)),
            (t("jid"), t(jid)),
            (t("fun"), t("test.ping")),
        ]
    };
    let stored = |jid: &str| {
        s.jobs.flush(); // written by the return sink's thread
        jid_dir(
            &dir.path().join("cache/jobs"),
            jid,
            salt_pki::HashType::Sha256,
        )
        .join("m3/return.p")
        .is_file()
    };
    // The reply is the body encrypted with the session key, or the string "bad load".
    let served = |body: Vec<u8>, nonce: &str| {
        let reply = bytes(&decode(&handle(&s, &body)).unwrap());
        session
            .loads(&reply, Some(nonce))
            .is_ok_and(|p| decode(&p).unwrap() == Value::Nil)
    };

    // Stamped 61 s ago with a 60 s ttl (a captured request replayed later): refused.
    let n1 = "11111111111111111111111111111111";
    let old = m.aes_request_at(
        &session,
        ret("20250101000000000011"),
        n1,
        tok.clone(),
        Value::F64(now - 61.0),
    );
    assert_eq!(decode(&handle(&s, &old)).unwrap(), t("bad load"));
    assert!(
        !stored("20250101000000000011"),
        "an expired return is not stored"
    );
    // Without a `ts` at all (as a v3 request without it): refused as well.
    let mut body = ret("20250101000000000012");
    body.push((t("nonce"), t(n1)));
    body.push((t("tok"), Value::Binary(tok.clone())));
    body.push((t("id"), t("m3")));
    let no_ts = encode(&Value::Map(vec![
        (t("enc"), t("aes")),
        (
            t("load"),
            Value::Binary(session.dumps(&encode(&Value::Map(body)), None)),
        ),
        (t("version"), Value::from(3)),
        (t("id"), t("m3")),
    ]));
    assert_eq!(decode(&handle(&s, &no_ts)).unwrap(), t("bad load"));
    assert!(!stored("20250101000000000012"));

    // Fresh (now, and 30 s old, inside the ttl; integer seconds as well as floats): served.
    let n2 = "22222222222222222222222222222222";
    let fresh = m.aes_request_at(
        &session,
        ret("20250101000000000013"),
        n2,
        tok.clone(),
        Value::F64(now),
    );
    assert!(served(fresh, n2), "a fresh request is served");
    assert!(stored("20250101000000000013"));
    let n3 = "33333333333333333333333333333333";
    #[allow(clippy::cast_possible_truncation)]
    let within = m.aes_request_at(
        &session,
        ret("20250101000000000014"),
        n3,
        tok.clone(),
        Value::from((now - 30.0) as i64),
    );
    assert!(served(within, n3), "a request inside the ttl is served");
    assert!(stored("20250101000000000014"));

    // No ttl configured (the default): the same stale request is served.
    let dir2 = tempfile::tempdir().unwrap();
    let s2 = shared(dir2.path(), "auto_accept: True\n");
    assert!(s2.cfg.request_server_ttl.is_none_or(|t| t.is_zero()));
    handle(&s2, &m.auth("0123456789abcdef0123456789abcdee", None, 3));
    let session2 = Crypticle::from_key_string(
        std::str::from_utf8(&std::fs::read(dir2.path().join("cache/sessions/m3")).unwrap())
            .unwrap(),
    )
    .unwrap();
    let stale = m.aes_request_at(
        &session2,
        ret("20250101000000000015"),
        n1,
        tok,
        Value::F64(now - 3600.0),
    );
    let reply = bytes(&decode(&handle(&s2, &stale)).unwrap());
    assert_eq!(
        decode(&session2.loads(&reply, Some(n1)).unwrap()).unwrap(),
        Value::Nil
    );
}

/// The mine through `mine::handle` (what `_mine*` requests run after decryption): store,
/// update, get with one or several functions, `mine_get` ACLs, `allow_tgt`, delete, flush.
#[test]
fn mine_store_get_acl_delete_flush() {
    let dir = tempfile::tempdir().unwrap();
    let s = shared(
        dir.path(),
        "mine_get: {'web.*': ['test\\..*'], 'db1': ['.*']}\n",
    );
    let pem = Minion::new("web1").pub_pem;
    for id in ["web1", "web2", "db1"] {
        s.store.put_accepted(id, &pem).unwrap();
    }
    let map = |entries: Vec<(&str, Value)>| {
        Value::Map(entries.into_iter().map(|(k, v)| (t(k), v)).collect())
    };
    // A load as a minion sends it: `cmd` and `id` first.
    let mine = |id: &str, cmd: &str, load: Vec<(&str, Value)>| {
        let mut full = vec![("cmd", t(cmd)), ("id", t(id))];
        full.extend(load);
        salt_master_core::requests::mine::handle(&s, id, cmd, &map(full))
    };
    // Store, then update (merged), for two minions.
    assert_eq!(
        mine(
            "web1",
            "_mine",
            vec![("data", map(vec![("test.ping", Value::Boolean(true))]))]
        ),
        Value::Boolean(true)
    );
    assert_eq!(
        mine(
            "web1",
            "_mine",
            vec![("data", map(vec![("net.ip", t("10.0.0.1"))]))]
        ),
        Value::Boolean(true)
    );
    let acl_entry = map(vec![
        ("__saltmine_acl_id__", t("__saltmine_acl_id__")),
        ("__data__", t("secret")),
        ("allow_tgt", t("db1")),
    ]);
    mine(
        "web2",
        "_mine",
        vec![(
            "data",
            map(vec![
                ("test.ping", Value::Boolean(true)),
                ("net.ip", acl_entry),
            ]),
        )],
    );
    // No `data`: Salt's `__verify_load` refuses it and `_mine` answers `{}`.
    assert_eq!(mine("web1", "_mine", vec![]), map(vec![]), "no data");

    let get = |who: &str, tgt: &str, fun: Value, ty: &str| {
        mine(
            who,
            "_mine_get",
            vec![("tgt", t(tgt)), ("fun", fun), ("tgt_type", t(ty))],
        )
    };
    // One function: {minion: data}; allowed by web.* -> test\..*
    assert_eq!(
        get("web2", "web*", t("test.ping"), "glob"),
        map(vec![
            ("web1", Value::Boolean(true)),
            ("web2", Value::Boolean(true))
        ])
    );
    // net.ip is refused to web.* by mine_get; db1 may read it, web2's entry only for db1.
    assert_eq!(get("web2", "*", t("net.ip"), "glob"), map(vec![]));
    assert_eq!(
        get("db1", "*", t("net.ip"), "glob"),
        map(vec![("web1", t("10.0.0.1")), ("web2", t("secret"))])
    );
    // Several functions: {fun: {minion: data}}; compound target.
    assert_eq!(
        get("db1", "web1 or L@web2", t("test.ping,net.ip"), "compound"),
        map(vec![
            (
                "test.ping",
                map(vec![
                    ("web1", Value::Boolean(true)),
                    ("web2", Value::Boolean(true))
                ])
            ),
            (
                "net.ip",
                map(vec![("web1", t("10.0.0.1")), ("web2", t("secret"))])
            ),
        ])
    );
    // Delete one function, flush all.
    assert_eq!(
        mine("web1", "_mine_delete", vec![("fun", t("net.ip"))]),
        Value::Boolean(true)
    );
    assert_eq!(
        get("db1", "web1", t("net.ip"), "glob"),
        map(vec![]),
        "deleted"
    );
    assert_eq!(mine("web1", "_mine_flush", vec![]), Value::Boolean(true));
    assert_eq!(get("db1", "web1", t("test.ping"), "glob"), map(vec![]));
    assert!(dir.path().join("cache/minions/web2/mine.p").is_file());
}

/// Hostile loads from a signed-in minion, each answered with Salt's exact reply for it (one
/// `RequestError`, one mapping): bare strings before dispatch, the command's "refused" value
/// (sealed) when a key Salt requires is missing, `""` (sealed, Salt's reply when its handler
/// raises) for a value of the wrong type. Nothing is stored for a refused return.
#[test]
fn hostile_loads_get_salts_exact_reply() {
    let dir = tempfile::tempdir().unwrap();
    let s = shared(dir.path(), "auto_accept: True\n");
    let m = Minion::new("h1");
    let reply = handle(&s, &m.auth("0123456789abcdef0123456789abcdef", None, 3));
    assert!(map_get(&open_signed(&s, &reply), "session").is_some());
    let session = Crypticle::from_key_string(
        std::str::from_utf8(&std::fs::read(dir.path().join("cache/sessions/h1")).unwrap()).unwrap(),
    )
    .unwrap();
    let tok = m.key.x931_sign(b"salt").unwrap();
    let nonce = "33333333333333333333333333333333";
    // The reply: a bare string, or the value sealed with the session key and nonce.
    let ask = |load: Vec<(Value, Value)>| -> Result<Value, Value> {
        let body = m.aes_request(&session, load, nonce, tok.clone());
        let reply = decode(&handle(&s, &body)).unwrap();
        // Sealed replies are raw msgpack strings (Salt's `use_bin_type=False`).
        match session.loads(&bytes(&reply), Some(nonce)) {
            Ok(plain) => Ok(decode(&plain).unwrap()),
            Err(_) => Err(reply),
        }
    };
    let kv = |k: &str, v: Value| (t(k), v);
    let empty = Value::Map(vec![]);

    // Before dispatch: bare strings.
    assert_eq!(
        ask(vec![kv("fun", t("x"))]),
        Err(t("Some exception handling minion payload")),
        "no cmd"
    );
    // A `_return` without `jid` (Salt's `store_job` ignores it): None, nothing stored.
    assert_eq!(
        ask(vec![
            kv("cmd", t("_return")),
            kv("return", Value::Boolean(true))
        ]),
        Ok(Value::Nil)
    );
    assert!(
        !dir.path()
            .join("cache/jobs")
            .read_dir()
            .unwrap()
            .any(|e| { e.unwrap().path().join("h1").exists() })
    );
    // A `jid` that is not text: Salt's handler raises, `run_func` answers "".
    assert_eq!(
        ask(vec![
            kv("cmd", t("_return")),
            kv("return", Value::Boolean(true)),
            kv("jid", Value::from(5)),
        ]),
        Ok(t(""))
    );
    // `_pillar` without grains: False; grains that are not a map: "".
    assert_eq!(
        ask(vec![kv("cmd", t("_pillar")), kv("ver", t("2"))]),
        Ok(Value::Boolean(false))
    );
    assert_eq!(
        ask(vec![
            kv("cmd", t("_pillar")),
            kv("grains", Value::Array(vec![])),
        ]),
        Ok(t(""))
    );
    // `_mine*` without their keys: {} (`__verify_load`).
    assert_eq!(
        ask(vec![kv("cmd", t("_mine_get")), kv("tgt", t("*"))]),
        Ok(empty.clone())
    );
    assert_eq!(ask(vec![kv("cmd", t("_mine_delete"))]), Ok(empty.clone()));
    assert_eq!(ask(vec![kv("cmd", t("_mine"))]), Ok(empty.clone()));
    // `_minion_event` without tag/data: None; a batch event without a tag: "".
    assert_eq!(
        ask(vec![
            kv("cmd", t("_minion_event")),
            kv("data", empty.clone())
        ]),
        Ok(Value::Nil)
    );
    assert_eq!(
        ask(vec![
            kv("cmd", t("_minion_event")),
            kv(
                "events",
                Value::Array(vec![Value::Map(vec![kv("data", empty.clone())])])
            ),
        ]),
        Ok(t(""))
    );
    // A well-formed event still gets None.
    assert_eq!(
        ask(vec![
            kv("cmd", t("_minion_event")),
            kv("tag", t("a/b")),
            kv("data", empty.clone()),
        ]),
        Ok(Value::Nil)
    );

    // The channel fields: a NUL in the id, a tok that is not bytes.
    let body = |load: Vec<(Value, Value)>, id: &str| {
        let ct = session.dumps(&encode(&Value::Map(load)), None);
        encode(&Value::Map(vec![
            kv("enc", t("aes")),
            kv("load", Value::Binary(ct)),
            kv("version", Value::from(3)),
            kv("id", t(id)),
        ]))
    };
    let nul = body(vec![kv("cmd", t("_return")), kv("id", t("h1\0x"))], "h1");
    assert_eq!(
        decode(&handle(&s, &nul)).unwrap(),
        t("bad load: id contains a null byte")
    );
    let int_tok = body(
        vec![
            kv("cmd", t("_return")),
            kv("tok", Value::from(1)),
            kv("id", t("h1")),
        ],
        "h1",
    );
    assert_eq!(decode(&handle(&s, &int_tok)).unwrap(), t("bad load"));

    // The envelope: a clear load that is not a map, an aes load that is not bytes, an
    // unknown enc, a body that is not msgpack.
    let env = |enc: &str, load: Value| {
        encode(&Value::Map(vec![
            kv("enc", t(enc)),
            kv("load", load),
            kv("version", Value::from(3)),
        ]))
    };
    assert_eq!(
        decode(&handle(&s, &env("clear", Value::from(1)))).unwrap(),
        t("payload and load must be a dict")
    );
    assert_eq!(
        decode(&handle(&s, &env("aes", empty.clone()))).unwrap(),
        t("bad load")
    );
    assert_eq!(
        decode(&handle(&s, &env("rot13", empty.clone()))).unwrap(),
        t("bad load")
    );
    assert_eq!(decode(&handle(&s, &[0xc1])).unwrap(), t("bad load"));
}
