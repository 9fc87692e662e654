//! `state.show_top` with the master's `_master_tops` answer merged into the top file's
//! matches as Salt's `BaseHighState.top_matches` does: after the top file's, or before them
//! with the minion option `master_tops_first` (the top file's then follow, those already
//! named left out). The merge with a real master and a Python minion is compared by
//! `tests/tests/interop_master_tops.rs`.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use rmpv::Value;
use salt_states::{FileClient, Opts};

/// A top file for `base` and a master that answers `_master_tops` with `db, web` in `base`
/// and `x` in `prod`.
struct Tops;

impl FileClient for Tops {
    fn get_file(&self, path: &str, saltenv: &str) -> Result<Option<Vec<u8>>, String> {
        Ok((saltenv == "base" && path == "top.sls")
            .then(|| b"base:\n  '*':\n    - common\n    - web\n".to_vec()))
    }
    fn envs(&self) -> Vec<String> {
        vec!["base".into()]
    }
    fn master_tops(&self) -> Result<Vec<(String, Vec<String>)>, String> {
        Ok(vec![
            ("base".into(), vec!["db".into(), "web".into()]),
            ("prod".into(), vec!["x".into()]),
        ])
    }
}

fn show_top(minion_opts: Vec<(Value, Value)>) -> Vec<(String, Vec<String>)> {
    let opts = Opts {
        id: "m1".into(),
        opts: Value::Map(minion_opts),
        ..Opts::default()
    };
    let Value::Map(top) = salt_states::show_top(Arc::new(Tops), &opts).unwrap() else {
        panic!("show_top is not a map");
    };
    top.into_iter()
        .map(|(env, sls)| {
            let sls = match sls {
                Value::Array(a) => a
                    .into_iter()
                    .map(|s| s.as_str().unwrap().to_owned())
                    .collect(),
                other => panic!("{other}"),
            };
            (env.as_str().unwrap().to_owned(), sls)
        })
        .collect()
}

fn owned(v: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    v.iter()
        .map(|(e, s)| ((*e).to_owned(), s.iter().map(|x| (*x).to_owned()).collect()))
        .collect()
}

#[test]
fn master_tops_follow_the_top_file() {
    assert_eq!(
        show_top(Vec::new()),
        owned(&[("base", &["common", "web", "db"]), ("prod", &["x"])])
    );
    assert_eq!(
        show_top(vec![("master_tops_first".into(), Value::Boolean(false))]),
        owned(&[("base", &["common", "web", "db"]), ("prod", &["x"])])
    );
}

#[test]
fn master_tops_first_puts_them_before_the_top_file() {
    assert_eq!(
        show_top(vec![("master_tops_first".into(), Value::Boolean(true))]),
        owned(&[("base", &["db", "web", "common"]), ("prod", &["x"])])
    );
}
