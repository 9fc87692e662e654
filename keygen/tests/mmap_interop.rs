//! `keys.cache_driver: mmap_key` against real Salt 3008.5 (its venv required:
//! `salt_testkit`): Salt's own cache driver and `salt-key` and ours work on one store of
//! Salt's index files, each seeing the other's changes, with identical listings.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Lab, pem, stdout};

const CONF: &str = "keys.cache_driver: mmap_key\nmmap_key_size: 2000\n";

/// Stores keys the way Salt 3008.5's master does at sign-in (its `mmap_key` driver):
/// argv: conf dir, then `bank id pem-file state` quads.
const SALT_STORE: &str = r#"
import sys
import salt.config, salt.cache
opts = salt.config.master_config(sys.argv[1] + "/master")
c = salt.cache.Cache(opts, driver=opts["keys.cache_driver"])
args = sys.argv[2:]
for i in range(0, len(args), 4):
    bank, mid, path, state = args[i:i + 4]
    pub = open(path).read()
    if bank == "keys":
        c.store("keys", mid, {"state": state, "pub": pub})
    else:
        c.store("denied_keys", mid, [pub])
"#;

fn venv() -> Option<PathBuf> {
    salt_testkit::require(salt_testkit::salt_venv("3008.5"))
}

fn salt_key(venv: &Path, lab: &Lab, args: &[&str]) -> String {
    let out = Command::new(venv.join("bin/salt-key"))
        .arg("-c")
        .arg(&lab.conf)
        .args(args)
        .current_dir(lab.dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
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

/// Salt's `salt-key -L --out json`, and ours, must list the same keys (3008 orders the
/// states `minions_pre` first, 3007 and ours `minions` first: compared as maps).
fn same_listing(venv: &Path, lab: &Lab) -> String {
    let theirs = salt_key(venv, lab, &["-L", "--out", "json"]);
    let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
    assert_eq!(parse(&ours(lab, &["-L", "--out", "json"])), parse(&theirs));
    theirs
}

#[test]
fn salt_3008_and_ours_share_one_mmap_key_store() {
    let Some(venv) = venv() else {
        return;
    };
    let lab = Lab::with_extra(CONF);
    let mut args: Vec<String> = vec![lab.conf.display().to_string()];
    for (bank, id, i, state) in [
        ("keys", "p0", 0, "pending"),
        ("keys", "p1", 1, "pending"),
        ("keys", "p2", 2, "pending"),
        ("keys", "a0", 3, "accepted"),
        ("denied_keys", "a0", 1, ""),
    ] {
        let f = lab.path(&format!("{bank}-{id}.pub"));
        std::fs::write(&f, pem(i)).unwrap();
        args.extend([
            bank.into(),
            id.into(),
            f.display().to_string(),
            state.into(),
        ]);
    }
    let out = Command::new(venv.join("bin/python"))
        .arg("-c")
        .arg(SALT_STORE)
        .args(&args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(lab.pki.join(".mmap_keys.idx").exists());

    // Salt accepts, ours lists.
    salt_key(&venv, &lab, &["-a", "p1", "-y"]);
    let l = same_listing(&venv, &lab);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&l).unwrap()["minions_denied"],
        serde_json::json!(["a0"])
    );
    let plain = ours(&lab, &["-l", "acc"]);
    assert_eq!(plain, "Accepted Keys:\na0\np1\n");

    // Ours accepts all and rejects one, Salt lists.
    ours(&lab, &["-A", "-y"]);
    ours(&lab, &["-r", "p0", "--include-accepted", "-y"]);
    same_listing(&venv, &lab);
    assert_eq!(
        salt_key(&venv, &lab, &["-l", "rej"]),
        "Rejected Keys:\np0\n"
    );
    // The key text Salt stored round-trips: our fingerprint is the key file's. (Salt
    // 3008's own `-f` hashes the whole PEM text, armour included, for every driver, unlike
    // 3007 and the minions' `master_finger`: not compared.)
    let finger = salt_pki::pem_finger(pem(2).as_bytes(), salt_pki::HashType::Sha256);
    assert_eq!(
        ours(&lab, &["-f", "p2"]),
        format!("Accepted Keys:\np2:  {finger}\n")
    );

    // Salt deletes; ours deletes the denied key; both see it.
    salt_key(&venv, &lab, &["-d", "p2", "-y"]);
    ours(&lab, &["-d", "a0", "-y"]);
    let l = same_listing(&venv, &lab);
    assert!(!l.contains("p2") && !l.contains("a0"), "{l}");
    // No key files: the store is the index.
    for d in [
        "minions",
        "minions_pre",
        "minions_rejected",
        "minions_denied",
    ] {
        assert!(lab.ls(d).is_empty(), "{d}");
    }
}
