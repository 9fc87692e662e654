//! The backends against real things: a PAM user made with `useradd`/`chpasswd` (root only;
//! removed at the end), htpasswd files made by Apache's `htpasswd` (apache2-utils: bcrypt, apr1, SHA-1,
//! SHA-256/512-crypt, plain, crypt), an
//! htdigest line made by Python's `hashlib`, and tokens read back by Salt's own `localfs`
//! and `LoadAuth.get_tok` in the Salt venv. Under `CI=true` a missing prerequisite fails the
//! test by name; elsewhere it is a counted skip (`salt_testkit`).

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::{Path, PathBuf};
use std::process::Command;

use rmpv::Value;
use salt_compat::json::json_to_msgpack;
use salt_eauth::{Eauth, EauthConfig, LocalFsStore, Refusal};
use salt_proto::clear::{AuthKind, EauthFields, Secret};
use serde_json::json;

/// `Some(())` when the prerequisite holds; else a counted skip, or a failure under `CI=true`.
fn prerequisite(ok: bool, what: &str) -> Option<()> {
    salt_testkit::require(if ok {
        Ok(())
    } else {
        Err(salt_testkit::Missing::new(what))
    })
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn engine(opts: serde_json::Value, dir: &Path) -> Eauth {
    let cfg = EauthConfig::from_opts(&json_to_msgpack(&opts), dir.join("cache")).unwrap();
    let store = LocalFsStore::new(cfg.token_dir.clone(), &cfg.hash_type);
    Eauth::new(cfg, Box::new(store))
}

fn login(eauth: &str, user: &str, password: &str) -> EauthFields {
    EauthFields {
        eauth: Some(eauth.into()),
        username: Some(user.into()),
        password: Some(Secret::new(password)),
        ..EauthFields::default()
    }
}

fn refused_as_salt(eauth: &Eauth, f: &EauthFields, user: &str) {
    let err = eauth.check_authentication(f, None, None, &[]).unwrap_err();
    assert_eq!(
        err,
        Refusal::Authentication {
            kind: AuthKind::Eauth,
            username: user.into(),
            show_username: false
        }
    );
    assert_eq!(
        err.wire().to_string(),
        format!(
            r#"{{"error": {{"name": "EauthAuthenticationError", "message": "Authentication failure of type \"eauth\" occurred for user {user}."}}}}"#
        )
    );
}

/// A system user and group that go away when dropped.
struct PamUser {
    name: String,
    group: String,
}

impl PamUser {
    fn create(password: &str) -> Self {
        let id = std::process::id();
        let (name, group) = (format!("seauth{id}"), format!("seauthg{id}"));
        let run = |args: &[&str]| {
            let st = Command::new(args[0]).args(&args[1..]).status().unwrap();
            assert!(st.success(), "{args:?}");
        };
        run(&["groupadd", &group]);
        run(&["useradd", "-M", "-G", &group, &name]);
        let mut child = Command::new("chpasswd")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{name}:{password}\n").as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
        Self { name, group }
    }
}

impl Drop for PamUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).status();
        let _ = Command::new("groupdel").arg(&self.group).status();
    }
}

