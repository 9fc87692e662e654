//! Replays the committed cargo-fuzz corpora of the `salt-pki` targets
//! (`fuzz/corpus/{crypticle,pem,pubkey,pubsig,rsa}`) and any minimized crash reproducers
//! (`fuzz/artifacts-regressions/<target>`) through the very entry functions the fuzz
//! targets call, so every `cargo test` on stable re-checks what fuzzing found.

#![allow(clippy::unwrap_used)] // tests may unwrap

#[allow(dead_code)]
#[path = "../../../fuzz/src/pki_entries.rs"]
mod entries;
#[allow(dead_code)]
#[path = "../../../fuzz/src/keys.rs"]
mod keys;

#[path = "../../../fuzz/src/replay.rs"]
mod replay;

use replay::{fuzz_dir, inputs, replay};

#[test]
fn crypticle_corpus() {
    replay("crypticle", 20, |d| {
        let _ = entries::crypticle(d);
    });
}

#[test]
fn pem_corpus() {
    replay("pem", 5, entries::pem);
}

#[test]
fn pubkey_corpus() {
    replay("pubkey", 5, entries::pubkey);
}

#[test]
fn pubsig_corpus() {
    replay("pubsig", 3, entries::pubsig);
}

#[test]
fn rsa_corpus() {
    replay("rsa", 10, entries::rsa);
}

/// The golden-vector seeds stay in the corpora: the public keys still load and a
/// real signed `pub_key` still verifies.
#[test]
fn corpora_hold_valid_inputs() {
    let keys = inputs("pem")
        .iter()
        .filter(|(_, d)| entries::public_from_pem(d).is_some())
        .count();
    assert!(
        keys >= 2,
        "only {keys} loadable public keys in the pem corpus"
    );
    let sign = salt_pki::PublicKey::from_pem(entries::SIGN_PUBLIC_PEM.as_bytes()).unwrap();
    let verified = inputs("pubsig")
        .iter()
        .filter(|(_, d)| {
            let Some((&sel, rest)) = d.split_first() else {
                return false;
            };
            let alg = if sel & 1 == 0 {
                salt_pki::SigAlgo::Pkcs1v15Sha1
            } else {
                salt_pki::SigAlgo::Pkcs1v15Sha224
            };
            let Some(i) = rest.iter().position(|&b| b == 0) else {
                return false;
            };
            salt_pki::pubsig::verify_master_pubkey(&sign, &rest[..i], &rest[i + 1..], alg).is_ok()
        })
        .count();
    assert!(
        verified >= 1,
        "no verifying pub_key/pub_sig pair in the pubsig corpus"
    );
}

/// Child half of [`public_from_pem_never_prompts`]: parses the file named by
/// `SALT_FUZZ_PROMPT_CHILD`; does nothing in a normal test run.
#[test]
fn prompt_child() {
    if let Ok(path) = std::env::var("SALT_FUZZ_PROMPT_CHILD") {
        let data = std::fs::read(path).unwrap();
        let _ = salt_pki::PublicKey::from_pem(&data);
    }
}

/// Fuzzing finding (`fuzz/artifacts-regressions/pem/public-from-pem-prompts-*`): a
/// peer's `pub_key` that is an *encrypted* PEM (an `ENCRYPTED PRIVATE KEY`, or a
/// `RSA PUBLIC KEY` block with a `Proc-Type: 4,ENCRYPTED` header) makes
/// `PublicKey::from_pem` fall back to OpenSSL's default passphrase callback, which
/// prompts on the controlling terminal (or reads stdin) and blocks until answered.
///
/// The child runs in a new session (`setsid`: no controlling terminal) with a stdin
/// pipe that stays open, so a prompt blocks it; it must instead exit at once and
/// never print OpenSSL's prompt. Ignored until `salt-pki` refuses encrypted PEM in
/// `public_from_pem` (run with `--ignored`).
#[test]
fn public_from_pem_never_prompts() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let Some(_) = salt_testkit::require(salt_testkit::command("setsid")) else {
        return;
    };
    let exe = std::env::current_exe().unwrap();
    for name in [
        "public-from-pem-prompts-pkcs8",
        "public-from-pem-prompts-pkcs1",
    ] {
        let path = fuzz_dir().join("artifacts-regressions/pem").join(name);
        let mut child = Command::new("setsid")
            .arg(&exe)
            .args(["--exact", "prompt_child", "--nocapture", "--test-threads=1"])
            .env("SALT_FUZZ_PROMPT_CHILD", &path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break Some(st);
            }
            if Instant::now() > deadline {
                child.kill().unwrap();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let out = child.wait_with_output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            status.is_some(),
            "{name}: PublicKey::from_pem blocked (waiting for a passphrase)"
        );
        assert!(
            !text.contains("pass phrase"),
            "{name}: PublicKey::from_pem asked for a passphrase:\n{text}"
        );
    }
}

/// Fuzz finding 2: X9.31 signing of an empty message is refused (it never verified).
#[test]
fn x931_sign_refuses_empty_message() {
    let key = salt_pki::PrivateKey::generate(2048).unwrap();
    assert!(matches!(
        key.x931_sign(b""),
        Err(salt_pki::Error::EmptyMessage)
    ));
    assert!(key.x931_sign(b"salt").is_ok());
}
