//! Salt's wheel on our master (issue #35 item 3, issue #34 item 3): the same clear `wheel`
//! calls, made by a Python script with Salt 3007.17's own `ReqChannel` (the root key from
//! `cachedir/.root_key` as `WheelClient.master_call` sends it, and eauth `file` as salt-api
//! does), first against Salt's master and then against ours, must get the same replies
//! (`{tag, data: {fun, jid, tag, user, _stamp, return, success}}`), the same key files
//! afterwards and the same `salt/key` / `salt/wheel/<jid>/new|ret` events.
//!
//! What differs by run is normalised: jids, stamps, the master's directory, the master's own
//! keys and fingerprints, newly generated key pairs (their PEM headers are kept), and Python
//! tracebacks (their first and last lines are kept).
//!
//! Under `CI=true` a missing venv fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use salt_integration_tests::interop_support::{Daemon, Side, serial, venv_for};
use salt_integration_tests::{
    MasterConf, SaltVenv, TempRoot, Yaml, bins, free_port_pair, run_with_timeout,
};
use serde_json::Value;

/// The calls, each printed normalised; then the events seen, then the key files.
const WHEEL: &str = r#"
import json, os, re, sys, time
import salt.config, salt.channel.client, salt.utils.event
conf, root = sys.argv[1], sys.argv[2]
opts = salt.config.client_config(conf)
mopts = salt.config.master_config(conf)
ev = salt.utils.event.get_master_event(mopts, mopts["sock_dir"], listen=True)
while not ev.cpub:
    ev.connect_pub(timeout=1)
key = open(opts["cachedir"] + "/.root_key").read()
chan = salt.channel.client.ReqChannel.factory(opts, crypt="clear")
jids = {}

def norm(v):
    if isinstance(v, dict):
        return {norm(k): norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, str):
        v = v.replace(root, "<root>")
        if "Traceback (most recent call last)" in v:
            lines = v.strip().splitlines()
            return lines[0] + " ... " + lines[-1]
        if "\nPassed invalid arguments: " in v:
            return v.split("\n\nUsage:")[0]
        m = re.match(r"-----BEGIN ([A-Z ]+)-----", v)
        if m:
            return "<pem " + m.group(1) + ">"
        for j in re.findall(r"\d{20}", v):
            jids.setdefault(j, "<jid%d>" % len(jids))
            v = v.replace(j, jids[j])
        if re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00)?$", v):
            return "<stamp>"
    return v

out = []
def w(fun, **kw):
    load = dict(cmd="wheel", fun=fun)
    load.update(kw)
    if "eauth" not in load:
        load["key"] = key
    try:
        r = chan.send(load)
    except Exception as e:
        r = "raised " + type(e).__name__ + ": " + str(e)
    if isinstance(r, dict) and isinstance(r.get("data"), dict):
        d = r["data"]
        assert r["tag"] == d["tag"] == "salt/wheel/" + d["jid"], r
        if fun in ("key.finger_master", "key.master_key_str") or (fun == "key.finger"
                                                                   and "local" in d["return"]):
            d["return"]["local"] = {k: "<master>" for k in d["return"]["local"]}
    out.append([fun, kw.get("kwarg", kw), norm(r)])

# The listings and lookups.
w("key.list_all")
for m in ("acc", "pre", "un", "rej", "den", "all", "bogus"):
    w("key.list", arg=[m], kwarg={})
