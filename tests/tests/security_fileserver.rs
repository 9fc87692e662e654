//! CVE-2020-11652 and its family against our file server, over the wire: a signed-in
//! (auto-accepted) minion identity asks for files outside `file_roots` every way Salt's
//! history knows (`..`, absolute paths, NUL bytes, a 1 MiB path, `?saltenv=` and `__env__`
//! names that would move the root, a symlink out of the root with
//! `fileserver_followsymlinks: False`, negative and huge `loc`, `cp.push` paths out of the
//! cache). Every reply must be Salt's "not found"/error shape, carry no byte of the secret,
//! nothing may be written outside the push cache, and the master must keep serving.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rmpv::Value;
use salt_compat::map_get;
use salt_integration_tests::Yaml;
use salt_integration_tests::e2e_support::Cluster;
use salt_pki::{Crypticle, PrivateKey};
use salt_proto::auth_minion::{AuthClient, AuthOutcome, AuthSettings};
use salt_proto::{decode, encode};

const SECRET: &[u8] = b"TOP-SECRET-OUTSIDE-THE-ROOTS";

fn s(v: &str) -> Value {
    Value::from(v)
}

/// A minion identity signed in over ZeroMQ REQ.
struct Minion {
    sock: zmq::Socket,
    id: String,
    session: Crypticle,
    tok: Vec<u8>,
    n: u64,
}

impl Minion {
    fn sign_in(ret_port: u16, id: &str) -> Self {
        let ctx = zmq::Context::new();
        let sock = ctx.socket(zmq::REQ).unwrap();
        sock.set_linger(0).unwrap();
        sock.set_rcvtimeo(20_000).unwrap();
        sock.connect(&format!("tcp://127.0.0.1:{ret_port}"))
            .unwrap();
        let key = PrivateKey::generate(2048).unwrap();
        let tok = key.x931_sign(b"salt").unwrap();
        let mut client = AuthClient::new(AuthSettings::new(id), key, None, None);
        let (req, pending) = client.build_request(&"a".repeat(32));
        sock.send(encode(&req), 0).unwrap();
        let reply = decode(&sock.recv_bytes(0).unwrap()).unwrap();
        let AuthOutcome::Accepted(creds) = client.handle_reply(&pending, &reply).unwrap() else {
            panic!("not accepted");
        };
        Self {
            sock,
            id: id.to_owned(),
            session: creds.session,
            tok,
            n: 0,
        }
    }

    /// One AES request; the decrypted reply.
    fn ask(&mut self, mut load: Vec<(Value, Value)>) -> Value {
        self.n += 1;
        let nonce = format!("{:032x}", self.n);
        load.push((s("nonce"), s(&nonce)));
        load.push((s("tok"), Value::Binary(self.tok.clone())));
        load.push((s("id"), s(&self.id)));
        let ct = self.session.dumps(&encode(&Value::Map(load)), None);
        let env = Value::Map(vec![
            (s("enc"), s("aes")),
            (s("load"), Value::Binary(ct)),
            (s("version"), Value::from(3)),
            (s("id"), s(&self.id)),
        ]);
        self.sock.send(encode(&env), 0).unwrap();
        let raw = self.sock.recv_bytes(0).expect("the master answers");
        assert!(
            !raw.windows(SECRET.len()).any(|w| w == SECRET),
            "secret in the wire reply"
        );
        let outer = decode(&raw).unwrap();
        let ct = match &outer {
            Value::Binary(b) => b.clone(),
            Value::String(t) => t.as_bytes().to_vec(),
            other => panic!("not an encrypted reply: {other:?}"),
        };
        let plain = self.session.loads(&ct, Some(&nonce)).unwrap();
        assert!(
            !plain.windows(SECRET.len()).any(|w| w == SECRET),
            "secret served"
        );
        decode(&plain).unwrap()
    }
}

fn req(cmd: &str, path: Value, extra: &[(&str, Value)]) -> Vec<(Value, Value)> {
    let mut l = vec![
        (s("cmd"), s(cmd)),
        (s("path"), path),
        (s("saltenv"), s("base")),
    ];
    l.extend(extra.iter().map(|(k, v)| (s(k), v.clone())));
    l
}

