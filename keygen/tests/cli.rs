//! `salt-key` end to end: every flag, output and the files on disk afterwards.
#![allow(clippy::unwrap_used)]

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt as _;

use common::{Lab, mode, pem, stderr, stdout};

const LISTING: &str = "Accepted Keys:\nacc1\nDenied Keys:\nweb1\nUnaccepted Keys:\nAlpha\ndb1\nweb1\nweb2\nRejected Keys:\nrej1\n";

#[test]
fn list_all_default_output() {
    let lab = Lab::new();
    lab.standard();
    for args in [&["-L"][..], &[], &["-l", "all"], &["--list-all"]] {
        lab.cmd()
            .args(args)
            .assert()
            .success()
            .stdout(LISTING)
            .stderr("");
    }
    // An empty store still prints every heading.
    let empty = Lab::new();
    empty
        .cmd()
        .arg("-L")
        .assert()
        .success()
        .stdout("Accepted Keys:\nDenied Keys:\nUnaccepted Keys:\nRejected Keys:\n");
}

#[test]
fn list_by_state() {
    let lab = Lab::new();
    lab.standard();
    for (arg, want) in [
        ("acc", "Accepted Keys:\nacc1\n"),
        ("accepted", "Accepted Keys:\nacc1\n"),
        ("pre", "Unaccepted Keys:\nAlpha\ndb1\nweb1\nweb2\n"),
        ("un", "Unaccepted Keys:\nAlpha\ndb1\nweb1\nweb2\n"),
        ("unaccepted", "Unaccepted Keys:\nAlpha\ndb1\nweb1\nweb2\n"),
        ("rej", "Rejected Keys:\nrej1\n"),
        ("den", "Denied Keys:\nweb1\n"),
        ("denied", "Denied Keys:\nweb1\n"),
    ] {
        lab.cmd().args(["-l", arg]).assert().success().stdout(want);
    }
    lab.cmd()
        .args(["-l", "foo"])
        .assert()
        .code(64)
        .stdout("")
        .stderr("Usage: salt-key [options]\n\nsalt-key: error: 'foo' is not a valid argument to '--list'\n");
}

#[test]
fn list_other_outputters() {
    let lab = Lab::new();
    lab.standard();
    let out = lab.cmd().args(["-L", "--out", "json"]).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"minions": ["acc1"], "minions_pre": ["Alpha", "db1", "web1", "web2"],
            "minions_rejected": ["rej1"], "minions_denied": ["web1"]})
    );
    // Python's json.dumps(indent=4) layout, insertion order.
    assert!(
        stdout(&out)
            .starts_with("{\n    \"minions\": [\n        \"acc1\"\n    ],\n    \"minions_pre\": [")
    );
    lab.cmd()
        .args(["-l", "acc", "--out", "json", "--out-indent", "-1"])
        .assert()
        .stdout("{\"minions\": [\"acc1\"]}\n");
    lab.cmd().args(["-L", "--out", "yaml"]).assert().stdout(
        "minions:\n- acc1\nminions_denied:\n- web1\nminions_pre:\n- Alpha\n- db1\n- web1\n- web2\nminions_rejected:\n- rej1\n",
    );
    lab.cmd().args(["-L", "--out", "txt"]).assert().stdout(
        "minions: ['acc1']\nminions_pre: ['Alpha', 'db1', 'web1', 'web2']\nminions_rejected: ['rej1']\nminions_denied: ['web1']\n",
    );
    lab.cmd()
        .args(["-l", "rej", "--out", "nested"])
        .assert()
        .stdout("minions_rejected:\n    - rej1\n");
    lab.cmd()
        .args(["-l", "rej", "--out", "raw"])
        .assert()
        .stdout("{'minions_rejected': ['rej1']}\n");
    lab.cmd()
        .args(["-l", "rej", "--out", "bogus"])
        .assert()
        .success()
        .stdout("minions_rejected:\n    - rej1\n")
        .stderr("[ERROR   ] Invalid outputter bogus specified, fall back to nested\n");
}

