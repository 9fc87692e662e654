//! The quirks of Salt's `apply_master_config` that `config.values` replays. Expected values
//! are what Salt 3007.17's `salt.config.master_config()` answers for the same file (checked
//! by hand; tests/tests/interop_wheel.rs compares whole answers with Salt's).

use super::root::{prepend_root_dir, url_scheme};
use super::*;

fn facts() -> Facts {
    Facts {
        cli: "salt-master".into(),
        user: "alice".into(),
        home: "/home/alice".into(),
        cwd: "/work".into(),
        ipc_write_buffer: 12_345,
    }
}

/// `config.values` for a master file with `text`, `root_dir` set to the temp dir unless the
/// text sets it.
fn values_of(text: &str) -> (tempfile::TempDir, Result<Value, ValuesError>) {
    let dir = tempfile::tempdir().unwrap();
    let text = if text.contains("root_dir:") {
        text.to_owned()
    } else {
        format!("root_dir: {}\n{text}", dir.path().display())
    };
    let v = values_in(&dir, &text);
    (dir, v)
}

/// `config.values` for `dir/conf/master` holding `text`, host name `box`.
fn values_in(dir: &tempfile::TempDir, text: &str) -> Result<Value, ValuesError> {
    let conf = dir.path().join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(conf.join("master"), text).unwrap();
    master_values_with(&LoadOptions::new(&conf).hostname("box"), &facts())
}

fn ok(text: &str) -> (String, Value) {
    let (dir, v) = values_of(text);
    (dir.path().display().to_string(), v.unwrap())
}

fn err(text: &str) -> String {
    values_of(text).1.unwrap_err().to_string()
}

#[test]
fn defaults_paths_and_computed_values() {
    let (r, v) = ok("");
    assert_eq!(v["__role"], "master");
    assert_eq!(v["__fs_update"], true);
    assert_eq!(v["__cli"], "salt-master");
    assert_eq!(v["conf_file"], format!("{r}/conf/master"));
    assert_eq!(v["user"], "alice");
    assert_eq!(v["ssh_config_file"], "/home/alice/.ssh/config");
    assert_eq!(v["ipc_write_buffer"], 0);
    assert_eq!(v["id"], "box_master");
    assert_eq!(v["cachedir"], format!("{r}/var/cache/salt/master"));
    // token_dir and syndic_dir come from cachedir before it is prefixed, then are prefixed.
    assert_eq!(v["token_dir"], format!("{r}/var/cache/salt/master/tokens"));
    assert_eq!(
        v["syndic_dir"],
        format!("{r}/var/cache/salt/master/syndics")
    );
    // utils_dirs is derived from extension_modules before the prefix, and never prefixed.
    assert_eq!(
        v["extension_modules"],
        format!("{r}/var/cache/salt/master/extmods")
    );
    assert_eq!(
        v["utils_dirs"],
        json!(["/var/cache/salt/master/extmods/utils"])
    );
    assert_eq!(v["log_file"], format!("{r}/var/log/salt/master"));
    assert_eq!(v["ssh_log_file"], format!("{r}/var/log/salt/ssh"));
    // Not in Salt's list: unprefixed.
    assert_eq!(v["syndic_log_file"], "/var/log/salt/syndic");
    assert_eq!(
        v["file_roots"],
        json!({"base": ["/srv/salt", "/srv/spm/salt"]})
    );
    assert_eq!(v["http_connect_timeout"], json!(20.0));
    assert_eq!(v["root_dir"], r);
}

#[test]
fn prepend_root_dir_like_salt() {
    let r = "/r";
    assert_eq!(prepend_root_dir(r, "/etc/x").as_deref(), Some("/r/etc/x"));
    assert_eq!(prepend_root_dir(r, "/r/etc/x").as_deref(), Some("/r/etc/x"));
    // The root itself: only Salt's empty default prefix matches, so it is doubled.
    assert_eq!(prepend_root_dir(r, "/r").as_deref(), Some("/r/r"));
    assert_eq!(prepend_root_dir(r, "rel/x").as_deref(), Some("/r/rel/x"));
    assert_eq!(prepend_root_dir(r, "").as_deref(), Some("/r"));
    assert_eq!(prepend_root_dir(r, "/r2/x").as_deref(), Some("/r/r2/x"));
    assert_eq!(prepend_root_dir("/", "/var/x").as_deref(), Some("/var/x"));
    assert_eq!(prepend_root_dir("/", "//x").as_deref(), Some("/x"));
}

