//! salt-api in a master group on a real PostgreSQL (docs/group.md, "salt-api and eauth
//! tokens"; issue #34 item 6): two of our masters A and B on one database, each with its
//! own `salt-api`, and our minion on A.
//!
//! * A login through A's salt-api gives a token that B's salt-api accepts (`X-Auth-Token`),
//!   and that B's master accepts in Salt's clear `publish` and `runner` (Salt 3007.17's
//!   Python `ReqChannel`): the token is kept in the group's database (`eauth_tokens:
//!   postgres`, the default in a group).
//! * B's `/keys` lists the minion that signed in at A; B's `/jobs` lists and shows a job
//!   published through A's salt-api, with the minion's return.
//! * A logout through B's salt-api ends the token on A's salt-api and in B's clear
//!   commands; a token with a 3 s `token_expire` is refused by both once expired.
//!
//! Under `CI=true` a missing PostgreSQL or venv fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use salt_integration_tests::interop_support::venv_for;
use salt_integration_tests::pg::Postgres;
use salt_integration_tests::process::{Proc, ProcSpec};
use salt_integration_tests::root::TempRoot;
use salt_integration_tests::wait::{wait_for_log, wait_until};
use salt_integration_tests::{MasterConf, MinionConf, SaltVenv, bins, ports, run_with_timeout};
use serde_json::{Value, json};

/// One clear command (the load as JSON) through Salt's `ReqChannel`; prints `RESULT <reply>`.
const CLEAR: &str = r#"
import json, sys
import salt.config, salt.channel.client
opts = salt.config.client_config(sys.argv[1])
chan = salt.channel.client.ReqChannel.factory(opts, crypt="clear")
r = chan.send(json.loads(sys.argv[2]))
chan.close()
print("RESULT " + json.dumps(r, default=str), flush=True)
"#;

struct Member {
    master: Proc,
    api: Proc,
    api_port: u16,
    client_conf: PathBuf,
    publish: u16,
    ret: u16,
}

fn member(root: &Path, name: &str, pg: &Postgres) -> Member {
    let (publish, ret) = ports::free_port_pair().unwrap();
    let api_port = ports::free_port().unwrap();
    let users = root.join("eauth_users");
    std::fs::write(&users, "fred:secret\n").unwrap();
    let conf = MasterConf::new(root.join(name))
        .id(name)
        .ports(publish, ret)
        .auto_accept(true);
    let conf_dir = conf.write().unwrap();
    let dir = conf.dir();
    let file = conf_dir.join("master");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&pg.group_conf("g1"));
    text.push_str(&format!(
        "master_job_cache: pgjsonb\n\
         external_auth: {{file: {{'^filename': '{}', '^filetype': text, \
         fred: ['test.*', '@runner', '@wheel', '@jobs']}}}}\n\
         token_expire_user_override: True\n\
         rest_cherrypy: {{port: {api_port}, host: 127.0.0.1, disable_ssl: True}}\n\
         netapi_enable_clients: [local, local_async, runner, wheel]\n\
         api_logfile: {d}/api.log\napi_pidfile: {d}/api.pid\n",
        users.display(),
        d = dir.display()
    ));
    std::fs::write(&file, text).unwrap();
    let client_conf = dir.join("client");
    std::fs::write(
        &client_conf,
        format!(
            "interface: 127.0.0.1\nret_port: {ret}\nroot_dir: {d}\ncachedir: {d}/cache\n\
             pki_dir: {d}/pki\nsock_dir: {d}/sock\n",
            d = dir.display()
        ),
    )
    .unwrap();
    let b = bins().unwrap();
    let master = ProcSpec::new(name, &b.master, dir)
        .args(["-c".into(), conf_dir.clone().into_os_string()])
        .args(["-l", "info"])
        .spawn()
        .unwrap();
    wait_for_log(&master, "worker threads", Duration::from_secs(60)).unwrap();
    let api = ProcSpec::new(
        &format!("{name}-api"),
        b.master.with_file_name("salt-api"),
        dir,
    )
    .args(["-c".into(), conf_dir.into_os_string()])
    .args(["-l", "info"])
    .spawn()
    .unwrap();
    assert!(
        wait_until("salt-api listens", Duration::from_secs(60), || {
            std::net::TcpStream::connect(("127.0.0.1", api_port)).is_ok()
        })
        .is_ok(),
        "{}",
        api.tail(30)
    );
    Member {
        master,
        api,
        api_port,
        client_conf,
        publish,
        ret,
    }
}

