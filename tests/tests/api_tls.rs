//! salt-api over HTTPS (issue #34): `rest_cherrypy: {ssl_crt, ssl_key}` with a self-signed
//! certificate made by `openssl req` here. Salt 3007.17's Python salt-api on Salt's master
//! (CherryPy's builtin ssl module) is the reference; ours (rustls) on our master must answer
//! the same requests made by a client that verifies the certificate against it (Python's
//! `ssl` with the certificate as CA, and `curl --cacert`), and by `pepper`.
//!
//! Under `CI=true` a missing venv, `openssl` or `curl` fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use salt_integration_tests::api_support::ApiLab;
use salt_integration_tests::interop_support::{Side, serial, venv_for};
use salt_integration_tests::{SaltVenv, bins, run_with_timeout};
use serde_json::{Value, json};

/// Requests over HTTPS, verified with the CA file; printed as one `RESULT <json>` line.
const CLIENT: &str = r#"
import json, ssl, sys, urllib.request, urllib.error
base, mid, ca = sys.argv[1], sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
out = {}
def req(path, body=None, headers=None):
    h = dict(headers or {})
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    h.setdefault("Accept", "application/json")
    r = urllib.request.Request(base + path, data=data, headers=h)
    try:
        with urllib.request.urlopen(r, timeout=60, context=ctx) as resp:
            return resp.status, json.loads(resp.read().decode())
    except urllib.error.HTTPError as e:
        return e.code, None
out["index"] = req("/")
s, b = req("/login", {"username": "fred", "password": "secret", "eauth": "file"})
tok = b["return"][0]["token"]
out["login"] = [s, b["return"][0]["user"], b["return"][0]["perms"]]
A = {"X-Auth-Token": tok}
out["local_ping"] = req("/", [{"client": "local", "tgt": mid, "fun": "test.ping"}], headers=A)
out["login_bad"] = req("/login", {"username": "fred", "password": "no", "eauth": "file"})[0]
r = urllib.request.Request(base + "/events", headers=A)
with urllib.request.urlopen(r, timeout=30, context=ctx) as resp:
    out["events"] = [resp.status, resp.headers.get("Content-Type"), resp.readline().decode()]
try:
    urllib.request.urlopen(base + "/", timeout=30, context=ssl.create_default_context())
    out["untrusted"] = "accepted"
except urllib.error.URLError as e:
    out["untrusted"] = type(e.reason).__name__
try:
    urllib.request.urlopen(base.replace("https:", "http:") + "/", timeout=30)
    out["plain_http"] = "accepted"
except urllib.error.HTTPError as e:
    out["plain_http"] = e.code
except ConnectionError:
    out["plain_http"] = "disconnected"
print("RESULT " + json.dumps(out, sort_keys=True), flush=True)
"#;

#[test]
fn api_tls_3007() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let tools = salt_integration_tests::require(salt_integration_tests::both(
        salt_integration_tests::command("openssl"),
        salt_integration_tests::command("curl"),
    ));
    if tools.is_none() {
        return;
    }
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let (crt, key) = (dir.path().join("crt.pem"), dir.path().join("key.pem"));
    let mut c = std::process::Command::new("openssl");
    c.args([
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
    ])
    .args(["-subj", "/CN=localhost"])
    .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
    .arg("-keyout")
    .arg(&key)
    .arg("-out")
    .arg(&crt);
    let out = run_with_timeout(c, Duration::from_secs(60)).unwrap();
    assert!(out.success(), "openssl req: {out:?}");
    let b = bins().unwrap();
    let ours = Side::Ours(b.clone());
    let py = Side::Salt(venv.clone());
    let salts = scenario(&venv, &py, &ours, &crt, &key);
    let ourss = scenario(&venv, &ours, &ours, &crt, &key);
    assert_eq!(salts, ourss, "Salt's salt-api over TLS vs ours");
    // What both must answer, not only the same thing.
    assert_eq!(ourss["client"]["index"][0], 200);
    assert_eq!(
        ourss["client"]["local_ping"][1]["return"][0]["apiminion"],
        true
    );
    assert_eq!(ourss["client"]["untrusted"], "SSLCertVerificationError");
    assert_eq!(ourss["client"]["plain_http"], "disconnected");
    assert_eq!(ourss["curl_ca"], "200");
    assert_eq!(ourss["curl_no_ca"], 60);
}

fn scenario(venv: &SaltVenv, side: &Side, ours: &Side, crt: &Path, key: &Path) -> Value {
    let label = format!("{} master + salt-api over TLS", side.label());
    println!("== {label}");
    let lab = ApiLab::start_with(side, ours, "[local, runner, wheel]", Some((crt, key))).unwrap();
    let work = lab.root.dir("work").unwrap();
    let script = work.join("tls_client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let mut c = std::process::Command::new(venv.bin("python"));
    c.arg(&script).arg(&lab.base).arg(lab.mid).arg(crt);
    let out = run_with_timeout(c, Duration::from_secs(180)).unwrap();
    let line = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("{label}: {out:?}\n{}", lab.api.tail(60)));
    let client: Value = serde_json::from_str(line).unwrap();
    let curl = |ca: bool| {
        let mut c = std::process::Command::new("curl");
        c.args(["-s", "-o", "/dev/null", "-w", "%{http_code}"]);
        if ca {
            c.arg("--cacert").arg(crt);
        }
        c.arg(format!("{}/", lab.base));
        run_with_timeout(c, Duration::from_secs(60)).unwrap()
    };
    let with_ca = curl(true);
    let no_ca = curl(false);
    let result = json!({
        "client": client,
        "curl_ca": with_ca.stdout.trim(),
        "curl_no_ca": no_ca.status.and_then(|s| s.code()),
        "pepper": pepper(&lab, crt),
    });
    println!("{label}: {result}");
    lab.stop();
    result
}

/// `pepper '<mid>' test.ping` over HTTPS (pepper does not verify certificates; it must still
/// speak TLS to the API).
fn pepper(lab: &ApiLab, ca: &Path) -> Value {
    let bin = salt_integration_tests::workspace_root().join(".venv/pepper/bin/pepper");
    let found = if bin.is_file() {
        Ok(bin)
    } else {
        Err(salt_integration_tests::Missing::new(
            "pepper (run scripts/pepper-venv.sh)",
        ))
    };
    let Some(bin) = salt_integration_tests::require(found) else {
        return Value::Null;
    };
    let mut c = std::process::Command::new(bin);
    c.env("SALTAPI_URL", &lab.base)
        .env("SALTAPI_USER", "fred")
        .env("SALTAPI_PASS", "secret")
        .env("SALTAPI_EAUTH", "file")
        .env("SSL_CERT_FILE", ca)
        .env("HOME", lab.root.path())
        .args([lab.mid, "test.ping"]);
    let out = run_with_timeout(c, Duration::from_secs(120)).unwrap();
    assert!(out.success(), "pepper over TLS: {out:?}");
    let mut v: Value = serde_json::from_str(&out.stdout).unwrap();
    if let Some(m) = v["return"][0][lab.mid].as_object_mut() {
        m.insert("jid".into(), json!("<jid>"));
    }
    v
}
