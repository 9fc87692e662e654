//! salt-api (issue #34): Salt 3007.17's Python `salt-api` (rest_cherrypy) on Salt's master is
//! the reference; ours on our master must answer the same requests with the same statuses and
//! bodies (after taking out tokens, jids and times). The minion is ours on both sides. The
//! requests are made by a Python script (`urllib`), and by `pepper` (PyPI `salt-pepper`,
//! a real client) when its venv exists (`scripts/pepper-venv.sh`).
//!
//! Under `CI=true` a missing venv fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use salt_integration_tests::api_support::ApiLab;
use salt_integration_tests::interop_support::{Side, serial, venv_for};
use salt_integration_tests::{ProcSpec, SaltVenv, bins, run_with_timeout};
use serde_json::Value;

/// The requests, printed as one `RESULT <json>` line.
const CLIENT: &str = r#"
import io, json, re, sys, tarfile, time, urllib.request, urllib.error, urllib.parse
base, mid, pam = sys.argv[1], sys.argv[2], sys.argv[3]
out = {}
def wheel_norm(r):
    # A wheel call's answer without its jid, tag and time stamp.
    if not isinstance(r, dict) or "data" not in r:
        return r
    d = dict(r["data"])
    for k in ("jid", "tag", "_stamp"):
        d[k] = "<%s>" % k if k in d else None
    return {"tag": re.sub(r"\d{20}", "<jid>", r["tag"]), "data": d}
def req_tar(path, body):
    r = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                               headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(r, timeout=60) as resp:
            tar = tarfile.open(fileobj=io.BytesIO(resp.read()))
            files = {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers()}
            return [resp.status, resp.headers.get("Content-Type"),
                    resp.headers.get("Content-Disposition"), sorted(files),
                    files["minion.pub"].startswith("-----BEGIN PUBLIC KEY-----"),
                    "PRIVATE KEY-----" in files["minion.pem"]]
    except urllib.error.HTTPError as e:
        return e.code
def req(path, body=None, ctype="application/json", headers=None, method=None):
    h = dict(headers or {})
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h["Content-Type"] = ctype
    h.setdefault("Accept", "application/json")
    r = urllib.request.Request(base + path, data=data, headers=h, method=method)
    try:
        with urllib.request.urlopen(r, timeout=60) as resp:
            text = resp.read().decode()
            try:
                return resp.status, json.loads(text), resp.headers
            except ValueError:
                return resp.status, text, resp.headers
    except urllib.error.HTTPError as e:
        return e.code, None, e.headers
s, b, _ = req("/")
out["index"] = [s, b]
s, b, _ = req("/", headers={"Accept": "text/html"})
out["index_html"] = s
s, b, h = req("/login", {"username": "fred", "password": "secret", "eauth": "file"})
tok = b["return"][0]["token"]
out["login"] = [s, sorted(b["return"][0]), b["return"][0]["perms"], b["return"][0]["user"],
                b["return"][0]["eauth"], h.get("X-Auth-Token") == tok,
                "session_id=" in (h.get("Set-Cookie") or "")]
s, b, _ = req("/login", {"username": "fred", "password": "nope", "eauth": "file"})
out["login_bad"] = s
s, b, _ = req("/login", b"username=fred&password=secret&eauth=file",
              "application/x-www-form-urlencoded")
out["login_form"] = [s, b["return"][0]["user"]]
A = {"X-Auth-Token": tok}
s, b, _ = req("/", [{"client": "local", "tgt": mid, "fun": "test.ping"}], headers=A)
out["local_ping"] = [s, b]
s, b, _ = req("/", [{"client": "local", "tgt": mid, "fun": "test.arg", "arg": ["a", 1],
                     "kwarg": {"k": "v"}}], headers=A)
