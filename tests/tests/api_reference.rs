//! salt-api (issue #34): Salt 3007.17's Python `salt-api` (rest_cherrypy) on Salt's master is
//! the reference; ours on our master must answer the same requests with the same statuses and
//! bodies (after taking out tokens, jids and times). The minions are ours and one Python
//! minion of each Salt release (3006, 3007, 3008), attached together, on both sides. The
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
pymids = [m for m in sys.argv[4].split(",") if m]
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
out["local_batch"] = [s, b]
s, b, _ = req("/", [{"client": "local_batch", "tgt": mid, "fun": "test.arg", "arg": ["x"],
                     "batch": "1"}], headers=A)
out["local_batch_arg"] = [s, s == 200 and [{m: r["args"] for m, r in x.items()}
                                           for x in b["return"]]]
s, b, _ = req("/", [{"client": "local_batch", "tgt": "nobody", "fun": "test.ping",
                     "batch": 1}], headers=A)
out["local_batch_nobody"] = [s, b]
s, b, _ = req("/run", [dict(client="local_batch", tgt=mid, fun="cmd.run", arg=["id"],
                            eauth="file", username="tina", password="secret2")])
out["local_batch_denied"] = s
s, b, _ = req("/", [{"client": "local_subset", "tgt": mid, "fun": "test.ping", "subset": 1}],
              headers=A)
out["local_subset"] = [s, b]
s, b, _ = req("/run", [dict(client="local_subset", tgt=mid, fun="test.ping",
                            eauth="file", username="tina", password="secret2")])
out["local_subset_denied"] = s
s, b, _ = req("/", [{"client": "destroy", "tgt": mid, "fun": "test.ping"}], headers=A)
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
out["client_disabled_page"] = req_err("/", [{"client": "destroy", "tgt": mid,
                                             "fun": "test.ping"}], A)
out["runner_unknown_page"] = req_err("/", [{"client": "runner", "fun": "no.such"}], A)
out["runner_async_unknown_page"] = req_err("/", [{"client": "runner_async", "fun": "no.such"}], A)
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
import base64, os, socket, struct, threading
def ws_open(path, headers=None):
    # A websocket client over a raw socket (RFC 6455): the status and, on 101, the stream.
    u = urllib.parse.urlparse(base)
    so = socket.create_connection((u.hostname, u.port), timeout=60)
    h = {"Host": "%s:%d" % (u.hostname, u.port), "Upgrade": "websocket",
         "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Origin": base,
         "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode()}
    h.update(headers or {})
    head = "GET %s HTTP/1.1\r\n" % path + "".join("%s: %s\r\n" % kv for kv in h.items())
    so.sendall((head + "\r\n").encode())
    f = so.makefile("rb")
    status = int(f.readline().split()[1])
    while f.readline() not in (b"\r\n", b""):
        pass
    return so, f, status
def ws_send(so, text):
    data, mask = text.encode(), os.urandom(4)
    n = len(data)
    hdr = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                           bytes([0x80 | 126]) + struct.pack(">H", n))
    so.sendall(hdr + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(data)))
