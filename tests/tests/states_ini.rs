//! `ini.options_present`, `ini.options_absent`, `ini.sections_present` and
//! `ini.sections_absent` against Python 3007.17's `salt-call --local`, each in its own
//! throwaway root, on ini files with comments, blank lines, commented-out and repeated
//! options, repeated sections, options above any section, indented continuations, CRLF
//! line ends and `=`, `:`, ` = ` separators (`tests/data/states-ini/files`): `test=True`,
//! apply, apply again, `test=True` and apply with changed values, and `--out highstate`.
//! Each step: same `--out json` (times, pids, roots blanked), same retcode, same files byte
//! for byte. Then the `ini.*` execution functions on the same files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::require;
use salt_integration_tests::states_support::{
    Pair, assert_same, local_minion, out_files, salt_call,
};
use salt_integration_tests::workspace_root;

fn tree() -> std::path::PathBuf {
    workspace_root().join("tests/data/states-ini")
}

fn setup(root: &Path) {
    local_minion(root, &tree(), None, "").unwrap();
    for e in std::fs::read_dir(tree().join("files")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, root.join("out").join(p.file_name().unwrap())).unwrap();
    }
    std::fs::write(
        root.join("out/crlf.ini"),
        "k=1\r\nb = 2\r\n\r\n[s]\r\nx=3\r\n",
    )
    .unwrap();
}

#[test]
fn ini_states_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let pair = Pair::new(&venv, setup).unwrap();
    let steps: [(&str, bool, &str); 6] = [
        ("json", true, "one"),
        ("json", false, "one"),
        ("json", false, "one"),
        ("json", true, "two"),
        ("json", false, "two"),
        ("highstate", true, "three"),
    ];
    for (i, (out, test, val)) in steps.iter().enumerate() {
        let args = |root: &Path| {
            let mut args = vec!["state.apply".to_owned(), "ini".into()];
            if *test {
                args.push("test=True".into());
            }
            args.push(format!(
                "pillar={{\"outdir\": \"{}/out\", \"val\": \"{val}\"}}",
                root.display()
            ));
            args
        };
        let seen = pair.run(out, args, out_files).unwrap();
        let step = format!("step {} test={test} val={val} --out {out}", i + 1);
        assert_same(&step, &seen[0], &seen[1], "main-options");
    }
}

/// `ini.sections_present`: Salt 3007.17 answers `test=True`, and fails every real run
/// (`set_option() got an unexpected keyword argument 'section'`); ours the same, with the
/// exception's last line instead of Salt's traceback.
#[test]
fn sections_present_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let pair = Pair::new(&venv, setup).unwrap();
    for test in [true, false] {
        let args = |root: &Path| {
            let mut args = vec!["state.apply".to_owned(), "sections".into()];
            if test {
                args.push("test=True".into());
            }
            args.push(format!("pillar={{\"outdir\": \"{}/out\"}}", root.display()));
            args
        };
        let mut seen = pair.run("json", args, out_files).unwrap();
        for side in &mut seen {
            side.0 = traceback_to_last_line(&side.0);
        }
        assert_same(
            &format!("sections_present test={test}"),
            &seen[0],
            &seen[1],
            "sections-present",
        );
    }
}

/// A comment `An exception occurred in this state: Traceback ... \nType: message\n` as
/// `An exception occurred in this state: Type: message`.
fn traceback_to_last_line(text: &str) -> String {
    text.lines()
        .map(|l| {
            let marker = "An exception occurred in this state: ";
            match l.find(marker) {
                Some(at) if l[at..].contains("Traceback") => {
                    let rest = &l[at + marker.len()..];
                    let quote = rest.rfind('"').unwrap_or(rest.len());
                    let (body, tail) = rest.split_at(quote);
                    let last = body
                        .trim_end_matches("\\n")
                        .rsplit("\\n")
                        .next()
                        .unwrap_or_default();
                    format!("{}{marker}{last}{tail}", &l[..at])
                }
                _ => l.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `ini.set_option`, `get_option`, `remove_option`, `get_section`, `remove_section`,
/// `get_ini` on each file of `files/`, one after another: our `salt-call ini.*` answers what
/// Salt's own `salt/modules/ini_manage.py` returns (run by `ini_calls.py` in the 3007.17 venv:
/// one Python process instead of a `salt-call` per call), and leaves the same file.
#[test]
fn ini_functions_same_as_python_3007() {
    let Some(venv) = require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let pair = Pair::new(&venv, setup).unwrap();
    let [(_, py_root), (ours, rs_root)] = pair.sides();
    let calls = serde_json::json!([
        ["get_ini", [], {}],
        ["get_option", ["s", "multi"], {}],
        ["get_option", ["", "k"], {}],
        ["get_section", ["s"], {}],
        ["set_option", [{"s": {"new": 1, "x": "9"}, "top": "t"}], {}],
        ["set_option", [{"a": {"k": "v"}}], {"separator": ":"}],
        ["set_option", [{}], {"no_spaces": true}],
        ["remove_option", ["s", "x"], {}],
        ["remove_option", ["", "top"], {}],
        ["remove_section", ["a"], {}],
    ]);
    let script = tree().join("ini_calls.py");
    let py = Command::new(venv.bin("python"))
        .arg(&script)
        .arg(py_root.join("out"))
        .arg(calls.to_string())
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    let want: Vec<serde_json::Value> = serde_json::from_slice(&py.stdout).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(rs_root.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want = want.into_iter();
    for call in calls.as_array().unwrap() {
        let fun = call[0].as_str().unwrap();
        for name in &names {
            let path = rs_root.join("out").join(name).display().to_string();
            let mut args = vec![format!("ini.{fun}"), path.clone()];
            for a in call[1].as_array().unwrap() {
                args.push(a.as_str().map_or_else(|| a.to_string(), str::to_owned));
            }
            for (k, v) in call[2].as_object().unwrap() {
                let v = match v {
                    serde_json::Value::Bool(true) => "True".to_owned(),
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                args.push(format!("{k}={v}"));
            }
            let (o, rc) = salt_call(Command::new(ours), rs_root, "json", &args).unwrap();
            let w = want.next().unwrap();
            assert_eq!(
                (w["call"].as_str(), w["file"].as_str()),
                (Some(fun), Some(name.as_str()))
            );
            assert!(w.get("error").is_none(), "Salt raised: {w}");
            let got: serde_json::Value =
                serde_json::from_str(&o).unwrap_or_else(|e| panic!("{fun} {name}: {e}: {o}"));
            assert_eq!(got["local"], w["ret"], "ini.{fun} on {name}: answer");
            assert_eq!(rc, Some(0), "ini.{fun} on {name}: retcode");
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            assert_eq!(
                text,
                w["text"].as_str().unwrap(),
                "ini.{fun} on {name}: file"
            );
        }
        println!("ini.{fun} {}: same on {} files", call[1], names.len());
    }
}
