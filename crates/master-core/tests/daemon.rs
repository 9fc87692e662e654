//! The daemon in-process over real sockets (no Python): `run()` with a shutdown channel, a
//! ZeroMQ REQ client doing `ping` and `_auth`, a SUB client receiving the publish, and the
//! local `salt` protocol on the Unix socket.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use rmpv::Value;
use salt_client::local::{LocalEvent, LocalRequest, PublishRequest, read_frame, write_frame};
use salt_compat::map_get;
use salt_config::{LoadOptions, MasterConfig};
use salt_pki::{Crypticle, EncAlgo, PrivateKey};
use salt_proto::{decode, encode};
use salt_transport::{ReqClient, ReqOptions, SubClient, SubEvent, SubOptions, tcp_endpoint};

fn t(s: &str) -> Value {
    Value::from(s)
}

fn bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Binary(b) => b.clone(),
        other => panic!("not bytes: {other:?}"),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn local(sock: &std::path::Path, tgt: &str, tgt_type: &str, timeout: u64) -> Vec<LocalEvent> {
    let mut stream = tokio::net::UnixStream::connect(sock).await.unwrap();
    let req = PublishRequest {
        tgt: tgt.into(),
        tgt_type: tgt_type.into(),
        fun: "test.ping".into(),
        arg: vec![],
        timeout,
        ret: String::new(),
        gather_job_timeout: Some(1),
        ..Default::default()
    };
    write_frame(&mut stream, &LocalRequest::Publish(req))
        .await
        .unwrap();
    let mut out = Vec::new();
    while let Some(ev) = read_frame::<_, LocalEvent>(&mut stream).await.unwrap() {
        out.push(ev);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_round_trip_and_clean_shutdown() {
    let dir = tempfile::Builder::new()
        .prefix("md")
        .tempdir_in("/tmp")
        .unwrap();
    let r = dir.path().display();
    let (pub_port, ret_port) = (free_port(), free_port());
    let yaml = format!(
        "id: inproc\npki_dir: {r}/pki\ncachedir: {r}/cache\nsock_dir: {r}/sock\n\
         interface: 127.0.0.1\npublish_port: {pub_port}\nret_port: {ret_port}\nworker_threads: 2\n\
         loop_interval: 1\n"
    );
    let cfg = MasterConfig::from_yaml_str(&yaml, &LoadOptions::new(dir.path()))
        .unwrap()
        .config;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(salt_master_core::run(cfg, async {
        let _ = stop_rx.await;
    }));
    let sock = dir
        .path()
        .join("sock")
        .join(salt_client::local::SOCKET_NAME);
    for _ in 0..200 {
        if sock.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(sock.exists(), "local socket never appeared");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&sock).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);

    let req =
        ReqClient::connect(&tcp_endpoint("127.0.0.1", ret_port), ReqOptions::default()).unwrap();
    let ask = |body: Vec<u8>| req.request(body, Duration::from_secs(10));

    // Clear ping is echoed.
    let ping = Value::Map(vec![(t("cmd"), t("ping")), (t("id"), t("m1"))]);
    let body = encode(&Value::Map(vec![
        (t("enc"), t("clear")),
        (t("load"), ping.clone()),
        (t("version"), Value::from(3)),
    ]));
    assert_eq!(decode(&ask(body).await.unwrap()).unwrap(), ping);

    // A new key pends; accept it as salt-key would; sign in and take the publish key.
    let key = PrivateKey::generate(2048).unwrap();
    let pem = salt_pki::clean_key(&key.public_key().to_pem());
    let auth = |nonce: &str| {
        encode(&Value::Map(vec![
            (t("enc"), t("clear")),
            (
                t("load"),
                Value::Map(vec![
                    (t("cmd"), t("_auth")),
                    (t("id"), t("m1")),
                    (t("nonce"), t(nonce)),
                    (t("pub"), t(&pem)),
                ]),
            ),
            (t("version"), Value::from(3)),
        ]))
    };
    let reply = decode(&ask(auth("a0000000000000000000000000000001")).await.unwrap()).unwrap();
    let inner = decode(&bytes(map_get(&reply, "load").unwrap())).unwrap();
    assert_eq!(map_get(&inner, "ret"), Some(&Value::Boolean(true)));
    std::fs::rename(
        dir.path().join("pki/minions_pre/m1"),
        dir.path().join("pki/minions/m1"),
    )
    .unwrap();
    let reply = decode(&ask(auth("a0000000000000000000000000000002")).await.unwrap()).unwrap();
    let inner = decode(&bytes(map_get(&reply, "load").unwrap())).unwrap();
    let aes = key
        .decrypt_oaep(EncAlgo::OaepSha1, &bytes(map_get(&inner, "aes").unwrap()))
        .unwrap();
    let aes = Crypticle::from_key_string(std::str::from_utf8(&aes).unwrap()).unwrap();

    // Subscribe, then publish through the local socket: the job reaches SUB, m1 is missing.
    let opts = SubOptions {
        topics: vec![Vec::new()],
        ..SubOptions::default()
    };
    let (_sub, mut events) =
        SubClient::connect(&tcp_endpoint("127.0.0.1", pub_port), opts).unwrap();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .unwrap()
        {
            Some(SubEvent::Connected) => break,
            Some(_) => {}
            None => panic!("SUB closed"),
        }
    }
    // PUB/SUB slow joiner: the subscription must reach the publisher first.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let evs = local(&sock, "nomatch*", "glob", 1).await;
    assert!(
        matches!(&evs[..], [LocalEvent::Error { message }] if message.contains("No minions matched"))
    );

    let evs = local(&sock, "m*", "glob", 1).await;
    let jid = match &evs[..] {
        [
            LocalEvent::Published {
                jid,
                minions: Some(m),
            },
            LocalEvent::Done {
                missing,
                not_connected,
            },
        ] => {
            assert_eq!(m, &vec!["m1".to_string()]);
            // Signed in above, did not answer `find_job`: "[No response]".
            assert_eq!(missing, &vec!["m1".to_string()]);
            assert!(not_connected.is_empty());
            jid.clone()
        }
        other => panic!("unexpected events {other:?}"),
    };
    let frames = loop {
        match tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .unwrap()
        {
            Some(SubEvent::Message(f)) => break f,
            Some(_) => {}
            None => panic!("SUB closed"),
        }
    };
    assert_eq!(frames.len(), 1);
    let payload = decode(&frames[0]).unwrap();
    assert_eq!(map_get(&payload, "enc"), Some(&t("aes")));
    assert_eq!(map_get(&payload, "sig_algo"), Some(&t("PKCS1v15-SHA1")));
    let ct = bytes(map_get(&payload, "load").unwrap());
    let master_pub = salt_pki::files::read_public_key(&dir.path().join("pki/master.pub")).unwrap();
    master_pub
        .verify(
            salt_pki::SigAlgo::Pkcs1v15Sha1,
            &ct,
            &bytes(map_get(&payload, "sig").unwrap()),
        )
        .unwrap();
    let job = decode(&aes.loads(&ct, None).unwrap()).unwrap();
    let keys: Vec<&str> = job
        .as_map()
        .unwrap()
        .iter()
        .map(|(k, _)| k.as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "fun", "arg", "tgt", "jid", "ret", "tgt_type", "user", "serial"
        ]
    );
    assert_eq!(map_get(&job, "jid"), Some(&t(&jid)));
    assert_eq!(map_get(&job, "user"), Some(&t("root")));
    assert_eq!(map_get(&job, "serial"), Some(&Value::from(1)));
    assert!(
        salt_master_core::job_cache::local_cache::jid_dir(
            &dir.path().join("cache/jobs"),
            &jid,
            salt_pki::HashType::Sha256
        )
        .join(".load.p")
        .is_file()
    );

    // Clean shutdown: run() returns Ok and removes the socket.
    stop_tx.send(()).unwrap();
    let res = tokio::time::timeout(Duration::from_secs(15), daemon)
        .await
        .unwrap()
        .unwrap();
    assert!(res.is_ok(), "{res:?}");
    assert!(!sock.exists());
}