w("key.list", match="pre")
w("key.name_match", match="web*")
w("key.name_match", match="web*,*1")
w("key.name_match", arg=[["web1", "w*"]], kwarg={})
w("key.print", match="acc1")
w("key.finger", match="web*")
w("key.finger", match="master*")
w("key.finger", match="web1", hash_type="md5")
w("key.finger_master")
w("key.master_key_str")
# Changes.
w("key.accept", match="web*")
w("key.accept", match="nothing*")
w("key.accept", match="bad1")
w("key.accept_dict", match={"minions_pre": ["db1"], "minions": ["ghost"]})
w("key.accept", match="rej1")
w("key.accept", match="rej1", include_rejected=True)
w("key.reject", match="db1")
w("key.reject", match="db1", include_accepted=True)
w("key.reject_dict", match={"minions_pre": ["db2"]})
w("key.delete", match="rej*")
w("key.delete_dict", match={"minions": ["web2"], "minions_pre": ["web1"]})
w("key.list_all")
w("key.gen")
w("key.gen", arg=[], kwarg={"id_": "x", "keysize": 1024})
w("key.gen_accept", id_="gen1")
w("key.gen_accept", id_="gen1")
w("key.gen_accept", arg=["gen1"], kwarg={"force": True})
w("key.gen_accept", id_="bad/id_")
w("key.list", match="acc")
# The roots.
w("file_roots.list_roots")
w("file_roots.list_env")
w("file_roots.list_env", saltenv="nope")
w("file_roots.find", path="top.sls")
w("file_roots.read", path="top.sls")
w("file_roots.read", path="blob.bin")
w("file_roots.write", data="new: file\n", path="sub/new.sls")
w("file_roots.read", path="sub/new.sls")
w("file_roots.write", data="x", path="/etc/x")
w("file_roots.write", data="x", path="../escape")
w("file_roots.write", data="x", path="y", saltenv="nope")
w("file_roots.write", data="x", path="y", index=3)
w("pillar_roots.list_roots")
w("pillar_roots.write", data="a: 1\n", path="p.sls")
w("pillar_roots.read", path="p.sls")
w("pillar_roots.write", data="x", path="../escape")
# Others, and what does not fit.
w("minions.connected")
w("error.error")
w("error.error", name="Exception", message="boom")
w("error.error", name="SaltInvocationError", message="bad")
w("error.error", name="NoSuchError", message="what")
w("key.nope")
w("nomod.fun")
w("key.list_all", bogus=1)
w("key.list_all", bogus=1, other=2)
w("key.accept")
w("key.list_all", arg=["x"], kwarg={})
w("key.list", arg=[], kwarg={})
w("key.list_all", arg=[], kwarg={"a": 1})
w("key.list", match=5)
# eauth, as salt-api sends it.
w("key.list", eauth="file", username="fred", password="secret", match="acc")
w("key.list", eauth="file", username="fred", password="nope", match="acc")
w("key.list", eauth="file", username="barney", password="rubble", match="acc")
w("key.list", user="root", match="acc")

events = []
end = time.time() + 3
while time.time() < end:
    e = ev.get_event(wait=0.5, full=True)
    if e and (e["tag"].startswith("salt/wheel/") or e["tag"] == "salt/key"):
        events.append(norm({"tag": e["tag"], "data": e["data"]}))
files = {}
for d in ("minions", "minions_pre", "minions_rejected", "minions_denied"):
    files[d] = sorted(os.listdir(os.path.join(opts["pki_dir"], d)))
chan.close()
print("RESULT " + json.dumps({"calls": out, "events": events, "files": files},
                             sort_keys=True, default=repr), flush=True)
"#;

#[test]
fn wheel_3007() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let ours = Side::Ours(bins().unwrap());
    let py = Side::Salt(venv.clone());
    let salts = scenario(&venv, &py, &venv.bin("salt-run"));
    let ourss = scenario(
        &venv,
        &ours,
        &bins().unwrap().salt.with_file_name("salt-run"),
    );
    let (sc, oc) = (&salts["calls"], &ourss["calls"]);
    for (i, (s, o)) in sc
        .as_array()
        .unwrap()
        .iter()
        .zip(oc.as_array().unwrap())
        .enumerate()
    {
        assert_eq!(s, o, "call {i}: Salt's master (left) vs ours (right)");
    }
    assert_eq!(sc, oc, "calls");
    assert_eq!(salts["files"], ourss["files"], "key files afterwards");
    assert_eq!(salts["jobs"], ourss["jobs"], "wheel jobs in the job cache");
    assert_eq!(
        salts["lookup_jid wheel.key.list_all"], ourss["lookup_jid wheel.key.list_all"],
        "a wheel job looked up"
    );
    let (se, oe) = (
        event_summary(&salts["events"]),
        event_summary(&ourss["events"]),
    );
    for (i, (s, o)) in se.iter().zip(&oe).enumerate() {
        assert_eq!(s, o, "event {i}: Salt's master (left) vs ours (right)");
    }
    assert_eq!(se.len(), oe.len(), "events");
}

