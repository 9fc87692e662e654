//! Both halves of `_auth` against each other, each through a `salt_pki::KeyPairOps`: the
//! minion's `AuthClient` builds the request, the master's `auth_master` reads it, decides
//! and answers with `accept_reply` / `fail_reply`, the minion checks the reply. A counting
//! key pair shows every RSA operation goes through the trait (none is done in proto).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use salt_pki::{Crypticle, EncAlgo, HashType, KeyPairOps, PrivateKey, SigAlgo, Zeroizing};
use salt_proto::Value;
use salt_proto::auth_master::{self, AcceptKeys, AuthRequest, AuthRet, KeyFacts, Policy};
use salt_proto::auth_minion::{AuthClient, AuthError, AuthOutcome, AuthSettings};

/// A key pair that counts its private-key operations (the peer-key ones use the defaults).
#[derive(Clone)]
struct Counting {
    key: PrivateKey,
    decrypts: Arc<AtomicUsize>,
    signs: Arc<AtomicUsize>,
}

impl Counting {
    fn new(key: &PrivateKey) -> Self {
        Self {
            key: key.clone(),
            decrypts: Arc::default(),
            signs: Arc::default(),
        }
    }
}

impl KeyPairOps for Counting {
    fn public_text(&self) -> String {
        self.key.public_text()
    }
    fn decrypt(&self, alg: EncAlgo, ct: &[u8]) -> Result<Zeroizing<Vec<u8>>, salt_pki::Error> {
        self.decrypts.fetch_add(1, Ordering::Relaxed);
        self.key.decrypt(alg, ct)
    }
    fn sign(&self, alg: SigAlgo, msg: &[u8]) -> Result<Vec<u8>, salt_pki::Error> {
        self.signs.fetch_add(1, Ordering::Relaxed);
        KeyPairOps::sign(&self.key, alg, msg)
    }
}

fn master_answer(master: &Counting, request: &Value, policy: Policy, aes: &Crypticle) -> Value {
    let load = request.as_map().unwrap()[1].1.clone();
    let req = AuthRequest::from_load(&load).unwrap();
    let d = auth_master::decide(&req, &KeyFacts::default(), &policy);
    match d.outcome {
        Err(ret) => auth_master::fail_reply(master, &req, ret).unwrap(),
        Ok(()) => {
            let minion_pub = master.peer_key(&req.pub_key).unwrap();
            let digest = hex::encode(HashType::Sha256.digest(aes.key_string().as_bytes()));
            let aes_sig = master.key.x931_sign(digest.as_bytes()).unwrap();
            let session = Crypticle::generate();
            auth_master::accept_reply(
                master,
                &req,
                &minion_pub,
                &AcceptKeys {
                    pub_key: &master.public_text(),
                    publish_port: 4505,
                    pub_sig: None,
                    aes_key: aes.key_string(),
                    aes_sig: &aes_sig,
                    session_key: session.key_string(),
                },
            )
            .unwrap()
        }
    }
}

#[test]
fn both_halves_through_key_pair_ops() {
    let master_key = PrivateKey::generate(2048).unwrap();
    let minion_key = PrivateKey::generate(2048).unwrap();
    let master = Counting::new(&master_key);
    let minion = Counting::new(&minion_key);
    let aes = Crypticle::generate();
    let mut client = AuthClient::new(AuthSettings::new("m1"), minion.clone(), None, None);

    // Pending first: a signed `ret: True`.
    let (req, pending) = client.build_request("0123456789abcdef0123456789abcdef");
    let reply = master_answer(&master, &req, Policy::default(), &aes);
    let reply = salt_proto::decode(&salt_proto::encode(&reply)).unwrap();
    assert!(matches!(
        client.handle_reply(&pending, &reply),
        Ok(AuthOutcome::Retry)
    ));
    assert_eq!(master.signs.load(Ordering::Relaxed), 1);

    // Accepted (trust on first use), then again with the token the cached key allows.
    let accept = Policy {
        auto_sign: true,
        ..Policy::default()
    };
    for (round, nonce) in [
        "11111111111111111111111111111111",
        "22222222222222222222222222222222",
    ]
    .iter()
    .enumerate()
    {
        let (req, pending) = client.build_request(nonce);
        let has_token = req.as_map().unwrap()[1]
            .1
            .as_map()
            .unwrap()
            .iter()
            .any(|(k, _)| k.as_str() == Some("token"));
        assert_eq!(
            has_token,
            round == 1,
            "token only once the master key is cached"
        );
        let reply = master_answer(&master, &req, accept, &aes);
        let reply = salt_proto::decode(&salt_proto::encode(&reply)).unwrap();
        let Ok(AuthOutcome::Accepted(creds)) = client.handle_reply(&pending, &reply) else {
            panic!("round {round} not accepted");
        };
        assert_eq!(creds.aes.key_string(), aes.key_string());
        assert_eq!(creds.publish_port, 4505);
    }
    // Minion: aes + session per accept, + the echoed token the second time.
    assert_eq!(minion.decrypts.load(Ordering::Relaxed), 5);
    assert_eq!(minion.signs.load(Ordering::Relaxed), 0);
    // Master: one signature per reply, one token decryption.
    assert_eq!(master.signs.load(Ordering::Relaxed), 3);
    assert_eq!(master.decrypts.load(Ordering::Relaxed), 1);

    // A refusal signed by another key is refused once the master key is cached.
    let stranger = Counting::new(&PrivateKey::generate(2048).unwrap());
    let (req, pending) = client.build_request("33333333333333333333333333333333");
    let load = req.as_map().unwrap()[1].1.clone();
    let parsed = AuthRequest::from_load(&load).unwrap();
    let forged = auth_master::fail_reply(&stranger, &parsed, AuthRet::Rejected).unwrap();
    assert_eq!(
        client.handle_reply(&pending, &forged).unwrap_err(),
        AuthError::Signature
    );
}