def ws_recv(f):
    out = b""
    while True:
        b0, b1 = f.read(2)
        n = b1 & 0x7f
        if n == 126:
            n = struct.unpack(">H", f.read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", f.read(8))[0]
        out += f.read(n)
        if b0 & 0x80:
            return out.decode()
def ws_until(so, f, fire, match):
    # Fires `fire()` every half second (the server subscribes to the bus after "ready")
    # until a message `match`es; returns what `match` made of it.
    done = threading.Event()
    def firing():
        while not done.is_set():
            fire()
            done.wait(0.5)
    t = threading.Thread(target=firing)
    t.start()
    try:
        for _ in range(5000):
            got = match(ws_recv(f))
            if got is not None:
                return got
    finally:
        done.set()
        t.join()
so, f, s = ws_open("/ws/" + tok)
ws_send(so, "websocket client ready")
first = ws_recv(f)
def hook_seen(m):
    if not m.startswith("data: "):
        return None
    e = json.loads(m[len("data: "):])
    if e["tag"] != "salt/netapi/hook/ws/check":
        return None
    return [m.endswith("\n\n"), sorted(e), sorted(e["data"]), e["data"]["post"]]
out["ws"] = [s, first, ws_until(so, f, lambda: req("/hook/ws/check", {"n": 8}, headers=A),
                               hook_seen)]
jids = []
def job_ret(m):
    e = json.loads(m[len("data: "):]) if m.startswith("data: ") else {}
    if any(e.get("tag") == "salt/job/%s/ret/%s" % (j, mid) for j in list(jids)):
        return [sorted(e["data"]), e["data"]["return"], e["data"]["fun"]]
    return None
def ping_async():
    # A new job every other second: a job published before the server's bus subscription
    # was live (Salt's /ws subscribes in a child process after "ready") is never seen.
    if len(jids) < 60 and (not jids or time.time() - ping_async.last >= 2):
        ping_async.last = time.time()
        s, b, _ = req("/", [{"client": "local_async", "tgt": mid, "fun": "test.ping"}],
                      headers=A)
        jids.append(b["return"][0]["jid"])
ping_async.last = 0.0
out["ws_job"] = ws_until(so, f, ping_async, job_ret)
so.close()
so, f, s = ws_open("/ws?format_events", A)
ws_send(so, "websocket client ready")
ws_recv(f)
jids = []
def job_formatted(m):
    d = json.loads(m)
    jobs = [d.get("jobs", {}).get(j) for j in list(jids)]
    job = next((j for j in jobs if j and j.get("state") == "complete" and "fun" in j), None)
    if not job:
        return None
    return [sorted(d), sorted(job), job["fun"], job["tgt"], job["tgt_type"],
            job["minions"][mid]]
out["ws_format_events"] = [s, ws_until(so, f, ping_async, job_formatted)]
so.close()
out["ws_no_auth"] = ws_open("/ws")[2]
# Salt's documented max_request_body_size default (1 MiB) is not applied (CherryPy does not
# read the key Salt gives it): a 1.5 MiB lowstate runs.
big = [{"client": "local", "tgt": mid, "fun": "test.arg", "arg": ["x" * (1536 * 1024)]}]
try:
    out["body_too_large"] = req("/", big, headers=A)[0]
except (ConnectionError, urllib.error.URLError) as e:
    out["body_too_large"] = "disconnected"
out["ws_bad_session"] = ws_open("/ws/" + "0" * 40)[2]
s, b, _ = req("/stats", headers=A)
# Salt's answer is CherryPy's live server statistics: only the status compares.
out["stats"] = s
# The Python minions (one per Salt release), attached beside ours.
def kw_clean(r):
    if not isinstance(r, dict) or "kwargs" not in r:
        return r
    return {"args": r["args"], "kwargs": {k: v for k, v in r["kwargs"].items()
                                          if not k.startswith("__")}}
s, b, _ = req("/", [{"client": "local", "tgt": "*", "fun": "test.ping"}], headers=A)
out["py_all_ping"] = [s, b]
for m in pymids:
    s, b, _ = req("/", [{"client": "local", "tgt": m, "fun": "test.ping"}], headers=A)
    out["py_ping " + m] = [s, b]
    s, b, _ = req("/", [{"client": "local", "tgt": m, "fun": "test.arg", "arg": ["a", 1],
                         "kwarg": {"k": "v"}}], headers=A)
    out["py_arg " + m] = [s, s == 200 and kw_clean(b["return"][0].get(m))]
    s, b, _ = req("/run", [dict(T, client="local", tgt=m, fun="test.ping")])
    out["py_limited_ping " + m] = [s, b]
    s, b, _ = req("/minions/" + m, headers=A)
    out["py_minions_one " + m] = [s, sorted(b["return"][0]) if s == 200 else b]
    s, b, _ = req("/minions", [{"tgt": m, "fun": "test.ping"}], headers=A)
    out["py_minions_post " + m] = [s, s < 300 and [sorted(b), b["return"][0]["minions"]]]
    s, b, _ = req("/", [{"client": "local_async", "tgt": m, "fun": "test.arg", "arg": ["x"]}],
                  headers=A)
    jid = b["return"][0]["jid"] if s == 200 else "0" * 20
    for _ in range(120):
        s, b, _ = req("/jobs/" + jid, headers=A)
        if s != 200 or b["return"][0]:
            break
        time.sleep(0.5)
    if s == 200:
        info = b["info"][0]
        out["py_jobs_one " + m] = [
            s, {k: info.get(k) for k in ("Function", "Arguments", "Target", "Target-type",
                                         "User", "Minions")},
            sorted(info["Result"]), sorted(info["Result"][m]), b["return"][0][m]["args"]]
    else:
        out["py_jobs_one " + m] = s
    s, b, _ = req("/keys/" + m, headers=A)
    out["py_keys_one " + m] = [s, b and re.sub(r"[0-9a-f]{2}(:[0-9a-f]{2})+", "<finger>",
                                               json.dumps(b))]
    s, b, _ = req("/", [{"client": "local_batch", "tgt": m, "fun": "test.arg", "arg": ["y"],
                         "batch": "1"}], headers=A)
    out["py_local_batch " + m] = [s, s == 200 and [{k: r["args"] for k, r in x.items()}
                                                  for x in b["return"]]]
s, b, _ = req("/keys", headers=A)
out["keys_with_py"] = [s, b]
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
    // Salt's `/ws` needs ws4py (scripts/salt-venv.sh installs it).
    let ws4py = std::process::Command::new(venv.bin("python"))
        .args(["-c", "import ws4py"])
        .status()
        .is_ok_and(|s| s.success());
    let found = if ws4py {
        Ok(())
    } else {
        Err(salt_integration_tests::Missing::new(
            "ws4py in the Salt 3007.17 venv (run scripts/salt-venv.sh 3007.17)",
        ))
    };
    if salt_integration_tests::require(found).is_none() {
        return;
    }
    let _guard = serial();
    let b = bins().unwrap();
    let ours = Side::Ours(b.clone());
    let py = Side::Salt(venv.clone());
    // One Python minion of each Salt release beside ours, on both sides.
    let mut py_minions = Vec::new();
    for v in salt_integration_tests::interop_support::VERSIONS {
        let Some(pv) = salt_integration_tests::require(venv_for(v)) else {
            continue;
        };
        py_minions.push(((*v).to_owned(), pv));
    }
    let salts = scenario(&venv, &py, &ours, &py_minions);
    let ourss = scenario(&venv, &ours, &ours, &py_minions);
    for (k, v) in salts.as_object().unwrap() {
        assert_eq!(
            Some(v),
            ourss.get(k),
            "{k}: Salt's salt-api answered {v}, ours {:?}",
            ourss.get(k)
        );
    }
    assert_eq!(salts, ourss);
    ours_without_master_keys(&venv, &ours);
}

