//! The `ClearFuncs` steps the engine owns (`salt/master.py`: `publish` up to the jid,
//! `runner`/`wheel` up to the call) with the replies Salt's master sends, and the options
//! refused by name.

#![allow(clippy::unwrap_used)] // tests may unwrap

use rmpv::Value;
use salt_compat::json::json_to_msgpack;
use salt_eauth::acl::MinionResolver;
use salt_eauth::config::ConfigError;
use salt_eauth::{Eauth, EauthConfig, LocalFsStore, Refusal};
use salt_proto::clear::{ClearCommand, EauthFields, MasterCall, Publish, Secret};
use serde_json::json;

struct Ids;

impl MinionResolver for Ids {
    fn check_minions(&self, expr: &str, _tgt_type: &str) -> Vec<String> {
        ["web1", "db1"]
            .iter()
            .filter(|m| salt_compat::fnmatch(m, expr))
            .map(|m| (*m).to_owned())
            .collect()
    }
}

fn engine(opts: serde_json::Value) -> (Eauth, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = EauthConfig::from_opts(&json_to_msgpack(&opts), dir.path().join("cache")).unwrap();
    let store = LocalFsStore::new(cfg.token_dir.clone(), &cfg.hash_type);
    (Eauth::new(cfg, Box::new(store)), dir)
}

fn publish(load: serde_json::Value) -> Publish {
    match ClearCommand::from_load(&json_to_msgpack(&load)).unwrap() {
        ClearCommand::Publish(p) => *p,
        other => panic!("{other:?}"),
    }
}

fn call(load: serde_json::Value) -> MasterCall {
    match ClearCommand::from_load(&json_to_msgpack(&load)).unwrap() {
        ClearCommand::Runner(c) | ClearCommand::Wheel(c) => c,
        other => panic!("{other:?}"),
    }
}

fn keys() -> Vec<(String, Secret)> {
    vec![
        ("root".into(), Secret::new("R00tK3y")),
        ("alice".into(), Secret::new("AliceK3y")),
    ]
}

fn wire(r: &Refusal) -> String {
    r.wire().to_string()
}

#[test]
fn publish_with_eauth_and_keys() {
    let (eauth, _dir) = engine(json!({
        "external_auth": {"auto": {"fred": [".*"], "tina": ["test.*", {"db*": ["cmd.run"]}]}},
        "publisher_acl": {"alice": ["test.*"]},
        "publisher_acl_blacklist": {"modules": ["state.*"], "users": ["mallory"]},
    }));
    let web = ["web1".to_owned()];
    let base = |fun: &str, kwargs: serde_json::Value, user: &str, key: Option<&str>| {
        let mut load = json!({"cmd": "publish", "tgt": "web1", "fun": fun, "arg": [],
                              "tgt_type": "glob", "ret": "", "jid": "", "user": user,
                              "kwargs": kwargs});
        if let Some(k) = key {
            load["key"] = json!(k);
        }
        publish(load)
    };
    let fred = json!({"eauth": "auto", "username": "fred", "password": "x"});
    let tina = json!({"eauth": "auto", "username": "tina", "password": "x"});
    let ok = |p: &Publish| eauth.authorize_publish(p, &web, &keys(), &Ids);

    assert_eq!(
        ok(&base("cmd.run", fred.clone(), "root", None)),
        Ok("fred".into())
    );
    assert_eq!(
        ok(&base("test.ping", tina.clone(), "root", None)),
        Ok("tina".into())
    );
    let denied = ok(&base("cmd.run", tina.clone(), "root", None)).unwrap_err();
    assert_eq!(
        wire(&denied),
        r#"{"error": {"name": "AuthorizationError", "message": "Authorization error occurred."}}"#
    );
    // cmd.run is allowed on db*, not on web1; and saltutil.find_job always is.
    assert!(
        eauth
            .authorize_publish(
                &base("cmd.run", tina.clone(), "root", None),
                &["db1".into()],
                &keys(),
                &Ids
            )
            .is_ok()
    );
    assert!(ok(&base("saltutil.find_job", tina, "root", None)).is_ok());
    let unknown_backend = json!({"eauth": "ldap", "username": "fred", "password": "x"});
    assert_eq!(
        wire(&ok(&base("test.ping", unknown_backend, "root", None)).unwrap_err()),
        r#"{"error": {"name": "AuthenticationError", "message": "Authentication error occurred."}}"#
    );

    // The root key, a wrong key, a user key with publisher_acl, the blacklist.
    assert_eq!(
        ok(&base("cmd.run", json!({}), "root", Some("R00tK3y"))),
        Ok("root".into())
    );
    assert_eq!(
        ok(&base("cmd.run", json!({}), "root", Some("wrong"))),
        Err(Refusal::PublishAuthentication)
    );
    assert_eq!(
        ok(&base("cmd.run", json!({}), "root", None)),
        Err(Refusal::PublishAuthentication)
    );
    assert_eq!(
        ok(&base("test.ping", json!({}), "alice", Some("AliceK3y"))),
        Ok("alice".into())
    );
    assert_eq!(
        ok(&base("cmd.run", json!({}), "alice", Some("AliceK3y"))),
        Err(Refusal::PublishAuthorization)
    );
    assert_eq!(
        ok(&base("state.apply", json!({}), "root", Some("R00tK3y"))),
        Err(Refusal::PublishAuthorization)
    );
    assert_eq!(
        ok(&base("test.ping", json!({}), "mallory", Some("R00tK3y"))),
        Err(Refusal::PublishAuthorization)
    );
    // sudo_alice with the root key: sudo_acl off, so root's rights (Salt's `auth_ret = True`).
    assert_eq!(
        ok(&base("cmd.run", json!({}), "sudo_alice", Some("R00tK3y"))),
        Ok("sudo_alice".into())
    );
}

