//! Secrets stay secret (issue 7, item 5): after a full life cycle — first start, key
//! generation, sign-in with a signed master key, `test.ping`, `cmd.run`, a key deletion that
//! rotates the AES key and the re-authentication it causes — no log of the master or the
//! minion, console or file, at the most verbose level, holds any private key material or a
//! session key; and the key files and directories have Salt's modes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use salt_integration_tests::e2e_support::{Cluster, KeyDir, MINION_READY};
use salt_integration_tests::{Proc, wait_for_log};

const START: Duration = Duration::from_secs(40);

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// The base64 body lines of a PEM private key (each one a secret fragment).
fn pem_body_lines(p: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(p).unwrap();
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() >= 32)
        .map(str::to_owned)
        .collect();
    assert!(lines.len() > 10, "{} has a PEM body", p.display());
    lines
}

fn accepted(c: &Cluster, id: &str) -> Proc {
    let mut conf = c.minion_conf(id).set("log_level_logfile", "all");
    conf = conf.set("verify_master_pubkey_sign", true);
    let m = c.spawn_minion(&conf).unwrap();
    c.wait_key(KeyDir::Pending, id, START).unwrap();
    c.accept(id).unwrap();
    wait_for_log(&m, MINION_READY, START).unwrap();
    m
}

#[test]
fn no_key_material_in_any_log_and_salts_file_modes() {
    let mut c =
        Cluster::new(|m| m.master_sign_pubkey(true).set("log_level_logfile", "all")).unwrap();
    c.start_master().unwrap();
    // The minions verify the master's signed key: give them master_sign.pub first.
    let sign_pub = c.pki().join("master_sign.pub");
    for id in ["s1", "s2"] {
        let pki = c.root().join(id).join("pki");
        std::fs::create_dir_all(&pki).unwrap();
        std::fs::set_permissions(&pki, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::copy(&sign_pub, pki.join("master_sign.pub")).unwrap();
    }
    let s1 = accepted(&c, "s1");
    let s2 = accepted(&c, "s2");
    let out = c.salt(&["-t", "20", "*", "test.ping"]).unwrap();
    assert!(
        out.stdout.contains("s1") && out.stdout.contains("s2"),
        "{}",
        out.stdout
    );
    let out = c
        .salt(&["-t", "20", "s1", "cmd.run", "echo visible"])
        .unwrap();
    assert!(out.stdout.contains("visible"), "{}", out.stdout);
    // A deletion rotates the AES key; s1 re-authenticates on the next publish.
    c.delete("s2").unwrap();
    wait_for_log(c.master().unwrap(), "Rotating master AES key", START).unwrap();
    let out = c.salt(&["-t", "20", "s1", "test.ping"]).unwrap();
    assert!(out.stdout.contains("True"), "{}", out.stdout);

    // Everything the daemons logged, console and files.
    let mut logs = String::new();
    logs.push_str(&c.master().unwrap().output());
    logs.push_str(&s1.output());
    logs.push_str(&s2.output());
    for f in [
        c.master_conf().log_file(),
        c.root().join("s1").join("minion.log"),
        c.root().join("s2").join("minion.log"),
    ] {
        if let Ok(t) = std::fs::read_to_string(&f) {
            logs.push_str(&t);
        }
    }
    assert!(
        logs.contains("Authentication with master successful"),
        "debug logs captured"
    );
    assert!(
        !logs.contains("PRIVATE KEY"),
        "a PEM private key header in the logs"
    );

    let private_keys = [
        c.pki().join("master.pem"),
        c.pki().join("master_sign.pem"),
        c.root().join("s1/pki/minion.pem"),
        c.root().join("s2/pki/minion.pem"),
    ];
    for key in &private_keys {
        assert_eq!(mode(key), 0o400, "{}", key.display());
        for line in pem_body_lines(key) {
            assert!(
                !logs.contains(&line[..32]),
                "a fragment of {} is in the logs",
                key.display()
            );
        }
    }
    // Per-minion session keys (the key strings the master keeps in cachedir/sessions).
    let sessions = c.cachedir().join("sessions");
    let mut n = 0;
    for entry in std::fs::read_dir(&sessions).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path) & 0o077, 0, "{} private", path.display());
        let secret = std::fs::read_to_string(&path).unwrap();
        let secret = secret.trim();
        assert!(secret.len() >= 32, "{}", path.display());
        assert!(
            !logs.contains(secret),
            "session key {} in the logs",
            path.display()
        );
        n += 1;
    }
    assert!(n >= 1, "session keys exist");
    // Directories: the minion's pki_dir 0700 (Salt refuses anything looser), no private
    // file readable by others anywhere in the master's pki_dir.
    assert_eq!(mode(&c.root().join("s1/pki")), 0o700);
    for entry in std::fs::read_dir(c.pki()).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "pem") {
            assert_eq!(mode(&p) & 0o077, 0, "{}", p.display());
        }
    }
}