ret = b["return"][0][mid] if s == 200 else None
out["local_arg"] = [s, ret and {"args": ret["args"], "kwargs": {k: v for k, v in ret["kwargs"].items() if not k.startswith("__")}}]
s, b, _ = req("/", json.dumps({"client": "local", "tgt": mid, "fun": "test.ping"}).encode(),
              "text/plain", headers=A)
out["local_text_plain"] = [s, b]
s, b, h = req("/", [{"client": "local", "tgt": mid, "fun": "test.ping"}],
              headers=dict(A, Accept="application/x-yaml"))
out["local_yaml_out"] = [s, b, h.get("Content-Type")]
s, b, _ = req("/", ("- client: local\n  tgt: " + mid + "\n  fun: test.ping\n").encode(),
              "application/x-yaml", headers=A)
out["local_yaml_in"] = [s, b]
s, b, _ = req("/", [{"client": "local", "tgt": mid, "fun": "cmd.run", "arg": ["id"]}], headers=A)
out["local_denied"] = s
s, b, _ = req("/", [{"client": "local_async", "tgt": mid, "fun": "test.ping"}], headers=A)
out["local_async"] = [s, sorted(b["return"][0]), b["return"][0]["minions"]]
s, b, _ = req("/", [{"client": "local", "tgt": "nobody", "fun": "test.ping"}], headers=A)
out["local_nobody"] = [s, b]
s, b, _ = req("/", [{"client": "runner_async", "fun": "test.arg"}], headers=A)
out["runner_async"] = [s, sorted(b["return"][0])]
s, b, _ = req("/", [{"client": "local_batch", "tgt": mid, "fun": "test.ping"}], headers=A)
out["client_disabled"] = s
s, b, _ = req("/", [{"client": "nope", "tgt": mid, "fun": "test.ping"}], headers=A)
out["client_invalid"] = s
s, b, _ = req("/", [{"client": "local", "tgt": mid, "fun": "test.ping"}])
out["no_auth"] = s
s, b, _ = req("/", [{"client": "local", "tgt": mid, "fun": "test.ping"}],
              headers={"X-Auth-Token": "0" * 40})
out["unknown_session"] = s
s, b, _ = req("/", b"{", headers=A)
out["bad_json"] = s
s, b, _ = req("/", b"x", "image/png", headers=A)
out["bad_ctype"] = s
s, b, _ = req("/run", [{"client": "local", "tgt": mid, "fun": "test.ping", "eauth": "file",
                        "username": "fred", "password": "secret"}])
out["run"] = [s, b]
s, b, _ = req("/run", [{"client": "local", "tgt": mid, "fun": "test.ping", "eauth": "file",
                        "username": "fred", "password": "nope"}])
out["run_bad_password"] = s
T = {"eauth": "file", "username": "tina", "password": "secret2"}
s, b, _ = req("/run", [dict(T, client="local", tgt=mid, fun="test.ping")])
out["limited_ping"] = [s, b]
s, b, _ = req("/run", [dict(T, client="local", tgt=mid, fun="cmd.run", arg=["id"])])
out["limited_cmd_run"] = s
s, b, _ = req("/run", [dict(T, client="runner", fun="jobs.list_jobs")])
out["limited_runner"] = s
s, b, h = req("/login", T)
out["limited_login"] = [s, b["return"][0]["perms"]]
if pam:
    P = {"eauth": "pam", "username": pam, "password": "Pam-secret1"}
    s, b, _ = req("/login", P)
    out["pam_login"] = [s, b["return"][0]["perms"], b["return"][0]["user"] == pam]
    s, b, _ = req("/run", [dict(P, client="local", tgt=mid, fun="test.ping")])
    out["pam_ping"] = [s, b]
    s, b, _ = req("/run", [dict(P, client="runner", fun="jobs.list_jobs")])
    out["pam_group_runner"] = s
    s, b, _ = req("/run", [dict(P, client="local", tgt=mid, fun="cmd.run", arg=["id"])])
    out["pam_cmd_run"] = s
    s, b, _ = req("/run", [dict(P, client="local", tgt=mid, fun="test.ping", password="bad")])
    out["pam_bad_password"] = s