/// The events in order, each as its tag (jids numbered) and its `fun`/`act`/`id`/`success`;
/// the `salt/wheel/.../ret` events with their return.
fn event_summary(events: &Value) -> Vec<Value> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let d = &e["data"];
            let mut keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
            keys.sort_unstable();
            // The master's own keys differ by run.
            let mut ret = d["return"].clone();
            if let Some(local) = ret.get_mut("local").and_then(Value::as_object_mut) {
                local.values_mut().for_each(|v| *v = "<master>".into());
            }
            serde_json::json!({"tag": e["tag"], "keys": keys, "fun": d["fun"], "act": d["act"],
                               "id": d["id"], "user": d["user"], "fun_args": d["fun_args"],
                               "return": ret, "success": d["success"]})
        })
        .collect()
}

fn pub_key() -> String {
    salt_pki::PrivateKey::generate(2048)
        .unwrap()
        .public_key()
        .to_pem()
}

/// One side's answers, with what differs by run taken out.
fn scenario(venv: &SaltVenv, side: &Side, salt_run: &std::path::Path) -> Value {
    let label = format!("Salt 3007.17, {} master", side.label());
    println!("== {label}");
    let root = TempRoot::new().unwrap();
    let ports = free_port_pair().unwrap();
    let dir = root.path().join("m");
    let users = root.path().join("eauth_users");
    std::fs::write(&users, "fred:secret\nbarney:rubble\n").unwrap();
    let eauth = format!(
        "{{file: {{'^filename': '{}', '^filetype': text, fred: ['@wheel'], barney: ['test.*']}}}}",
        users.display()
    );
    let srv = dir.join("srv");
    let mconf = MasterConf::new(&dir)
        .id("wheelmaster")
        .ports(ports.0, ports.1)
        .set("worker_threads", 2u32)
        .set("external_auth", Yaml::Raw(eauth))
        .set(
            "file_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", srv.join("salt").display())),
        )
        .set(
            "pillar_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", srv.join("pillar").display())),
        );
    std::fs::create_dir_all(srv.join("salt/deep/er")).unwrap();
    std::fs::create_dir_all(srv.join("pillar")).unwrap();
    std::fs::write(srv.join("salt/top.sls"), "base:\n  '*': [web]\n").unwrap();
    std::fs::write(srv.join("salt/deep/er/leaf.sls"), "x: 1\n").unwrap();
    std::fs::write(srv.join("salt/blob.bin"), [0u8, 1, 2, 3, 255]).unwrap();
    // The same minion keys on both sides (their fingerprints are compared).
    let pki = dir.join("pki");
    for (d, ids) in [
        ("minions", &["acc1", "Acc2"][..]),
        ("minions_pre", &["web1", "web2", "db1", "db2", "bad1"][..]),
        ("minions_rejected", &["rej1"][..]),
        ("minions_denied", &["acc1"][..]),
    ] {
        std::fs::create_dir_all(pki.join(d)).unwrap();
        for id in ids {
            let text = if *id == "bad1" {
                "not a key\n".to_owned()
            } else {
                fixed_key(id)
            };
            std::fs::write(pki.join(d).join(id), text).unwrap();
        }
    }
    let mut master = Daemon::start_master(side, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let conf = master.conf_dir.join("master");
    let line = python_result(
        venv,
        &root,
        WHEEL,
        &[conf.as_os_str(), dir.as_os_str()],
        &label,
        &master,
    );
    let mut result: Value = serde_json::from_str(&line).unwrap();
    // Each call is a job of the master in the job cache: (function, target, user) listed.
    let mut c = std::process::Command::new(salt_run);
    c.arg("-c").arg(&master.conf_dir).args([
        "jobs.list_jobs",
        "search_function=wheel.*",
        "--out",
        "json",
    ]);
    let o = run_with_timeout(c, Duration::from_secs(120)).unwrap();
    assert!(o.success(), "{label}: {o:?}");
    let jobs: Value = serde_json::from_str(o.stdout.trim()).unwrap();
    let rows = job_rows(&jobs);
    assert!(rows.as_array().unwrap().len() > 60, "{label}: {rows:?}");
    result["jobs"] = rows;
    // One wheel job looked up: its whole return, as Salt stores it.
    let mut first: Vec<&String> = jobs
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, j)| j["Function"] == "wheel.key.list_all")
        .map(|(jid, _)| jid)
        .collect();
    first.sort();
    let first = first.first().expect("a wheel.key.list_all job").to_string();
    let mut c = std::process::Command::new(salt_run);
    c.arg("-c")
        .arg(&master.conf_dir)
        .args(["jobs.lookup_jid", &first, "--out", "json"]);
    let o = run_with_timeout(c, Duration::from_secs(120)).unwrap();
    assert!(o.success(), "{label}: {o:?}");
    result["lookup_jid wheel.key.list_all"] =
        no_jids(serde_json::from_str(o.stdout.trim()).unwrap());
    println!(
        "{label}: {}",
        serde_json::to_string_pretty(&result).unwrap()
    );
    master.proc.stop(Duration::from_secs(15));
    result
}