#[test]
fn pam_user_group_and_wrong_password() {
    let root = nix::unistd::geteuid().is_root();
    if prerequisite(
        root && have("useradd") && have("chpasswd") && Path::new("/etc/pam.d/login").exists(),
        "root, useradd, chpasswd and /etc/pam.d/login (a real PAM user)",
    )
    .is_none()
    {
        return;
    }
    let user = PamUser::create("Corr3ct-horse");
    let dir = tempfile::tempdir().unwrap();
    let eauth = engine(
        json!({
            "external_auth": {"pam": {
                user.name.clone(): ["test.*"],
                format!("{}%", user.group): ["@runner"],
                "nobody-else": [".*"],
            }},
        }),
        dir.path(),
    );
    let ok = eauth
        .check_authentication(&login("pam", &user.name, "Corr3ct-horse"), None, None, &[])
        .unwrap();
    assert_eq!(ok.username, user.name);
    let list: Vec<Value> = ok.auth_list.unwrap().iter().map(|e| e.to_value()).collect();
    assert_eq!(list, vec![Value::from("test.*"), Value::from("@runner")]);

    let token = eauth
        .mk_token(&login("pam", &user.name, "Corr3ct-horse"))
        .unwrap();
    assert!(token.groups.as_ref().unwrap().contains(&user.group));
    let by_token = EauthFields {
        token: Some(Secret::new(token.token.clone())),
        ..EauthFields::default()
    };
    let again = eauth
        .check_authentication(&by_token, None, None, &[])
        .unwrap();
    assert_eq!(
        again.auth_list.unwrap().len(),
        2,
        "group entries from the token's groups"
    );

    // Our group list is Salt's `salt.utils.user.get_group_list` (what `pam.groups()` gives).
    let venv = salt_venv();
    if prerequisite(venv.is_some(), "the Salt 3007.17 venv (group list check)").is_some() {
        let out = Command::new(venv.unwrap().join("bin/python"))
            .args([
                "-c",
                "import sys,json,salt.utils.user;print(json.dumps(salt.utils.user.get_group_list(sys.argv[1])))",
                &user.name,
            ])
            .output()
            .unwrap();
        let salts: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(salt_eauth::backend::user_groups(&user.name), salts);
    }

    let started = std::time::Instant::now();
    refused_as_salt(&eauth, &login("pam", &user.name, "wrong"), &user.name);
    println!("wrong PAM password refused in {:?}", started.elapsed());
    assert!(eauth.mk_token(&login("pam", &user.name, "wrong")).is_none());
    assert_eq!(
        eauth.mk_token_reply(&login("pam", &user.name, "wrong")),
        Value::from("")
    );
}

fn htpasswd(file: &Path, flag: &str, user: &str, password: &str) {
    let mut args = vec![flag, file.to_str().unwrap(), user, password];
    if !file.exists() {
        args.insert(0, "-c");
    }
    let st = Command::new("htpasswd").args(&args).output().unwrap();
    assert!(st.status.success(), "htpasswd {args:?}: {st:?}");
}

#[test]
fn file_backend_htpasswd_and_htdigest() {
    if prerequisite(have("htpasswd"), "htpasswd (apt: apache2-utils)").is_none()
        || prerequisite(have("python3"), "python3 (htdigest line)").is_none()
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("htpasswd");
    htpasswd(&file, "-bB", "bcryptuser", "pw-bcrypt");
    htpasswd(&file, "-bm", "apruser", "pw-apr1");
    htpasswd(&file, "-bs", "shauser", "pw-sha1");
    htpasswd(&file, "-bp", "plainuser", "pw-plain");
    htpasswd(&file, "-bd", "cryptuser", "pw-crypt");
    htpasswd(&file, "-b2", "sha256user", "pw-sha256");
    htpasswd(&file, "-b5", "sha512user", "pw-sha512");
    let eauth = engine(
        json!({"external_auth": {"file": {
            "^filename": file.to_str().unwrap(),
            "^filetype": "htpasswd",
            "bcryptuser": ["test.*"], "apruser": ["test.*"], "shauser": ["test.*"],
            "plainuser": ["test.*"], "cryptuser": ["test.*"],
            "sha256user": ["test.*"], "sha512user": ["test.*"],
        }}}),
        dir.path(),
    );
    for (user, pw) in [
        ("bcryptuser", "pw-bcrypt"),
        ("apruser", "pw-apr1"),
        ("shauser", "pw-sha1"),
        ("plainuser", "pw-plain"),
        ("sha256user", "pw-sha256"),
        ("sha512user", "pw-sha512"),
    ] {
        let ok = eauth.check_authentication(&login("file", user, pw), None, None, &[]);
        assert!(ok.is_ok(), "{user}: {ok:?}");
    }
    refused_as_salt(&eauth, &login("file", "apruser", "pw-bcrypt"), "apruser");
    refused_as_salt(
        &eauth,
        &login("file", "sha512user", "pw-sha256"),
        "sha512user",
    );
    refused_as_salt(&eauth, &login("file", "nosuchuser", "pw"), "nosuchuser");
    // des_crypt is not implemented: refused (and logged by name), never accepted.
    refused_as_salt(&eauth, &login("file", "cryptuser", "pw-crypt"), "cryptuser");

    let digest = dir.path().join("htdigest");
    let line = Command::new("python3")
        .args([
            "-c",
            "import hashlib;print('dig:Realm1:'+hashlib.md5(b'dig:Realm1:pw-digest').hexdigest())",
        ])
        .output()
        .unwrap();
    std::fs::write(&digest, &line.stdout).unwrap();
    let eauth = engine(
        json!({"external_auth": {"file": {
            "^filename": digest.to_str().unwrap(),
            "^filetype": "htdigest",
            "^realm": "Realm1",
            "dig": ["@wheel"],
        }}}),
        dir.path(),
    );
    assert!(
        eauth
            .check_authentication(&login("file", "dig", "pw-digest"), None, None, &[])
            .is_ok()
    );
    refused_as_salt(&eauth, &login("file", "dig", "pw-digesT"), "dig");
}