/// One HTTP/1.1 request (`Connection: close`); the status and the JSON body.
fn http(
    m: &Member,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", m.api_port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    let auth = token
        .map(|t| format!("X-Auth-Token: {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n{auth}Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    if let Err(e) = s.read_to_end(&mut raw) {
        eprintln!("{method} {path}: {e}");
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut r = rest;
        while let Some((len, tail)) = r.split_once("\r\n") {
            let n = usize::from_str_radix(len.trim(), 16).unwrap_or(0);
            if n == 0 || tail.len() < n {
                break;
            }
            out.push_str(&tail[..n]);
            r = tail[n..].trim_start_matches("\r\n");
        }
        out
    } else {
        rest.to_owned()
    };
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

fn login(m: &Member, extra: Value) -> String {
    let mut creds = json!({"username": "fred", "password": "secret", "eauth": "file"});
    if let (Some(c), Some(e)) = (creds.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    let (status, body) = http(m, "POST", "/login", None, Some(&creds));
    assert_eq!(status, 200, "{body}\n{}", m.api.tail(30));
    body["return"][0]["token"].as_str().unwrap().to_owned()
}

fn clear(venv: &SaltVenv, work: &Path, m: &Member, load: &Value) -> Value {
    let script = work.join("clear.py");
    std::fs::write(&script, CLEAR).unwrap();
    let mut c = std::process::Command::new(venv.bin("python"));
    c.arg(&script).arg(&m.client_conf).arg(load.to_string());
    let out = run_with_timeout(c, Duration::from_secs(120)).unwrap();
    let line = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("{load}: {out:?}\n{}", m.master.tail(30)));
    serde_json::from_str(line).unwrap()
}

fn publish_load(token: &str) -> Value {
    json!({"cmd": "publish", "tgt": "gm1", "fun": "test.ping", "arg": [], "tgt_type": "glob",
           "ret": "", "jid": "", "key": "", "user": "fred", "kwargs": {"token": token}})
}

fn runner_load(token: &str) -> Value {
    json!({"cmd": "runner", "fun": "test.arg", "kwarg": {}, "token": token})
}

#[test]
fn group_api_tokens_keys_and_jobs() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let root = TempRoot::new().unwrap();
    let Some(pg) = Postgres::start(&root.dir("pg").unwrap()).unwrap() else {
        return;
    };
    let work = root.dir("work").unwrap();
    let mut a = member(root.path(), "ma", &pg);
    let mut b = member(root.path(), "mb", &pg);
    let mconf = MinionConf::new(root.path().join("gm1"), "gm1")
        .master("127.0.0.1")
        .ports(a.publish, a.ret)
        .set("auth_timeout", 5u32)
        .set("acceptance_wait_time", 1u32);
    let mdir = mconf.write().unwrap();
    let mut minion = ProcSpec::new("gm1", &bins().unwrap().minion, mconf.dir())
        .args(["-c".into(), mdir.into_os_string()])
        .args(["-l", "info"])
        .spawn()
        .unwrap();

    // A login through A's salt-api works on B's.
    let tok = login(&a, json!({}));
    assert_eq!(
        tok.len(),
        64,
        "a group's session is named by its eauth token"
    );
    let keys_on_b = || http(&b, "GET", "/keys", Some(&tok), None);
    assert!(
        wait_until("B's /keys lists gm1", Duration::from_secs(90), || {
            let (s, body) = keys_on_b();
            s == 200 && body["return"]["minions"] == json!(["gm1"])
        })
        .is_ok(),
        "{:?}\n{}\n{}",
        keys_on_b(),
        a.master.tail(30),
        minion.tail(30)
    );

    // A job through A's salt-api, seen through B's /jobs.
    let ping = json!([{"client": "local", "tgt": "gm1", "fun": "test.ping"}]);
    assert!(
        wait_until("gm1 answers through A", Duration::from_secs(90), || {
            let (s, body) = http(&a, "POST", "/", Some(&tok), Some(&ping));
            s == 200 && body["return"][0]["gm1"] == json!(true)
        })
        .is_ok(),
        "{}\n{}",
        a.master.tail(30),
        minion.tail(30)
    );
    let run = json!([{"client": "local_async", "tgt": "gm1", "fun": "test.ping"}]);
    let (s, body) = http(&a, "POST", "/", Some(&tok), Some(&run));
    assert_eq!(s, 200, "{body}");
    let jid = body["return"][0]["jid"].as_str().unwrap().to_owned();
    let job_on_b = || http(&b, "GET", &format!("/jobs/{jid}"), Some(&tok), None);
    assert!(
        wait_until(
            "B's /jobs/<jid> has gm1's return",
            Duration::from_secs(60),
            || {
                let (s, body) = job_on_b();
                s == 200 && body["return"][0]["gm1"] == json!(true)
            }
        )
        .is_ok(),
        "{:?}\n{}",
        job_on_b(),
        b.api.tail(30)
    );
    assert_eq!(job_on_b().1["info"][0]["Function"], "test.ping");
    let (s, jobs) = http(&b, "GET", "/jobs", Some(&tok), None);
    assert_eq!(s, 200, "{jobs}");
    assert_eq!(jobs["return"][0][&jid]["Function"], "test.ping", "{jobs}");

    // The token in Salt's clear commands on B's master.
    let published = clear(&venv, &work, &b, &publish_load(&tok));
    assert!(published["load"]["jid"].is_string(), "{published}");
    let ran = clear(&venv, &work, &b, &runner_load(&tok));
    assert!(ran["jid"].is_string(), "{ran}");

    // Logout through B: the token is gone on A's salt-api and in B's clear commands.
    let (s, body) = http(&b, "POST", "/logout", Some(&tok), None);
    assert_eq!(s, 200, "{body}");
    assert_eq!(http(&a, "GET", "/keys", Some(&tok), None).0, 401);
    assert_eq!(keys_on_b().0, 401);
    let refused = clear(&venv, &work, &b, &publish_load(&tok));
    assert!(refused.get("load").is_none(), "{refused}");
    assert_eq!(refused["error"]["name"], "AuthenticationError", "{refused}");
    let refused = clear(&venv, &work, &b, &runner_load(&tok));
    assert_eq!(
        refused["error"]["name"], "TokenAuthenticationError",
        "{refused}"
    );

    // Expiry: a 3 s token made through B, used on A until it expires.
    let short = login(&b, json!({"token_expire": 3}));
    assert_eq!(http(&a, "GET", "/keys", Some(&short), None).0, 200);
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(http(&a, "GET", "/keys", Some(&short), None).0, 401);
    assert_eq!(http(&b, "GET", "/keys", Some(&short), None).0, 401);

    minion.stop(Duration::from_secs(10));
    for m in [&mut a, &mut b] {
        m.api.stop(Duration::from_secs(10));
        m.master.stop(Duration::from_secs(10));
    }
}