s, b, _ = req("/minions")
out["minions_no_auth"] = s
s, b, _ = req("/minions/" + mid, headers=A)
out["minions_one"] = [s, sorted(b["return"][0]) if s == 200 else b]
s, b, _ = req("/minions", [{"tgt": mid, "fun": "test.ping"}], headers=A)
out["minions_post"] = [s, sorted(b), b["return"][0]["minions"]]
s, b, _ = req("/", [{"client": "local_async", "tgt": mid, "fun": "test.arg", "arg": ["x"]}],
              headers=A)
jid = b["return"][0]["jid"]
for _ in range(120):
    s, b, _ = req("/jobs/" + jid, headers=A)
    if s != 200 or b["return"][0]:
        break
    time.sleep(0.5)
if s == 200:
    info = b["info"][0]
    out["jobs_one"] = [s, sorted(b), sorted(info),
                       {k: info.get(k) for k in ("Function", "Arguments", "Target",
                                                 "Target-type", "User", "Minions")},
                       sorted(info["Result"]), sorted(info["Result"][mid]),
                       sorted(b["return"][0]), b["return"][0][mid]["args"]]
else:
    out["jobs_one"] = s
s, b, _ = req("/jobs", headers=A)
entry = b["return"][0].get(jid) if s == 200 else None
out["jobs"] = [s, sorted(b), entry and sorted(entry),
               entry and {k: v for k, v in entry.items() if k != "StartTime"}]
s, b, _ = req("/jobs")
out["jobs_no_auth"] = s
s, b, _ = req("/keys", headers=A)
out["keys"] = [s, b]
s, b, _ = req("/keys/" + mid, headers=A)
out["keys_one"] = [s, b and re.sub(r"[0-9a-f]{2}(:[0-9a-f]{2})+", "<finger>", json.dumps(b))]
out["keys_post"] = req_tar("/keys", {"mid": "genmin", "username": "fred",
                                     "password": "secret", "eauth": "file"})
out["keys_post_denied"] = req_tar("/keys", {"mid": "genmin2", "username": "tina",
                                            "password": "secret2", "eauth": "file"})
s, b, _ = req("/keys", headers=A)
out["keys_after_post"] = [s, b]
s, b, _ = req("/", [{"client": "runner", "fun": "test.arg", "kwarg": {"k": "v"}}], headers=A)
out["runner_arg"] = [s, s == 200 and {
    "args": b["return"][0]["args"],
    "kwargs": {k: v for k, v in b["return"][0]["kwargs"].items() if not k.startswith("__")}}]
s, b, _ = req("/", [{"client": "runner", "fun": "jobs.list_jobs", "search_function": "test.arg"}],
              headers=A)
out["runner_list_jobs"] = [s, s == 200 and sorted({v["Function"] for v in b["return"][0].values()})]
s, b, _ = req("/", [{"client": "runner", "fun": "no.such"}], headers=A)
out["runner_unknown"] = [s, b]
s, b, _ = req("/", [{"client": "wheel", "fun": "key.list_all"}], headers=A)
out["wheel"] = [s, s == 200 and wheel_norm(b["return"][0])]
s, b, _ = req("/", [{"client": "wheel", "fun": "key.finger", "match": "nobody"}], headers=A)
out["wheel_finger_nobody"] = [s, s == 200 and wheel_norm(b["return"][0])]
s, b, _ = req("/", [{"client": "wheel_async", "fun": "key.list_all"}], headers=A)
out["wheel_async"] = [s, s == 200 and sorted(b["return"][0]),
                      s == 200 and re.sub(r"\d{20}", "<jid>", b["return"][0]["tag"])]