fn salt_venv() -> Option<PathBuf> {
    let venv = match std::env::var_os("SALT_VENV") {
        Some(v) => PathBuf::from(v),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/salt-3007.17"),
    };
    venv.join("bin/python").exists().then_some(venv)
}

#[test]
fn salt_reads_our_tokens() {
    let venv = salt_venv();
    if prerequisite(venv.is_some(), "the Salt 3007.17 venv (.venv/salt-3007.17)").is_none() {
        return;
    }
    let venv = venv.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let eauth = engine(
        json!({"external_auth": {"auto": {"fred": [".*"]}}, "token_expire": 600}),
        dir.path(),
    );
    let t = eauth.mk_token(&login("auto", "fred", "x")).unwrap();
    let mode = std::fs::metadata(eauth.config().token_dir.join(&t.token))
        .unwrap()
        .permissions();
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(mode.mode() & 0o777, 0o600);
    let script = r#"
import copy, json, sys, salt.config, salt.auth
opts = copy.deepcopy(salt.config.DEFAULT_MASTER_OPTS)
opts.update({"cachedir": sys.argv[1], "token_dir": sys.argv[1] + "/tokens",
             "external_auth": {"auto": {"fred": [".*"]}}})
la = salt.auth.LoadAuth(opts)
tok = la.get_tok(sys.argv[2])
print(json.dumps({"tok": tok, "auth": la.check_authentication({"token": sys.argv[2]}, "token")}))
"#;
    let out = Command::new(venv.join("bin/python"))
        .args([
            "-c",
            script,
            dir.path().join("cache").to_str().unwrap(),
            &t.token,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["tok"]["name"], "fred");
    assert_eq!(got["tok"]["token"], t.token.as_str());
    // Python prints the float its msgpack read; allow the last digit of the repr.
    assert!((got["tok"]["expire"].as_f64().unwrap() - t.expire).abs() < 1e-5);
    assert_eq!(got["auth"]["auth_list"], json!([".*"]));
    assert_eq!(got["auth"]["error"], json!({}));
    // get_token answers as ClearFuncs.get_token
    assert_eq!(eauth.get_token_reply(None), Value::Boolean(false));
    assert_eq!(
        eauth.get_token_reply(Some(&Secret::new("../../etc/passwd"))),
        Value::Map(vec![])
    );
    assert_eq!(
        eauth.get_token_reply(Some(&Secret::new(t.token.clone()))),
        t.to_value()
    );
    eauth.rm_token(&t.token);
    assert_eq!(eauth.list_tokens(), Vec::<String>::new());
}
