//! Our `subdict_match` (compiled once, [`Subdict`]) against Salt's own, on the same inputs:
//! `golden/subdict.json` is written by `scripts/gen-matcher-golden.py` running Salt 3007.17's
//! `salt.utils.data.subdict_match`.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::PathBuf;

use salt_compat::json::json_to_msgpack;
use salt_matcher::{Subdict, subdict_match};
use serde_json::Value as Js;

#[test]
fn subdict_match_matches_salt() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/subdict.json");
    let g: Js = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let expect: Vec<char> = g["expect"].as_str().unwrap().chars().collect();
    let mut i = 0;
    let mut mismatches = Vec::new();
    for data in g["data"].as_array().unwrap() {
        let data = json_to_msgpack(data);
        for expr in g["exprs"].as_array().unwrap() {
            let expr = expr.as_str().unwrap();
            for delim in g["delims"].as_array().unwrap() {
                let delim = delim.as_str().unwrap();
                for regex in [false, true] {
                    let want = expect[i] == '1';
                    i += 1;
                    let compiled = Subdict::new(expr, delim, regex);
                    // The compiled form is reusable: the second answer is the first's.
                    let got = compiled.matches(&data);
                    assert_eq!(got, compiled.matches(&data));
                    assert_eq!(got, subdict_match(&data, expr, delim, regex));
                    if got != want {
                        mismatches.push(format!(
                            "{expr:?} delim={delim:?} regex={regex}: salt {want}"
                        ));
                    }
                }
            }
        }
    }
    assert_eq!(i, expect.len());
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
