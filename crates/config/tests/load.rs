//! Loading from real files: merge order, includes, aliases, error collection, typed values.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use salt_config::{
    ConfigError, LoadOptions, LogFile, MasterAddr, MasterConfig, MasterType, Masters, MinionConfig,
    Problem,
};

fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let p = dir.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, text).unwrap();
    p
}

fn opts(dir: &Path) -> LoadOptions {
    LoadOptions::new(dir)
        .running_as_root(true)
        .hostname("testhost")
        .user("root")
}

#[test]
fn master_d_files_merge_in_sorted_order_after_the_main_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let main = write(d, "master", "publish_port: 1000\nworker_threads: 7\n");
    let b = write(d, "master.d/20-b.conf", "publish_port: 2500\n");
    let a = write(
        d,
        "master.d/10-a.conf",
        "publish_port: 2000\nret_port: 3000\n",
    );
    write(d, "master.d/99-ignored.txt", "publish_port: 9\n");
    write(d, "master.d/.hidden.conf", "publish_port: 8\n");

    let loaded = MasterConfig::load(&opts(d)).unwrap();
    let c = &loaded.config;
    assert_eq!(c.publish_port, 2500, "the last .conf in sorted order wins");
    assert_eq!(c.ret_port, 3000);
    assert_eq!(c.worker_threads, 7, "main-file options survive");
    assert_eq!(loaded.files, vec![main, a, b]);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn include_option_globs_nest_and_override_drop_ins() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "master",
        "include:\n  - extra/*.conf\n  - missing/*.conf\nworker_threads: 3\n",
    );
    write(d, "master.d/a.conf", "worker_threads: 4\nret_port: 5000\n");
    write(
        d,
        "extra/1.conf",
        "worker_threads: 9\ninclude: nested.yml\n",
    );
    write(d, "extra/nested.yml", "ret_port: 5001\n");
    write(d, "extra/2.conf", "publisher_acl:\n  bob: [test.*]\n");
    write(
        d,
        "extra/3.conf",
        "publisher_acl:\n  bob: [pkg.*]\n  alice: [cmd.run]\n",
    );

    let loaded = MasterConfig::load(&opts(d)).unwrap();
    let c = &loaded.config;
    assert_eq!(c.worker_threads, 9, "include: overrides master.d");
    assert_eq!(
        c.ret_port, 5001,
        "nested include, relative to the including file"
    );
    // Within one include batch Salt deep-merges mappings and concatenates lists.
    assert_eq!(
        c.publisher_acl["bob"],
        serde_json::json!(["test.*", "pkg.*"])
    );
    assert_eq!(c.publisher_acl["alice"], serde_json::json!(["cmd.run"]));
    assert_eq!(loaded.files.len(), 6);
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("missing/*.conf") && w.contains("matches no files")),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn include_as_single_string() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "minion", "include: other.yml\n");
    write(d, "other.yml", "master: m1\n");
    let c = MinionConfig::load(&opts(d)).unwrap().config;
    assert_eq!(
        c.master,
        Masters::One(MasterAddr {
            host: "m1".into(),
            port: None
        })
    );
}

#[test]
fn no_file_gives_embedded_defaults_with_salt_paths_as_root() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(dir.path());
    let loaded = MasterConfig::load(&o).unwrap();
    assert!(loaded.files.is_empty());
    let c = loaded.config;
    assert_eq!(c, MasterConfig::embedded_default(&o));
    assert_eq!(c.id, "testhost_master");
    assert_eq!(c.pki_dir, Path::new("/etc/salt/pki/master"));
    assert_eq!(c.cachedir, Path::new("/var/cache/salt/master"));
    assert_eq!(c.sock_dir, Path::new("/var/run/salt/master"));
    assert_eq!(c.log_file, LogFile::Path("/var/log/salt/master".into()));
    assert_eq!(c.publish_port, 4505);
    assert_eq!(c.ret_port, 4506);

    let m = MinionConfig::embedded_default(&o);
    assert_eq!(m.id, "testhost");
    assert_eq!(m.pki_dir, Path::new("/etc/salt/pki/minion"));
    assert_eq!(
        m.master,
        Masters::One(MasterAddr {
            host: "salt".into(),
            port: None
        })
    );
    assert_eq!(m.master_tries, None);
}