#[test]
fn runner_and_wheel_with_tokens() {
    let (eauth, _dir) = engine(json!({
        "external_auth": {"auto": {"fred": ["@jobs", {"@wheel": ["key.list_all"]}]}},
        "token_expire_user_override": {"auto": ["fred"]},
    }));
    let login = EauthFields {
        eauth: Some("auto".into()),
        username: Some("fred".into()),
        password: Some(Secret::new("x")),
        token_expire: Some(5.0),
        ..EauthFields::default()
    };
    let t = eauth.mk_token(&login).unwrap();
    assert!(
        (t.expire - t.start - 5.0).abs() < 1e-6,
        "token_expire_user_override"
    );
    let tok = t.token.clone();
    let runner =
        |fun: &str| call(json!({"cmd": "runner", "fun": fun, "kwarg": {}, "token": tok.as_str()}));
    assert_eq!(
        eauth.authorize_call(&runner("jobs.list_jobs"), "runner", &[]),
        Ok("fred".into())
    );
    let denied = eauth
        .authorize_call(&runner("manage.up"), "runner", &[])
        .unwrap_err();
    assert_eq!(
        wire(&denied),
        r#"{"error": {"name": "TokenAuthenticationError", "message": "Authentication failure of type \"token\" occurred for user fred."}}"#
    );
    let wheel = |fun: &str| call(json!({"cmd": "wheel", "fun": fun, "token": tok.as_str()}));
    assert_eq!(
        eauth.authorize_call(&wheel("key.list_all"), "wheel", &[]),
        Ok("fred".into())
    );
    assert!(
        eauth
            .authorize_call(&wheel("key.accept"), "wheel", &[])
            .is_err()
    );
    assert_eq!(
        wire(
            &eauth
                .authorize_call(&wheel("nodots"), "wheel", &[])
                .unwrap_err()
        ),
        r#"{"error": {"name": "SaltInvocationError", "message": "A command invocation error occurred: Check syntax."}}"#
    );
    let bad_token = call(json!({"cmd": "runner", "fun": "jobs.list_jobs", "token": "f00d"}));
    assert_eq!(
        wire(&eauth.authorize_call(&bad_token, "runner", &[]).unwrap_err()),
        r#"{"error": {"name": "TokenAuthenticationError", "message": "Authentication failure of type \"token\" occurred."}}"#
    );
    // Another user may not pick their own expiry.
    let other = EauthFields {
        username: Some("zed".into()),
        ..login
    };
    let t2 = eauth.mk_token(&other).unwrap();
    assert!((t2.expire - t2.start - 43200.0).abs() < 1e-6);
    // A root-key runner call is not checked against any auth list.
    let root = call(json!({"cmd": "runner", "fun": "manage.up", "user": "root", "key": "R00tK3y"}));
    assert_eq!(
        eauth.authorize_call(&root, "runner", &keys()),
        Ok("root".into())
    );
}

