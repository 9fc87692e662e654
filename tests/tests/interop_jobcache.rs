//! The job cache in Salt's `local_cache` layout, against Salt 3006.30, 3007.17 and 3008.5
//! (`salt/returners/local_cache.py` of each venv):
//!
//! * a cache our master's job cache (`FileJobs`) wrote is read by Python's own
//!   `salt-run jobs.list_jobs` / `jobs.lookup_jid` / `jobs.list_job` (pointed at a config dir
//!   with `master_job_cache: local_cache` and our `cachedir`) with the answers we stored;
//! * a cache Salt's `local_cache` wrote (`prep_jid`, `save_load`, `save_minions`, `returner`)
//!   is read by ours with the same answers (`get_load` with `Minions`, `get_jid`, `get_jids`);
//! * byte level: for the same job and returns, the `jid`, `.load.p`, `.minions.p`,
//!   `return.p` and `out.p` each side writes are the same bytes;
//! * `keep_jobs_seconds`: Salt's `clean_old_jobs` and ours leave the same tree of the same
//!   fixture (old, young, without `jid` file, old and young empty first levels).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rmpv::Value;
use salt_integration_tests::interop_support::{VERSIONS, serial, venv_for};
use salt_master_core::job_cache::local_cache::jid_dir;
use salt_master_core::job_cache::{FileJobs, JobStore, clean_old_jobs};
use salt_pki::HashType;
use serde_json::json;

/// Salt's `local_cache` driven from Python: `write <jid> <json job>` as Salt's master and
/// minions would, `clean <keep>`.
const PY: &str = r#"
import json, sys
import salt.config
import salt.returners.local_cache as lc
opts = salt.config.master_config(sys.argv[1])
lc.__opts__ = opts
mode = sys.argv[2]
if mode == "write":
    jid, job = sys.argv[3], json.loads(sys.argv[4])
    assert lc.prep_jid(passed_jid=jid) == jid
    lc.save_load(jid, job["load"], minions=job["minions"])
    for ret in job["returns"]:
        lc.returner(ret)
elif mode == "clean":
    opts["keep_jobs_seconds"] = int(sys.argv[3])
    lc.clean_old_jobs()
"#;

fn t(s: &str) -> Value {
    Value::from(s)
}

fn map(kv: Vec<(&str, Value)>) -> Value {
    Value::Map(kv.into_iter().map(|(k, v)| (t(k), v)).collect())
}

/// A job load as our master stores it (Salt's key order).
fn load(jid: &str) -> Value {
    map(vec![
        ("fun", t("test.arg")),
        ("arg", Value::Array(vec![t("a1")])),
        ("tgt", t("*")),
        ("jid", t(jid)),
        ("ret", t("")),
        ("tgt_type", t("glob")),
        ("user", t("root")),
    ])
}

/// Two returns as minions send them (with what `local_cache` does not keep).
fn returns(jid: &str) -> Vec<(String, Value)> {
    vec![
        (
            "m1".into(),
            map(vec![
                ("success", Value::Boolean(true)),
                ("return", map(vec![("args", Value::Array(vec![t("a1")]))])),
                ("retcode", Value::from(0)),
                ("jid", t(jid)),
                ("fun", t("test.arg")),
                ("fun_args", Value::Array(vec![t("a1")])),
                ("id", t("m1")),
                ("out", t("nested")),
            ]),
        ),
        (
            "m2".into(),
            map(vec![
                ("return", t("boom")),
                ("retcode", Value::from(1)),
                ("success", Value::Boolean(false)),
                ("jid", t(jid)),
                ("id", t("m2")),
            ]),
        ),
    ]
}

fn to_json(v: &Value) -> serde_json::Value {
    salt_compat::json::msgpack_to_json(v)
}

struct Site {
    _tmp: tempfile::TempDir,
    conf: PathBuf,
    jobs: PathBuf,
}