#[test]
fn non_root_defaults_live_under_the_home_directory() {
    let home = tempfile::tempdir().unwrap();
    let o = LoadOptions::new(home.path().join("no-config"))
        .running_as_root(false)
        .home(home.path())
        .hostname("h");
    let c = MasterConfig::embedded_default(&o);
    let root = home.path().join(".salt-rs/master");
    assert_eq!(c.root_dir, root);
    assert_eq!(c.pki_dir, root.join("etc/salt/pki/master"));
    assert_eq!(c.cachedir, root.join("var/cache/salt/master"));
    assert_eq!(c.sock_dir, root.join("var/run/salt/master"));
    assert_eq!(c.log_file, LogFile::Path(root.join("var/log/salt/master")));
    let m = MinionConfig::embedded_default(&o);
    assert_eq!(
        m.pki_dir,
        home.path().join(".salt-rs/minion/etc/salt/pki/minion")
    );
}

#[test]
fn root_dir_prefixes_paths_like_salt() {
    let o = opts(Path::new("/nonexistent"));
    let c = MasterConfig::from_yaml_str(
        "root_dir: /opt/r\npki_dir: /opt/r/pki\ncachedir: var/cache/x\nlog_file: udp://log:514\n\
         autosign_file: /etc/salt/autosign.conf\n",
        &o,
    )
    .unwrap()
    .config;
    assert_eq!(c.pki_dir, Path::new("/opt/r/pki"), "already under root_dir");
    assert_eq!(c.cachedir, Path::new("/opt/r/var/cache/x"), "relative");
    assert_eq!(
        c.sock_dir,
        Path::new("/opt/r/var/run/salt/master"),
        "default"
    );
    assert_eq!(
        c.autosign_file.as_deref(),
        Some(Path::new("/opt/r/etc/salt/autosign.conf"))
    );
    assert_eq!(
        c.log_file,
        LogFile::Url("udp://log:514".into()),
        "URLs are not paths"
    );
    assert_eq!(
        c.key_logfile,
        LogFile::Path("/opt/r/var/log/salt/key".into())
    );
}

#[test]
fn long_sock_dir_moves_under_cachedir_as_salt_does() {
    let o = opts(Path::new("/nonexistent"));
    let c = MinionConfig::from_yaml_str(
        "cachedir: /c\nsock_dir: /a/very/long/socket/directory\n",
        &o,
    )
    .unwrap()
    .config;
    assert_eq!(c.sock_dir, Path::new("/c/.salt-unix"));
}

#[test]
fn yaml_1_1_booleans_are_booleans_and_quoted_ones_are_not() {
    let o = opts(Path::new("/nonexistent"));
    let c = MasterConfig::from_yaml_str(
        "auto_accept: yes\nopen_mode: off\nrotate_aes_key: No\nping_on_rotate: On\n",
        &o,
    )
    .unwrap()
    .config;
    assert!(c.auto_accept);
    assert!(!c.open_mode);
    assert!(!c.rotate_aes_key);
    assert!(c.ping_on_rotate);

    let err = MasterConfig::from_yaml_str("auto_accept: 'yes'\n", &o).unwrap_err();
    assert!(
        matches!(
            &err.errors[0],
            ConfigError::InvalidOption { key, problem: Problem::WrongType { .. }, .. } if key == "auto_accept"
        ),
        "{err}"
    );
}

