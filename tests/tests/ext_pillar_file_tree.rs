//! `ext_pillar: file_tree` (issue 36) against real Salt 3007.17: the same directory tree read
//! by Salt's pillar (`salt-call --local pillar.items`) and by ours (`salt_pillar::compile`
//! with the options our master's config loader read): per-host and per-node-group files,
//! nested and empty directories, links (to files, to directories, dangling), bytes that are
//! not UTF-8, `keep_newline` as a boolean and as globs, `follow_dir_links`, a relative
//! `root_dir` under `pillar_roots`, and arguments Salt ignores or rejects.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::path::Path;

use salt_integration_tests::TempRoot;
use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::pillar_support::ours_and_salts;

const VERSION: &str = "3007.17";

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// `<dir>/hosts/pym1/...`, `<dir>/hosts/other/...`, `<dir>/nodegroups/{grouped,unknown}/...`.
fn write_file_tree(dir: &Path) {
    let host = dir.join("hosts/pym1");
    write(&host.join("a"), b"hello\n");
    write(&host.join("sub/b"), b"two\n\n");
    write(&host.join("sub/deeper/c"), b"x");
    write(&host.join("bin"), b"\xff\xfe'\n");
    write(&host.join("crlf"), b"line\r\n");
    std::fs::create_dir_all(host.join("emptydir")).unwrap();
    symlink("a", host.join("link")).unwrap();
    symlink("sub", host.join("dirlink")).unwrap();
    symlink("nowhere", host.join("broken")).unwrap();
    write(&dir.join("hosts/other/a"), b"not mine\n");
    let ng = dir.join("nodegroups");
    write(&ng.join("grouped/sub/b"), b"from the group\n");
    write(&ng.join("grouped/g"), b"group only\n");
    write(&ng.join("unknown/u"), b"no such group\n");
    write(&dir.join("top.sls"), b"base:\n  '*':\n    - common\n");
    write(&dir.join("common.sls"), b"a: from-top\nkeep: top\n");
}

/// Salt's pillar and ours for `ext_conf` (`EXT` standing for the tree's directory).
fn compare(case: &str, ext_conf: &str) -> Option<serde_json::Value> {
    // Missing venv: a failure under CI=true, a skip otherwise.
    let venv = salt_integration_tests::require(venv_for(VERSION))?;
    let root = TempRoot::new().unwrap();
    let tree = root.path().join("tree");
    write_file_tree(&tree);
    let ext_conf = ext_conf.replace("EXT", &tree.display().to_string());
    let (ours, want) = ours_and_salts(&venv, root.path(), &tree, &ext_conf).unwrap();
    assert_eq!(
        ours, want,
        "{case}: our pillar differs from Salt {VERSION}'s"
    );
    Some(want)
}

#[test]
fn host_and_node_group_files_as_salt_reads_them() {
    let _guard = serial();
    let Some(p) = compare("defaults", "ext_pillar:\n  - file_tree: {root_dir: EXT}\n") else {
        return;
    };
    assert_eq!(p["a"], "b'hello'", "{p:#}");
    assert_eq!(p["sub"]["b"], "b'two\\n'", "{p:#}");
    assert_eq!(p["g"], "b'group only'", "{p:#}");
    assert_eq!(p["dirlink"], serde_json::json!({}), "{p:#}");
    assert_eq!(p["keep"], "top", "{p:#}");
    assert!(p.get("u").is_none() && p.get("broken").is_none(), "{p:#}");
}

#[test]
fn keep_newline_globs_and_follow_dir_links() {
    let _guard = serial();
    let Some(p) = compare(
        "keep_newline globs, follow_dir_links",
        "ext_pillar:\n  - file_tree:\n      root_dir: EXT\n      follow_dir_links: True\n\
         \x20     keep_newline: ['sub/*', './a', 7]\n",
    ) else {
        return;
    };
    assert_eq!(p["a"], "b'hello\\n'", "{p:#}");
    assert_eq!(p["sub"]["b"], "b'two\\n\\n'", "{p:#}");
    assert_eq!(p["dirlink"]["b"], "b'two\\n'", "{p:#}");
}

#[test]
fn keep_newline_true_positional_arguments_and_a_relative_root() {
    let _guard = serial();
    let Some(p) = compare(
        "positional, keep_newline True",
        "ext_pillar:\n  - file_tree: [EXT, False, True, True]\n",
    ) else {
        return;
    };
    assert_eq!(p["a"], "b'hello\\n'", "{p:#}");
    // Relative to the pillarenv's pillar_roots; without a pillarenv, nothing.
    let Some(p) = compare(
        "relative root_dir",
        "pillarenv: base\next_pillar:\n  - file_tree: {root_dir: ./, keep_newline: False}\n",
    ) else {
        return;
    };
    assert_eq!(p["a"], "b'hello'", "{p:#}");
    let Some(p) = compare(
        "relative root_dir, no pillarenv",
        "ext_pillar:\n  - file_tree: {root_dir: ./}\n",
    ) else {
        return;
    };
    assert_eq!(p["a"], "from-top", "{p:#}");
}

#[test]
fn arguments_salt_ignores_or_rejects() {
    let _guard = serial();
    let Some(p) = compare(
        "bad arguments",
        "ext_pillar:\n  - file_tree: {root_dir: EXT, keep_newline: 'yes please'}\n\
         \x20 - file_tree: {keep_newline: True}\n  - file_tree: {root_dir: EXT/nowhere}\n\
         \x20 - file_tree: {root_dir: EXT, colour: blue}\n  - file_tree: EXT\n",
    ) else {
        return;
    };
    assert_eq!(p["_errors"].as_array().map(Vec::len), Some(1), "{p:#}");
    assert_eq!(p["a"], "b'hello'", "{p:#}");
}

#[test]
fn template_true_is_refused_by_name_at_start() {
    let root = TempRoot::new().unwrap();
    std::fs::write(
        root.path().join("master"),
        format!(
            "root_dir: {}\next_pillar:\n  - file_tree: {{root_dir: /srv/ft, template: True}}\n",
            root.path().display()
        ),
    )
    .unwrap();
    let err = salt_config::MasterConfig::load(&salt_config::LoadOptions::new(root.path()))
        .expect_err("file_tree with template: True must be refused");
    let msg = err.to_string();
    assert!(
        msg.contains("file_tree") && msg.contains("template"),
        "{msg}"
    );
}
