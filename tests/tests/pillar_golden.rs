//! Golden pillar: our master's pillar compiler against real Salt 3006.30/3007.17/3008.5 on
//! the formula-style tree `tests/data/pillar-golden` (map.jinja with `filter_by` and
//! `import_yaml`, includes with `defaults`/`key`, `do`, Salt's filters, YAML 1.1 scalars,
//! every top match type, a missing SLS in `_errors`).
//!
//! Salt's side is `salt-call --local pillar.items` (its own pillar compiler with its minion's
//! grains); ours is `salt_pillar::compile` with the same grains. No daemons:
//! a few seconds per version.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use salt_compat::json::{json_to_msgpack, msgpack_to_json};
use salt_integration_tests::TempRoot;
use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::pillar_support::{NODEGROUPS, golden_tree, salt_call_local};
use salt_integration_tests::require;
use salt_pillar::{Options, Request, compile};

#[test]
fn golden_3006() {
    run("3006.30");
}

#[test]
fn golden_3007() {
    run("3007.17");
}

#[test]
fn golden_3008() {
    run("3008.5");
}

fn run(version: &str) {
    let Some(venv) = require(venv_for(version)) else {
        return;
    };
    let _guard = serial();
    let root = TempRoot::new().unwrap();
    let tree = golden_tree();
    let grains = salt_call_local(&venv, root.path(), &tree, "pym1", &["grains.items"]).unwrap();
    // 3008 masks pillar values in `pillar.items` output unless asked not to.
    let items: &[&str] = if version.starts_with("3008") {
        &["pillar.items", "unmask=True"]
    } else {
        &["pillar.items"]
    };
    let want = salt_call_local(&venv, root.path(), &tree, "pym1", items).unwrap();
    assert!(
        want.get("owner").is_some() && want.get("_errors").is_some(),
        "Salt's own pillar is not what the tree should give: {want:#}"
    );
    // filters.sls renders in full (a template error on both sides would compare nothing).
    assert_eq!(
        want["_errors"].as_array().map(Vec::len),
        Some(1),
        "only the missing SLS is an error: {want:#}"
    );
    assert!(
        want["filters"].as_object().map_or(0, |m| m.len()) > 40,
        "{want:#}"
    );

    let conf = root.path().join("ours");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("master"),
        format!(
            "root_dir: {}\npillar_roots: {{base: [{}]}}\nnodegroups: {NODEGROUPS}\n",
            conf.display(),
            tree.display()
        ),
    )
    .unwrap();
    let cfg = salt_config::MasterConfig::load(&salt_config::LoadOptions::new(&conf))
        .unwrap()
        .config;
    let cfg = Options::from(&cfg);
    let req = Request {
        id: "pym1".into(),
        grains: json_to_msgpack(&grains),
        saltenv: None,
        pillarenv: None,
        pillar_override: rmpv::Value::Nil,
        ext: None,
        salt: salt_pillar::SaltHook::default(),
    };
    let ours = msgpack_to_json(&compile(&cfg, &req));
    assert_eq!(ours, want, "salt {version}: our pillar differs from Salt's");
    println!(
        "salt {version}: pillar of pym1 matches ({} keys)",
        want.as_object().map_or(0, |m| m.len())
    );

    // pillar_override (the minion's `pillar=` on the command line) merges last.
    let req = Request {
        pillar_override: json_to_msgpack(&serde_json::json!({"owner": "cli", "app": {"port": 1}})),
        ..req
    };
    let over = msgpack_to_json(&compile(&cfg, &req));
    assert_eq!(over["owner"], "cli");
    assert_eq!(over["app"]["port"], 1);
    assert_eq!(over["app"]["pkg"], want["app"]["pkg"]);
}