fn site() -> Site {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let conf = root.join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    let user = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .name;
    std::fs::write(
        conf.join("master"),
        format!(
            "root_dir: {r}\ncachedir: {r}/cache\npki_dir: {r}/pki\nsock_dir: {r}/sock\n\
             log_file: {r}/log\nuser: {user}\nmaster_job_cache: local_cache\nhash_type: sha256\n",
            r = root.display()
        ),
    )
    .unwrap();
    std::fs::write(root.join("lc.py"), PY).unwrap();
    let jobs = root.join("cache/jobs");
    std::fs::create_dir_all(&jobs).unwrap();
    // A master makes it at start; 3008's runner client writes its proc file there.
    std::fs::create_dir_all(root.join("cache/proc")).unwrap();
    Site {
        conf,
        jobs,
        _tmp: tmp,
    }
}

fn python(venv: &Path, site: &Site, args: &[&str]) {
    let out = std::process::Command::new(venv.join("bin/python"))
        .arg(site.conf.parent().unwrap().join("lc.py"))
        .arg(site.conf.join("master"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "lc.py {args:?}: {out:?}");
}

fn salt_run(venv: &Path, site: &Site, args: &[&str]) -> serde_json::Value {
    let out = std::process::Command::new(venv.join("bin/salt-run"))
        .arg("-c")
        .arg(&site.conf)
        .args(["--out", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "salt-run {args:?}: {out:?}");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("salt-run {args:?}: {e}: {out:?}"))
}

/// Every file and directory under `dir` with its bytes, but for our (empty) `.tmp`, where the
/// job directories are made before they are renamed into place.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    let tmp = dir.join(".tmp");
    if tmp.is_dir() {
        assert!(
            std::fs::read_dir(&tmp).unwrap().next().is_none(),
            "nothing left in .tmp"
        );
    }
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p == tmp {
                continue;
            }
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                stack.push(p);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Ours writes, Python's `salt-run jobs.*` reads.
fn ours_read_by_salt(venv: &Path) {
    let s = site();
    let jid = "20250102030405060708";
    let jobs = FileJobs::new(s.jobs.clone());
    jobs.store_job(jid, &load(jid)).unwrap();
    jobs.store_minions(jid, &["m1".into(), "m2".into()])
        .unwrap();
    for (id, r) in returns(jid) {
        jobs.store_return(jid, &id, &r).unwrap();
    }

    let listed = salt_run(venv, &s, &["jobs.list_jobs"]);
    assert_eq!(
        listed,
        json!({jid: {
            "Function": "test.arg", "Arguments": ["a1"], "Target": "*",
            "Target-type": "glob", "User": "root",
            "StartTime": salt_master_core::job_cache::jid_to_time(jid),
        }}),
        "jobs.list_jobs"
    );
    let looked = salt_run(venv, &s, &["jobs.lookup_jid", jid]);
    assert_eq!(
        looked,
        json!({"m1": {"args": ["a1"]}, "m2": "boom"}),
        "jobs.lookup_jid"
    );
    let job = salt_run(venv, &s, &["jobs.list_job", jid]);
    assert_eq!(
        job["Result"],
        json!({
            "m1": {"return": {"args": ["a1"]}, "retcode": 0, "success": true, "out": "nested"},
            "m2": {"return": "boom", "retcode": 1, "success": false},
        }),
        "jobs.list_job: {job}"
    );
    assert_eq!(job["Function"], json!("test.arg"));
    assert_eq!(job["jid"], json!(jid));
}

/// Python's `local_cache` writes, ours reads; the bytes equal ours for the same job.
fn salt_read_by_ours(venv: &Path) {
    let s = site();
    let jid = "20250102030405060709";
    let job = json!({
        "load": to_json(&load(jid)),
        "minions": ["m1", "m2"],
        "returns": returns(jid).iter().map(|(_, r)| to_json(r)).collect::<Vec<_>>(),
    });
    python(venv, &s, &["write", jid, &job.to_string()]);
    let jobs = FileJobs::new(s.jobs.clone());
    let mut want_load = load(jid);
    if let Value::Map(m) = &mut want_load {
        m.push((t("Minions"), Value::Array(vec![t("m1"), t("m2")])));
    }
    assert_eq!(jobs.load(jid).unwrap(), Some(want_load), "get_load");
    assert_eq!(
        jobs.jobs().unwrap(),
        vec![(jid.to_owned(), load(jid))],
        "get_jids"
    );
    let got: Vec<(String, serde_json::Value)> = jobs
        .returns(jid)
        .unwrap()
        .into_iter()
        .map(|(id, r)| (id, to_json(&r)))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "m1".to_owned(),
                json!({"return": {"args": ["a1"]}, "retcode": 0, "success": true, "out": "nested"})
            ),
            (
                "m2".to_owned(),
                json!({"return": "boom", "retcode": 1, "success": false})
            ),
        ],
        "get_jid"
    );

    // The same job written by ours: the same files, the same bytes.
    let ours = site();
    let o = FileJobs::new(ours.jobs.clone());
    o.store_job(jid, &load(jid)).unwrap();
    o.store_minions(jid, &["m1".into(), "m2".into()]).unwrap();
    for (id, r) in returns(jid) {
        o.store_return(jid, &id, &r).unwrap();
    }
    let (theirs, mine) = (tree(&s.jobs), tree(&ours.jobs));
    let dir = jid_dir(Path::new(""), jid, HashType::Sha256);
    for f in [
        "jid",
        ".load.p",
        ".minions.p",
        "m1/return.p",
        "m1/out.p",
        "m2/return.p",
    ] {
        let k = dir.join(f).to_string_lossy().into_owned();
        assert!(theirs.contains_key(&k), "Salt wrote no {k}: {theirs:?}");
        assert_eq!(theirs.get(&k), mine.get(&k), "{k}: bytes differ");
    }
    let names = |t: &BTreeMap<String, Vec<u8>>| t.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&theirs), names(&mine), "the same files");
}