#[test]
fn colors_only_on_terminal_or_forced() {
    let lab = Lab::new();
    lab.standard();
    // stdout is a pipe here: no escapes.
    let plain = stdout(&lab.cmd().arg("-L").output().unwrap());
    assert!(!plain.contains('\x1b'));
    let forced = stdout(&lab.cmd().args(["-L", "--force-color"]).output().unwrap());
    assert!(forced.starts_with(
        "\x1b[0;1;32mAccepted Keys:\x1b[0;0m\n\x1b[0;32macc1\x1b[0;0m\n\x1b[0;1;35mDenied Keys:\x1b[0;0m\n\x1b[0;35mweb1\x1b[0;0m\n\x1b[0;1;31mUnaccepted Keys:\x1b[0;0m\n\x1b[0;31mAlpha\x1b[0;0m\n"
    ));
    assert!(forced.contains("\x1b[0;1;34mRejected Keys:\x1b[0;0m\n\x1b[0;34mrej1\x1b[0;0m\n"));
    let no = stdout(&lab.cmd().args(["-L", "--no-color"]).output().unwrap());
    assert_eq!(no, LISTING);
}

#[test]
fn accept_glob_with_yes() {
    let lab = Lab::new();
    lab.standard();
    lab.cmd().args(["-a", "web*", "-y"]).assert().success().stdout(
        "The following keys are going to be accepted:\nUnaccepted Keys:\nweb1\nweb2\n\
         Key for minion web1 accepted.\nKey for minion web2 accepted.\nKey for minion web1 accepted.\n",
    );
    assert_eq!(lab.ls("minions"), ["acc1", "web1", "web2"]);
    assert_eq!(lab.ls("minions_pre"), ["Alpha", "db1"]);
    assert_eq!(lab.ls("minions_denied"), ["web1"], "denied key untouched");
    assert_eq!(
        fs::read_to_string(lab.pki.join("minions/web1")).unwrap(),
        pem(1)
    );
    // Accepting never rotates the AES key.
    assert!(!lab.cache.join(".dfn").exists());
}

#[test]
fn accept_comma_list_and_include_flags() {
    let lab = Lab::new();
    lab.standard();
    lab.cmd()
        .args(["-a", "rej1,db1", "-y", "--include-rejected"])
        .assert()
        .success()
        .stdout(
            "The following keys are going to be accepted:\nUnaccepted Keys:\ndb1\nRejected Keys:\nrej1\n\
             Key for minion db1 accepted.\nKey for minion rej1 accepted.\n",
        );
    assert_eq!(lab.ls("minions"), ["acc1", "db1", "rej1"]);
    assert!(lab.ls("minions_rejected").is_empty());
    // --include-denied: the denied key replaces the pending one.
    lab.cmd()
        .args(["-a", "web1", "-y", "--include-denied"])
        .assert()
        .success();
    assert!(lab.ls("minions_denied").is_empty());
    assert_eq!(
        fs::read_to_string(lab.pki.join("minions/web1")).unwrap(),
        pem(2)
    );
    // --include-all is the deprecated spelling of --include-rejected for accept.
    lab.put("minions_rejected", "old", 3);
    lab.cmd()
        .args(["-a", "old", "-y", "--include-all"])
        .assert()
        .success();
    assert!(lab.ls("minions").contains(&"old".to_owned()));
}

#[test]
fn no_match_messages() {
    let lab = Lab::new();
    lab.standard();
    for (args, want) in [
        (
            &["-a", "zzz*", "-y"][..],
            "The key glob 'zzz*' does not match any unaccepted keys.\n",
        ),
        (
            &["-a", "zzz", "-y", "--include-rejected", "--include-denied"],
            "The key glob 'zzz' does not match any unaccepted, rejected or denied keys.\n",
        ),
        (
            &["-r", "zzz", "-y", "--include-accepted", "--include-denied"],
            "The key glob 'zzz' does not match any unaccepted, accepted or denied keys.\n",
        ),
        (
            &["-d", "zzz", "-y"],
            "The key glob 'zzz' does not match any unaccepted keys.\n",
        ),
        // acc1 is accepted: not a candidate for -a.
        (
            &["-a", "acc1", "-y"],
            "The key glob 'acc1' does not match any unaccepted keys.\n",
        ),
    ] {
        lab.cmd()
            .args(args)
            .assert()
            .success()
            .stdout(want)
            .stderr("");
    }
    assert_eq!(lab.ls("minions"), ["acc1"]);
}

