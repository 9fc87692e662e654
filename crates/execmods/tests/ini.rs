//! `ini.set_option`, `get_ini` and `remove_option` on files in a temporary directory, with
//! the texts and changes Salt 3007.17's `salt/modules/ini_manage.py` gives for the same calls
//! (recorded from it; `tests/tests/states_ini.rs` compares with the live Salt).
#![allow(clippy::unwrap_used)]

use rmpv::Value;
use salt_execmods::ini_call as ini;

fn json(v: &Value) -> String {
    serde_json::to_string(&salt_compat::json::msgpack_to_json(v)).unwrap()
}

fn val(text: &str) -> Value {
    salt_compat::json::json_to_msgpack(&serde_json::from_str(text).unwrap())
}

const MAIN: &str = "# top comment\ntop_key=old\ndup = 1\n  indented continuation\n\n; \
    semicolon comment\n[general]\n#color = red\nname=demo\nname = demo2\nsize=small\n\n\n\
    [remove_me]\nx = 1\n[Journal]\n#Storage=auto\n#Compress=yes\nSystemMaxUse=50M\n";

#[test]
fn set_option_writes_what_salt_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("main.ini").display().to_string();
    std::fs::write(&path, MAIN).unwrap();
    let changes = ini::set_option(
        &path,
        &val(
            r#"{"top_key": "one", "new_top": "7", "general": {"color": "blue", "size": "one",
                "flag": "True"}, "Journal": {"Storage": "persistent", "SystemMaxUse": "50M"}}"#,
        ),
        "=",
        false,
        false,
    )
    .unwrap();
    assert_eq!(
        json(&changes),
        r#"{"top_key":{"before":"old","after":"one"},"new_top":{"before":null,"after":"7"},"general":{"color":{"before":null,"after":"blue"},"size":{"before":"small","after":"one"},"flag":{"before":null,"after":"True"}},"Journal":{"Storage":{"before":null,"after":"persistent"}}}"#
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "# top comment\ntop_key = one\ndup = 1\n  indented continuation\n\n; semicolon comment\n\
         new_top = 7\n\n[general]\ncolor = blue\nname = demo2\nsize = one\nflag = True\n\n\
         [remove_me]\nx = 1\n\n[Journal]\nStorage = persistent\n#Compress=yes\n\
         SystemMaxUse = 50M\n"
    );
    let removed = ini::remove_option(&path, Some("remove_me"), "x", "=", false).unwrap();
    assert_eq!(removed, Value::from("1"));
    let plain = ini::get_ini(&path, "=", false).unwrap();
    assert_eq!(
        json(&plain),
        r#"{"top_key":"one","dup":"1\n  indented continuation","new_top":"7","general":{"color":"blue","name":"demo2","size":"one","flag":"True"},"remove_me":{},"Journal":{"Storage":"persistent","SystemMaxUse":"50M"}}"#
    );
}

#[test]
fn separators_and_no_spaces() {
    let dir = tempfile::tempdir().unwrap();
    let colon = dir.path().join("colon.ini").display().to_string();
    std::fs::write(
        &colon,
        "[server]\nhost: localhost\nport : 80\n# note: here\n",
    )
    .unwrap();
    ini::set_option(
        &colon,
        &val(r#"{"server": {"host": "example.org", "port": "one", "list": "['a', 'b']"}}"#),
        ":",
        false,
        false,
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&colon).unwrap(),
        "[server]\nhost : example.org\nport : one\n# note: here\nlist : ['a', 'b']\n"
    );
    let bare = dir.path().join("bare.ini").display().to_string();
    std::fs::write(&bare, "[Time]\nNTP = x\n#FallbackNTP=\n").unwrap();
    ini::set_option(
        &bare,
        &val(r#"{"Time": {"NTP": "one", "FallbackNTP": "ntp.example"}}"#),
        "=",
        true,
        false,
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&bare).unwrap(),
        "[Time]\nNTP=one\nFallbackNTP=ntp.example\n"
    );
}

#[test]
fn a_missing_file_is_created_and_an_unwritable_one_is_salts_error() {
    let dir = tempfile::tempdir().unwrap();
    let new = dir.path().join("new.ini").display().to_string();
    ini::set_option(
        &new,
        &val(r#"{"first": {"a": "1"}, "second": {}}"#),
        "=",
        false,
        false,
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(&new).unwrap(),
        "[first]\na = 1\n\n[second]\n"
    );
    let gone = dir.path().join("no/such.ini").display().to_string();
    let err = ini::set_option(&gone, &Value::Nil, "=", false, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "Unable to write file '{gone}'. Exception: [Errno 2] No such file or directory: \
             '{gone}'"
        )
    );
}
