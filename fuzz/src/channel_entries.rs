//! Fuzz entry point over the minion's real SUB handler, `salt_minion_core::channel::Session::
//! open_publish` (and `open_reply`, the same session's reply reader): the code that meets
//! every byte a master, or anyone able to reach port 4505's subscribers, publishes.
//!
//! The session holds the fixed keys of `keys.rs`: the publish AES key is `KEY_STRING`, the
//! master's key is the signing key pair (so the fuzzer can also send correctly signed,
//! correctly encrypted publishes and reach the job-load decoding and serial checks).
//!
//! `data[0] % 4` picks the shape:
//! * 0: one frame, the raw payload;
//! * 1: two frames `[topic, payload]`, split at `data[1]`;
//! * 2: the rest encrypted with the AES key and signed by the master key, in a publish
//!   envelope, signature checked;
//! * 3: the rest as an AES reply to a request sent with `NONCE` (`open_reply`).
//!
//! Invariants: no panic; the serial never goes backwards; an accepted job load (read by
//! `salt_proto::msg::JobLoad`) has no serial left and reads back from its own encoding.

use std::sync::{Arc, OnceLock};

use rmpv::Value;
use salt_minion_core::channel::Session;
use salt_pki::{Crypticle, EncAlgo, PrivateKey, PublicKey, SigAlgo};

struct Fixture {
    session: Session,
    master: PrivateKey,
}

fn fixture() -> &'static Fixture {
    static FX: OnceLock<Fixture> = OnceLock::new();
    FX.get_or_init(|| {
        let aes = Crypticle::from_key_string(crate::keys::KEY_STRING).expect("aes key");
        let master = PrivateKey::from_pem(crate::keys::SIGN_PRIVATE_PEM.as_bytes(), None)
            .expect("master key");
        let master_pub =
            PublicKey::from_pem(crate::keys::SIGN_PUBLIC_PEM.as_bytes()).expect("master pub");
        Fixture {
            session: Session {
                id: "fuzzminion".to_owned(),
                aes: aes.clone(),
                session: aes,
                master_pub,
                tok: Arc::new(b"tok".to_vec()),
                enc_algo: EncAlgo::OaepSha1,
                sig_algo: SigAlgo::Pkcs1v15Sha1,
                signer: None,
            },
            master,
        }
    })
}

/// One message. See the module doc for the shape byte.
pub fn publish(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let fx = fixture();
    let topic = salt_minion_core::channel::topic_for(&fx.session.id);
    let mut serial = salt_proto::SerialGuard::new();
    let mut seed = Value::Map(vec![("serial".into(), 5.into())]);
    serial.check(&mut seed);
    let result = match mode % 4 {
        0 => fx
            .session
            .open_publish(&[rest.to_vec()], &topic, true, &mut serial),
        1 => {
            let at = rest.first().map_or(0, |&b| usize::from(b)).min(rest.len());
            let (a, b) = rest.split_at(at);
            fx.session
                .open_publish(&[a.to_vec(), b.to_vec()], &topic, false, &mut serial)
        }
        2 => {
            let load = fx.session.aes.dumps(rest, None);
            let Ok(sig) = fx.master.sign(SigAlgo::Pkcs1v15Sha1, &load) else {
                return;
            };
            let env = salt_proto::encode(&Value::Map(vec![
                ("enc".into(), "aes".into()),
                ("load".into(), Value::Binary(load)),
                ("sig".into(), Value::Binary(sig)),
            ]));
            fx.session
                .open_publish(&[b"broadcast".to_vec(), env], &topic, true, &mut serial)
        }
        _ => {
            let _ = fx
                .session
                .open_reply(&mut rest.to_vec(), crate::keys::NONCE);
            return;
        }
    };
    assert!(serial.last() >= 5, "serial went backwards");
    // A job that got through has its serial consumed and re-encodes as it reads.
    if let Ok(Some(job)) = &result {
        assert_eq!(job.serial, None);
        let again = salt_proto::msg::JobLoad::from_value(&job.to_value()).expect("re-reads");
        assert_eq!(&again, job);
    }
}