#[test]
fn keep_acl_in_token_stores_salts_none() {
    // None of Salt's pam/file/auto/sharedsecret has `acl()`, so Salt stores
    // `auth_list: None` and every token call is then refused; so do we.
    let (eauth, _dir) = engine(json!({
        "external_auth": {"auto": {"fred": [".*"]}},
        "keep_acl_in_token": true,
    }));
    let login = EauthFields {
        eauth: Some("auto".into()),
        username: Some("fred".into()),
        password: Some(Secret::new("x")),
        ..EauthFields::default()
    };
    let t = eauth.mk_token(&login).unwrap();
    assert_eq!(t.auth_list, Some(Value::Nil));
    let c = call(json!({"cmd": "runner", "fun": "jobs.list_jobs", "token": t.token.as_str()}));
    assert!(eauth.authorize_call(&c, "runner", &[]).is_err());
}

#[test]
fn options_not_implemented_are_refused_by_name() {
    let opts = json!({
        "external_auth": {"ldap": {"fred": [".*"]}, "auto": {"fred": [".*"]}},
        "eauth_acl_module": "ldap",
        "auth.enable_expanded_auth_matching": true,
        "eauth_tokens": "rediscluster",
        "token_expire": "soon",
        "publisher_acl": {"bob": ".*"},
    });
    let errs = EauthConfig::from_opts(&json_to_msgpack(&opts), "/tmp/x".into()).unwrap_err();
    let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
    for needle in [
        "external_auth: the eauth backend 'ldap' is not implemented",
        "eauth_acl_module: 'ldap' is not implemented",
        "auth.enable_expanded_auth_matching: True is not implemented",
        "eauth_tokens: 'rediscluster' is not implemented",
        "token_expire: expected a number",
        "publisher_acl:bob: expected a list",
    ] {
        assert!(
            text.iter().any(|t| t.starts_with(needle)),
            "{needle} in {text:?}"
        );
    }
    assert!(matches!(errs[0], ConfigError::NotImplemented { .. }));
    let string_acl = json!({"external_auth": {"auto": {"fred": ".*"}}});
    let errs = EauthConfig::from_opts(&json_to_msgpack(&string_acl), "/tmp/x".into()).unwrap_err();
    assert_eq!(
        errs[0].to_string(),
        "external_auth:auto:fred: expected a list"
    );
}

#[test]
fn engine_is_shared_across_threads_and_cleans_expired_tokens() {
    fn shared<T: Send + Sync>() {}
    shared::<Eauth>();
    let (eauth, _dir) = engine(json!({"external_auth": {"auto": {"fred": [".*"]}}}));
    let login = |expire: f64| EauthFields {
        eauth: Some("auto".into()),
        username: Some("fred".into()),
        password: Some(Secret::new("x")),
        token_expire: Some(expire),
        ..EauthFields::default()
    };
    // No override configured: token_expire from the load is ignored (12 h).
    let keep = eauth.mk_token(&login(-10.0)).unwrap();
    let dir = eauth.config().token_dir.clone();
    let mut old = keep.clone();
    old.expire = 1.0;
    old.token = "ab".repeat(32);
    std::fs::write(dir.join(&old.token), salt_proto::encode(&old.to_value())).unwrap();
    std::fs::write(dir.join("cd".repeat(32)), b"\xc1 not msgpack").unwrap();
    assert_eq!(eauth.list_tokens().len(), 3);
    assert_eq!(eauth.clean_expired_tokens(), 2);
    assert_eq!(eauth.list_tokens(), vec![keep.token.clone()]);
}