#[test]
fn log_urls_and_log_dir() {
    let (r, v) = ok("log_file: udp://loghost:514\nkey_logfile: file:///var/log/k\n");
    assert_eq!(v["log_file"], "udp://loghost:514");
    assert_eq!(v["key_logfile"], "file:///var/log/k");
    assert_eq!(v["ssh_log_file"], format!("{r}/var/log/salt/ssh"));
    let (r, v) = ok("log_dir: /logs\n");
    assert_eq!(v["log_file"], format!("{r}/logs/master"));
    let (r, v) = ok("log_dir: /logs\nlog_file: m.log\n");
    assert_eq!(v["log_file"], format!("{r}/logs/m.log"));
    assert_eq!(url_scheme("C:/x"), "C");
    assert_eq!(url_scheme("/var/log/a:b"), "");
    assert_eq!(url_scheme("1a:b"), "");
}

#[test]
fn sock_dir_backends_and_bools() {
    let (r, v) = ok(
        "cachedir: /c\nsock_dir: /a/very/long/socket/dir\nfileserver_backend: [git, roots, minion]\n\
         open_mode: 1\nauto_accept: yes\n",
    );
    assert_eq!(v["sock_dir"], format!("{r}/c/.salt-unix"));
    assert_eq!(
        v["fileserver_backend"],
        json!(["gitfs", "roots", "minionfs"])
    );
    assert_eq!(v["open_mode"], false);
    assert_eq!(v["auto_accept"], true);
    // extension_modules keeps Salt's default: it does not follow cachedir.
    assert_eq!(
        v["extension_modules"],
        format!("{r}/var/cache/salt/master/extmods")
    );
    let (r, v) = ok("cachedir: /c\nextension_modules: ''\n");
    assert_eq!(v["extension_modules"], format!("{r}/c/extmods"));
    assert_eq!(v["utils_dirs"], json!(["/c/extmods/utils"]));
}

#[test]
fn roots_validation() {
    // Salt validates pillar_roots with the file_roots function: its fallback is /srv/salt.
    let (_, v) = ok("pillar_roots: [a]\nfile_roots: {base: x, dev: [/d]}\n");
    assert_eq!(v["pillar_roots"], json!({"base": ["/srv/salt"]}));
    assert_eq!(v["file_roots"], json!({"base": [], "dev": ["/d"]}));
}

#[test]
fn yaml_as_salt_reads_it() {
    let (_, v) = ok("keysize: 0700\nid: 123\nmy_opt: -010\nmode: 0800\n");
    assert_eq!(v["keysize"], 700);
    assert_eq!(v["id"], "123");
    assert_eq!(v["my_opt"], -8);
    assert_eq!(v["mode"], "0800");
    let (_, v) = ok("id: null\n");
    assert_eq!(v["id"], "None");
}

#[test]
fn ids() {
    let (_, v) = ok("append_domain: example.com\n");
    assert_eq!(v["id"], "box.example.com_master");
    let (_, v) = ok("id: m1\nappend_domain: example.com\n");
    assert_eq!(v["id"], "m1.example.com");
    let (_, v) = ok("id: m1.example.com\nappend_domain: example.com\n");
    assert_eq!(v["id"], "m1.example.com");
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().display().to_string();
    std::fs::create_dir_all(dir.path().join("etc/salt")).unwrap();
    std::fs::write(
        dir.path().join("etc/salt/minion_id"),
        "Cached.Example.Com\n",
    )
    .unwrap();
    let v = values_in(
        &dir,
        &format!(
            "root_dir: {r}\nminion_id_lowercase: true\nminion_id_remove_domain: example.com\n"
        ),
    )
    .unwrap();
    assert_eq!(v["id"], "cached_master");
}

#[test]
fn cluster_peers_need_an_id() {
    let (_, v) = ok("cluster_peers: [a]\ncluster_pki_dir: /p\n");
    assert_eq!(v["cluster_peers"], json!([]));
    assert_eq!(v["cluster_pki_dir"], Value::Null);
    let (r, v) = ok("cluster_id: c\n");
    assert_eq!(v["cluster_pki_dir"], format!("{r}/etc/salt/pki/master"));
}

