//! `locale.present`, `locale.system` and `timezone.system` under `test=True` against Salt's
//! own states on this host (`salt-call --local state.single ... test=True` of 3007.17): the
//! same result and comment. Nothing on the host changes (test runs only).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use rmpv::Value;
use salt_compat::map_get;
use salt_states::{FileClient, Opts, single};

struct NoFiles;

impl FileClient for NoFiles {
    fn get_file(&self, _path: &str, _saltenv: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(None)
    }
    fn envs(&self) -> Vec<String> {
        vec!["base".into()]
    }
}

const CASES: &[(&str, &[(&str, &str)])] = &[
    ("locale.present", &[("name", "C.UTF-8")]),
    ("locale.present", &[("name", "en_US.UTF-8")]),
    ("locale.present", &[("name", "xx_YY.UTF-8")]),
    ("locale.system", &[("name", "C.UTF-8")]),
    ("locale.system", &[("name", "en_US.UTF-8")]),
    ("timezone.system", &[("name", "Nope/Zone")]),
    ("timezone.system", &[("name", "Etc/UTC")]),
    (
        "timezone.system",
        &[("name", "Europe/Paris"), ("utc", "False")],
    ),
];

fn salts(venv: &Path, dir: &Path, fun: &str, args: &[(&str, &str)]) -> (Value, String) {
    let conf = dir.join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    let root = dir.join("root");
    std::fs::write(
        conf.join("minion"),
        format!(
            "id: loc1\nfile_client: local\nroot_dir: {r}\ncachedir: {r}/cache\npki_dir: {r}/pki\nsock_dir: {r}/sock\nlog_file: {r}/log\n",
            r = root.display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(venv.join("bin/salt-call"))
        .arg("-c")
        .arg(&conf)
        .args(["--local", "state.single", fun])
        .args(args.iter().map(|(k, v)| format!("{k}={v}")))
        .args(["test=True", "--out", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{fun}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    let ret = v["local"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .clone();
    let result = match &ret["result"] {
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        _ => Value::Nil,
    };
    (result, ret["comment"].as_str().unwrap_or("").to_owned())
}

#[test]
fn test_runs_like_salts() {
    let Some(venv) = salt_testkit::require(salt_testkit::salt_venv("3007.17")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let opts = Opts {
        test: true,
        grains: salt_compat::json::json_to_msgpack(
            &serde_json::json!({"os": "Debian", "os_family": "Debian"}),
        ),
        ..Opts::default()
    };
    let mut diffs = Vec::new();
    for (fun, args) in CASES {
        let (want_result, want_comment) = salts(&venv, dir.path(), fun, args);
        let kw: Vec<(String, Value)> = args
            .iter()
            .map(|(k, v)| {
                let v = match *v {
                    "False" => Value::Boolean(false),
                    "True" => Value::Boolean(true),
                    s => Value::from(s),
                };
                ((*k).to_owned(), v)
            })
            .collect();
        let out = single(Arc::new(NoFiles), &opts, fun, &kw).unwrap();
        let Value::Map(m) = out else { panic!() };
        let ret = &m[0].1;
        let result = map_get(ret, "result").cloned().unwrap_or(Value::Nil);
        let comment = map_get(ret, "comment")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        // Salt's escaped exceptions carry a traceback; ours the exception's last line.
        let same_comment =
            if want_comment.starts_with("An exception occurred in this state: Traceback") {
                comment.starts_with("An exception occurred in this state: ")
                    && want_comment.trim_end().ends_with(
                        comment
                            .trim_start_matches("An exception occurred in this state: ")
                            .trim_start_matches("CommandExecutionError: ")
                            .lines()
                            .last()
                            .unwrap_or("?"),
                    )
            } else {
                comment == want_comment
            };
        println!(
            "{fun} {args:?}: salt {want_result:?} {want_comment:?}\n  ours {result:?} {comment:?}"
        );
        if result != want_result || !same_comment {
            diffs.push(format!("{fun} {args:?}"));
        }
    }
    assert!(diffs.is_empty(), "differ from Salt: {diffs:?}");
}