#[test]
fn prompts_read_stdin() {
    let lab = Lab::new();
    lab.standard();
    let head =
        "The following keys are going to be accepted:\nUnaccepted Keys:\nweb2\nProceed? [n/Y] ";
    // "n": nothing happens.
    lab.cmd()
        .args(["-a", "web2"])
        .write_stdin("n\n")
        .assert()
        .success()
        .stdout(head);
    assert_eq!(lab.ls("minions"), ["acc1"]);
    // EOF: nothing happens, and (unlike Salt's exit 0) a failure with a clear message.
    lab.cmd()
        .args(["-a", "web2"])
        .write_stdin("")
        .assert()
        .code(1)
        .stdout(format!("{head}\n"))
        .stderr(predicates::str::contains(
            "no answer to the prompt (standard input is closed): nothing was done; add -y",
        ));
    assert_eq!(lab.ls("minions"), ["acc1"]);
    // Empty answer: default yes for accept.
    lab.cmd()
        .args(["-a", "web2"])
        .write_stdin("\n")
        .assert()
        .success()
        .stdout(format!("{head}Key for minion web2 accepted.\n"));
    assert_eq!(lab.ls("minions"), ["acc1", "web2"]);
    // Delete defaults to no.
    let dhead =
        "The following keys are going to be deleted:\nAccepted Keys:\nweb2\nProceed? [N/y] ";
    lab.cmd()
        .args(["-d", "web2"])
        .write_stdin("\n")
        .assert()
        .success()
        .stdout(dhead);
    assert!(lab.pki.join("minions/web2").exists());
    lab.cmd()
        .args(["-d", "web2"])
        .write_stdin("Yes\n")
        .assert()
        .success()
        .stdout(format!("{dhead}Key for minion web2 deleted.\n"));
    assert!(!lab.pki.join("minions/web2").exists());
    // Reject defaults to yes.
    lab.cmd()
        .args(["-r", "db1"])
        .write_stdin("\n")
        .assert()
        .success()
        .stdout(
            "The following keys are going to be rejected:\nUnaccepted Keys:\ndb1\nProceed? [n/Y] Key for minion db1 rejected.\n",
        );
    assert_eq!(lab.ls("minions_rejected"), ["db1", "rej1"]);
}

#[test]
fn accept_all_reject_all_delete_all() {
    let lab = Lab::new();
    lab.standard();
    lab.cmd().args(["-A", "-y"]).assert().success();
    assert_eq!(lab.ls("minions"), ["Alpha", "acc1", "db1", "web1", "web2"]);
    assert!(lab.ls("minions_pre").is_empty());
    lab.put("minions_pre", "late", 1);
    lab.cmd()
        .args(["-R", "-y"])
        .assert()
        .success()
        .stdout("The following keys are going to be rejected:\nUnaccepted Keys:\nlate\nKey for minion late rejected.\n");
    assert_eq!(lab.ls("minions_rejected"), ["late", "rej1"]);
    assert!(lab.cache.join(".dfn").exists());
    lab.cmd().args(["-D", "-y"]).assert().success();
    for s in [
        "minions",
        "minions_pre",
        "minions_rejected",
        "minions_denied",
    ] {
        assert!(lab.ls(s).is_empty(), "{s}");
    }
    // -D takes no arguments.
    lab.cmd()
        .args(["-D", "-y", "extra"])
        .assert()
        .code(1)
        .stderr("Error: Delete all takes no arguments. Use -d to delete specified keys\n");
}