#[test]
fn ignore_lists_workers_hash_and_nodegroups() {
    let (_, v) = ok(
        "file_ignore_regex: '('\nfile_ignore_glob: '*.pyc'\nworker_threads: 1\npeer: {a: [b]}\n\
         hash_type: SHA512\nnodegroups: [{g1: 'L@a'}, {g2: 'b*'}]\nreturn: [a, b]\n\
         ssh_minion_opts: {gitfs_remotes: [], pillar_x: 1, ssh_merge_pillar: true, x: 2}\n",
    );
    assert_eq!(v["file_ignore_regex"], json!([]));
    assert_eq!(v["file_ignore_glob"], json!(["*.pyc"]));
    assert_eq!(v["worker_threads"], 3);
    assert_eq!(v["hash_type"], "sha512");
    assert_eq!(v["nodegroups"], json!({"g1": "L@a", "g2": "b*"}));
    assert_eq!(v["return"], "a,b");
    assert_eq!(
        v["ssh_minion_opts"],
        json!({"ssh_merge_pillar": true, "x": 2})
    );
    let (_, v) = ok("nodegroups:\nipc_write_buffer: dynamic\n");
    assert_eq!(v["nodegroups"], json!({}));
    assert_eq!(v["ipc_write_buffer"], 12_345);
    let (_, v) = ok("ipc_write_buffer: 77\n");
    assert_eq!(v["ipc_write_buffer"], 77);
}

#[test]
fn ssl_discovery_and_signing() {
    let (_, v) = ok("ssl: {cert_reqs: CERT_REQUIRED, ssl_version: PROTOCOL_TLSv1_2, keyfile: k}\n");
    assert_eq!(
        v["ssl"],
        json!({"cert_reqs": 2, "ssl_version": 5, "keyfile": "k"})
    );
    assert_eq!(ok("ssl: true\n").1["ssl"], json!({}));
    assert_eq!(ok("ssl: false\n").1["ssl"], Value::Null);
    assert!(err("ssl: {cert_reqs: REQUIRED}\n").starts_with(
        "SSL option 'cert_reqs' must be set to one of the following values: 'CERT_NONE', "
    ));
    assert_eq!(
        ok("discovery: true\n").1["discovery"],
        json!({"port": 4520, "mapping": {}})
    );
    assert_eq!(
        ok("discovery: {attempts: 2, mapping: {a: b}}\n").1["discovery"],
        json!({"port": 4520, "mapping": {"a": "b"}, "attempts": 2})
    );
    assert_eq!(
        err("discovery: {nope: 1}\n"),
        "Unknown discovery option: nope"
    );
    assert!(err("publish_signing_algorithm: MD5\n").contains("'MD5' is not valid"));
}

#[test]
fn keep_acl_in_token_with_rest_and_environment() {
    let (_, v) = ok("external_auth: {rest: {'^url': x}}\nenvironment: dev\n");
    assert_eq!(v["keep_acl_in_token"], true);
    assert_eq!(v["saltenv"], "dev");
    let (_, v) = ok("environment: dev\nsaltenv: prod\n");
    assert_eq!(v["environment"], "prod");
}

#[test]
fn includes_and_conf_file() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().display().to_string();
    let conf = dir.path().join("conf");
    std::fs::create_dir_all(conf.join("master.d")).unwrap();
    std::fs::write(
        conf.join("master.d/a.conf"),
        "keep_jobs: 5\nfile_roots: {dev: [/d]}\n",
    )
    .unwrap();
    let main = format!("root_dir: {r}\nconf_file: /ignored\nfile_roots: {{base: [/b]}}\n");
    let v = values_in(&dir, &main).unwrap();
    assert_eq!(v["conf_file"], format!("{r}/conf/master"));
    assert_eq!(v["keep_jobs"], 5);
    // default_include replaces top-level options (no deep merge with the main file).
    assert_eq!(v["file_roots"], json!({"dev": ["/d"]}));
    assert!(values_in(&dir, "{{").is_err());
}

#[test]
fn defaults_file_is_complete() {
    let doc: Value = serde_json::from_str(DEFAULTS).unwrap();
    let defaults = doc["defaults"].as_object().unwrap();
    assert_eq!(doc["salt"], "3007.17");
    let computed: Vec<&String> = defaults
        .iter()
        .filter(|(_, v)| *v == COMPUTED)
        .map(|(k, _)| k)
        .collect();
    assert_eq!(computed, ["ipc_write_buffer", "ssh_config_file", "user"]);
    assert_eq!(
        doc["computed"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        computed
    );
    assert!(defaults.len() > 300);
    assert_eq!(ipc_write_buffer(0), 5 << 20);
    assert_eq!(ipc_write_buffer(1 << 30), 26_843_545);
}
