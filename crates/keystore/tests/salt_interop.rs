//! Interop with real Salt (skipped visibly without a venv): a pki_dir written the way
//! Salt writes it is read correctly, and real `salt-key` agrees with what we write.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use salt_keystore::{
    AcceptFrom, FingerprintHash, KeyState, KeyStore, KeyValidator as _, PemArmorValidator,
    take_dropfile,
};

/// Writes keys exactly as Salt's master does (`fopen(path, "w+").write(pub)`), with real
/// keys from `salt.crypt.gen_keys`, plus Salt's `.key_cache` and an autosign stub, then
/// prints Salt's own fingerprints.
const WRITE_AS_SALT: &str = r#"
import os, sys
import salt.crypt, salt.payload, salt.utils.atomicfile, salt.utils.crypt, salt.utils.files
pki, tmp = sys.argv[1], sys.argv[2]
for d in ("", "minions", "minions_pre", "minions_rejected", "minions_denied", "minions_autosign"):
    os.makedirs(os.path.join(pki, d), exist_ok=True)
os.chmod(pki, 0o700)
salt.crypt.gen_keys(pki, "master", 2048)
keys = {}
for name in ("k1", "k2"):
    salt.crypt.gen_keys(tmp, name, 2048)
    with salt.utils.files.fopen(os.path.join(tmp, name + ".pub")) as f:
        keys[name] = f.read()
layout = [
    ("minions", "acc-1", keys["k1"]),                          # as the .pub file reads
    ("minions", "Acc-2", salt.crypt.clean_key(keys["k2"])),    # clean_key form
    ("minions_pre", "pend-1", salt.crypt.clean_key(keys["k1"])),
    ("minions_rejected", "rej-1", keys["k2"]),
    ("minions_denied", "acc-1", salt.crypt.clean_key(keys["k2"])),
]
for d, mid, text in layout:
    with salt.utils.files.fopen(os.path.join(pki, d, mid), "w+") as fp_:
        fp_.write(text)
with salt.utils.atomicfile.atomic_open(os.path.join(pki, "minions", ".key_cache"), mode="wb") as f:
    salt.payload.dump(["acc-1"], f)
open(os.path.join(pki, "minions_autosign", "auto-1"), "w").close()
for d, mid, _ in layout:
    print(d, mid, salt.utils.crypt.pem_finger(os.path.join(pki, d, mid)))
for f in ("master.pem", "master.pub"):
    print("local", f, salt.utils.crypt.pem_finger(os.path.join(pki, f)))
print("k1", keys["k1"].encode().hex())
"#;

#[test]
fn reads_a_pki_dir_written_by_salt() {
    let Some(venv) = salt_testkit::require(salt_testkit::any_salt_venv()) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let pki = d.path().join("pki");
    let tmp = d.path().join("gen");
    fs::create_dir(&tmp).unwrap();
    let out = Command::new(venv.join("bin/python"))
        .arg("-c")
        .arg(WRITE_AS_SALT)
        .arg(&pki)
        .arg(&tmp)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut salt_fingers: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut k1 = String::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        if parts[0] == "k1" {
            k1 = String::from_utf8(
                (0..parts[1].len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&parts[1][i..i + 2], 16).unwrap())
                    .collect(),
            )
            .unwrap();
        } else {
            salt_fingers.insert((parts[0].into(), parts[1].into()), parts[2].into());
        }
    }

    let ks = KeyStore::open(&pki).unwrap();
    assert_eq!(ks.list(KeyState::Accepted), ["acc-1", "Acc-2"]);
    assert_eq!(ks.list(KeyState::Pending), ["pend-1"]);
    assert_eq!(ks.list(KeyState::Rejected), ["rej-1"]);
    assert_eq!(ks.list(KeyState::Denied), ["acc-1"]);
    assert_eq!(
        ks.states_of("acc-1").unwrap(),
        [KeyState::Accepted, KeyState::Denied]
    );
    assert_eq!(ks.state("acc-1").unwrap(), Some(KeyState::Accepted));
    assert_eq!(ks.state("rej-1").unwrap(), Some(KeyState::Rejected));
    // Salt's keys pass our validator, and compare equal the way the master compares.
    for (state, id) in [
        (KeyState::Accepted, "acc-1"),
        (KeyState::Accepted, "Acc-2"),
        (KeyState::Pending, "pend-1"),
    ] {
        PemArmorValidator
            .validate(&ks.read_key(state, id).unwrap().unwrap())
            .unwrap();
    }
    assert_eq!(
        ks.key_matches(KeyState::Accepted, "acc-1", &k1).unwrap(),
        Some(true)
    );
    assert_eq!(
        ks.key_matches(KeyState::Pending, "pend-1", &k1).unwrap(),
        Some(true)
    );
    assert_eq!(
        ks.key_matches(KeyState::Denied, "acc-1", &k1).unwrap(),
        Some(false)
    );
    // Fingerprints identical to salt.utils.crypt.pem_finger.
    for ((dir, id), want) in &salt_fingers {
        let got = if dir == "local" {
            ks.local_fingerprint(id, FingerprintHash::Sha256).unwrap()
        } else {
            let st = KeyState::from_dir_name(dir).unwrap();
            ks.fingerprint(st, id, FingerprintHash::Sha256).unwrap()
        };
        assert_eq!(got.as_deref(), Some(want.as_str()), "{dir}/{id}");
    }
    assert_eq!(ks.local_keys().unwrap(), ["master.pem", "master.pub"]);
    assert!(
        ks.consume_autosign_stub("auto-1", Duration::from_secs(7200))
            .unwrap()
    );
    // And the usual transitions work on it.
    assert_eq!(
        ks.accept("pend-1", AcceptFrom::default()).unwrap(),
        [KeyState::Pending]
    );
    assert!(
        pki.join("minions/.key_cache").exists(),
        "dotfiles untouched"
    );
}

