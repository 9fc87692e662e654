//! Interop: `salt --return postgres` (issue 36). Our master and Salt 3007.17's each publish
//! a job with a returner to a real Python 3007.17 minion whose config names a throwaway
//! PostgreSQL (Debian's, started by the harness) through `returner.postgres.*`: the minion
//! runs Salt's `postgres` returner itself, so `salt_returns` of each side's database holds
//! the minion's return. The rows (`fun`, `return`, `id`, `success`, and `full_ret` but for
//! the jid and the minion id) must be identical, one per job; a job without `--return`
//! writes none (neither master has `master_job_cache: postgres` here). The `salt` output
//! of the job is compared too.
//!
//! Under `CI=true` a missing venv, psycopg2 in it, or PostgreSQL fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use salt_integration_tests::interop_pair::{Pair, PairSide, normalize};
use salt_integration_tests::interop_support::{Side, assert_no_leftovers, serial, venv_for};
use salt_integration_tests::pg::Postgres;
use salt_integration_tests::{Missing, TempRoot, bins, require, wait_until};
use serde_json::{Value, json};

const VERSION: &str = "3007.17";

/// The minions' ids, ours first; each writes to the database of its name.
const IDS: [&str; 2] = ["ret_ours", "ret_salt"];

/// `salt --return postgres <id> test.echo <word>` on `side`, as JSON.
fn with_return(side: &PairSide, word: &str) -> Value {
    let (v, out) = side
        .cli
        .salt_json(&["--return", "postgres", side.id, "test.echo", word], 60)
        .unwrap_or_else(|e| panic!("{}: salt --return: {e}", side.cli.side.label()));
    assert_eq!(v[side.id], json!(word), "{}\n{}", out.stdout, out.stderr);
    v
}

/// The returns the minion wrote to its database: `(fun|return|id|success, full_ret)` rows.
fn returns(pg: &Postgres, db: &str, id: &str) -> Vec<(String, Value)> {
    let text = pg
        .psql(
            db,
            "SELECT fun || '|' || return || '|' || id || '|' || success, full_ret \
             FROM salt_returns ORDER BY alter_time",
        )
        .unwrap();
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            // `a|b|c|d|{json}`: the first four fields, then the JSON.
            let mut parts = l.splitn(5, '|');
            let head: Vec<&str> = parts.by_ref().take(4).collect();
            let full: Value = serde_json::from_str(parts.next().unwrap_or("null")).unwrap();
            let mut full = normalize(&full, id, &["jid", "_stamp"]);
            if let Some(m) = full.as_object_mut() {
                m.remove("jid");
            }
            (head.join("|").replace(id, "ID"), full)
        })
        .collect()
}

#[test]
fn salt_return_postgres_from_python_minions_3007() {
    let Some(venv) = require(venv_for(VERSION)) else {
        return;
    };
    let has_psycopg2 = std::process::Command::new(venv.bin("python"))
        .args(["-c", "import psycopg2"])
        .status()
        .is_ok_and(|s| s.success());
    let psycopg2 = if has_psycopg2 {
        Ok(())
    } else {
        Err(Missing::new(
            "interop_return: psycopg2 in the Salt 3007.17 venv (scripts/salt-venv.sh)",
        ))
    };
    if require(psycopg2).is_none() {
        return;
    }
    let _guard = serial();
    let root = TempRoot::new().unwrap();
    let Some(pg) = Postgres::start(&root.dir("pg").unwrap()).unwrap() else {
        return;
    };
    for db in IDS {
        pg.psql("postgres", &format!("CREATE DATABASE {db}"))
            .unwrap();
        pg.psql(db, salt_pgstore::RETURNER_DDL).unwrap();
    }
    let ours = Side::Ours(bins().unwrap());
    let py = Side::Salt(venv);
    let (host, port) = (pg.host().display().to_string(), pg.port());
    let pair = Pair::start_with_minions(
        root.path(),
        &ours,
        &py,
        &py,
        IDS,
        |_, c| c,
        |id, c| {
            c.set("returner.postgres.host", host.as_str())
                .set("returner.postgres.port", i64::from(port))
                .set("returner.postgres.user", "postgres")
                .set("returner.postgres.passwd", "")
                .set("returner.postgres.db", id)
        },
    );

    // A job without a returner writes nothing.
    pair.both(&["test.echo", "plain"], 60, &[]);
    for (side, db) in [(&pair.ours, IDS[0]), (&pair.salt, IDS[1])] {
        assert!(returns(&pg, db, side.id).is_empty(), "{db}");
    }

    // With `--return postgres`: the minion's own returner writes its return.
    let a = normalize(&with_return(&pair.ours, "hello"), pair.ours.id, &[]);
    let b = normalize(&with_return(&pair.salt, "hello"), pair.salt.id, &[]);
    assert_eq!(a, b, "salt --return output: ours (left), Salt's (right)");
    let rows = |side: &PairSide, db: &str| {
        let mut last = Vec::new();
        let _ = wait_until(
            "the minion's return stored",
            Duration::from_secs(30),
            || {
                last = returns(&pg, db, side.id);
                !last.is_empty()
            },
        );
        last
    };
    let (got, want) = (rows(&pair.ours, IDS[0]), rows(&pair.salt, IDS[1]));
    assert_eq!(
        got, want,
        "salt_returns written by the minion: ours (left), Salt's master (right)"
    );
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "test.echo|\"hello\"|ID|true", "{got:?}");
    drop(pair);
    drop(pg);
    assert_no_leftovers(root.path());
}