/// The jobs `jobs.list_jobs` listed, each as its function, target, target type, user and
/// arguments, sorted.
fn job_rows(jobs: &Value) -> Value {
    let mut rows: Vec<String> = jobs
        .as_object()
        .unwrap()
        .values()
        .map(|j| {
            format!(
                "{} {} {} {} {}",
                j["Function"], j["Target"], j["Target-type"], j["User"], j["Arguments"]
            )
        })
        .collect();
    rows.sort();
    serde_json::json!(rows)
}

/// `v` with every jid (20 digits) and event stamp replaced, which differ by run.
fn no_jids(v: Value) -> Value {
    match v {
        Value::String(s) if s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit()) => {
            "<jid>".into()
        }
        Value::Array(a) => Value::Array(a.into_iter().map(no_jids).collect()),
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let v = if k == "_stamp" {
                        "<stamp>".into()
                    } else {
                        no_jids(v)
                    };
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

/// A key per id, the same for both runs of the test process.
fn fixed_key(id: &str) -> String {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static KEYS: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let keys = KEYS.get_or_init(Mutex::default);
    keys.lock()
        .unwrap()
        .entry(id.to_owned())
        .or_insert_with(pub_key)
        .clone()
}

/// `event.send` through the side's own `salt-run`, seen by a Python master-event reader.
const SEND: &str = r#"
import json, subprocess, sys, time
import salt.config, salt.utils.event
conf_dir, salt_run = sys.argv[1], sys.argv[2]
mopts = salt.config.master_config(conf_dir + "/master")
ev = salt.utils.event.get_master_event(mopts, mopts["sock_dir"], listen=True)
while not ev.cpub:
    ev.connect_pub(timeout=1)
outs = []
for args in (["myco/app/deploy", '{"app": "shop", "ver": 2}'], ["myco/app/empty"],
             ["myco/app/kw", "data={'k': [1, 2]}"]):
    p = subprocess.run([salt_run, "-c", conf_dir, "event.send"] + args + ["--out", "json"],
                       capture_output=True, text=True, timeout=120)
    outs.append([p.returncode, json.loads(p.stdout) if p.stdout.strip() else p.stderr[-300:]])
events = []
end = time.time() + 3
while time.time() < end:
    e = ev.get_event(wait=0.5, full=True)
    if e and e["tag"].startswith("myco/"):
        d = dict(e["data"])
        assert isinstance(d.pop("_stamp", None), str), e
        events.append({"tag": e["tag"], "data": d})
print("RESULT " + json.dumps({"outs": outs, "events": events}, sort_keys=True), flush=True)
"#;

/// `event.send`, `jobs.list_jobs` filters and `saltutil.sync_*` through each side's own
/// `salt-run` on its own master (our minion answers both): same output.
#[test]
fn runners_3007() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let b = bins().unwrap();
    let ours = Side::Ours(b.clone());
    let py = Side::Salt(venv.clone());
    let salts = runners(&venv, &py, &ours, &venv.bin("salt-run"));
    let ourss = runners(&venv, &ours, &ours, &b.salt.with_file_name("salt-run"));
    for (k, v) in salts.as_object().unwrap() {
        assert_eq!(v, &ourss[k], "{k}: Salt's master (left) vs ours (right)");
    }
}

