//! Interop with real Salt 3007 (its venv required: `salt_testkit`): our salt-key on a pki_dir
//! laid out by Salt, Salt's salt-key on what ours wrote (identical output), and
//! master_pubkey_signature files verified across the two implementations.
#![allow(clippy::unwrap_used)]

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::{Lab, salt_venv, stdout};

/// Writes master keys and minion keys the way Salt does (salt.crypt.gen_keys, plain
/// writes of the .pub text), into every key state.
const SALT_LAYOUT: &str = r#"
import os, sys, shutil
import salt.crypt
pki, tmp = sys.argv[1], sys.argv[2]
salt.crypt.gen_keys(pki, "master", 2048)
for i, (d, mid) in enumerate([("minions", "acc-a"), ("minions_pre", "pend-a"),
        ("minions_pre", "Pend-B"), ("minions_pre", "pend-c"), ("minions_rejected", "rej-a"),
        ("minions_denied", "pend-a")]):
    name = "k%d" % i
    salt.crypt.gen_keys(tmp, name, 2048)
    with open(os.path.join(tmp, name + ".pub")) as f:
        text = f.read()
    with open(os.path.join(pki, d, mid), "w+") as fp_:
        fp_.write(text)
"#;

fn salt_key(venv: &Path, lab: &Lab, args: &[&str]) -> std::process::Output {
    Command::new(venv.join("bin/salt-key"))
        .arg("-c")
        .arg(&lab.conf)
        .args(args)
        .current_dir(lab.dir.path())
        .output()
        .unwrap()
}

fn python(venv: &Path, code: &str, args: &[&Path]) -> String {
    let out = Command::new(venv.join("bin/python"))
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

fn salt_lab(venv: &Path) -> Lab {
    let lab = Lab::new();
    let tmp = lab.path("gen");
    fs::create_dir(&tmp).unwrap();
    python(venv, SALT_LAYOUT, &[&lab.pki, &tmp]);
    lab
}

fn ours(lab: &Lab, args: &[&str]) -> String {
    let out = lab.cmd().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

#[test]
fn same_output_as_salt_on_a_salt_pki_dir() {
    let Some(venv) = salt_venv() else {
        return;
    };
    let lab = salt_lab(&venv);
    for args in [
        &["-L"][..],
        &["-F"],
        &["-f", "pend*"],
        &["-L", "--out", "json"],
        &["-P", "--out", "yaml"],
    ] {
        let theirs = salt_key(&venv, &lab, args);
        assert_eq!(ours(&lab, args), stdout(&theirs), "salt-key {args:?}");
    }
}

#[test]
fn salt_sees_what_ours_did() {
    let Some(venv) = salt_venv() else {
        return;
    };
    let lab = salt_lab(&venv);
    // Accept (incl. the denied key), reject an accepted key, delete a pending one.
    let out = ours(&lab, &["-a", "pend-a,Pend-B", "-y", "--include-denied"]);
    assert!(out.contains("Key for minion Pend-B accepted."), "{out}");
    ours(&lab, &["-r", "acc-a", "-y", "--include-accepted"]);
    ours(&lab, &["-d", "pend-c", "-y"]);
    let theirs = stdout(&salt_key(&venv, &lab, &["-L", "--out", "json"]));
    let v: serde_json::Value = serde_json::from_str(&theirs).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"minions": ["pend-a", "Pend-B"], "minions_pre": [],
            "minions_rejected": ["acc-a", "rej-a"], "minions_denied": []})
    );
    assert_eq!(ours(&lab, &["-L"]), stdout(&salt_key(&venv, &lab, &["-L"])));
    // The dropfile we wrote is the one Salt 3007 writes (master id, 0400).
    assert_eq!(
        fs::read_to_string(lab.cache.join(".dfn")).unwrap(),
        "testmaster"
    );
    // And Salt's salt-key can go on from our state: reject what we accepted.
    let out = salt_key(&venv, &lab, &["-r", "pend-a", "-y", "--include-accepted"]);
    assert!(stdout(&out).contains("Key for minion pend-a rejected."));
    assert_eq!(lab.ls("minions_rejected"), ["acc-a", "pend-a", "rej-a"]);
}

const VERIFY: &str = r#"
import binascii, sys
import salt.crypt
sign_pub, master_pub, sig_file = sys.argv[1:4]
with open(master_pub) as f:
    message = salt.crypt.clean_key(f.read())   # what the master sends as pub_key
with open(sig_file) as f:
    sig = binascii.a2b_base64(f.read())
ok = salt.crypt.verify_signature(sign_pub, message, sig, algorithm="PKCS1v15-SHA1")
print("VERIFIED" if ok else "BAD")
"#;

#[test]
fn signatures_verify_both_ways() {
    let Some(venv) = salt_venv() else {
        return;
    };
    // Ours signs, Salt verifies (the minion's verify_signature path).
    let lab = salt_lab(&venv);
    assert_eq!(
        ours(&lab, &["--gen-signature", "--auto-create"]),
        "return:\n    True\n"
    );
    let got = python(
        &venv,
        VERIFY,
        &[
            &lab.pki.join("master_sign.pub"),
            &lab.pki.join("master.pub"),
            &lab.pki.join("master_pubkey_signature"),
        ],
    );
    assert_eq!(got.trim(), "VERIFIED");

    // Salt signs, ours verifies.
    let lab2 = salt_lab(&venv);
    let out = salt_key(&venv, &lab2, &["--gen-signature", "--auto-create"]);
    assert_eq!(stdout(&out), "return:\n    True\n");
    let sign_pub = salt_pki::files::read_public_key(&lab2.pki.join("master_sign.pub")).unwrap();
    let master_pub = fs::read_to_string(lab2.pki.join("master.pub")).unwrap();
    let sig = fs::read(lab2.pki.join("master_pubkey_signature")).unwrap();
    salt_pki::pubsig::verify_master_pubkey(
        &sign_pub,
        salt_pki::clean_key(&master_pub).as_bytes(),
        &sig,
        salt_pki::SigAlgo::Pkcs1v15Sha1,
    )
    .unwrap();
    // Ours refuses to overwrite Salt's file, exactly as Salt does.
    assert_eq!(ours(&lab2, &["--gen-signature"]), "return:\n    False\n");
    assert_eq!(
        fs::read(lab2.pki.join("master_pubkey_signature")).unwrap(),
        sig
    );
}

#[test]
fn keys_generated_by_ours_load_in_salt() {
    let Some(venv) = salt_venv() else {
        return;
    };
    let lab = Lab::new();
    let dir = lab.path("gen");
    let out = ours(
        &lab,
        &[
            "--gen-keys",
            "minion9",
            "--gen-keys-dir",
            dir.to_str().unwrap(),
        ],
    );
    let code = r#"
import sys, salt.crypt, salt.utils.crypt
d = sys.argv[1]
k = salt.crypt.PrivateKey(d + "/minion9.pem")
p = salt.crypt.PublicKey.from_file(d + "/minion9.pub")
sig = k.sign("hello")
assert p.verify("hello", sig)
print(salt.utils.crypt.pem_finger(d + "/minion9.pub"))
"#;
    let fp = python(&venv, code, &[&dir]);
    assert_eq!(out, format!("return:\n    {}\n", fp.trim()));
}