/// The API holds none of the master's keys: ours, started from a copy of the master's config
/// whose `pki_dir` is an empty directory, logs in, runs a job and lists the keys (all through
/// the master) and leaves that directory empty. Bounded: a body over `max_request_body_size`
/// is a 413; an `/events` client that never reads does not stall the bus (a reading client
/// sees every event of a 12 MB flood, more than the stalled socket holds, and the next job
/// answers). salt-rs's `token_rate_limit`: a session past its burst gets 429, another not.
fn ours_without_master_keys(venv: &SaltVenv, ours: &Side) {
    let lab = ApiLab::start(ours, ours, "[local, wheel]").unwrap();
    let work = lab.root.dir("nokeys").unwrap();
    let (pki, conf) = (work.join("pki"), work.join("conf"));
    std::fs::create_dir_all(&pki).unwrap();
    std::fs::create_dir_all(&conf).unwrap();
    let port = salt_integration_tests::free_port().unwrap();
    let master = std::fs::read_to_string(lab.master.conf_dir.join("master")).unwrap();
    let text: Vec<String> = master
        .lines()
        .map(|l| match l.split_once(':').map(|(k, _)| k) {
            Some("pki_dir") => format!("pki_dir: '{}'", pki.display()),
            Some("rest_cherrypy") => format!(
                "rest_cherrypy: {{port: {port}, host: 127.0.0.1, disable_ssl: True, \
                 max_request_body_size: 100000, token_rate_limit: 1, token_rate_burst: 10}}"
            ),
            Some("api_logfile") => format!("api_logfile: '{}'", work.join("api.log").display()),
            Some("api_pidfile") => format!("api_pidfile: '{}'", work.join("api.pid").display()),
            _ => l.to_owned(),
        })
        .collect();
    std::fs::write(conf.join("master"), text.join("\n") + "\n").unwrap();
    let Side::Ours(b) = ours else { unreachable!() };
    let mut api = ProcSpec::new(
        "salt-api-nokeys",
        b.master.with_file_name("salt-api"),
        &work,
    )
    .args([
        "-c".as_ref(),
        conf.as_os_str(),
        "-l".as_ref(),
        "info".as_ref(),
    ])
    .spawn()
    .unwrap();
    let t0 = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(60), "{}", api.tail(40));
        std::thread::sleep(Duration::from_millis(200));
    }
    let code = r#"
import json, sys, urllib.error, urllib.parse, urllib.request
base, mid = sys.argv[1], sys.argv[2]
def req(path, body, tok=None):
    h = {"Content-Type": "application/json", "Accept": "application/json"}
    if tok:
        h["X-Auth-Token"] = tok
    r = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers=h)
    with urllib.request.urlopen(r, timeout=60) as resp:
        return json.loads(resp.read())
tok = req("/login", {"username": "fred", "password": "secret", "eauth": "file"})["return"][0]["token"]
ping = req("/", [{"client": "local", "tgt": mid, "fun": "test.ping"}], tok)["return"]
keys = req("/", [{"client": "wheel", "fun": "key.list_all"}], tok)["return"][0]["data"]["return"]
# max_request_body_size: 100000 refuses a larger body.
try:
    req("/", [{"client": "local", "tgt": mid, "fun": "test.arg", "arg": ["x" * 200000]}], tok)
    big = 200