#[test]
fn every_bad_option_is_reported_with_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let main = write(
        d,
        "minion",
        "master_port: 0\n\
         auth_timeout: -5\n\
         master_type: roundrobin\n\
         auth_safemode: maybe\n\
         id: minion-1\n\
         master: ['good', 'bad host']\n",
    );
    let drop_in = write(
        d,
        "minion.d/x.conf",
        "publish_port: 70000\nrecon_max: ten\n",
    );
    write(d, "minion.d/y.conf", "this: is: not yaml\n");

    let err = MinionConfig::load(&opts(d)).unwrap_err();
    let text = err.to_string();
    assert_eq!(
        text.lines().count(),
        err.len(),
        "one error per line:\n{text}"
    );
    let keyed: Vec<(String, PathBuf, Option<u64>)> = err
        .iter()
        .filter_map(|e| match e {
            ConfigError::InvalidOption {
                key, path, line, ..
            } => Some((key.clone(), path.clone(), *line)),
            _ => None,
        })
        .collect();
    let find = |k: &str| keyed.iter().find(|(key, ..)| key == k).cloned();
    assert_eq!(
        find("master_port"),
        Some(("master_port".into(), main.clone(), Some(1)))
    );
    assert_eq!(find("auth_timeout").map(|e| e.2), Some(Some(2)));
    assert_eq!(find("master_type").map(|e| e.2), Some(Some(3)));
    assert_eq!(find("auth_safemode").map(|e| e.2), Some(Some(4)));
    assert_eq!(find("master").map(|e| e.2), Some(Some(6)));
    assert_eq!(find("publish_port").map(|e| e.1), Some(drop_in.clone()));
    assert_eq!(find("recon_max").map(|e| e.1), Some(drop_in));
    assert_eq!(keyed.len(), 7, "{text}");
    assert!(
        err.iter()
            .any(|e| matches!(e, ConfigError::Syntax { path, .. } if path.ends_with("y.conf"))),
        "{text}"
    );
    assert!(
        text.contains(&format!("{}:3: option `master_type`", main.display())),
        "{text}"
    );
    assert!(text.contains("roundrobin"), "{text}");
}

#[test]
fn wrong_types_name_the_expected_type() {
    let o = opts(Path::new("/etc/test-salt"));
    let err = MasterConfig::from_yaml_str(
        "worker_threads: [1]\ninterface: not-an-ip\nhash_type: sha3\nkeysize: 1024\n",
        &o,
    )
    .unwrap_err();
    let text = err.to_string();
    assert_eq!(err.len(), 4, "{text}");
    assert!(
        text.contains(
            "/etc/test-salt/master:1: option `worker_threads`: expected an integer, found a list"
        ),
        "{text}"
    );
    assert!(
        text.contains("option `keysize`: 1024 is out of range"),
        "{text}"
    );
}

#[test]
fn unknown_options_are_warnings_naming_the_option() {
    let o = opts(Path::new("/nonexistent"));
    let loaded = MasterConfig::from_yaml_str(
        "winrepo_remotes: [x]\nfile_roots: {base: [/srv]}\nthorium_interval: 1\n",
        &o,
    )
    .unwrap();
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    assert!(
        loaded.warnings[0]
            .contains("option `winrepo_remotes` is not implemented by salt-rs; ignored")
    );
    assert!(loaded.warnings[1].contains("`thorium_interval`"));
}