#[test]
fn reject_and_delete_write_the_dropfile() {
    let lab = Lab::new();
    lab.standard();
    lab.cmd()
        .args(["-r", "acc1", "-y", "--include-accepted"])
        .assert()
        .success()
        .stdout(
            "The following keys are going to be rejected:\nAccepted Keys:\nacc1\nKey for minion acc1 rejected.\n",
        );
    let dfn = lab.cache.join(".dfn");
    assert_eq!(fs::read_to_string(&dfn).unwrap(), "testmaster");
    assert_eq!(mode(&dfn), 0o400);
    assert_eq!(lab.ls("minions_rejected"), ["acc1", "rej1"]);
    // The master consumed it; --rotate-aes-key False writes none.
    fs::remove_file(&dfn).unwrap();
    lab.cmd()
        .args(["-d", "rej1", "-y", "--rotate-aes-key", "False"])
        .assert()
        .success();
    assert!(!dfn.exists());
    assert!(!lab.pki.join("minions_rejected/rej1").exists());
    lab.cmd().args(["-d", "acc1", "-y"]).assert().success();
    assert_eq!(fs::read_to_string(&dfn).unwrap(), "testmaster");
}

#[test]
fn delete_clears_minion_cache_unless_preserved() {
    let lab = Lab::new();
    lab.standard();
    for m in ["acc1", "gone", "web1"] {
        fs::create_dir_all(lab.cache.join("minions").join(m).join("data")).unwrap();
    }
    lab.cmd().args(["-d", "web1", "-y"]).assert().success().stdout(
        "The following keys are going to be deleted:\nDenied Keys:\nweb1\nUnaccepted Keys:\nweb1\n\
         Key for minion web1 deleted.\nKey for minion web1 deleted.\n",
    );
    assert!(
        lab.cache.join("minions/acc1").exists(),
        "minion with a key keeps its cache"
    );
    assert!(!lab.cache.join("minions/gone").exists());
    assert!(!lab.cache.join("minions/web1").exists());
    fs::create_dir_all(lab.cache.join("minions/acc1/data")).unwrap();
    lab.cmd()
        .args(["-d", "acc1", "-y", "--preserve-minions", "True"])
        .assert()
        .success();
    assert!(!lab.pki.join("minions/acc1").exists());
    assert!(
        lab.cache.join("minions/acc1").exists(),
        "--preserve-minions keeps it"
    );
}