#[test]
fn hostile_file_requests_read_and_write_nothing_outside_the_roots() {
    let mut c = Cluster::new(|m| m).unwrap();
    let root = c.root().to_path_buf();
    let base = root.join("srv/base");
    let envs = root.join("srv/envs");
    let outside = root.join("outside");
    std::fs::create_dir_all(base.join("files")).unwrap();
    std::fs::create_dir_all(envs.join("dev")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(base.join("files/ok.txt"), b"fine\n").unwrap();
    std::fs::write(outside.join("secret"), SECRET).unwrap();
    std::fs::write(root.join("srv/secret"), SECRET).unwrap();
    std::os::unix::fs::symlink(outside.join("secret"), base.join("files/escape")).unwrap();
    std::os::unix::fs::symlink(&outside, base.join("outdir")).unwrap();
    let roots = format!(
        "{{base: ['{}'], __env__: ['{}/__env__']}}",
        base.display(),
        envs.display()
    );
    c.rewrite_master_conf(|m| {
        m.auto_accept(true)
            .set("file_roots", Yaml::Raw(roots))
            .set("fileserver_followsymlinks", false)
            .set("file_recv", true)
            .set("file_recv_max_size", 1u32)
    })
    .unwrap();
    c.start_master().unwrap();
    let mut m = Minion::sign_in(c.ports().1, "evil");
    // Sanity: a legitimate file is served.
    let ok = m.ask(req("_file_hash", s("files/ok.txt"), &[]));
    assert!(map_get(&ok, "hsum").is_some(), "{ok:?}");

    let not_found = Value::Map(vec![(s("path"), s("")), (s("rel"), s(""))]);
    let huge = "a/".repeat(512 * 1024);
    let hostile: Vec<Value> = vec![
        s("../outside/secret"),
        s("../../outside/secret"),
        s("files/../../../outside/secret"),
        s("..%2Foutside/secret"),
        s(&format!("{}", outside.join("secret").display())),
        s("/etc/passwd"),
        s("files/escape"),
        s("outdir/secret"),
        s("files/ok.txt\0../../outside/secret"),
        s("\0"),
        s(&huge),
        s("x?saltenv=../.."),
        s("secret?saltenv=.."),
        s("|../outside/secret"),
        s("files/ok.txt?index=-5"),
        Value::from(42),
        Value::Binary(vec![0xff, 0xfe, b'/', b'.', b'.']),
    ];
    for p in &hostile {
        let shown: String = format!("{p}").chars().take(60).collect();
        assert_eq!(
            m.ask(req("_file_find", p.clone(), &[])),
            not_found,
            "{shown}"
        );
        assert_eq!(m.ask(req("_file_hash", p.clone(), &[])), s(""), "{shown}");
        let r = m.ask(req("_serve_file", p.clone(), &[("loc", Value::from(0))]));
        assert_eq!(map_get(&r, "dest"), Some(&s("")), "{shown}: {r:?}");
    }
    // __env__ names that would move the root.
    for env in ["..", "../..", "dev/../..", "\0", ""] {
        let l = vec![(s("cmd"), s("_file_list")), (s("saltenv"), s(env))];
        assert_eq!(m.ask(l), Value::Array(vec![]), "{env:?}");
        let mut l = req("_file_find", s("secret"), &[]);
        l[2].1 = s(env);
        assert_eq!(m.ask(l), not_found, "{env:?}");
    }
    // loc out of range: Salt's error string, or empty data past the end.
    let r = m.ask(req(
        "_serve_file",
        s("files/ok.txt"),
        &[("loc", Value::from(-1))],
    ));
    assert_eq!(r, s(""));
    let r = m.ask(req(
        "_serve_file",
        s("files/ok.txt"),
        &[("loc", Value::from(u64::MAX))],
    ));
    assert_eq!(map_get(&r, "dest"), Some(&s("files/ok.txt")));
    // cp.push out of the cache.
    let cache = c.cachedir().join("minions/evil/files");
    for path in [
        vec![s(".."), s(".."), s(".."), s("pwned")],
        vec![s("/tmp"), s("pwned")],
        vec![s("a/../../../pwned")],
        vec![s("a\0b")],
    ] {
        let l = vec![
            (s("cmd"), s("_file_recv")),
            (s("path"), Value::Array(path.clone())),
            (s("loc"), Value::from(0)),
            (s("data"), Value::Binary(b"x".to_vec())),
        ];
        assert_eq!(m.ask(l), Value::Boolean(false), "{path:?}");
    }
    let over = vec![
        (s("cmd"), s("_file_recv")),
        (s("path"), Value::Array(vec![s("big")])),
        (s("loc"), Value::from(1024 * 1024)),
        (s("data"), Value::Binary(b"x".to_vec())),
    ];
    assert_eq!(m.ask(over), Value::Boolean(false));
    assert!(!root.join("pwned").exists() && !c.cachedir().join("pwned").exists());
    assert!(!std::path::Path::new("/tmp/pwned").exists());
    assert!(!cache.join("big").exists());
    // Still serving, and refusals logged.
    let ok = m.ask(req("_file_hash", s("files/ok.txt"), &[]));
    assert!(map_get(&ok, "hsum").is_some(), "{ok:?}");
    assert!(c.master().unwrap().output().contains("refused path"));
}