/// A key Salt does not know either is a typo: said so, with the nearest known name; a real
/// Salt option we do not implement keeps "not implemented"; module settings (`mysql.host`)
/// are neither.
#[test]
fn typos_are_unknown_options_with_the_nearest_name() {
    let o = opts(Path::new("/nonexistent"));
    let loaded = MasterConfig::from_yaml_str(
        "interfce: 10.0.0.5\nmy_site_setting: 1\nmysql.host: db\n",
        &o,
    )
    .unwrap();
    assert_eq!(loaded.config.interface.to_string(), "0.0.0.0");
    let w = loaded.warnings.join("\n");
    assert!(
        w.contains(
            "master:1: unknown option `interfce` (did you mean `interface`?): Salt master has no such option; ignored"
        ),
        "{w}"
    );
    assert!(
        w.contains("unknown option `my_site_setting`: Salt master has no such option"),
        "{w}"
    );
    assert!(
        w.contains("option `mysql.host` is not implemented by salt-rs"),
        "{w}"
    );
    let loaded = MinionConfig::from_yaml_str("mastr: salt\n", &o).unwrap();
    assert!(
        loaded.warnings[0].contains("unknown option `mastr` (did you mean `master`?)"),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn seed_tutorial_aliases_are_accepted_with_a_warning() {
    let o = opts(Path::new("/nonexistent"));
    let m = MasterConfig::from_yaml_str("master_key_sign_name: mysign\n", &o).unwrap();
    assert_eq!(m.config.master_sign_key_name, "mysign");
    assert_eq!(m.warnings.len(), 1);
    assert!(
        m.warnings[0].contains("`master_sign_key_name`"),
        "{:?}",
        m.warnings
    );

    let n = MinionConfig::from_yaml_str(
        "verify_master_pub_sig: True\nmaster_key_sign_name: s2\nmaster_shuffle: yes\n",
        &o,
    )
    .unwrap();
    assert!(n.config.verify_master_pubkey_sign);
    assert_eq!(n.config.master_sign_key_name, "s2");
    assert!(n.config.random_master);
    assert_eq!(n.warnings.len(), 3, "{:?}", n.warnings);
    for salt_key in [
        "verify_master_pubkey_sign",
        "master_sign_key_name",
        "random_master",
    ] {
        assert!(
            n.warnings.iter().any(|w| w.contains(salt_key)),
            "{salt_key}: {:?}",
            n.warnings
        );
    }

    // When both are set Salt's key wins and the alias is called out.
    let both = MinionConfig::from_yaml_str("random_master: no\nmaster_shuffle: yes\n", &o).unwrap();
    assert!(!both.config.random_master);
    assert!(both.warnings[0].contains("ignored"), "{:?}", both.warnings);
}

#[test]
fn master_as_string_or_list_with_ports_and_ipv6() {
    let o = opts(Path::new("/nonexistent"));
    let one = MinionConfig::from_yaml_str("master: 10.0.0.5:4606\n", &o)
        .unwrap()
        .config;
    assert_eq!(
        one.master,
        Masters::One(MasterAddr {
            host: "10.0.0.5".into(),
            port: Some(4606)
        })
    );
    assert_eq!(one.ret_port_of(&one.master.addrs()[0]), 4606);

    let list = MinionConfig::from_yaml_str(
        "master_type: failover\nmaster_port: 5506\nmaster:\n  - m1.example.com\n  - m2:4510\n  - '[2001:db8::10]:4520'\n  - 2001:db8::11\n",
        &o,
    )
    .unwrap()
    .config;
    assert_eq!(list.master_type, MasterType::Failover);
    assert!(list.master.is_list());
    let addrs = list.master.addrs();
    assert_eq!(addrs.len(), 4);
    assert_eq!(
        addrs[0],
        MasterAddr {
            host: "m1.example.com".into(),
            port: None
        }
    );
    assert_eq!(list.ret_port_of(&addrs[0]), 5506);
    assert_eq!(addrs[1].port, Some(4510));
    assert_eq!(
        addrs[2],
        MasterAddr {
            host: "2001:db8::10".into(),
            port: Some(4520)
        }
    );
    assert_eq!(
        addrs[3],
        MasterAddr {
            host: "2001:db8::11".into(),
            port: None
        }
    );

    let func = MinionConfig::from_yaml_str("master_type: func\nmaster: mymod.get_master\n", &o)
        .unwrap()
        .config;
    assert_eq!(func.master.addrs()[0].host, "mymod.get_master");

    let single_failover = MinionConfig::from_yaml_str("master_type: failover\nmaster: m9\n", &o)
        .unwrap()
        .config;
    assert!(
        single_failover.master.is_list(),
        "Salt makes a one-element list"
    );

    assert!(MinionConfig::from_yaml_str("master: []\n", &o).is_err());
    assert!(MinionConfig::from_yaml_str("master: {a: 1}\n", &o).is_err());
}

#[test]
fn typed_durations_and_unset_values() {
    let o = opts(Path::new("/nonexistent"));
    let c = MinionConfig::from_yaml_str(
        "ping_interval: 2\nrecon_default: 250\nmaster_tries: 3\ntcp_keepalive_idle: -1\n\
         retry_dns_count: 4\nmaster_finger: ''\ngrains:\n  roles: [web]\n  rack: 7\n\
         id: 1234\nlog_level: DEBUG\n",
        &o,
    )
    .unwrap()
    .config;
    assert_eq!(c.ping_interval, Duration::from_secs(120), "minutes");
    assert_eq!(c.recon_default, Duration::from_millis(250), "milliseconds");
    assert_eq!(c.master_tries, Some(3));
    assert_eq!(c.tcp_keepalive_idle, None);
    assert_eq!(c.retry_dns_count, Some(4));
    assert_eq!(c.master_finger, None);
    assert_eq!(c.grains["rack"], serde_json::json!(7));
    assert_eq!(c.grains["roles"], serde_json::json!(["web"]));
    assert_eq!(c.id, "1234", "numeric ids become strings, as in Salt");
    assert_eq!(c.log_level, salt_config::LogLevel::Debug);
}

#[test]
fn leading_zero_integers_are_decimal_like_salts_loader() {
    let o = opts(Path::new("/nonexistent"));
    let c = MasterConfig::from_yaml_str("worker_threads: 010\n", &o)
        .unwrap()
        .config;
    assert_eq!(c.worker_threads, 10);
}

#[test]
fn cached_minion_id_file_is_used_when_id_is_unset() {
    let root = tempfile::tempdir().unwrap();
    write(root.path(), "etc/salt/minion_id", "cached-id\n");
    let o = opts(Path::new("/nonexistent"));
    let yaml = format!("root_dir: {}\n", root.path().display());
    let c = MinionConfig::from_yaml_str(&yaml, &o).unwrap().config;
    assert_eq!(c.id, "cached-id");
    let m = MasterConfig::from_yaml_str(&yaml, &o).unwrap().config;
    assert_eq!(m.id, "cached-id_master");
    let off = MinionConfig::from_yaml_str(&format!("{yaml}minion_id_caching: false\n"), &o)
        .unwrap()
        .config;
    assert_eq!(off.id, "testhost");
}

#[test]
fn key_passphrases_are_not_printed() {
    let o = opts(Path::new("/nonexistent"));
    let c = MasterConfig::from_yaml_str("key_pass: hunter2\n", &o)
        .unwrap()
        .config;
    assert_eq!(c.key_pass.as_ref().map(|s| s.expose()), Some("hunter2"));
    assert!(!format!("{c:?}").contains("hunter2"));
}

#[test]
fn a_non_mapping_file_and_an_unreadable_include_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "master", "- just\n- a list\n");
    let err = MasterConfig::load(&opts(d)).unwrap_err();
    assert!(
        matches!(err.errors[0], ConfigError::NotAMapping { .. }),
        "{err}"
    );
}