#[test]
fn fingerprints() {
    let lab = Lab::new();
    lab.standard();
    fs::write(lab.pki.join("master.pub"), pem(3)).unwrap();
    fs::write(
        lab.pki.join("master.pem"),
        "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
    )
    .unwrap();
    let f = |i: usize| salt_pki::pem_finger(pem(i).as_bytes(), salt_pki::HashType::Sha256);
    let pem_fp = salt_pki::pem_finger(
        &fs::read(lab.pki.join("master.pem")).unwrap(),
        salt_pki::HashType::Sha256,
    );
    let want = format!(
        "Local Keys:\nmaster.pem:  {pem_fp}\nmaster.pub:  {}\nAccepted Keys:\nacc1:  {}\nDenied Keys:\nweb1:  {}\n\
         Unaccepted Keys:\nAlpha:  {}\ndb1:  {}\nweb1:  {}\nweb2:  {}\nRejected Keys:\nrej1:  {}\n",
        f(3),
        f(0),
        f(2),
        f(1),
        f(2),
        f(1),
        f(3),
        f(0)
    );
    lab.cmd().arg("-F").assert().success().stdout(want);
    lab.cmd()
        .args(["-f", "web*"])
        .assert()
        .success()
        .stdout(format!(
            "Denied Keys:\nweb1:  {}\nUnaccepted Keys:\nweb1:  {}\nweb2:  {}\n",
            f(2),
            f(1),
            f(3)
        ));
    lab.cmd()
        .args(["-f", "master.pub"])
        .assert()
        .stdout(format!("Local Keys:\nmaster.pub:  {}\n", f(3)));
    lab.cmd()
        .args(["-f", "nomatch"])
        .assert()
        .success()
        .stdout("");
    let out = lab.cmd().args(["-F", "--out", "json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["minions"]["acc1"], f(0));
    assert_eq!(v["local"]["master.pub"], f(3));
    // hash_type from the config.
    let lab2 = Lab::with_extra("hash_type: md5\n");
    lab2.put("minions", "m", 0);
    lab2.cmd().args(["-f", "m"]).assert().stdout(format!(
        "Accepted Keys:\nm:  {}\n",
        salt_pki::pem_finger(pem(0).as_bytes(), salt_pki::HashType::Md5)
    ));
}

#[test]
fn print_keys() {
    let lab = Lab::new();
    lab.standard();
    lab.cmd()
        .args(["-p", "acc1"])
        .assert()
        .success()
        .stdout(format!("Accepted Keys:\nacc1:  {}\n", pem(0).trim_end()));
    let out = stdout(&lab.cmd().arg("-P").output().unwrap());
    assert!(out.starts_with(&format!("Accepted Keys:\nacc1:  {}\n", pem(0))));
    assert!(out.contains(&format!("Rejected Keys:\nrej1:  {}", pem(0))));
    lab.cmd()
        .args(["-p", "nomatch"])
        .assert()
        .success()
        .stdout("");
    let out = lab
        .cmd()
        .args(["-p", "acc1", "--out", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["minions"]["acc1"], pem(0));
}

#[test]
fn out_file_truncates_or_appends() {
    let lab = Lab::new();
    lab.standard();
    let file = lab.path("out.txt");
    fs::write(&file, "old\n").unwrap();
    lab.cmd()
        .args(["-l", "acc", "--out-file"])
        .arg(&file)
        .assert()
        .success()
        .stdout("");
    assert_eq!(fs::read_to_string(&file).unwrap(), "Accepted Keys:\nacc1\n");
    lab.cmd()
        .args(["-l", "rej", "--out-file-append", "--out-file"])
        .arg(&file)
        .assert()
        .success();
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        "Accepted Keys:\nacc1\nRejected Keys:\nrej1\n"
    );
}

#[test]
fn gen_keys() {
    let lab = Lab::new();
    let dir = lab.path("gen");
    let out = lab
        .cmd()
        .args(["--gen-keys", "minion1", "--gen-keys-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let pubp = dir.join("minion1.pub");
    let privp = dir.join("minion1.pem");
    assert_eq!(mode(&privp), 0o400);
    assert_eq!(mode(&pubp), 0o644);
    let fp = salt_pki::pem_finger(&fs::read(&pubp).unwrap(), salt_pki::HashType::Sha256);
    assert_eq!(stdout(&out), format!("return:\n    {fp}\n"));
    let key = salt_pki::files::read_private_key(&privp, None).unwrap();
    assert_eq!(
        key.public_key().to_pem(),
        fs::read_to_string(&pubp).unwrap()
    );
    assert_eq!(key.size(), 256);
    // Existing keys are kept, not regenerated.
    let before = fs::read(&privp).unwrap();
    lab.cmd()
        .args(["--gen-keys", "minion1", "--gen-keys-dir"])
        .arg(&dir)
        .assert()
        .success()
        .stdout(format!("return:\n    {fp}\n"));
    assert_eq!(fs::read(&privp).unwrap(), before);
    // Key size limits, bad names.
    lab.cmd()
        .args(["--gen-keys", "small", "--keysize", "1024", "--gen-keys-dir"])
        .arg(&dir)
        .assert()
        .code(64)
        .stderr(
            "Usage: salt-key [options]\n\nsalt-key: error: The minimum value for keysize is 2048\n",
        );
    assert!(!dir.join("small.pem").exists());
    lab.cmd()
        .args(["--gen-keys", "../evil", "--gen-keys-dir"])
        .arg(&dir)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("../evil"));
    assert!(!lab.path("evil.pem").exists());
}

#[test]
fn gen_keys_3072() {
    let lab = Lab::new();
    let dir = lab.path("g");
    lab.cmd()
        .args(["--gen-keys", "big", "--keysize", "3072", "--gen-keys-dir"])
        .arg(&dir)
        .assert()
        .success()
        .stderr(""); // no progress output when stderr is not a terminal
    let key = salt_pki::files::read_private_key(&dir.join("big.pem"), None).unwrap();
    assert_eq!(key.size(), 384);
}

#[test]
fn gen_signature() {
    let lab = Lab::new();
    fs::write(lab.pki.join("master.pub"), pem(0)).unwrap();
    lab.cmd()
        .arg("--gen-signature")
        .assert()
        .success()
        .stdout("return:\n    No usable private-key found\n");
    lab.cmd()
        .args(["--gen-signature", "--auto-create"])
        .assert()
        .success()
        .stdout("return:\n    True\n");
    let sig_path = lab.pki.join("master_pubkey_signature");
    let sig = fs::read_to_string(&sig_path).unwrap();
    assert!(sig.ends_with('\n') && !sig.trim_end().contains('\n'));
    assert_eq!(mode(&lab.pki.join("master_sign.pem")), 0o400);
    let sign_pub = salt_pki::files::read_public_key(&lab.pki.join("master_sign.pub")).unwrap();
    salt_pki::pubsig::verify_master_pubkey(
        &sign_pub,
        salt_pki::clean_key(pem(0)).as_bytes(),
        sig.as_bytes(),
        salt_pki::SigAlgo::Pkcs1v15Sha1,
    )
    .unwrap();
    // Never overwritten.
    lab.cmd()
        .args(["--gen-signature", "--auto-create"])
        .assert()
        .success()
        .stdout("return:\n    False\n");
    assert_eq!(fs::read_to_string(&sig_path).unwrap(), sig);
    lab.cmd()
        .args(["--gen-signature", "--pub", "/nonexistent.pub"])
        .assert()
        .success()
        .stdout("return:\n    Public-key /nonexistent.pub does not exist\n");
    lab.cmd()
        .args(["--gen-signature", "--priv", "/nonexistent.pem"])
        .assert()
        .success()
        .stdout("return:\n    Private-key /nonexistent.pem does not exist\n");
    let empty = Lab::new();
    empty
        .cmd()
        .args(["--gen-signature", "--auto-create"])
        .assert()
        .stdout("return:\n    No usable public-key found\n");
}

#[test]
fn gen_signature_for_another_master_with_config_names() {
    let lab = Lab::with_extra("master_sign_key_name: mysign\nmaster_pubkey_signature: my_sig\n");
    // The other master's public key and our signing key live outside pki_dir.
    let other_pub = lab.path("other_master.pub");
    fs::write(&other_pub, pem(1)).unwrap();
    let sign_priv = lab.path("sign.pem");
    salt_pki::files::write_private_key(&sign_priv, &common::keys()[2].1, None).unwrap();
    let outdir = lab.path("sigs");
    fs::create_dir(&outdir).unwrap();
    lab.cmd()
        .args(["--gen-signature", "--priv"])
        .arg(&sign_priv)
        .arg("--pub")
        .arg(&other_pub)
        .arg("--signature-path")
        .arg(&outdir)
        .assert()
        .success()
        .stdout("return:\n    True\n");
    let sig = fs::read(outdir.join("my_sig")).unwrap();
    salt_pki::pubsig::verify_master_pubkey(
        &common::keys()[2].1.public_key(),
        salt_pki::clean_key(pem(1)).as_bytes(),
        &sig,
        salt_pki::SigAlgo::Pkcs1v15Sha1,
    )
    .unwrap();
    // --auto-create uses master_sign_key_name.
    fs::write(lab.pki.join("master.pub"), pem(0)).unwrap();
    lab.cmd()
        .args(["--gen-signature", "--auto-create"])
        .assert()
        .stdout("return:\n    True\n");
    assert!(lab.pki.join("mysign.pem").exists() && lab.pki.join("mysign.pub").exists());
    assert!(lab.pki.join("my_sig").exists());
    // A missing --signature-path directory is an error naming the file.
    lab.cmd()
        .args(["--gen-signature", "--signature-path"])
        .arg(lab.path("nope"))
        .assert()
        .code(1)
        .stderr(predicates::str::contains("nope/my_sig"));
}

#[test]
fn errors_change_nothing() {
    // pki_dir readable by others: set to 0700 as Salt's verify_env (and our master) do.
    let lab = Lab::new();
    lab.standard();
    fs::set_permissions(&lab.pki, fs::Permissions::from_mode(0o755)).unwrap();
    lab.cmd().args(["-L"]).assert().success().stderr("");
    assert_eq!(mode(&lab.pki), 0o700);

    // A pending key that is not PEM: nothing is accepted, the file is named.
    let lab = Lab::new();
    lab.standard();
    fs::write(lab.pki.join("minions_pre/web3"), "not a key\n").unwrap();
    let out = lab.cmd().args(["-a", "web*", "-y"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("Unable to accept invalid key for web3"),
        "{err}"
    );
    assert!(
        err.contains(&lab.pki.join("minions_pre/web3").display().to_string()),
        "{err}"
    );
    assert_eq!(lab.ls("minions"), ["acc1"]);
    assert_eq!(
        lab.ls("minions_pre"),
        ["Alpha", "db1", "web1", "web2", "web3"]
    );

    // An unreadable key file (a directory where a key should be) for -f/-p.
    let lab = Lab::new();
    lab.standard();
    fs::create_dir(lab.pki.join("minions_pre/weird")).unwrap();
    for flag in ["-f", "-p"] {
        lab.cmd()
            .args([flag, "weird"])
            .assert()
            .code(1)
            .stderr(predicates::str::contains("minions_pre/weird"));
    }

    // A glob that cannot be a key name.
    lab.cmd()
        .args(["-d", "../minions/*", "-y"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("../minions/*"));
    assert_eq!(lab.ls("minions"), ["acc1"]);

    // Usage errors.
    lab.cmd()
        .arg("--bogus")
        .assert()
        .code(64)
        .stderr("Usage: salt-key [options]\n\nsalt-key: error: no such option: --bogus\n");
    lab.cmd()
        .arg("-a")
        .assert()
        .code(64)
        .stderr("Usage: salt-key [options]\n\nsalt-key: error: -a option requires 1 argument\n");
    // Bad config: usage-style error naming the file, exit 64.
    fs::write(lab.conf.join("master"), "keysize: [nope\n").unwrap();
    lab.cmd()
        .arg("-L")
        .assert()
        .code(64)
        .stderr(predicates::str::contains("Failed to load configuration"));
}

/// On a terminal (via util-linux `script`), slow work shows a progress line on stderr.
#[test]
fn spinner_on_a_terminal() {
    // util-linux `script` provides the pty.
    let Some(_) = salt_testkit::require(salt_testkit::command("script")) else {
        return;
    };
    let lab = Lab::new();
    let bin = assert_cmd::cargo::cargo_bin("salt-key");
    let cmd = format!(
        "{} -c {} --gen-keys t --keysize 4096 --gen-keys-dir {}",
        bin.display(),
        lab.conf.display(),
        lab.path("g").display()
    );
    let out = std::process::Command::new("script")
        .args(["-qc", &cmd, "/dev/null"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("generating 4096-bit RSA key"), "{text:?}");
    assert!(text.contains("\r\x1b[K"), "line cleared");
    assert!(
        text.contains("\x1b[0;36mreturn\x1b[0;0m:"),
        "colored on a terminal"
    );
}

/// Salt encrypts keys salt-key generates with `signing_key_pass` when it is set.
#[test]
fn gen_keys_uses_signing_key_pass() {
    let lab = Lab::with_extra("signing_key_pass: s3cret\n");
    let dir = lab.path("g");
    lab.cmd()
        .args(["--gen-keys", "enc", "--gen-keys-dir"])
        .arg(&dir)
        .assert()
        .success();
    let p = dir.join("enc.pem");
    assert!(salt_pki::files::read_private_key(&p, None).is_err());
    salt_pki::files::read_private_key(&p, Some(b"s3cret")).unwrap();
    // And --gen-signature loads the signing key with it.
    fs::write(lab.pki.join("master.pub"), pem(0)).unwrap();
    lab.cmd()
        .args(["--gen-signature", "--auto-create"])
        .assert()
        .success()
        .stdout("return:\n    True\n");
    assert!(salt_pki::files::read_private_key(&lab.pki.join("master_sign.pem"), None).is_err());
}