fn runners(venv: &SaltVenv, side: &Side, minion_side: &Side, salt_run: &std::path::Path) -> Value {
    use salt_integration_tests::MinionConf;
    use salt_integration_tests::interop_support::SaltCli;
    let label = format!("Salt 3007.17, {} master", side.label());
    println!("== {label}");
    let root = TempRoot::new().unwrap();
    let ports = free_port_pair().unwrap();
    let dir = root.path().join("m");
    let srv = dir.join("srv");
    std::fs::create_dir_all(srv.join("salt/_modules/sub")).unwrap();
    std::fs::create_dir_all(srv.join("salt/_runners")).unwrap();
    std::fs::write(srv.join("salt/_modules/foo.py"), "def f():\n    return 1\n").unwrap();
    std::fs::write(srv.join("salt/_modules/sub/bar.py"), "X = 1\n").unwrap();
    std::fs::write(srv.join("salt/_modules/notes.txt"), "not a module\n").unwrap();
    std::fs::write(srv.join("salt/_runners/r.py"), "def r():\n    return 2\n").unwrap();
    let mconf = MasterConf::new(&dir)
        .id("runmaster")
        .ports(ports.0, ports.1)
        .set("worker_threads", 2u32)
        .set("auto_accept", true)
        .set(
            "file_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", srv.join("salt").display())),
        );
    let mut master = Daemon::start_master(side, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let mid = "runminion";
    let mut minion = Daemon::start_minion(
        minion_side,
        &MinionConf::new(root.path().join(mid), mid).ports(ports.0, ports.1),
    )
    .unwrap();
    minion.wait_minion_ready().unwrap();
    let conf_dir = master.conf_dir.clone();
    let mut out = serde_json::Map::new();

    // event.send, seen on the bus.
    let line = python_result(
        venv,
        &root,
        SEND,
        &[conf_dir.as_os_str(), salt_run.as_os_str()],
        &label,
        &master,
    );
    out.insert("event.send".into(), serde_json::from_str(&line).unwrap());

    // Two jobs, then the filters.
    let cli = SaltCli::new(side, &conf_dir);
    let before = chrono_now();
    for fun in ["test.ping", "test.true"] {
        let (v, o) = cli.salt_json(&[mid, fun], 30).unwrap();
        assert_eq!(v[mid], Value::Bool(true), "{label}: {o:?}");
    }
    std::thread::sleep(Duration::from_millis(1100));
    let after = chrono_now();
    let run = |args: &[&str]| -> Value {
        let mut c = std::process::Command::new(salt_run);
        c.arg("-c")
            .arg(&conf_dir)
            .args(args)
            .args(["--out", "json"]);
        let o = run_with_timeout(c, Duration::from_secs(120)).unwrap();
        assert!(o.success(), "{label}: {args:?}: {o:?}");
        serde_json::from_str(o.stdout.trim()).unwrap_or_else(|e| panic!("{label}: {e}: {o:?}"))
    };
    // The functions of the jobs listed (each master stores its own set of jobs: the
    // readiness pings differ, so jids, counts and targets are not compared).
    let funs = |v: Value| -> Value {
        let mut rows: Vec<String> = v
            .as_object()
            .unwrap()
            .values()
            .map(|j| j["Function"].as_str().unwrap_or_default().to_owned())
            .collect();
        rows.sort();
        rows.dedup();
        serde_json::json!(rows)
    };
    let start = format!("start_time={before}");
    let end = format!("end_time={after}");
    for (name, args) in [
        ("tests", vec!["search_function=test.*"]),
        ("tests_window", vec!["search_function=test.*", &start, &end]),
        (
            "ping_to_minion",
            vec!["search_function=test.ping", "search_target=runminion"],
        ),
        ("two_funs", vec!["search_function=test.ping,test.true"]),
        (
            "nobody",
            vec!["search_function=test.*", "search_target=nobody"],
        ),
        (
            "ended_long_ago",
            vec!["search_function=test.*", "end_time=2001-01-01"],
        ),
        (
            "start_in_future",
            vec!["search_function=test.*", "start_time=2101-01-01 00:00"],
        ),
        (
            "start_date_only",
            vec!["search_function=test.*", "start_time=2001-01-01"],
        ),
    ] {
        let mut a = vec!["jobs.list_jobs"];
        a.extend(args);
        out.insert(format!("list_jobs {name}"), funs(run(&a)));
    }

    // Each runner call so far is a job of the master (Salt's `RunnerClient.low` stores it):
    // listed as Salt lists them, and one looked up.
    let runs = run(&["jobs.list_jobs", "search_function=runner.*"]);
    out.insert("list_jobs runner.*".into(), job_rows(&runs));
    let first = |v: &Value, fun: &str| -> String {
        let mut jids: Vec<&String> = v
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, j)| j["Function"] == fun)
            .map(|(jid, _)| jid)
            .collect();
        jids.sort();
        jids.first()
            .unwrap_or_else(|| panic!("{label}: no {fun} job: {v:#}"))
            .to_string()
    };
    let jid = first(&runs, "runner.event.send");
    let mut looked = no_jids(run(&["jobs.lookup_jid", &jid]));
    // Salt's `event.send` stamps the mapping it fires in place, and that mapping is the one
    // in the job's `fun_args` (Python aliasing): not a field of the job, left out.
    for job in looked
        .as_object_mut()
        .into_iter()
        .flat_map(|m| m.values_mut())
    {
        for a in job["fun_args"].as_array_mut().into_iter().flatten() {
            if let Some(m) = a.as_object_mut() {
                m.remove("_stamp");
            }
        }
    }
    out.insert("lookup_jid runner.event.send".into(), looked);

    // Runners the UIs call (issue #34 item 3): the shapes.
    out.insert("manage.status".into(), run(&["manage.status"]));
    let versions = run(&["manage.versions"]);
    let keys = |v: &Value| -> Value {
        let mut k: Vec<&String> = v
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        k.sort();
        serde_json::json!(k)
    };
    out.insert("manage.versions keys".into(), keys(&versions));
    let grains = run(&["cache.grains", "tgt=runminion"]);
    out.insert("cache.grains ids".into(), keys(&grains));
    let one = run(&["jobs.list_jobs", "search_function=test.true"]);
    let jid = one.as_object().unwrap().keys().next().unwrap().clone();
    let mut job = run(&["jobs.list_job", &jid]);
    assert_eq!(job["jid"], Value::String(jid.clone()), "{label}: {job}");
    out.insert("jobs.list_job keys".into(), keys(&job));
    out.insert("jobs.list_job result".into(), job["Result"].take());
    out.insert("jobs.active".into(), run(&["jobs.active"]));

    // saltutil.sync_* on the master.
    out.insert("sync_modules".into(), run(&["saltutil.sync_modules"]));
    out.insert("sync_all".into(), run(&["saltutil.sync_all"]));
    std::fs::write(srv.join("salt/_modules/foo.py"), "def f():\n    return 3\n").unwrap();
    out.insert("sync_all again".into(), run(&["saltutil.sync_all"]));
    std::fs::remove_file(srv.join("salt/_runners/r.py")).unwrap();
    out.insert(
        "sync_runners whitelist".into(),
        run(&["saltutil.sync_runners", "extmod_whitelist=r"]),
    );
    let mut files: Vec<String> = Vec::new();
    let ext = dir.join("var/cache/salt/master/extmods");
    for form in ["modules", "runners"] {
        let d = ext.join(form);
        let mut stack = vec![d.clone()];
        while let Some(p) = stack.pop() {
            for e in std::fs::read_dir(&p).into_iter().flatten().flatten() {
                if e.path().is_dir() {
                    stack.push(e.path());
                } else {
                    let rel = e.path().strip_prefix(&ext).unwrap().display().to_string();
                    files.push(format!(
                        "{rel}: {}",
                        std::fs::read_to_string(e.path()).unwrap()
                    ));
                }
            }
        }
    }
    files.sort();
    out.insert("extmods".into(), serde_json::json!(files));
    println!("{label}: {}", serde_json::to_string_pretty(&out).unwrap());
    minion.proc.stop(Duration::from_secs(10));
    master.proc.stop(Duration::from_secs(15));
    Value::Object(out)
}

