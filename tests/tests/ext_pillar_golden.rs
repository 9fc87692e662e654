//! `ext_pillar` (issue 36) against real Salt 3007.17: the same `cmd_json`/`cmd_yaml` scripts
//! and pillar tree, Salt's pillar compiler (`salt-call --local pillar.items` with the
//! `ext_pillar` options in its config) against ours (`salt_pillar::compile` with the options
//! read by the master's config loader), `ext_pillar_first` both ways, `pillar_merge_lists`,
//! every `pillar_source_merging_strategy` (top-file SLS that overlap, then the external
//! pillar over them), a module called with the wrong arguments (`_errors`) and commands whose
//! output does not parse (nothing merged, no error).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use salt_integration_tests::TempRoot;
use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::pillar_support::ours_and_salts;

const VERSION: &str = "3007.17";

/// The pillar tree: a top-file pillar that overlaps the external one, and an SLS that reads
/// `pillar` while rendering (with `ext_pillar_first` it sees the external pillar).
fn write_tree(dir: &Path) {
    let files = [
        (
            "top.sls",
            "base:\n  '*':\n    - common\n    - over\n    - seen\n",
        ),
        (
            "common.sls",
            "app:\n  name: from-top\n  port: 80\nlist: [top]\nowner: top\n",
        ),
        ("over.sls", "app:\n  tier: over\n  port: 81\nlist: [over]\n"),
        (
            "seen.sls",
            "seen_role: {{ pillar.get('cmdb', {}).get('role', 'none') }}\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// The scripts: JSON and YAML (with YAML 1.1 scalars) using the minion id, and output that
/// parses as neither.
fn write_scripts(dir: &Path) {
    let files = [
        (
            "cmdb-json",
            "#!/bin/sh\nprintf '{\"app\": {\"port\": 8080, \"host\": \"%s.example\"}, \
             \"cmdb\": {\"role\": \"web\", \"n\": 1.5}, \"list\": [\"json\"]}\\n' \"$1\"\n",
        ),
        (
            "cmdb-yaml",
            "#!/bin/sh\ncat <<EOF\nowner: yaml-$1\nflags: {a: yes, b: off, mode: 0700, none: ~}\n\
             list: [yaml]\nwhere: $PWD\nEOF\n",
        ),
        (
            "cmdb-yamlex",
            "#!/bin/sh\ncat <<EOF\nowner: yamlex-$1\napp: !aggregate {name: ex, tags: [a]}\n\
             app: !aggregate {port: 81, tags: [b]}\nroles: !aggregate [web]\n\
             roles: !aggregate [db, web]\nplain: [1]\nplain: [2]\nmode: 0700\n\
             flags: {a: yes}\nflags: {b: no}\nkept: {a: 1}\n!reset kept: {c: 1}\n\
             one: !aggregate solo\nnested: {l: [x], l: [y], m: !aggregate [1], m: !aggregate [2]}\nEOF\n",
        ),
        (
            "yamlex-hex",
            "#!/bin/sh\necho 'owner: hex'\necho 'n: 0x1f'\n",
        ),
        (
            "json-and-stderr",
            "#!/bin/sh\necho '{\"owner\": \"json\"}'\necho 'a warning' >&2\n",
        ),
        (
            "garbage",
            "#!/bin/sh\necho 'not: [json'\necho oops >&2\nexit 3\n",
        ),
    ];
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let mut perm = std::fs::metadata(&p).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&p, perm).unwrap();
    }
}

/// Salt's pillar and ours for the same `ext_pillar` options; each asserted equal.
fn compare(case: &str, ext_conf: &str) -> Option<serde_json::Value> {
    // Missing venv: a failure under CI=true, a skip otherwise.
    let venv = salt_integration_tests::require(venv_for(VERSION))?;
    let root = TempRoot::new().unwrap();
    let tree = root.path().join("tree");
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    write_tree(&tree);
    write_scripts(&bin);
    let ext_conf = ext_conf.replace("BIN", &bin.display().to_string());
    let (mut ours, want) = ours_and_salts(&venv, root.path(), &tree, &ext_conf).unwrap();
    if !ext_conf.contains("ext_pillar_first: True") {
        // Masterless Salt renders the SLS with the pillar its minion compiled at start-up as
        // `pillar` (`opts["pillar"]`); a master has none: the SLS sees only the override.
        assert_eq!(ours["seen_role"], "none", "{case}: {ours:#}");
        ours["seen_role"] = want["seen_role"].clone();
    }
    assert_eq!(
        ours, want,
        "{case}: our pillar differs from Salt {VERSION}'s"
    );
    Some(want)
}

const BOTH: &str =
    "ext_pillar:\n  - cmd_json: BIN/cmdb-json %s\n  - cmd_yaml:\n      command: BIN/cmdb-yaml %s\n";

#[test]
fn cmd_json_and_cmd_yaml_after_the_top_file() {
    let _guard = serial();
    let Some(p) = compare("ext_pillar_first: False", BOTH) else {
        return;
    };
    // The external pillar wins over the top file, and is not seen while rendering it.
    assert_eq!(p["app"]["port"], 8080);
    assert_eq!(p["app"]["name"], "from-top");
    assert_eq!(p["app"]["host"], "pym1.example");
    assert_eq!(p["owner"], "yaml-pym1");
    assert!(p.get("_errors").is_none(), "{p:#}");
}

#[test]
fn ext_pillar_first_is_overridden_by_the_top_file_and_seen_by_it() {
    let _guard = serial();
    let Some(p) = compare(
        "ext_pillar_first: True",
        &format!("{BOTH}ext_pillar_first: True\n"),
    ) else {
        return;
    };
    assert_eq!(p["app"]["port"], 81, "the last top-file SLS (over) wins");
    assert_eq!(p["owner"], "top");
}

#[test]
fn pillar_merge_lists_joins_the_sources() {
    let _guard = serial();
    let Some(p) = compare(
        "pillar_merge_lists: True",
        &format!("{BOTH}pillar_merge_lists: True\n"),
    ) else {
        return;
    };
    assert!(p["list"].as_array().is_some_and(|l| l.len() > 1), "{p:#}");
}

#[test]
fn every_pillar_source_merging_strategy() {
    let _guard = serial();
    for strategy in ["recurse", "overwrite", "aggregate", "none", "smart"] {
        for lists in [false, true] {
            let case =
                format!("pillar_source_merging_strategy: {strategy}, pillar_merge_lists: {lists}");
            let conf = format!(
                "{BOTH}pillar_source_merging_strategy: {strategy}\n\
                 pillar_merge_lists: {}\n",
                if lists { "True" } else { "False" }
            );
            if compare(&case, &conf).is_none() {
                return;
            }
        }
    }
}

#[test]
fn a_module_called_wrongly_leaves_errors_and_bad_output_nothing() {
    let _guard = serial();
    let Some(p) = compare(
        "failing modules",
        "ext_pillar:\n  - cmd_json: [BIN/cmdb-json, extra]\n  - cmd_json:\n      cmd: BIN/cmdb-json\n\
         \x20 - cmd_json: []\n  - cmd_json: BIN/garbage\n  - cmd_yaml: BIN/garbage\n\
         \x20 - cmd_json: BIN/does-not-exist\n  - cmd_yaml: 'exit 0'\n",
    ) else {
        return;
    };
    assert_eq!(p["_errors"].as_array().map(Vec::len), Some(3), "{p:#}");
    assert_eq!(p["owner"], "top");
}

#[test]
fn cmd_yamlex_aggregates_and_cmd_json_reads_stderr_as_salt_does() {
    let _guard = serial();
    let Some(p) = compare(
        "cmd_yamlex",
        "ext_pillar:\n  - cmd_yamlex: BIN/cmdb-yamlex %s\n  - cmd_yamlex: BIN/yamlex-hex\n\
         \x20 - cmd_json: BIN/json-and-stderr\n  - cmd_yamlex: [BIN/garbage]\n",
    ) else {
        return;
    };
    assert_eq!(p["owner"], "yamlex-pym1", "{p:#}");
    assert_eq!(p["app"]["port"], 81, "{p:#}");
    assert_eq!(p["app"]["name"], "ex", "{p:#}");
    assert_eq!(p["roles"], serde_json::json!(["web", "db"]), "{p:#}");
    assert_eq!(p["mode"], 700, "{p:#}");
    assert!(p.get("_errors").is_none(), "{p:#}");
}

/// `python3 -m http.server` on loopback serving `dir`, stopped when dropped.
struct HttpServer(std::process::Child);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn http_json_and_http_yaml_from_a_loopback_server() {
    let _guard = serial();
    let root = TempRoot::new().unwrap();
    let www = root.path().join("www");
    std::fs::create_dir_all(www.join("pym1")).unwrap();
    std::fs::write(
        www.join("pym1.json"),
        "{\"app\": {\"port\": 9090}, \"list\": [\"http\"], \"n\": 1.5}",
    )
    .unwrap();
    std::fs::write(
        www.join("pym1/data.yaml"),
        "owner: http-yaml\nflags: {a: yes, mode: 0700}\n",
    )
    .unwrap();
    let port = salt_integration_tests::free_port().unwrap();
    let server = std::process::Command::new("python3")
        .args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .arg("--directory")
        .arg(&www)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let Ok(server) = server else {
        let _: Option<()> = salt_integration_tests::require(Err(
            salt_integration_tests::Missing::new("ext_pillar_golden: no python3 for http.server"),
        ));
        return;
    };
    let _server = HttpServer(server);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "http.server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let conf = format!(
        "ext_pillar:\n  - http_json: {{url: 'http://127.0.0.1:{port}/%s.json', namespace: web}}\n\
         \x20 - http_json: 'http://127.0.0.1:{port}/%s.json'\n\
         \x20 - http_yaml: ['http://127.0.0.1:{port}/<id>/data.yaml', True]\n\
         \x20 - http_json: 'http://127.0.0.1:{port}/missing.json'\n\
         \x20 - http_yaml: [a, b, c, d, e, f, g, h]\n\
         \x20 - http_json: {{nourl: x}}\n"
    );
    let Some(p) = compare("http_json, http_yaml", &conf) else {
        return;
    };
    assert_eq!(p["web"]["app"]["port"], 9090, "{p:#}");
    assert_eq!(p["app"]["port"], 9090, "{p:#}");
    assert_eq!(p["owner"], "http-yaml", "{p:#}");
    assert_eq!(p["_errors"].as_array().map(Vec::len), Some(2), "{p:#}");
}
