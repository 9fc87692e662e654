//! `ext_pillar: - stack: ...` (PillarStack, salt/pillar/stack.py) against real Salt 3007.17:
//! the same stack config files and YAML templates, Salt's pillar compiler
//! (`salt-call --local pillar.items`) against ours (`salt_pillar::compile` with the options
//! read by the master's config loader): a Jinja config of lines and a YAML-list config with a
//! glob and a missing entry, every `__` strategy on mappings and lists (`merge-last`,
//! `merge-first`, `remove`, `overwrite`), a type change, the `stack`, `pillar`,
//! `minion_id`, `ymlpath` and `__stack__` (`traverse`, `cfg_path`) variables, and the keyword
//! form choosing config files by a pillar value and a grain.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use salt_integration_tests::TempRoot;
use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::pillar_support::ours_and_salts;

const VERSION: &str = "3007.17";

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

#[test]
fn pillar_stack_as_salt() {
    let _serial = serial();
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        return;
    };
    let root = TempRoot::new().unwrap();
    let tree = root.path().join("tree");
    let stack = root.path().join("stack");
    write(
        &tree,
        &[
            ("top.sls", "base:\n  '*':\n    - common\n"),
            ("common.sls", "app:\n  name: from-top\n"),
        ],
    );
    write(
        &stack,
        &[
            (
                "stack.cfg",
                "core.yml\n\n{% if minion_id == 'pym1' %}minions/{{ minion_id }}.yml{% endif %}\n\
                 nothing/here.yml\n",
            ),
            ("stack2.cfg", "- roles/*.yml\n- missing/*.yml\n"),
            (
                "core.yml",
                "app:\n  name: core\n  ports: [80]\n  opts: {a: 1, b: 2}\n\
                 users: [alice, bob, carol]\nkept: 1\nreplaced: {y: 2}\nkind: [1]\n",
            ),
            (
                "minions/pym1.yml",
                "app:\n  __: merge-last\n  ports: [443]\n  id: {{ minion_id }}\n\
                 from_stack: {{ stack.app.name }}\nusers:\n  - __: remove\n  - bob\n\
                 first:\n  - __: merge-first\n  - z\n",
            ),
            (
                "roles/a.yml",
                "app:\n  opts:\n    __: merge-first\n    a: 9\n    c: 3\n\
                 tags: [{{ __stack__.traverse(stack, 'app:name', 'none') }}, \
                 {{ __stack__['traverse'](stack, 'app:nope', 'dflt') }}]\n\
                 top_pillar: {{ pillar.get('app', {}).get('name', 'no') }}\n\
                 cfg_known: {{ __stack__['cfg_path'] | length > 0 }}\n\
                 users: [{__: merge-first}, zed]\n",
            ),
            ("roles/b.yml", "__: remove\nkept: ~\n"),
            (
                "roles/c.yml",
                "replaced: {__: overwrite, x: {__: junk, n: 1}}\n\
                 file: {{ ymlpath.split('/')[-1] }}\nkind: {k: v}\n\
                 more_users: [{__: overwrite}, eve]\n",
            ),
            ("bytop.cfg", "bytop.yml\n"),
            ("bytop.yml", "bytop: {{ minion_id }}\n"),
            ("bygrain.cfg", "- bygrain.yml\n"),
            (
                "bygrain.yml",
                "bygrain: yes\nstack_is_fresh: {{ stack | length }}\n",
            ),
        ],
    );
    let s = stack.display();
    let conf = format!(
        "ext_pillar:\n  - stack:\n      - {s}/stack.cfg\n      - {s}/stack2.cfg\n      \
         - {s}/absent.cfg\n  - stack:\n      pillar:app:name:\n        from-top: {s}/bytop.cfg\n      \
         grains:id:\n        pym1: [{s}/bygrain.cfg]\n  - stack: {s}/bytop.cfg\n"
    );
    let (ours, want) = ours_and_salts(&venv, root.path(), &tree, &conf).unwrap();
    assert_eq!(ours, want, "our pillar differs from Salt {VERSION}'s");
    // What Salt's stack made of it (so a change on both sides is seen).
    assert_eq!(
        want["app"]["opts"],
        serde_json::json!({"a": 1, "b": 2, "c": 3})
    );
    assert_eq!(want["users"], serde_json::json!(["zed", "alice", "carol"]));
    assert_eq!(want["bytop"], "pym1");
    assert!(want.get("kept").is_none(), "{want:#}");
}

#[test]
fn pillar_stack_errors_as_salt() {
    let _serial = serial();
    let Some(venv) = salt_integration_tests::require(venv_for(VERSION)) else {
        return;
    };
    let root = TempRoot::new().unwrap();
    let tree = root.path().join("tree");
    let stack = root.path().join("stack");
    write(&tree, &[("top.sls", "base:\n  '*': []\n")]);
    write(
        &stack,
        &[
            ("bad.cfg", "lax.yml\nbad.yml\n"),
            // A strategy in a new key is dropped unread (Salt's `_cleanup`); at the top it
            // fails the module.
            ("lax.yml", "a: {__: sideways, b: 1}\n"),
            ("bad.yml", "__: sideways\nb: 1\n"),
        ],
    );
    let conf = format!("ext_pillar:\n  - stack: {}/bad.cfg\n", stack.display());
    let (ours, want) = ours_and_salts(&venv, root.path(), &tree, &conf).unwrap();
    assert_eq!(ours, want, "our pillar differs from Salt {VERSION}'s");
    assert!(want.get("_errors").is_some(), "{want:#}");
}
