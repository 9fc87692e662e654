//! Our GLOB matching against CPython's `fnmatch`, run in Salt's venv.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write as _;
use std::process::{Command, Stdio};

use salt_keystore::{GlobList, fnmatch};

const PATTERNS: &[&str] = &[
    "*",
    "web*",
    "*1",
    "w?b*",
    "?",
    "??",
    "*.*",
    "x*y*z",
    "**a**",
    "[abc]*",
    "[!abc]*",
    "[a-c]*",
    "[z-a]*",
    "[]]*",
    "[!]]*",
    "[]-a]",
    "[a-]*",
    "[-a]*",
    "[a-c-e]",
    "[a--c]",
    "[!-]",
    "[\\]*",
    "a\\b",
    "[",
    "[!",
    "[]",
    "[!]",
    "*[",
    "{a,b}",
    "a.b",
    "a+b*",
    "(x)",
    "^a$",
    "[&~|]*",
    "[[:alpha:]]",
    "ü*",
    "[ä-ü]",
    "[^a]*",
    "[a^]",
    "[!^]",
    "[0-9][0-9]",
    "WEB*",
    "[A-Z]*",
    "[%--]",
    "[a-z-0-9]",
    "[--/]",
    "[a-c-b]",
    "[x-a-c]",
    "a*b*c",
    "[\\-z]",
    "*\n*",
    "[!a-z]*",
    "[[]",
    "[a-b-c-d]",
];

const IDS: &[&str] = &[
    "web1", "web10", "Web1", "wab", "wb", "db1", "a", "b", "c", "d", "e", "-", "]", "[", "^", "\\",
    "a\\b", "a.b", "axb", "a+b", "a+bb", "(x)", "^a$", "&", "~", "|", ":", "ü", "üx", "ä", "ö",
    "{a,b}", "x1y2z", "xyz", "01", "9", "", "a b", "a\nb", "ab", "ba", "%", "/", "[!]", "a/b", "A",
    "Z", "abc", "acb", "[!", ".", "x", "aa", "a-", "-a",
];

const SCRIPT: &str = r#"
import fnmatch, sys
pats, ids = [], []
for line in sys.stdin:
    kind, h = line.split()
    s = bytes.fromhex(h).decode() if h != "-" else ""
    (pats if kind == "P" else ids).append(s)
for p in pats:
    try:
        print("".join("1" if fnmatch.fnmatch(i, p) else "0" for i in ids))
    except Exception:
        print("E")
"#;

#[test]
fn glob_semantics_match_python_fnmatch() {
    let Some(venv) = salt_testkit::require(salt_testkit::any_salt_venv()) else {
        return;
    };
    let mut child = Command::new(venv.join("bin/python"))
        .arg("-c")
        .arg(SCRIPT)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        let enc = |s: &str| {
            if s.is_empty() {
                "-".to_owned()
            } else {
                common::hexs(s)
            }
        };
        for p in PATTERNS {
            writeln!(stdin, "P {}", enc(p)).unwrap();
        }
        for i in IDS {
            writeln!(stdin, "I {}", enc(i)).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), PATTERNS.len());
    let mut compared = 0;
    for (pat, row) in PATTERNS.iter().zip(rows) {
        if row == "E" {
            assert!(
                fnmatch("x", pat).is_err(),
                "python raised for {pat:?}, we did not"
            );
            continue;
        }
        for (id, want) in IDS.iter().zip(row.chars()) {
            let got = fnmatch(id, pat).unwrap();
            assert_eq!(got, want == '1', "fnmatch({id:?}, {pat:?})");
            compared += 1;
        }
    }
    println!("compared {compared} (pattern, id) pairs with Python fnmatch");
    assert!(compared > 30 * 30);
}

#[test]
fn comma_lists_are_any_of() {
    let list = GlobList::new("web*,[ab],x?z").unwrap();
    for id in IDS {
        let want = ["web*", "[ab]", "x?z"]
            .iter()
            .any(|p| fnmatch(id, p).unwrap());
        assert_eq!(list.is_match(id), want, "{id:?}");
    }
}