/// The loads Salt 3007.17's own clients send (`crates/proto/tests/golden/clear_loads.json`),
/// read by `proto::clear` and answered by the engine.
#[test]
fn loads_from_salts_clients_get_salts_answers() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../proto/tests/golden/clear_loads.json");
    let golden: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let load = |name: &str| {
        let case = golden["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap();
        ClearCommand::decode(&hex::decode(case["hex"].as_str().unwrap()).unwrap()).unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users.txt");
    std::fs::write(&users, "fred:s3cr3t\n").unwrap();
    let (eauth, _cache) = engine(json!({
        "external_auth": {
            "file": {"^filename": users.to_str().unwrap(), "fred": ["@wheel"]},
            "auto": {"fred": ["@wheel"]},
        },
        "token_expire_user_override": true,
    }));
    // `salt.auth.Resolver.mk_token` with `token_expire: 60`, eauth file.
    let ClearCommand::MkToken(f) = load("mk_token_expire") else {
        panic!()
    };
    let reply = eauth.mk_token_reply(&f);
    let t = salt_eauth::TokenData::from_value(&reply).unwrap();
    assert_eq!((t.name.as_str(), t.eauth.as_str()), ("fred", "file"));
    assert!((t.expire - t.start - 60.0).abs() < 1e-6);
    // `WheelClient.cmd_sync` with eauth auto: allowed by `@wheel`.
    let ClearCommand::Wheel(c) = load("wheel_eauth") else {
        panic!()
    };
    assert_eq!(eauth.authorize_call(&c, "wheel", &[]), Ok("fred".into()));
    // `LocalClient.pub` with the root key read from cachedir/.root_key.
    let ClearCommand::Publish(p) = load("local_glob_ping") else {
        panic!()
    };
    let keys = vec![("root".to_owned(), Secret::new("R00tK3y-from-cachedir"))];
    assert_eq!(
        eauth.authorize_publish(&p, &["web1".into()], &keys, &Ids),
        Ok("root".into())
    );
    // The same load against another root key: Salt's AuthenticationError.
    let other = vec![("root".to_owned(), Secret::new("another"))];
    assert_eq!(
        eauth.authorize_publish(&p, &["web1".into()], &other, &Ids),
        Err(Refusal::PublishAuthentication)
    );
    // A `get_token` for a token that does not exist: `{}`.
    let ClearCommand::GetToken(tok) = load("get_token") else {
        panic!()
    };
    assert_eq!(eauth.get_token_reply(tok.as_ref()), Value::Map(vec![]));
}

#[test]
fn local_callers_known_by_their_os_user() {
    // Our `salt` on the local socket: the master knows the caller by SO_PEERCRED, so no key;
    // the rest is `ClearFuncs.publish` for a user key.
    let (eauth, _dir) = engine(json!({
        "publisher_acl": {"alice": ["test.*", {"db*": ["cmd.run"]}], "dev.*": ["grains.item"]},
        "publisher_acl_blacklist": {"modules": ["state.*"], "users": ["mallory", "sudo_eve"]},
        "sudo_acl": true,
    }));
    let load = |fun: &str, user: &str| {
        publish(
            json!({"cmd": "publish", "tgt": "*", "fun": fun, "arg": [], "tgt_type": "glob",
                       "ret": "", "jid": "", "user": user, "kwargs": {}}),
        )
    };
    let web = ["web1".to_owned()];
    let db = ["db1".to_owned()];
    let check = |fun: &str, user: &str, privileged: bool, minions: &[String]| {
        eauth
            .authorize_local_publish(&load(fun, user), privileged, minions, &Ids)
            .map_err(|r| r.name_and_message().1)
    };
    let authz = Err("Authorization error occurred.".to_owned());
    let authn = Err("Authentication error occurred.".to_owned());
    assert_eq!(check("test.ping", "alice", false, &web), Ok("alice".into()));
    assert_eq!(check("cmd.run", "alice", false, &web), authz);
    assert_eq!(check("cmd.run", "alice", false, &db), Ok("alice".into()));
    assert_eq!(
        check("grains.item", "devon", false, &web),
        Ok("devon".into())
    );
    // No publisher_acl entry: Salt's authentication refusal.
    assert_eq!(check("test.ping", "bob", false, &web), authn);
    // A user named like a sudo user is not one unless root says so.
    assert_eq!(check("test.ping", "sudo_alice", false, &web), authn);
    // The blacklist holds for everyone, root too (Salt checks it before anything else).
    assert_eq!(check("state.apply", "root", true, &web), authz);
    assert_eq!(check("test.ping", "mallory", false, &web), authz);
    assert_eq!(check("cmd.run", "root", true, &web), Ok("root".into()));
    // sudo_acl: root under sudo has the sudo user's publisher_acl.
    assert_eq!(
        check("test.ping", "sudo_alice", true, &web),
        Ok("sudo_alice".into())
    );
    assert_eq!(check("cmd.run", "sudo_alice", true, &web), authz);
    assert_eq!(check("test.ping", "sudo_eve", true, &web), authz);
    assert_eq!(check("test.ping", "sudo_bob", true, &web), authn);
    // saltutil.find_job is always allowed to a user with an entry.
    assert_eq!(
        check("saltutil.find_job", "alice", false, &web),
        Ok("alice".into())
    );

    // Without sudo_acl, root under sudo is root.
    let (eauth, _dir) = engine(json!({"publisher_acl": {"alice": ["test.*"]}}));
    assert_eq!(
        eauth
            .authorize_local_publish(&load("cmd.run", "sudo_alice"), true, &web, &Ids)
            .unwrap(),
        "sudo_alice"
    );
}