s, b, _ = req("/", [{"client": "ssh", "tgt": mid, "fun": "test.ping"}], headers=A)
out["ssh"] = s
s, b, _ = req("/token", {"username": "fred", "password": "secret", "eauth": "file"})
out["token"] = [s, s == 200 and [sorted(b[0]), b[0]["name"], b[0]["eauth"], len(b[0]["token"])]]
if s == 200:
    s, b, _ = req("/run", [{"client": "local", "tgt": mid, "fun": "test.ping",
                            "token": b[0]["token"]}])
    out["token_run"] = [s, b]
s, b, _ = req("/token", {"username": "fred", "password": "nope", "eauth": "file"})
out["token_bad"] = [s, b]
s, b, _ = req("/token", {"username": "tina", "password": "secret2", "eauth": "file"})
out["token_no_runner_right"] = [s, b]
s, b, _ = req("/token", {"username": "fred"})
out["token_missing"] = s
def req_err(path, body, headers):
    # An error's page, as sent.
    r = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                               headers=dict(headers, **{"Content-Type": "application/json"}))
    try:
        with urllib.request.urlopen(r, timeout=60) as resp:
            return [resp.status, None]
    except urllib.error.HTTPError as e:
        return [e.code, e.headers.get("Content-Type"), e.read().decode()]
out["client_disabled_page"] = req_err("/", [{"client": "local_batch", "tgt": mid,
                                             "fun": "test.ping"}], A)
out["client_invalid_page"] = req_err("/", [{"client": "nope", "fun": "test.ping"}], A)
out["ssh_page"] = req_err("/", [{"client": "ssh", "tgt": mid, "fun": "test.ping"}], A)
s, b, _ = req("/hook/my/tag", {"a": 1}, headers=A)
out["hook"] = [s, b]
s, b, _ = req("/hook", {"a": 1})
out["hook_no_auth"] = s
s, b, _ = req("/events?token=" + tok)
out["events_query"] = s
s, b, _ = req("/events")
out["events_no_auth"] = s
r = urllib.request.Request(base + "/events", headers=A)
with urllib.request.urlopen(r, timeout=30) as resp:
    first = resp.readline().decode()
    out["events"] = [resp.status, resp.headers.get("Content-Type"), first]
    req("/hook/sse/check", {"n": 7}, headers=A)
    seen = None
    for _ in range(2000):
        line = resp.readline().decode()
        if line.startswith("tag: salt/netapi/hook/sse/check"):
            data = json.loads(resp.readline().decode()[len("data: "):])
            seen = [line, sorted(data), sorted(data["data"]), data["data"]["post"],
                    data["data"]["body"]]
            break
    out["events_hook"] = seen
s, b, _ = req("/stats", headers=A)
# Salt's answer is CherryPy's live server statistics: only the status compares.
out["stats"] = s
s, b, _ = req("/logout", {}, headers=A)
out["logout"] = [s, b]
s, b, _ = req("/", [{"client": "local", "tgt": mid, "fun": "test.ping"}], headers=A)
out["after_logout"] = s
s, b, _ = req("/nothing-here")
out["not_found"] = s
print("RESULT " + json.dumps(out, sort_keys=True), flush=True)
"#;

#[test]
fn api_3007() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let b = bins().unwrap();
    let ours = Side::Ours(b.clone());
    let py = Side::Salt(venv.clone());
    let salts = scenario(&venv, &py, &ours);
    let ourss = scenario(&venv, &ours, &ours);
    for (k, v) in salts.as_object().unwrap() {
        assert_eq!(
            Some(v),
            ourss.get(k),
            "{k}: Salt's salt-api answered {v}, ours {:?}",
            ourss.get(k)
        );
    }
    assert_eq!(salts, ourss);
}

fn python(venv: &SaltVenv, dir: &Path, name: &str, code: &str, args: &[&str]) -> ProcSpec {
    let script = dir.join(format!("{name}.py"));
    std::fs::write(&script, code).unwrap();
    ProcSpec::new(name, venv.bin("python"), dir)
        .args([script.as_os_str()])
        .args(args)
}