/// Local time now, as `dateutil` reads it.
fn chrono_now() -> String {
    let out = std::process::Command::new("date")
        .arg("+%Y-%m-%d %H:%M:%S")
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// `config.values` through the clear `wheel` command with the root key, as `WheelClient`
/// sends it: the whole answer (`json.dumps`, `repr` for what JSON has no type for).
const CONFIG_VALUES: &str = r#"
import json, sys
import salt.config, salt.channel.client
conf = sys.argv[1]
opts = salt.config.client_config(conf)
key = open(opts["cachedir"] + "/.root_key").read()
chan = salt.channel.client.ReqChannel.factory(opts, crypt="clear")
r = chan.send(dict(cmd="wheel", fun="config.values", key=key))
chan.close()
print("RESULT " + json.dumps({"success": r["data"]["success"], "return": r["data"]["return"]},
                             sort_keys=True, default=repr), flush=True)
"#;

/// `config.values` (issue #34): Salt's master and ours, on the same files (a main file with
/// Salt's quirks to replay, `master.d/*.conf`, `include:`), answer the same configuration,
/// key by key. Normalised: each side's temporary root (`<tmp>`) and its two ports.
#[test]
fn config_values_3007() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let salts = config_values(&venv, &Side::Salt(venv.clone()));
    let ours = config_values(&venv, &Side::Ours(bins().unwrap()));
    assert_eq!(salts["success"], Value::Bool(true), "Salt: {salts}");
    let (s, o) = (
        salts["return"]
            .as_object()
            .expect("Salt's answer is a mapping"),
        ours["return"].as_object().expect("our answer is a mapping"),
    );
    let mut keys: Vec<&String> = s.keys().chain(o.keys()).collect();
    keys.sort();
    keys.dedup();
    let diffs: Vec<String> = keys
        .into_iter()
        .filter(|k| s.get(*k) != o.get(*k))
        .map(|k| format!("{k}: Salt {:?}, ours {:?}", s.get(k), o.get(k)))
        .collect();
    assert!(
        diffs.is_empty(),
        "{} of {} keys differ:\n{}",
        diffs.len(),
        s.len(),
        diffs.join("\n")
    );
    assert!(s.len() > 340, "{}", s.len());
    println!(
        "{} keys equal; e.g. {}",
        s.len(),
        serde_json::json!({"__cli": s["__cli"], "conf_file": s["conf_file"], "id": s["id"],
                           "my_site_option": s["my_site_option"], "nodegroups": s["nodegroups"],
                           "ssh_minion_opts": s["ssh_minion_opts"], "keep_jobs": s["keep_jobs"],
                           "file_ignore_regex": s["file_ignore_regex"], "utils_dirs": s["utils_dirs"],
                           "cluster_peers": s["cluster_peers"], "ssh_config_file": s["ssh_config_file"]})
    );
}

