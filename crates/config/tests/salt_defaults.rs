//! Our defaults against real Salt's `DEFAULT_MASTER_OPTS` / `DEFAULT_MINION_OPTS`, read from
//! Salt 3007.17's venv (`salt_testkit::salt_venv`; required: a failure under CI=true, else a
//! recorded skip).

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use salt_config::{LoadOptions, LogFile, MasterConfig, MinionConfig};

/// Salt's default dicts as JSON: `{"master": {...}, "minion": {...}}`.
fn salt_defaults(venv: &Path) -> Value {
    let script = r#"
import json, salt.config as c
def plain(v):
    if isinstance(v, dict) or hasattr(v, "items"):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)) or type(v).__name__ == "ImmutableList":
        return [plain(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)
import salt.version
print(json.dumps({"version": salt.version.__version__, "master": plain(c.DEFAULT_MASTER_OPTS), "minion": plain(c.DEFAULT_MINION_OPTS)}))
"#;
    let out = Command::new(venv.join("bin/python"))
        .arg("-c")
        .arg(script)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run the venv python");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json from python")
}

fn path_json(p: &Path) -> Value {
    json!(p.display().to_string())
}

fn log_json(l: &LogFile) -> Value {
    match l {
        LogFile::Path(p) => path_json(p),
        LogFile::Url(u) => json!(u),
    }
}

/// Defaults that changed between Salt releases; we follow 3007 (documented in the table).
const KNOWN_VERSION_DIFFERENCES: &[(&str, &str)] = &[
    ("3006.", "minion.master_tries"),
    ("3006.", "minion.zmq_monitor"),
    ("3008.", "master.master_pubkey_signature"),
];

/// Compares each (key, ours) to Salt's value; returns the mismatches.
fn compare(version: &str, role: &str, salt: &Value, ours: &[(&str, Value)]) -> Vec<String> {
    let mut bad = Vec::new();
    let mut compared = 0;
    for (key, mine) in ours {
        let Some(theirs) = salt.get(key) else {
            continue; // not a Salt 3007 default (ours, or only set elsewhere in Salt)
        };
        compared += 1;
        let name = format!("{role}.{key}");
        if KNOWN_VERSION_DIFFERENCES
            .iter()
            .any(|(v, k)| version.starts_with(v) && *k == name)
        {
            println!("{name}: Salt {version} differs by design ({theirs} vs {mine})");
            continue;
        }
        if theirs != mine {
            bad.push(format!("{role}.{key}: salt {theirs} vs ours {mine}"));
        }
    }
    assert!(compared >= 30, "{role}: only {compared} keys compared");
    bad
}

