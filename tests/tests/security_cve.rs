//! Salt's master-side CVE history replayed over the wire against our master (issue 7,
//! item 1). An attacker speaks raw ZeroMQ REQ to the request port (4506) with msgpack
//! envelopes, as the published exploits do; each attack must get an error reply (or
//! nothing), leave no trace (no file created or changed under the master's root, no job
//! published) and leave the master serving. The table in docs/security.md maps each CVE to
//! the test here or elsewhere that covers it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rmpv::Value;
use salt_integration_tests::e2e_support::Cluster;
use salt_proto::ValueExt as _;

/// An unauthenticated peer on the request port.
struct Attacker {
    ctx: zmq::Context,
    endpoint: String,
}

impl Attacker {
    fn new(ret_port: u16) -> Self {
        Attacker {
            ctx: zmq::Context::new(),
            endpoint: format!("tcp://127.0.0.1:{ret_port}"),
        }
    }

    /// One request on a fresh REQ socket; the reply, or `None` after 10 s.
    fn send_raw(&self, frame: &[u8]) -> Option<Vec<u8>> {
        let s = self.ctx.socket(zmq::REQ).unwrap();
        s.set_linger(0).unwrap();
        s.set_rcvtimeo(10_000).unwrap();
        s.connect(&self.endpoint).unwrap();
        s.send(frame, 0).unwrap();
        s.recv_bytes(0).ok()
    }

    fn send(&self, envelope: &Value) -> Option<Value> {
        let reply = self.send_raw(&salt_proto::encode(envelope))?;
        Some(salt_proto::decode(&reply).expect("the master replies msgpack"))
    }

    /// The master still serves: a clear `ping` comes back.
    fn master_serves(&self) {
        let ping = clear(vec![("cmd", s("ping"))]);
        let reply = self.send(&ping).expect("the master still answers");
        assert_eq!(
            salt_compat::map_get(&reply, "cmd"),
            Some(&s("ping")),
            "{reply:?}"
        );
    }
}

fn s(v: &str) -> Value {
    Value::from(v)
}

fn clear(load: Vec<(&str, Value)>) -> Value {
    clear_v(load, 3)
}

fn clear_v(load: Vec<(&str, Value)>, version: i64) -> Value {
    Value::Map(vec![
        (s("enc"), s("clear")),
        (
            s("load"),
            Value::Map(load.into_iter().map(|(k, v)| (s(k), v)).collect()),
        ),
        (s("version"), Value::from(version)),
    ])
}

/// Every file under `root` with its size and modification time (logs excluded: the master
/// logs the refusals).
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, (u64, std::time::SystemTime)>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(md) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if md.is_dir() {
                walk(&p, out);
            } else if p
                .extension()
                .is_none_or(|x| x != "log" && x != "err" && x != "out")
            {
                out.insert(p, (md.len(), md.modified().unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, &mut out);
    out
}

/// An error string, an empty map, or an auth reply whose (possibly signed, msgpack-in-bytes)
/// load has `ret` other than `True`.
fn is_refusal(reply: &Value) -> bool {
    let ret_not_true = |load: &Value| {
        salt_compat::map_get(load, "ret").is_some_and(|r| r != &Value::Boolean(true))
    };
    match reply {
        Value::String(t) => t.as_str().is_some_and(|t| t.contains("bad load")),
        Value::Map(m) if m.is_empty() => true,
        Value::Map(_) => match salt_compat::map_get(reply, "load") {
            Some(Value::String(b)) => {
                salt_proto::decode(b.as_bytes()).is_ok_and(|l| ret_not_true(&l))
            }
            Some(Value::Binary(b)) => salt_proto::decode(b).is_ok_and(|l| ret_not_true(&l)),
            Some(load) => ret_not_true(load),
            None => ret_not_true(reply),
        },
        _ => false,
    }
}

fn auth_load(id: &str, pub_pem: &str, nonce: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("cmd", s("_auth")),
        ("id", s(id)),
        ("nonce", s(nonce)),
        ("enc_algo", s("OAEP-SHA1")),
        ("sig_algo", s("PKCS1v15-SHA1")),
        ("pub", s(pub_pem)),
    ]
}

