//! Our ACL checks and `LoadAuth` answers against Salt's own, on the same inputs:
//! `golden/acl.json` is written by `scripts/gen-eauth-golden.py` running Salt 3007.17's
//! `CkMinions.auth_check`, `spec_check`, `fill_auth_list` and `LoadAuth`.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::PathBuf;

use rmpv::Value;
use salt_compat::json::json_to_msgpack;
use salt_eauth::acl::{self, AclEntry, Call, MinionResolver, SpecVerdict};
use salt_eauth::{Eauth, EauthConfig, LocalFsStore, TokenData, TokenStore};
use salt_proto::clear::{EauthFields, Secret};
use serde_json::Value as Js;

fn golden() -> Js {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/acl.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Salt's `check_minions(expr, "compound")` over the golden's accepted minions.
struct Minions(Vec<String>);

impl MinionResolver for Minions {
    fn check_minions(&self, expr: &str, tgt_type: &str) -> Vec<String> {
        let tgt = Value::from(expr);
        self.0
            .iter()
            .filter(|id| {
                let facts = salt_matcher::Facts {
                    id,
                    grains: None,
                    pillar: None,
                };
                matches!(
                    salt_matcher::check(facts, &tgt, tgt_type, None, &[]),
                    Ok(Some(true))
                )
            })
            .cloned()
            .collect()
    }
}

fn mp(v: &Js) -> Value {
    json_to_msgpack(v)
}

fn strings(v: &Js) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn auth_check_matrix_matches_salt() {
    let g = golden();
    let m = &g["auth_check"];
    let resolver = Minions(strings(&g["minions"]));
    let expect: Vec<char> = m["expect"].as_str().unwrap().chars().collect();
    let mut i = 0;
    let mut mismatches = Vec::new();
    for acl_js in m["auth_lists"].as_array().unwrap() {
        let list = AclEntry::list(&mp(acl_js));
        for fun in m["funs"].as_array().unwrap() {
            let funs: Vec<String> = match fun {
                Js::String(s) => vec![s.clone()],
                other => strings(other),
            };
            let funs: Vec<&str> = funs.iter().map(String::as_str).collect();
            for args_js in m["args"].as_array().unwrap() {
                let args = mp(args_js);
                let args = args.as_array().unwrap().as_slice();
                let per_fun: Vec<&[Value]> = funs.iter().map(|_| args).collect();
                for minions in m["minion_sets"].as_array().unwrap() {
                    let minions = strings(minions);
                    let got = acl::auth_check(
                        &list,
                        Call {
                            funs: &funs,
                            args: &per_fun,
                        },
                        &minions,
                        &["saltutil.find_job"],
                        &resolver,
                    );
                    let want = expect[i] == '1';
                    if got != want {
                        mismatches.push(format!(
                            "#{i}: acl {acl_js} fun {fun} args {args_js} minions {minions:?}: salt {want}, ours {got}"
                        ));
                    }
                    i += 1;
                }
            }
        }
    }
    assert_eq!(i, expect.len());
    println!("{i} auth_check cases");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn spec_check_matrix_matches_salt() {
    let g = golden();
    let m = &g["spec_check"];
    let expect: Vec<char> = m["expect"].as_str().unwrap().chars().collect();
    let mut i = 0;
    let mut mismatches = Vec::new();
    for acl_js in m["auth_lists"].as_array().unwrap() {
        let list = AclEntry::list(&mp(acl_js));
        for fun in m["funs"].as_array().unwrap() {
            for kwarg in m["kwargs"].as_array().unwrap() {
                for form in ["runner", "wheel"] {
                    let got = match acl::spec_check(&list, fun.as_str().unwrap(), &mp(kwarg), form)
                    {
                        SpecVerdict::Allowed => '1',
                        SpecVerdict::Denied => '0',
                        SpecVerdict::BadSyntax => 's',
                    };
                    if got != expect[i] {
                        mismatches.push(format!(
                            "#{i}: acl {acl_js} fun {fun} kwarg {kwarg} {form}: salt {}, ours {got}",
                            expect[i]
                        ));
                    }
                    i += 1;
                }
            }
        }
    }
    assert_eq!(i, expect.len());
    println!("{i} spec_check cases");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn fill_auth_list_matches_salt() {
    let g = golden();
    let cases = g["fill_auth_list"].as_array().unwrap();
    for (i, case) in cases.iter().enumerate() {
        let provider: Vec<(String, Vec<AclEntry>)> = case["provider"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), AclEntry::list(&mp(v))))
            .collect();
        let got = acl::fill_auth_list(
            &provider,
            case["name"].as_str().unwrap(),
            &strings(&case["groups"]),
            case["permissive"].as_bool().unwrap(),
        );
        assert_eq!(
            got,
            AclEntry::list(&mp(&case["expect"])),
            "case #{i}: {case}"
        );
    }
    println!("{} fill_auth_list cases", cases.len());
}

fn engine(external_auth: &Js, sharedsecret: Option<&str>, dir: &std::path::Path) -> Eauth {
    let mut opts = serde_json::json!({ "external_auth": external_auth });
    if let Some(s) = sharedsecret {
        opts["sharedsecret"] = Js::from(s);
    }
    let cfg = EauthConfig::from_opts(&mp(&opts), dir.join("cache")).unwrap();
    let store = LocalFsStore::new(cfg.token_dir.clone(), &cfg.hash_type);
    Eauth::new(cfg, Box::new(store))
}

fn fields(load: &Js) -> EauthFields {
    EauthFields::from_map(&mp(load)).unwrap()
}

/// Compare one `check_authentication` answer with Salt's dict.
fn assert_same(eauth: &Eauth, f: &EauthFields, want: &Js, what: &str) {
    let got = eauth.check_authentication(f, None, None, &[]);
    let err = &want["error"];
    if err.as_object().is_some_and(|e| e.is_empty()) {
        let ok = got.unwrap_or_else(|e| panic!("{what}: salt accepts, we refuse: {e}"));
        assert_eq!(ok.username, want["username"].as_str().unwrap(), "{what}");
        assert_eq!(
            ok.auth_list.unwrap_or_default(),
            AclEntry::list(&mp(&want["auth_list"])),
            "{what}"
        );
    } else {
        let refusal = got
            .err()
            .unwrap_or_else(|| panic!("{what}: salt refuses, we accept"));
        let (name, message) = refusal.name_and_message();
        assert_eq!(name, err["name"].as_str().unwrap(), "{what}");
        assert_eq!(message, err["message"].as_str().unwrap(), "{what}");
    }
}

#[test]
fn load_auth_answers_match_salt() {
    let g = golden();
    let la = &g["loadauth"];
    let dir = tempfile::tempdir().unwrap();
    let users = dir.path().join("users.txt");
    std::fs::write(&users, la["users_txt"].as_str().unwrap()).unwrap();
    let mut ea = la["external_auth"].clone();
    ea["file"]["^filename"] = Js::from(users.to_str().unwrap());
    let eauth = engine(&ea, la["sharedsecret"].as_str(), dir.path());
    for case in la["cases"].as_array().unwrap() {
        assert_same(
            &eauth,
            &fields(&case["load"]),
            &case["expect"],
            &case.to_string(),
        );
    }

    // The legacy text format: md5 hashes, `|`, fields 2 and 3.
    let legacy = &la["legacy"];
    let file = dir.path().join("legacy.txt");
    std::fs::write(&file, legacy["legacy_txt"].as_str().unwrap()).unwrap();
    let mut ea = legacy["external_auth"].clone();
    ea["file"]["^filename"] = Js::from(file.to_str().unwrap());
    let eauth2 = engine(&ea, None, dir.path());
    for case in legacy["cases"].as_array().unwrap() {
        assert_same(
            &eauth2,
            &fields(&case["load"]),
            &case["expect"],
            &case.to_string(),
        );
    }

    // A token file as Salt's localfs writes it: we read it, and write the same bytes.
    let tok = &la["token"];
    let raw = hex::decode(tok["file_hex"].as_str().unwrap()).unwrap();
    let tdata = TokenData::from_value(&salt_proto::decode(&raw).unwrap()).unwrap();
    assert_eq!(tdata.name, tok["tdata"]["name"].as_str().unwrap());
    assert_eq!(tdata.token, tok["tdata"]["token"].as_str().unwrap());
    assert_eq!(
        salt_proto::encode(&tdata.to_value()),
        raw,
        "byte-identical token file"
    );
    // Authenticate with it (made valid again: the golden's expire has passed by now).
    let token_dir = eauth.config().token_dir.clone();
    std::fs::create_dir_all(&token_dir).unwrap();
    let mut fresh = tdata.clone();
    fresh.expire = tdata.start + 1e9;
    std::fs::write(
        token_dir.join(&tdata.token),
        salt_proto::encode(&fresh.to_value()),
    )
    .unwrap();
    let by_token = EauthFields {
        token: Some(Secret::new(tdata.token.clone())),
        ..EauthFields::default()
    };
    assert_same(&eauth, &by_token, &tok["by_token"], "by token");
    let unknown = EauthFields {
        token: Some(Secret::new("0".repeat(64))),
        ..EauthFields::default()
    };
    assert_same(&eauth, &unknown, &tok["unknown"], "unknown token");
    // An expired token is refused as an unknown one, and removed.
    let mut expired = tdata.clone();
    expired.expire = 1.0;
    let store = LocalFsStore::new(token_dir.clone(), "sha256");
    std::fs::write(
        token_dir.join(&tdata.token),
        salt_proto::encode(&expired.to_value()),
    )
    .unwrap();
    assert!(store.get_token(&tdata.token).unwrap().is_some());
    assert_same(&eauth, &by_token, &tok["unknown"], "expired token");
    assert!(
        store.get_token(&tdata.token).unwrap().is_none(),
        "expired token removed"
    );
}
