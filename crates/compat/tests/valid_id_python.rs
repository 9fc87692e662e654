//! The one minion-id rule against Salt's own `salt.utils.verify.valid_id`, run in Salt's
//! venv (`salt_testkit::any_salt_venv`; required: a failure under CI=true, else a recorded
//! skip).

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::io::Write as _;
use std::process::{Command, Stdio};

use salt_compat::valid_id;

#[test]
fn valid_id_matches_salt() {
    let Some(venv) = salt_testkit::require(salt_testkit::any_salt_venv()) else {
        return;
    };
    let long = "x".repeat(300);
    let ids = [
        "minion1",
        "web-01.example.com",
        "",
        ".",
        "..",
        "...",
        ".hidden",
        "..x",
        "x..",
        "a/b",
        "/abs",
        "../up",
        "a\\b",
        "nul\0byte",
        "tab\tid",
        "new\nline",
        "ünïcödé",
        " space ",
        "minions",
        "master.pem",
        long.as_str(),
    ];
    // One id per line, hex-encoded so any byte gets through.
    let script = "import sys\nfrom salt.utils.verify import valid_id\n\
                  opts = {'pki_dir': '/nonexistent/salt-compat-test/pki'}\n\
                  for line in sys.stdin:\n    \
                  i = bytes.fromhex(line.strip()).decode()\n    \
                  print('1' if valid_id(opts, i) else '0')\n";
    let mut child = Command::new(venv.join("bin/python"))
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input: String = ids
        .iter()
        .map(|i| i.bytes().map(|b| format!("{b:02x}")).collect::<String>() + "\n")
        .collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python failed");
    let got: Vec<bool> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l == "1")
        .collect();
    assert_eq!(got.len(), ids.len());
    for (id, salt) in ids.iter().zip(got) {
        assert_eq!(valid_id(id), salt, "valid_id({id:?}): Salt says {salt}");
    }
}