/// `keep_jobs_seconds`: Salt's `clean_old_jobs` and ours on the same fixture.
fn clean_equal(venv: &Path) {
    let fixture = |jobs: &Path| {
        let old = SystemTime::now() - Duration::from_secs(3600);
        let mk = |jid: &str, jid_file: Option<SystemTime>| {
            let d = jid_dir(jobs, jid, HashType::Sha256);
            std::fs::create_dir_all(d.join("m1")).unwrap();
            std::fs::write(d.join(".load.p"), salt_proto::encode(&load(jid))).unwrap();
            std::fs::write(d.join("m1/return.p"), b"\x81\xa6return\xc3").unwrap();
            if let Some(t) = jid_file {
                std::fs::write(d.join("jid"), jid).unwrap();
                std::fs::File::options()
                    .write(true)
                    .open(d.join("jid"))
                    .unwrap()
                    .set_modified(t)
                    .unwrap();
            }
        };
        mk("20250101000000000001", Some(old));
        mk("20250101000000000002", Some(SystemTime::now()));
        mk("20250101000000000003", None);
        for (name, t) in [("zz", old), ("zy", SystemTime::now())] {
            std::fs::create_dir_all(jobs.join(name)).unwrap();
            std::fs::File::open(jobs.join(name))
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
    };
    let (theirs, ours) = (site(), site());
    fixture(&theirs.jobs);
    fixture(&ours.jobs);
    python(venv, &theirs, &["clean", "60"]);
    clean_old_jobs(
        &ours.jobs,
        Duration::from_secs(60),
        SystemTime::now(),
        &HashSet::new(),
    )
    .unwrap();
    let (a, b) = (tree(&theirs.jobs), tree(&ours.jobs));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "the same jobs are left"
    );
    assert!(jid_dir(&ours.jobs, "20250101000000000002", HashType::Sha256).is_dir());
    assert!(!jid_dir(&ours.jobs, "20250101000000000001", HashType::Sha256).exists());
}

fn each_version(f: fn(&Path)) {
    let _g = serial();
    for v in VERSIONS {
        let Some(venv) = salt_integration_tests::require(venv_for(v)) else {
            continue;
        };
        eprintln!("Salt {v}");
        f(&venv.dir);
    }
}

#[test]
fn our_job_cache_is_read_by_salt_run() {
    each_version(ours_read_by_salt);
}

#[test]
fn salts_job_cache_is_read_by_ours_byte_for_byte() {
    each_version(salt_read_by_ours);
}

#[test]
fn keep_jobs_seconds_cleans_as_salt() {
    each_version(clean_equal);
}
