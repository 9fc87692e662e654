//! Pillar compilation options beyond the golden tree: environments (`__env__`, `pillarenv`,
//! `pillarenv_from_saltenv`), merge strategies and `pillar_merge_lists`,
//! `pillar_safe_render_error`, renderer errors in `_errors`, `pillar_override`, `ext_pillar`.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use rmpv::Value;
use salt_compat::json::{json_to_msgpack, msgpack_to_json};
use salt_config::{LoadOptions, MasterConfig};
use salt_pillar::{Options, Request, compile};
use serde_json::{Value as Js, json};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn cfg(root: &Path, extra: &str) -> Options {
    let yaml = format!(
        "root_dir: {r}\npillar_roots: {{base: [{r}/base], dev: [{r}/dev], __env__: [{r}/envs/__env__]}}\n{extra}",
        r = root.display()
    );
    let cfg = MasterConfig::from_yaml_str(&yaml, &LoadOptions::new(root))
        .unwrap()
        .config;
    Options::from(&cfg)
}

fn req(saltenv: Option<&str>, pillarenv: Option<&str>, over: Js) -> Request {
    Request {
        id: "m1".into(),
        grains: json_to_msgpack(&json!({"id": "m1", "os": "Debian"})),
        saltenv: saltenv.map(str::to_owned),
        pillarenv: pillarenv.map(str::to_owned),
        pillar_override: json_to_msgpack(&over),
        ext: None,
        salt: salt_pillar::SaltHook::default(),
    }
}

fn tree(root: &Path) {
    write(root, "base/top.sls", "base:\n  '*': [a, b]\n");
    write(root, "base/a.sls", "d: {x: 1, l: [1, 2]}\nwho: base\n");
    write(root, "base/b.sls", "d: {y: 2, l: [2, 3]}\n");
    write(root, "dev/top.sls", "dev:\n  'G@os:Debian': [c]\n");
    write(root, "dev/c.sls", "who: dev\n");
    write(root, "envs/feature1/top.sls", "feature1:\n  m1: [f]\n");
    write(root, "envs/feature1/f.sls", "who: {{ saltenv }}\n");
}

fn compile_js(c: &Options, r: &Request) -> Js {
    msgpack_to_json(&compile(c, r))
}

#[test]
fn environments_and_merging() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    tree(root);
    let c = cfg(root, "");
    // Every environment, base first: dev's `who` wins; lists replaced.
    let p = compile_js(&c, &req(None, None, Js::Null));
    assert_eq!(p, json!({"d": {"x": 1, "l": [2, 3], "y": 2}, "who": "dev"}));
    // pillarenv: only that environment.
    let p = compile_js(&c, &req(None, Some("base"), Js::Null));
    assert_eq!(p["who"], "base");
    // __env__ maps an unknown environment to its directory.
    let p = compile_js(&c, &req(None, Some("feature1"), Js::Null));
    assert_eq!(p, json!({"who": "feature1"}));
    // saltenv counts as pillarenv only with pillarenv_from_saltenv.
    let p = compile_js(
        &cfg(root, "pillarenv_from_saltenv: True\n"),
        &req(Some("base"), None, Js::Null),
    );
    assert_eq!(p["who"], "base");
    // merge_lists and overwrite.
    let p = compile_js(
        &cfg(root, "pillar_merge_lists: True\n"),
        &req(None, Some("base"), Js::Null),
    );
    assert_eq!(p["d"]["l"], json!([1, 2, 3]));
    let p = compile_js(
        &cfg(root, "pillar_source_merging_strategy: overwrite\n"),
        &req(None, Some("base"), Js::Null),
    );
    assert_eq!(p["d"], json!({"y": 2, "l": [2, 3]}));
    // pillar_override merges last.
    let p = compile_js(
        &c,
        &req(None, Some("base"), json!({"who": "cli", "d": {"z": 0}})),
    );
    assert_eq!(p["who"], "cli");
    assert_eq!(p["d"]["z"], 0);
    assert_eq!(p["d"]["x"], 1);
}