/// One side's `config.values`, its temporary root and ports replaced by names.
fn config_values(venv: &SaltVenv, side: &Side) -> Value {
    let label = format!("Salt 3007.17, {} master", side.label());
    println!("== {label}");
    let root = TempRoot::new().unwrap();
    let ports = free_port_pair().unwrap();
    let dir = root.path().join("m");
    let users = root.path().join("eauth_users");
    std::fs::write(&users, "fred:secret\n").unwrap();
    let srv = dir.join("srv");
    std::fs::create_dir_all(srv.join("salt")).unwrap();
    std::fs::create_dir_all(srv.join("pillar")).unwrap();
    let mconf = MasterConf::new(&dir)
        .id("cfgmaster")
        .ports(ports.0, ports.1)
        .set("worker_threads", 2u32)
        .set(
            "external_auth",
            Yaml::Raw(format!(
                "{{file: {{'^filename': '{}', fred: ['@wheel']}}}}",
                users.display()
            )),
        )
        .set(
            "file_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", srv.join("salt").display())),
        )
        .set(
            "pillar_roots",
            Yaml::Raw(format!("{{base: ['{}']}}", srv.join("pillar").display())),
        )
        .set("include", "extra/*.conf")
        .set("file_ignore_glob", "*.pyc")
        .set("cluster_peers", Yaml::Raw("[peer1]".into()))
        .set(
            "nodegroups",
            Yaml::Raw("{web: 'web*', db: 'L@db1,db2'}".into()),
        );
    let conf_dir = mconf.conf_dir();
    std::fs::create_dir_all(conf_dir.join("master.d")).unwrap();
    std::fs::create_dir_all(conf_dir.join("extra")).unwrap();
    std::fs::write(
        conf_dir.join("master.d/10-site.conf"),
        "keep_jobs: 12\nmy_site_option: {nested: [1, 2], mode: 0750}\n\
         ssh_minion_opts: {gitfs_remotes: [], pillar_opts: true, ssh_merge_pillar: true, x: 1}\n",
    )
    .unwrap();
    std::fs::write(
        conf_dir.join("extra/a.conf"),
        "keep_jobs_seconds: 7200\nfile_ignore_regex: '\\.bak$'\n",
    )
    .unwrap();
    let mut master = Daemon::start_master(side, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let conf = master.conf_dir.join("master");
    let line = python_result(
        venv,
        &root,
        CONFIG_VALUES,
        &[conf.as_os_str()],
        &label,
        &master,
    );
    let text = line.replace(&root.path().display().to_string(), "<tmp>");
    let mut v: Value = serde_json::from_str(&text).unwrap();
    master.proc.stop(Duration::from_secs(15));
    if let Some(m) = v["return"].as_object_mut() {
        for (key, port) in [("publish_port", ports.0), ("ret_port", ports.1)] {
            if m.get(key) == Some(&Value::from(port)) {
                m.insert(key.into(), format!("<{key}>").into());
            }
        }
    }
    v
}

/// Runs `script` with the venv's python (in `root/work`) and `args`: the text after its
/// `RESULT ` line (the master's log tail in the panic when there is none).
fn python_result(
    venv: &SaltVenv,
    root: &TempRoot,
    script: &str,
    args: &[&std::ffi::OsStr],
    label: &str,
    master: &Daemon,
) -> String {
    let work = root.dir("work").unwrap();
    let path = work.join("script.py");
    std::fs::write(&path, script).unwrap();
    let mut c = std::process::Command::new(venv.bin("python"));
    c.arg(&path).args(args);
    let out = run_with_timeout(c, Duration::from_secs(300)).unwrap();
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("{label}: {out:?}\n{}", master.proc.tail(40)))
}