except urllib.error.HTTPError as e:
    big = e.code
except ConnectionError:
    big = "disconnected"
# A reader that never reads does not stall the bus: 3,000 events of 4 KB fired on the
# master's bus (Salt's own MasterEvent) while it sleeps; a reading client sees them all and
# the next job answers.
import http.client, socket, subprocess, threading
u = urllib.parse.urlparse(base)
slow = socket.create_connection((u.hostname, u.port))
slow.sendall(("GET /events HTTP/1.1\r\nHost: x\r\nX-Auth-Token: %s\r\n\r\n" % tok).encode())
fast = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
fast.request("GET", "/events", headers={"X-Auth-Token": tok})
r = fast.getresponse()
r.fp.readline()
seen = []
def reader():
    n = 0
    while True:
        line = r.fp.readline()
        if not line:
            break
        if line.startswith(b"tag: flood/"):
            n += 1
            if line.startswith(b"tag: flood/end"):
                break
    seen.append(n)
t = threading.Thread(target=reader)
t.start()
import time
time.sleep(1)
fire = """
import sys, salt.config, salt.utils.event
opts = salt.config.master_config(sys.argv[1])
ev = salt.utils.event.get_master_event(opts, opts["sock_dir"], listen=False)
for i in range(3000):
    ev.fire_event({"i": i, "pad": "p" * 4096}, "flood/%d" % i)
ev.fire_event({}, "flood/end")
ev.destroy()
"""
subprocess.run([sys.executable, "-c", fire, sys.argv[3]], check=True, timeout=600)
t.join(300)
after = req("/", [{"client": "local", "tgt": mid, "fun": "test.ping"}], tok)["return"]
slow.close()
# salt-rs's token_rate_limit (1/s, burst 10): a second session's requests are refused 429
# (CherryPy's page, Retry-After) once its burst is spent; the first session is not.
tok2 = req("/login", {"username": "fred", "password": "secret", "eauth": "file"})["return"][0]["token"]
limited = None
for i in range(200):
    r = urllib.request.Request(base + "/stats", headers={"X-Auth-Token": tok2})
    try:
        with urllib.request.urlopen(r, timeout=60) as resp:
            resp.read()
    except urllib.error.HTTPError as e:
        page = e.read().decode()
        limited = [e.code, i >= 10, e.headers.get("Content-Type"),
                   int(e.headers.get("Retry-After", "0")) >= 1, "429 Too Many Requests" in page]
        break
first_still = req("/", [{"client": "local", "tgt": mid, "fun": "test.ping"}], tok)["return"]
print("RESULT " + json.dumps([ping, keys["minions"], big, seen, after, limited, first_still]))
"#;
    let base = format!("http://127.0.0.1:{port}");
    let master_conf = lab.master.conf_dir.join("master").display().to_string();
    let spec = python(venv, &work, "nokeys", code, &[&base, lab.mid, &master_conf]);
    let mut c = std::process::Command::new(&spec.program);
    c.args(&spec.args);
    let out = run_with_timeout(c, Duration::from_secs(120)).unwrap();
    let line = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("no-keys salt-api: {out:?}\n{}", api.tail(40)));
    let got: Value = serde_json::from_str(line).unwrap();
    assert_eq!(
        got,
        serde_json::json!([
            [{lab.mid: true}],
            [lab.mid],
            413,
            [3001],
            [{lab.mid: true}],
            [429, true, "text/html;charset=utf-8", true, true],
            [{lab.mid: true}]
        ]),
        "{}",
        api.tail(40)
    );
    let left: Vec<_> = std::fs::read_dir(&pki).unwrap().collect();
    assert!(left.is_empty(), "salt-api wrote into its pki_dir: {left:?}");
    api.stop(Duration::from_secs(10));
    lab.stop();
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

fn scenario(venv: &SaltVenv, side: &Side, ours: &Side, py: &[(String, SaltVenv)]) -> Value {
    let label = format!("{} master + salt-api", side.label());
    println!("== {label}");
    let clients =
        "[local, local_async, local_batch, local_subset, runner, runner_async, wheel, wheel_async]";
    let lab = ApiLab::start_full(side, ours, clients, None, py).unwrap();
    let work = lab.root.dir("work").unwrap();
    let pam = lab.pam.as_ref().map_or("", |p| p.name.as_str());
    let pymids: Vec<&str> = lab.py_minions.iter().map(|(id, _)| id.as_str()).collect();
    let spec = python(
        venv,
        &work,
        "client",
        CLIENT,
        &[&lab.base, lab.mid, pam, &pymids.join(",")],
    );
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