#[test]
fn render_errors_are_reported_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "base/top.sls",
        "base:\n  '*': [bad, dup, py, ok, gone]\n",
    );
    write(root, "base/bad.sls", "x: {{ salt['cmd.run']('id') }}\n");
    write(root, "base/dup.sls", "k: 1\nk: 2\n");
    write(root, "base/py.sls", "#!py\ndef run():\n    return {}\n");
    write(root, "base/ok.sls", "fine: true\n");
    let safe = compile(&cfg(root, ""), &req(None, Some("base"), Js::Null));
    let js = msgpack_to_json(&safe);
    assert_eq!(js["fine"], true);
    let errors: Vec<&str> = js["_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(
        errors,
        [
            "Rendering SLS 'bad' failed. Please see master log for details.",
            "Rendering SLS 'dup' failed. Please see master log for details.",
            "Rendering SLS 'py' failed. Please see master log for details.",
            "Specified SLS 'gone' in environment 'base' is not available on the salt master",
        ]
    );
    let detailed = compile(
        &cfg(root, "pillar_safe_render_error: False\n"),
        &req(None, Some("base"), Js::Null),
    );
    let text = format!("{:?}", errors_of(&detailed));
    assert!(text.contains("'cmd.run' is not available."), "{text}");
    assert!(text.contains("conflicting ID 'k'"), "{text}");
    assert!(
        text.contains("renderer \\\"py\\\" is not supported"),
        "{text}"
    );
}

fn errors_of(v: &Value) -> Js {
    msgpack_to_json(v)["_errors"].clone()
}

/// `ext_pillar`: `_errors` in Salt's order (render errors, then ext_pillar's; before them
/// with `ext_pillar_first`), the minion id in the command, and a minion's on-demand `ext`
/// run only when `on_demand_ext_pillar` lists its modules.
#[test]
fn ext_pillar_errors_order_and_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "base/top.sls", "base:\n  '*': [a, missing]\n");
    write(root, "base/a.sls", "who: top\n");
    let ext = r#"ext_pillar:
  - cmd_json: [a, b]
  - cmd_json: |-
      printf '{"who": "ext", "id": "%s"}'
"#;
    let missing =
        "Specified SLS 'missing' in environment 'base' is not available on the salt master";
    let failed = "Failed to load ext_pillar cmd_json: ext_pillar() takes 3 positional arguments but 4 were given";
    let p = compile_js(&cfg(root, ext), &req(None, None, json!({})));
    assert_eq!(p["who"], "ext");
    assert_eq!(p["id"], "m1");
    let errors: Vec<&str> = p["_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(errors[..2], [missing, failed], "{errors:?}");
    let first = format!("{ext}ext_pillar_first: True\n");
    let p = compile_js(&cfg(root, &first), &req(None, None, json!({})));
    assert_eq!(p["who"], "top");
    assert_eq!(p["_errors"][0], failed);
    assert_eq!(p["_errors"][1], missing);

    let mut r = req(None, None, json!({}));
    r.ext = Some(json_to_msgpack(
        &json!({"cmd_json": "printf '{\"od\": 1}'"}),
    ));
    let p = compile_js(&cfg(root, ""), &r);
    assert!(p.get("od").is_none(), "cmd_json is not on demand: {p}");
    let p = compile_js(&cfg(root, "on_demand_ext_pillar: [cmd_json]\n"), &r);
    assert_eq!(p["od"], 1);

    // Allowed on demand (Salt's default list) but not implemented: named in `_errors`.
    r.ext = Some(json_to_msgpack(&json!({"libvirt": {}})));
    let p = compile_js(&cfg(root, ""), &r);
    assert!(
        p["_errors"].as_array().unwrap().iter().any(|e| e
            == "Failed to load ext_pillar libvirt: the ext_pillar module `libvirt` is not \
                implemented by salt-rs"),
        "{p}"
    );
}