/// A production-style master config, as operators have them (with a `master.d/` drop-in and
/// many options salt-rs does not implement), loads unchanged: the options we honour are
/// typed, every option we do not implement is warned about exactly once, by name.
#[test]
fn a_production_master_config_loads_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "master",
        r#"# /etc/salt/master on a production box
interface: 0.0.0.0
publish_port: 4505
ret_port: 4506
worker_threads: 8
timeout: 10
keep_jobs_seconds: 86400
auto_accept: False
master_sign_pubkey: True
master_use_pubkey_signature: False
ping_on_rotate: True
log_level: warning
log_level_logfile: info
log_granular_levels:
  salt.loaded.int.returner: debug
file_roots:
  base:
    - /srv/salt
  prod:
    - /srv/salt/prod
pillar_roots:
  base:
    - /srv/pillar
fileserver_backend:
  - roots
gitfs_remotes:
  - https://git.example.com/states.git:
    - root: salt
winrepo_remotes:
  - https://git.example.com/winrepo.git
ext_pillar:
  - cmd_json: /usr/local/bin/cmdb --json %s
  - cmd_yaml:
      command: /usr/local/bin/cmdb --yaml %s
nodegroups:
  web: 'G@role:web'
  db: 'L@db1,db2'
external_auth:
  pam:
    ops%:
      - .*
reactor:
  - 'salt/minion/*/start':
    - /srv/reactor/start.sls