fn salt_key(venv: &Path, conf: &Path, args: &[&str]) -> String {
    let out = Command::new(venv.join("bin/salt-key"))
        .arg("-c")
        .arg(conf)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "salt-key {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The JSON object at the end of salt-key's output (after any "going to be" preamble).
fn last_json(text: &str) -> serde_json::Value {
    let start = text.rfind("\n{").map(|i| i + 1).unwrap_or(0);
    serde_json::from_str(&text[start..]).unwrap()
}

#[test]
fn salt_key_agrees_with_what_we_write() {
    let Some(venv) = salt_testkit::require(salt_testkit::any_salt_venv()) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let pki = root.join("pki");
    let cache = root.join("cache");
    fs::create_dir_all(root.join("conf")).unwrap();
    fs::create_dir_all(&cache).unwrap();
    fs::write(
        root.join("conf/master"),
        format!(
            "pki_dir: {}\ncachedir: {}\nsock_dir: {}\nlog_file: {}\nuser: {}\nid: testmaster\n",
            pki.display(),
            cache.display(),
            root.join("sock").display(),
            root.join("log").display(),
            std::env::var("USER").unwrap_or_else(|_| "root".into()),
        ),
    )
    .unwrap();
    let conf = root.join("conf");

    let ks = KeyStore::open(&pki).unwrap();
    ks.put_pending("p1", common::PEM).unwrap();
    ks.put_pending("p2", common::PEM).unwrap();
    ks.put_pending("q1", common::PEM).unwrap();
    ks.put_accepted("a1", common::PEM).unwrap();
    ks.put_rejected("r1", common::PEM).unwrap();
    ks.put_denied("a1", common::PEM).unwrap();

    let listed = last_json(&salt_key(&venv, &conf, &["-L", "--out", "json"]));
    for (state, ids) in ks.list_all() {
        let theirs: Vec<String> = listed[state.dir_name()]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(theirs, ids, "{state}");
    }

    let fingers = last_json(&salt_key(&venv, &conf, &["-F", "--out", "json"]));
    let ours = ks
        .fingerprints(&KeyState::ALL, FingerprintHash::Sha256)
        .unwrap();
    for (state, pairs) in ours {
        for (id, f) in pairs {
            assert_eq!(fingers[state.dir_name()][&id], f.as_str(), "{state}/{id}");
        }
    }

    // salt-key -a validates the key and moves it; we see the move.
    salt_key(&venv, &conf, &["-a", "p*", "-y", "--out", "json"]);
    ks.refresh().unwrap();
    assert_eq!(ks.list(KeyState::Accepted), ["a1", "p1", "p2"]);
    assert_eq!(ks.list(KeyState::Pending), ["q1"]);

    // salt-key -d writes the 3007 dropfile, which our master poll takes.
    salt_key(&venv, &conf, &["-d", "r1", "-y", "--out", "json"]);
    assert_eq!(ks.state("r1").unwrap(), None);
    assert!(!take_dropfile(&cache, Some("other-master")).unwrap());
    assert!(take_dropfile(&cache, Some("testmaster")).unwrap());
    assert!(!cache.join(".dfn").exists());
}