#[test]
fn cve_replays_fail_and_leave_no_trace() {
    let mut c = Cluster::new(|m| m).unwrap();
    c.start_master().unwrap();
    let a = Attacker::new(c.ports().1);
    a.master_serves();
    let root = c.root().join("master");
    let before = snapshot(&root);
    let jobs_before = job_count(&c.cachedir().join("jobs"));

    // CVE-2020-11651: internal functions reachable unauthenticated (ClearFuncs exposed
    // _prep_auth_info, _send_pub, wheel/runner). Ours answers Salt's exposed clear commands
    // through salt-eauth, each refusing this load as Salt's master does, and `{}` to the rest.
    let user_refused = |reply: &Value| {
        reply
            .get("error")
            .and_then(|e| e.get("name"))
            .and_then(Value::as_str)
            == Some("UserAuthenticationError")
    };
    for cmd in [
        "_prep_auth_info",
        "_send_pub",
        "_send_ssh_pub",
        "wheel",
        "runner",
        "publish",
        "mk_token",
        "get_token",
        "_file_recv",
        "_return",
        "_minion_event",
        "_pillar",
    ] {
        let reply = a
            .send(&clear(vec![
                ("cmd", s(cmd)),
                ("fun", s("cmd.run")),
                ("tgt", s("*")),
                ("arg", Value::Array(vec![s("touch /tmp/pwned-by-11651")])),
                ("id", s("attacker")),
                ("jid", s("20200101000000000000")),
                ("path", s("../../../../tmp/pwned-11651")),
            ]))
            .expect("a reply");
        match cmd {
            // No key, no eauth, no token: Salt's refusal of a "user" caller.
            "wheel" | "runner" => assert!(user_refused(&reply), "clear {cmd}: {reply:?}"),
            // No `user`: Salt's handler raises; its request server's answer.
            "publish" => assert_eq!(reply, s("Some exception handling minion payload")),
            // No credentials: Salt's `""` and `False`.
            "mk_token" => assert_eq!(reply, s(""), "clear {cmd}: {reply:?}"),
            "get_token" => assert_eq!(reply, Value::Boolean(false), "clear {cmd}: {reply:?}"),
            _ => assert_eq!(reply, Value::Map(vec![]), "clear {cmd}: {reply:?}"),
        }
    }
    // A full publish with a wrong root key, and with none: Salt's AuthenticationError.
    for key in [Some("d3Jvbmcgcm9vdCBrZXk="), None] {
        let mut load = vec![
            ("cmd", s("publish")),
            ("tgt", s("*")),
            ("tgt_type", s("glob")),
            ("fun", s("cmd.run")),
            ("arg", Value::Array(vec![s("touch /tmp/pwned-by-11651")])),
            ("user", s("root")),
            ("ret", s("")),
            ("jid", s("")),
            ("kwargs", Value::Map(vec![])),
        ];
        if let Some(k) = key {
            load.push(("key", s(k)));
        }
        let reply = a.send(&clear(load)).expect("a reply");
        let error = reply.get("error").expect("an error");
        assert_eq!(
            error.get("name").and_then(Value::as_str),
            Some("AuthenticationError"),
            "publish with key {key:?}: {reply:?}"
        );
        assert_eq!(
            error.get("message").and_then(Value::as_str),
            Some("Authentication error occurred."),
            "{reply:?}"
        );
    }
    a.master_serves();

    // Token guessing: unknown tokens (random, short, a path) get Salt's answers, `{}` from
    // `get_token` (`LoadAuth.get_tok`) and an AuthenticationError for a publish; nothing
    // outside `token_dir` is read (the traversal names an existing file; Salt's `localfs`
    // store refuses it with `clean_path`, ours opens lowercase-hex names only).
    let tokens = [
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef".to_owned(),
        "deadbeef".to_owned(),
        "../../../../etc/passwd".to_owned(),
        format!("{:x}", std::process::id()).repeat(16),
        String::new(),
    ];
    for token in &tokens {
        let reply = a
            .send(&clear(vec![("cmd", s("get_token")), ("token", s(token))]))
            .expect("a reply");
        assert_eq!(reply, Value::Map(vec![]), "get_token {token:?}: {reply:?}");
        let reply = a
            .send(&clear(vec![
                ("cmd", s("publish")),
                ("tgt", s("*")),
                ("tgt_type", s("glob")),
                ("fun", s("test.ping")),
                ("arg", Value::Array(vec![])),
                ("user", s("root")),
                ("ret", s("")),
                ("jid", s("")),
                ("kwargs", Value::Map(vec![(s("token"), s(token))])),
            ]))
            .expect("a reply");
        let name = reply
            .get("error")
            .and_then(|e| e.get("name"))
            .and_then(Value::as_str);
        assert_eq!(
            name,
            Some("AuthenticationError"),
            "token {token:?}: {reply:?}"
        );
    }
    a.master_serves();

    // An oversized clear publish (3 MiB of arguments) without a key: refused as any other,
    // nothing published, the master serving.
    let reply = a
        .send(&clear(vec![
            ("cmd", s("publish")),
            ("tgt", s("*")),
            ("tgt_type", s("glob")),
            ("fun", s("cmd.run")),
            ("arg", Value::Array(vec![s(&"x".repeat(3 << 20))])),
            ("user", s("root")),
            ("ret", s("")),
            ("jid", s("")),
            ("kwargs", Value::Map(vec![])),
        ]))
        .expect("a reply");
    let name = reply
        .get("error")
        .and_then(|e| e.get("name"))
        .and_then(Value::as_str);
    assert_eq!(
        name,
        Some("AuthenticationError"),
        "oversized publish: {reply:?}"
    );
    a.master_serves();

    // CVE-2020-11652 / CVE-2024-38824: path traversal through minion ids (and paths).
    let key = salt_pki::PrivateKey::generate(2048).unwrap();
    let pem = salt_pki::clean_key(&key.public_key().to_pem());
    for (i, id) in [
        "../../../../tmp/pwned-11652",
        "a/b",
        "..",
        ".",
        "x\0y",
        "..\\evil",
        "",
    ]
    .iter()
    .enumerate()
    {
        let nonce = format!("{i:032x}");
        let reply = a
            .send(&clear(auth_load(id, &pem, &nonce)))
            .expect("a reply");
        assert!(is_refusal(&reply), "id {id:?}: {reply:?}");
    }
    assert!(!Path::new("/tmp/pwned-11652").exists());
    a.master_serves();

    // Weak or broken minion keys: a 1024-bit RSA key and a non-PEM "key" are refused
    // before anything is written (Salt would pend them).
    let weak = Command::new("openssl")
        .args(["genrsa", "1024"])
        .output()
        .expect("openssl");
    let mut rsa = Command::new("openssl")
        .args(["rsa", "-pubout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    rsa.stdin.take().unwrap().write_all(&weak.stdout).unwrap();
    let weak_pub = String::from_utf8(rsa.wait_with_output().unwrap().stdout).unwrap();
    assert!(weak_pub.contains("BEGIN PUBLIC KEY"), "{weak_pub}");
    for (id, key) in [("weakkey", weak_pub.as_str()), ("notpem", "hello")] {
        let reply = a
            .send(&clear(auth_load(id, key, &"e".repeat(32))))
            .expect("a reply");
        assert!(is_refusal(&reply), "{id}: {reply:?}");
        assert!(
            !c.pki().join("minions_pre").join(id).exists(),
            "{id} not pended"
        );
    }
    a.master_serves();

    // Protocol downgrade: a version below minimum_auth_version (3) is refused.
    let reply = a
        .send(&clear_v(auth_load("downgrade", &pem, &"d".repeat(32)), 2))
        .expect("a reply");
    assert_eq!(reply, s("bad load"), "{reply:?}");

    // CVE-2024-38822: a request for a minion without a session (no token, no key) — an
    // aes envelope naming an accepted-looking id is refused, nothing stored.
    let forged = Value::Map(vec![
        (s("enc"), s("aes")),
        (s("load"), Value::Binary(vec![0u8; 96])),
        (s("version"), Value::from(3)),
        (s("id"), s("ghost")),
    ]);
    assert_eq!(a.send(&forged).expect("a reply"), s("bad load"));
    a.master_serves();

    // Hostile frames: garbage, truncated msgpack, wrong types, invalid UTF-8, a 4 MiB frame.
    for frame in [
        b"\xff\xfe garbage".to_vec(),
        vec![0x82, 0xa3, b'e', b'n'],
        salt_proto::encode(&Value::Array(vec![s("enc"), s("clear")])),
        salt_proto::encode(&Value::Map(vec![
            (s("enc"), Value::from(7)),
            (s("load"), Value::Nil),
        ])),
        salt_proto::encode(&clear(vec![("cmd", Value::Binary(vec![0xc3, 0x28]))])),
        salt_proto::encode(&clear(vec![("cmd", s("_auth")), ("id", Value::from(12))])),
        vec![0xc6, 0, 0x40, 0, 0]
            .into_iter()
            .chain(vec![0u8; 4 << 20])
            .collect(),
    ] {
        // An error string, an empty map or nothing; never a crash.
        if let Some(reply) = a.send_raw(&frame) {
            let v = salt_proto::decode(&reply).expect("msgpack reply");
            assert!(
                matches!(&v, Value::String(_)) || v == Value::Map(vec![]),
                "{v:?}"
            );
        }
        a.master_serves();
    }

    // No trace: no file created or changed, no job published.
    let after = snapshot(&root);
    let changed: Vec<_> = after
        .iter()
        .filter(|(p, m)| before.get(*p) != Some(m))
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert!(changed.is_empty(), "files written by attacks: {changed:?}");
    let jobs_after = job_count(&c.cachedir().join("jobs"));
    assert_eq!(jobs_before, jobs_after, "no job published");
    assert!(!c.master().unwrap().output().contains("Published job"));
}

/// CVE-2022-22935 / CVE-2022-22936 / CVE-2024-38823: a captured sign-in replayed. The first
/// `_auth` is legitimate (its key pends); the identical bytes sent again are refused by the
/// nonce guard and change nothing.
#[test]
fn replayed_sign_in_is_refused() {
    let mut c = Cluster::new(|m| m).unwrap();
    c.start_master().unwrap();
    let a = Attacker::new(c.ports().1);
    let key = salt_pki::PrivateKey::generate(2048).unwrap();
    let pem = salt_pki::clean_key(&key.public_key().to_pem());
    let captured = salt_proto::encode(&clear(auth_load("victim", &pem, &"5".repeat(32))));
    let first = salt_proto::decode(&a.send_raw(&captured).unwrap()).unwrap();
    assert_ne!(
        first,
        s("bad load"),
        "the genuine request is served: {first:?}"
    );
    let pending = c.pki().join("minions_pre/victim");
    assert!(pending.is_file());
    let before = snapshot(&c.root().join("master"));
    for _ in 0..3 {
        let again = salt_proto::decode(&a.send_raw(&captured).unwrap()).unwrap();
        assert_eq!(again, s("bad load"), "replay refused");
    }
    let after = snapshot(&c.root().join("master"));
    assert_eq!(before, after, "a replay writes nothing");
    a.master_serves();
}

/// Job directories in Salt's local_cache layout (`jobs/<h[:2]>/<h[2:]>/`).
fn job_count(jobs: &Path) -> usize {
    std::fs::read_dir(jobs).map_or(0, |d| {
        d.flatten()
            .filter_map(|t| std::fs::read_dir(t.path()).ok())
            .map(Iterator::count)
            .sum()
    })
}