/// pepper's venv (`scripts/pepper-venv.sh`), next to the Salt venvs.
fn pepper_bin() -> Option<std::path::PathBuf> {
    let bin = salt_integration_tests::workspace_root().join(".venv/pepper/bin/pepper");
    let found = if bin.is_file() {
        Ok(bin)
    } else {
        Err(salt_integration_tests::Missing::new(
            "pepper (run scripts/pepper-venv.sh)",
        ))
    };
    salt_integration_tests::require(found)
}

/// `pepper` (a real salt-api client) with the file user: `'<mid>' test.ping`, a runner and
/// a wheel call. Test.ping's and the wheel's bodies compare (without jids, tags and times);
/// the runner's job list by shape.
fn pepper(base: &str, mid: &str, label: &str) -> Value {
    let Some(bin) = pepper_bin() else {
        return Value::Null;
    };
    let run = |args: &[&str]| -> Value {
        let mut c = std::process::Command::new(&bin);
        c.env("SALTAPI_URL", base)
            .env("SALTAPI_USER", "fred")
            .env("SALTAPI_PASS", "secret")
            .env("SALTAPI_EAUTH", "file")
            .env("HOME", std::env::temp_dir())
            .args(args);
        let out = run_with_timeout(c, Duration::from_secs(120)).unwrap();
        println!("{label}: pepper {args:?}: {out:?}");
        assert!(out.success(), "{label}: pepper {args:?}: {out:?}");
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("{label}: pepper {args:?}: not JSON ({e}): {out:?}"))
    };
    let ping = run(&[mid, "test.ping"]);
    let runner = run(&["--client", "runner", "jobs.list_jobs"]);
    let wheel = run(&["--client", "wheel", "key.list_all"]);
    let mut ping = ping;
    for r in ping["return"][0]
        .as_object_mut()
        .into_iter()
        .flat_map(|m| m.values_mut())
    {
        if let Some(m) = r.as_object_mut() {
            m.insert("jid".into(), Value::from("<jid>"));
        }
    }
    serde_json::json!({
        "ping": ping,
        "runner_is_map": runner["return"][0].is_object(),
        "wheel": wheel_norm(&wheel),
    })
}

/// A wheel call's answer without its jid, tag and time stamp.
fn wheel_norm(v: &Value) -> Value {
    let mut v = v.clone();
    for r in v["return"].as_array_mut().into_iter().flatten() {
        if let Some(d) = r["data"].as_object_mut() {
            for k in ["jid", "tag", "_stamp"] {
                if d.contains_key(k) {
                    d.insert(k.into(), Value::from(format!("<{k}>")));
                }
            }
        }
        if r.get("tag").is_some() {
            r["tag"] = Value::from("<tag>");
        }
    }
    v
}

fn scenario(venv: &SaltVenv, side: &Side, ours: &Side) -> Value {
    let label = format!("{} master + salt-api", side.label());
    println!("== {label}");
    let clients = "[local, local_async, runner, runner_async, wheel, wheel_async]";
    let lab = ApiLab::start(side, ours, clients).unwrap();
    let work = lab.root.dir("work").unwrap();
    let pam = lab.pam.as_ref().map_or("", |p| p.name.as_str());
    let spec = python(venv, &work, "client", CLIENT, &[&lab.base, lab.mid, pam]);
    let mut c = std::process::Command::new(&spec.program);
    c.args(&spec.args);
    let out = run_with_timeout(c, Duration::from_secs(300)).unwrap();
    let line = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("{label}: {out:?}\n{}", lab.api.tail(60)));
    let mut result: Value = serde_json::from_str(line).unwrap();
    result["pepper"] = pepper(&lab.base, lab.mid, &label);
    println!("{label}: {result}");
    lab.stop();
    result
}