presence_events: True
thorium_interval: 1
job_cache: True
state_output: changes
default_include: master.d/*.conf
"#,
    );
    write(
        d,
        "master.d/tuning.conf",
        "worker_threads: 12\nzmq_backlog: 2000\nsock_pool_size: 4\n",
    );
    let loaded = MasterConfig::load(&opts(d)).unwrap();
    let c = &loaded.config;
    assert_eq!(c.worker_threads, 12, "master.d overrides the main file");
    assert_eq!(c.zmq_backlog, 2000);
    assert_eq!(c.ret_port, 4506);
    assert!(c.master_sign_pubkey);
    assert!(
        c.eauth_opts.contains_key("external_auth"),
        "external_auth is kept for salt-eauth"
    );
    assert!(!loaded.warnings.is_empty());
    let mut named = std::collections::BTreeSet::new();
    for w in &loaded.warnings {
        let name = w
            .split('`')
            .nth(1)
            .unwrap_or_else(|| panic!("warning names no option: {w}"));
        assert!(
            named.insert(name.to_owned()),
            "{name} warned twice: {:?}",
            loaded.warnings
        );
    }
    assert_eq!(c.ext_pillar.len(), 2);
    assert_eq!(c.ext_pillar[1].module, "cmd_yaml");
    for unimplemented in ["winrepo_remotes", "thorium_interval"] {
        assert!(
            named.contains(unimplemented),
            "{unimplemented} not warned: {named:?}"
        );
    }
    for honoured in [
        "worker_threads",
        "ret_port",
        "master_sign_pubkey",
        "interface",
        "external_auth",
    ] {
        assert!(
            !named.contains(honoured),
            "{honoured} is honoured, not warned"
        );
    }
}

/// Fail closed (issue 38): a security option salt-rs does not implement, set to ask for a
/// protection, is an error naming it; set to Salt's default (or empty) it is accepted without
/// a warning; a renderer list that leaves `jinja|yaml` alone is accepted.
#[test]
fn security_options_we_lack_are_errors_unless_they_ask_for_nothing() {
    let o = opts(Path::new("/nonexistent"));
    let err = MasterConfig::from_yaml_str("ssl: {certfile: /c}\nrenderer_blacklist: [yaml]\n", &o)
        .unwrap_err()
        .to_string();
    for key in ["ssl", "renderer_blacklist"] {
        assert!(
            err.contains(&format!(
                "option `{key}`: security option not implemented by salt-rs"
            )),
            "{key}: {err}"
        );
    }
    let err = MinionConfig::from_yaml_str("sudo_user: root\ndisable_modules: [cmd]\n", &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("option `sudo_user`"), "{err}");
    assert!(err.contains("option `disable_modules`"), "{err}");
    let loaded = MasterConfig::from_yaml_str(
        "ssl: null\nrenderer_blacklist: [py, pyobjects]\nrenderer_whitelist: [jinja, yaml, json]\n",
        &o,
    )
    .unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let loaded = MinionConfig::from_yaml_str(
        "grains_blacklist: []\nrenderer_whitelist: []\nsudo_user: ''\n",
        &o,
    )
    .unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

/// Issue 36: an `ext_pillar` or `master_tops` module salt-rs lacks stops the daemon at start,
/// naming it (a site's pillar must not silently go empty); a malformed list is an error.
#[test]
fn ext_pillar_and_master_tops_modules_we_lack_are_errors_by_name() {
    let o = opts(Path::new("/nonexistent"));
    // git_pillar: the master's only; a masterless minion refuses it by name.
    let text = "ext_pillar:\n  - git: ['master file:///x.git']\n";
    let git = MasterConfig::from_yaml_str(text, &o).unwrap();
    assert_eq!(git.config.ext_pillar[0].git[0].branch, "master");
    let err = MinionConfig::from_yaml_str(text, &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("ext_pillar module `git`"), "{err}");
    // postgres: the master's only.
    let text = "ext_pillar:\n  - postgres: ['SELECT a, b FROM t WHERE id = %s']\n";
    MasterConfig::from_yaml_str(text, &o).unwrap();
    let err = MinionConfig::from_yaml_str(text, &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("ext_pillar module `postgres`"), "{err}");
    for module in ["mongo", "mysql"] {
        let text = format!("ext_pillar:\n  - cmd_json: echo {{}}\n  - {module}: x\n");
        let err = MasterConfig::from_yaml_str(&text, &o)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("ext_pillar module `{module}`")),
            "{module}: {err}"
        );
        let err = MinionConfig::from_yaml_str(&text, &o)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("ext_pillar module `{module}`")),
            "{err}"
        );
    }
    let err = MasterConfig::from_yaml_str("ext_pillar:\n  - just a string\n", &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("malformed"), "{err}");
    let err = MasterConfig::from_yaml_str("master_tops:\n  reclass: {}\n", &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("master_tops module(s) `reclass`"), "{err}");
    let tops =
        MasterConfig::from_yaml_str("master_tops:\n  ext_nodes: cobbler-ext-nodes\n", &o).unwrap();
    assert_eq!(
        tops.config.fileserver.master_tops.as_deref(),
        Some("cobbler-ext-nodes")
    );
    let ok = MasterConfig::from_yaml_str(
        "ext_pillar:\n  - cmd_yaml: [cat /x]\next_pillar_first: True\nmaster_tops: {}\n",
        &o,
    )
    .unwrap();
    assert!(ok.warnings.is_empty(), "{:?}", ok.warnings);
    assert!(ok.config.ext_pillar_first);
    assert_eq!(ok.config.on_demand_ext_pillar, ["libvirt", "virtkey"]);
    // Data-source options salt-rs does not implement: set, each stops the master by name;
    // at Salt's default, accepted quietly.
    for (yaml, name) in [
        ("ext_job_cache: postgres\n", "ext_job_cache"),
        ("pillar_opts: True\n", "pillar_opts"),
        (
            "decrypt_pillar:\n  - 'secrets:vault': gpg\n",
            "decrypt_pillar",
        ),
    ] {
        let err = MasterConfig::from_yaml_str(yaml, &o)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(name) && err.contains("not implemented by salt-rs"),
            "{err}"
        );
    }
    let quiet = MasterConfig::from_yaml_str(
        "ext_job_cache: ''\npillar_opts: False\ndecrypt_pillar: []\n",
        &o,
    )
    .unwrap();
    assert!(quiet.warnings.is_empty(), "{:?}", quiet.warnings);
}

/// Signed minion messages (Salt 3008): read on both daemons.
#[test]
fn signed_message_options_are_read() {
    let o = opts(Path::new("/nonexistent"));
    let m = MasterConfig::from_yaml_str(
        "require_minion_sign_messages: True\ndrop_messages_signature_fail: True\n\
         signing_algorithm: PKCS1v15-SHA224\n",
        &o,
    )
    .unwrap();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    assert!(m.config.require_minion_sign_messages && m.config.drop_messages_signature_fail);
    assert_eq!(
        m.config.signing_algorithm.map(|a| a.as_str()),
        Some("PKCS1v15-SHA224")
    );
    let d = MasterConfig::from_yaml_str("", &o).unwrap().config;
    assert!(!d.require_minion_sign_messages && !d.drop_messages_signature_fail);
    assert_eq!(d.signing_algorithm, None);
    let n = MinionConfig::from_yaml_str("minion_sign_messages: True\n", &o).unwrap();
    assert!(n.config.minion_sign_messages);
    // A wrong type is a type error, not silently "asks for nothing".
    let err = MasterConfig::from_yaml_str("require_minion_sign_messages: 'sure'\n", &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected a boolean"), "{err}");
}

/// Options Salt 3008 sites carry: read, never "unknown"; warned about by name (with what
/// salt-rs does instead) only when they ask for something salt-rs does differently.
#[test]
fn salt_3008_site_options_are_read_and_warned_by_name() {
    let o = opts(Path::new("/nonexistent"));
    let quiet = MasterConfig::from_yaml_str(
        "worker_pools_enabled: True\nworker_pools: {}\npillar_mask_output: False\n\
         cluster_peers: []\nkeys.cache_driver: localfs_key\n",
        &o,
    )
    .unwrap();
    assert!(quiet.warnings.is_empty(), "{:?}", quiet.warnings);
    let loaded = MasterConfig::from_yaml_str(
        "worker_pools:\n  fast: {worker_count: 2, commands: [_return]}\n\
         pillar_mask_output: True\npki_index_enabled: True\nkeys.cache_driver: mmap_key\n\
         cluster_peers: [10.0.0.2]\ncluster_pki_dir: /etc/salt/cluster\n",
        &o,
    )
    .unwrap();
    let w = loaded.warnings.join("\n");
    for (key, instead) in [
        ("worker_pools", "one pool of `worker_threads` threads"),
        ("pillar_mask_output", "marks no pillar value secret"),
        ("pki_index_enabled", "in-memory index"),
        ("cluster_peers", "share a PostgreSQL database"),
        ("cluster_pki_dir", "share a PostgreSQL database"),
    ] {
        assert!(
            w.contains(&format!("option `{key}`: ")) && w.contains(instead),
            "{key}: {w}"
        );
    }
    assert!(
        !w.contains("unknown option") && !w.contains("not implemented"),
        "{w}"
    );
    // `mmap_key` is Salt 3008's key index, which salt-rs reads and writes as Salt does.
    assert!(!w.contains("option `keys.cache_driver`"), "{w}");
    let m = loaded.config.keys_mmap.expect("mmap_key geometry");
    assert_eq!((m.size, m.slot_size, m.id_size), (1_000_000, 96, 64));
    assert_eq!(m.max_segment_bytes, 1 << 30);
    let shaped = MasterConfig::from_yaml_str(
        "keys.cache_driver: mmap_key\nmmap_key_size: 5000\nmmap_cache_max_segment_bytes: 4096\n",
        &o,
    )
    .unwrap();
    let m = shaped.config.keys_mmap.unwrap();
    assert_eq!((m.size, m.max_segment_bytes), (5000, 4096));
    assert!(quiet.config.keys_mmap.is_none());
    let err = MasterConfig::from_yaml_str("keys.cache_driver: mmap_keys\n", &o)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`mmap_key`") && err.contains("mmap_keys"),
        "{err}"
    );
    let err =
        MasterConfig::from_yaml_str("keys.cache_driver: mmap_key\nmmap_key_id_size: 100\n", &o)
            .unwrap_err()
            .to_string();
    assert!(err.contains("mmap_key_slot_size"), "{err}");
    let minion = MinionConfig::from_yaml_str("pillar_mask_output: True\n", &o).unwrap();
    assert!(
        minion.warnings[0].contains("option `pillar_mask_output`"),
        "{:?}",
        minion.warnings
    );
    let err = MasterConfig::from_yaml_str("worker_pools: [a]\n", &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("option `worker_pools`"), "{err}");
}

/// `reactor:` (a list of `{tag glob: sls path(s)}`, or a file holding it) and its worker
/// options are read with Salt's defaults; an item of another shape and `reactor_niceness`
/// are refused by name.
#[test]
fn reactor_options() {
    let o = opts(Path::new("/nonexistent"));
    let c = MasterConfig::from_yaml_str("id: m\n", &o).unwrap().config;
    assert!(c.reactor.reactor.is_empty());
    assert_eq!(c.reactor.reactor_worker_threads, 10);
    assert_eq!(c.reactor.reactor_worker_hwm, 10_000);
    assert_eq!(c.reactor.reactor_refresh_interval, Duration::from_secs(60));
    let loaded = MasterConfig::from_yaml_str(
        "reactor:\n  - 'salt/minion/*/start':\n    - salt://r/start.sls\n    - /srv/r/b.sls\n  \
         - 'myco/*': /srv/r/one.sls\nreactor_worker_threads: 2\nreactor_worker_hwm: 5\n",
        &o,
    )
    .unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(
        loaded.config.reactor.reactor,
        salt_config::ReactorMap::List(vec![
            (
                "salt/minion/*/start".into(),
                vec!["salt://r/start.sls".into(), "/srv/r/b.sls".into()]
            ),
            ("myco/*".into(), vec!["/srv/r/one.sls".into()]),
        ])
    );
    assert_eq!(loaded.config.reactor.reactor_worker_threads, 2);
    assert_eq!(loaded.config.reactor.reactor_worker_hwm, 5);
    let file = MasterConfig::from_yaml_str("reactor: /etc/salt/reactor.yaml\n", &o)
        .unwrap()
        .config;
    assert_eq!(
        file.reactor.reactor,
        salt_config::ReactorMap::File("/etc/salt/reactor.yaml".into())
    );
    for (yaml, named) in [
        ("reactor:\n  - a: x\n    b: y\n", "reactor"),
        ("reactor: {a: x}\n", "reactor"),
        ("reactor_niceness: 5\n", "reactor_niceness"),
    ] {
        let err = MasterConfig::from_yaml_str(yaml, &o)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("`{named}`")), "{yaml}: {err}");
    }
}

#[test]
fn postgres_returner_options_and_other_event_returners_refused_by_name() {
    let o = opts(Path::new("/nonexistent"));
    let text = "master_job_cache: postgres\nevent_return: [postgres]\nevent_return_queue: 5\n\
                event_return_blacklist: 'salt/auth'\nreturner.postgres.host: /run/pg\n\
                returner.postgres.port: 5433\n";
    let c = MasterConfig::from_yaml_str(text, &o).unwrap().config;
    assert!(c.cluster_id.is_none());
    let r = &c.event_return;
    assert!(r.job_cache_postgres && r.uses_postgres());
    assert_eq!(r.event_return, vec!["postgres".to_owned()]);
    assert_eq!(r.queue, 5);
    assert_eq!(r.blacklist, vec!["salt/auth".to_owned()]);
    assert_eq!(
        (r.postgres.host.as_str(), r.postgres.port),
        ("/run/pg", 5433)
    );
    assert_eq!(r.postgres.db, "salt");
    let err = MasterConfig::from_yaml_str("event_return: mysql\n", &o)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("mysql") && err.contains("event_return"),
        "{err}"
    );
}