#[test]
fn defaults_equal_salt_3007() {
    let Some(venv) = salt_testkit::require(salt_testkit::salt_venv("3007.17")) else {
        return;
    };
    let salt = salt_defaults(&venv);
    let version = salt["version"].as_str().unwrap_or_default().to_owned();
    // Salt's defaults are computed as root with root_dir "/" and user = current user.
    let opts = LoadOptions::new("/nonexistent")
        .running_as_root(true)
        .user("root")
        .hostname("h");
    let m = MasterConfig::embedded_default(&opts);
    let secs = |d: std::time::Duration| json!(d.as_secs());
    let opt_secs = |d: Option<std::time::Duration>| d.map_or(json!(-1), |d| json!(d.as_secs()));
    let master = [
        ("interface", json!(m.interface.to_string())),
        ("ipv6", json!(m.ipv6)),
        ("publish_port", json!(m.publish_port)),
        ("ret_port", json!(m.ret_port)),
        ("worker_threads", json!(m.worker_threads)),
        ("pki_dir", path_json(&m.pki_dir)),
        ("cachedir", path_json(&m.cachedir)),
        ("sock_dir", path_json(&m.sock_dir)),
        ("pidfile", path_json(&m.pidfile)),
        ("log_file", log_json(&m.log_file)),
        ("key_logfile", log_json(&m.key_logfile)),
        ("log_level", json!(m.log_level.as_str())),
        (
            "log_level_logfile",
            json!(m.log_level_logfile.map(|l| l.as_str())),
        ),
        ("user", json!(m.user)),
        ("root_dir", path_json(&m.root_dir)),
        ("auto_accept", json!(m.auto_accept)),
        ("open_mode", json!(m.open_mode)),
        ("max_minions", json!(m.max_minions.unwrap_or(0))),
        ("max_open_files", json!(m.max_open_files)),
        ("master_sign_pubkey", json!(m.master_sign_pubkey)),
        ("master_sign_key_name", json!(m.master_sign_key_name)),
        ("master_pubkey_signature", json!(m.master_pubkey_signature)),
        (
            "master_use_pubkey_signature",
            json!(m.master_use_pubkey_signature),
        ),
        ("sign_pub_messages", json!(m.sign_pub_messages)),
        (
            "publish_signing_algorithm",
            json!(m.publish_signing_algorithm.as_str()),
        ),
        ("keysize", json!(m.keysize)),
        ("hash_type", json!(m.hash_type.as_str())),
        ("minimum_auth_version", json!(m.minimum_auth_version)),
        ("publish_session", secs(m.publish_session)),
        ("loop_interval", secs(m.loop_interval)),
        ("rotate_aes_key", json!(m.rotate_aes_key)),
        ("ping_on_rotate", json!(m.ping_on_rotate)),
        ("zmq_filtering", json!(m.zmq_filtering)),
        ("pub_hwm", json!(m.pub_hwm)),
        ("zmq_backlog", json!(m.zmq_backlog)),
        ("publisher_acl", json!(m.publisher_acl)),
        ("publisher_acl_blacklist", json!({})),
        ("keep_jobs_seconds", secs(m.keep_jobs_seconds)),
        (
            "request_server_ttl",
            json!(m.request_server_ttl.map_or(0, |d| d.as_secs())),
        ),
        ("permissive_pki_access", json!(m.permissive_pki_access)),
        ("preserve_minion_cache", json!(m.preserve_minion_cache)),
        ("key_pass", json!(m.key_pass.as_ref().map(|s| s.expose()))),
        (
            "signing_key_pass",
            json!(m.signing_key_pass.as_ref().map(|s| s.expose())),
        ),
        ("tcp_keepalive", json!(m.tcp_keepalive)),
        ("tcp_keepalive_idle", opt_secs(m.tcp_keepalive_idle)),
        (
            "tcp_keepalive_cnt",
            json!(m.tcp_keepalive_cnt.map_or(-1, i64::from)),
        ),
        ("tcp_keepalive_intvl", opt_secs(m.tcp_keepalive_intvl)),
    ];
    assert!(
        m.publisher_acl_blacklist.users.is_empty() && m.publisher_acl_blacklist.modules.is_empty()
    );
    let mut bad = compare(&version, "master", &salt["master"], &master);
    // Not in DEFAULT_MASTER_OPTS; Salt's code uses opts.get("autosign_timeout", 120) minutes.
    assert_eq!(m.autosign_timeout.as_secs(), 120 * 60);

    let n = MinionConfig::embedded_default(&opts);
    let minion = [
        ("master", json!(n.master.addrs()[0].host)),
        ("master_port", json!(n.master_port)),
        ("master_type", json!(n.master_type.as_str())),
        ("random_master", json!(n.random_master)),
        ("master_alive_interval", secs(n.master_alive_interval)),
        ("master_failback", json!(n.master_failback)),
        ("master_failback_interval", secs(n.master_failback_interval)),
        ("master_tries", json!(n.master_tries.map_or(-1, i64::from))),
        ("auth_tries", json!(n.auth_tries)),
        ("auth_timeout", secs(n.auth_timeout)),
        ("auth_safemode", json!(n.auth_safemode)),
        ("acceptance_wait_time", secs(n.acceptance_wait_time)),
        ("acceptance_wait_time_max", secs(n.acceptance_wait_time_max)),
        ("rejected_retry", json!(n.rejected_retry)),
        ("retry_dns", secs(n.retry_dns)),
        ("retry_dns_count", json!(n.retry_dns_count)),
        (
            "verify_master_pubkey_sign",
            json!(n.verify_master_pubkey_sign),
        ),
        ("master_sign_key_name", json!(n.master_sign_key_name)),
        ("always_verify_signature", json!(n.always_verify_signature)),
        (
            "master_finger",
            json!(n.master_finger.clone().unwrap_or_default()),
        ),
        (
            "encryption_algorithm",
            json!(n.encryption_algorithm.as_str()),
        ),
        ("signing_algorithm", json!(n.signing_algorithm.as_str())),
        ("pki_dir", path_json(&n.pki_dir)),
        ("cachedir", path_json(&n.cachedir)),
        ("sock_dir", path_json(&n.sock_dir)),
        ("pidfile", path_json(&n.pidfile)),
        ("log_file", log_json(&n.log_file)),
        ("log_level", json!(n.log_level.as_str())),
        (
            "log_level_logfile",
            json!(n.log_level_logfile.map(|l| l.as_str())),
        ),
        ("user", json!(n.user)),
        ("root_dir", path_json(&n.root_dir)),
        ("keysize", json!(n.keysize)),
        ("hash_type", json!(n.hash_type.as_str())),
        ("zmq_filtering", json!(n.zmq_filtering)),
        ("recon_default", json!(n.recon_default.as_millis() as u64)),
        ("recon_max", json!(n.recon_max.as_millis() as u64)),
        ("recon_randomize", json!(n.recon_randomize)),
        ("sign_pub_messages", json!(n.sign_pub_messages)),
        ("ping_interval", json!(n.ping_interval.as_secs() / 60)),
        ("grains", Value::Object(n.grains.clone())),
        ("multiprocessing", json!(n.multiprocessing)),
        ("mine_enabled", json!(n.mine_enabled)),
        ("mine_interval", json!(n.mine_interval.as_secs() / 60)),
        ("tcp_keepalive", json!(n.tcp_keepalive)),
        ("tcp_keepalive_idle", opt_secs(n.tcp_keepalive_idle)),
        (
            "tcp_keepalive_cnt",
            json!(n.tcp_keepalive_cnt.map_or(-1, i64::from)),
        ),
        ("tcp_keepalive_intvl", opt_secs(n.tcp_keepalive_intvl)),
        ("zmq_monitor", json!(n.zmq_monitor)),
        ("ipv6", json!(n.ipv6)),
        ("minion_jid_queue_hwm", json!(n.minion_jid_queue_hwm)),
        ("random_reauth_delay", secs(n.random_reauth_delay)),
        ("return_retry_timer", secs(n.return_retry_timer)),
        ("return_retry_timer_max", secs(n.return_retry_timer_max)),
        ("return_retry_tries", json!(n.return_retry_tries)),
        ("minion_id_caching", json!(n.minion_id_caching)),
    ];
    bad.extend(compare(&version, "minion", &salt["minion"], &minion));
    assert!(
        bad.is_empty(),
        "defaults differ from Salt:\n{}",
        bad.join("\n")
    );
    println!(
        "compared {} master and {} minion defaults with Salt {version} at {}",
        master.len(),
        minion.len(),
        venv.display()
    );
}

/// `data/salt-master-defaults.json` (what `config.values` starts from, generated by
/// `scripts/gen-salt-master-defaults.py`) is still the venv's `DEFAULT_MASTER_OPTS`: every key,
/// every value but the markers of the machine's values.
#[test]
fn generated_master_defaults_are_salts() {
    let Some(venv) = salt_testkit::require(salt_testkit::salt_venv("3007.17")) else {
        return;
    };
    let salt = salt_defaults(&venv);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/salt-master-defaults.json");
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(
        data["salt"], salt["version"],
        "regenerate with the venv's Salt"
    );
    let (ours, theirs) = (
        data["defaults"].as_object().unwrap(),
        salt["master"].as_object().unwrap(),
    );
    let mut ours_keys: Vec<&String> = ours.keys().collect();
    let mut salt_keys: Vec<&String> = theirs.keys().collect();
    ours_keys.sort();
    salt_keys.sort();
    assert_eq!(ours_keys, salt_keys);
    let computed = data["computed"].as_object().unwrap();
    for (key, value) in ours {
        if computed.contains_key(key) {
            assert_eq!(value, "<computed>", "{key}");
        } else {
            assert_eq!(value, &theirs[key], "{key}");
        }
    }
}
