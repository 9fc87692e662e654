//! `ext_pillar: postgres` (issue 36): our queries against a real PostgreSQL (Debian's, initdb
//! in a temp dir), folded into pillar as Salt's `sql_base` does. The golden is Salt 3007.17's
//! own compiler running the same queries through its `sqlite3` external pillar (the same
//! `SqlBaseExtPillar` code; Salt's `postgres` one needs psycopg2, which the venv lacks) over
//! a SQLite copy of the same rows: positional and keyword queries, `depth`, `as_list`,
//! `with_lists`, `ignore_null`, `as_json`, and a failing query.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use salt_integration_tests::TempRoot;
use salt_integration_tests::interop_support::{serial, venv_for};
use salt_integration_tests::pg::Postgres;
use salt_integration_tests::pillar_support::ours_and_salts_with;

const TABLE: &str = "CREATE TABLE pillar (id integer, minion text, k1 text, k2 text, v text, \
                     n integer, j text);\n\
    INSERT INTO pillar VALUES (1, 'pym1', 'app', 'port', '80', 8080, '{\"x\": {\"a\": 1}}');\n\
    INSERT INTO pillar VALUES (2, 'pym1', 'app', 'name', 'web', NULL, '{\"x\": {\"b\": 2}}');\n\
    INSERT INTO pillar VALUES (3, 'pym1', 'db', 'host', 'h1', 1, NULL);\n\
    INSERT INTO pillar VALUES (4, 'pym1', 'db', 'host', 'h2', NULL, NULL);\n\
    INSERT INTO pillar VALUES (5, 'other', 'app', 'port', '99', 9, NULL);\n";

/// The `ext_pillar` items, `MODULE` and `MID` (the placeholder) to be filled per side.
const QUERIES: &str = r#"ext_pillar:
  - MODULE:
      - SELECT k1, v FROM pillar WHERE minion = MID ORDER BY id
      - ['SELECT k2, k1, v FROM pillar WHERE minion = MID ORDER BY id', 2]
  - MODULE:
      deep: {query: 'SELECT k1, k2, v FROM pillar WHERE minion = MID ORDER BY id', as_list: True}
      lists: {query: 'SELECT k1, k2, v FROM pillar WHERE minion = MID ORDER BY id', with_lists: '1'}
      wide: {query: 'SELECT k1, v, n FROM pillar WHERE minion = MID ORDER BY id', depth: 1, ignore_null: True}
      js: {query: 'SELECT j FROM pillar WHERE minion = MID AND j IS NOT NULL ORDER BY id', as_json: True}
      empty: {query: ''}
  - MODULE:
      - "SELECT k1, v FROM pillar WHERE minion = MID AND v = 'web'"
      - SELECT nosuchcolumn FROM pillar WHERE minion = MID
      - SELECT k1, n FROM pillar WHERE minion = MID
"#;

#[test]
fn postgres_queries_fold_as_salts_sql_base() {
    let Some(venv) = salt_integration_tests::require(venv_for("3007.17")) else {
        return;
    };
    let _guard = serial();
    let root = TempRoot::new().unwrap();
    let Some(pg) = Postgres::start(&root.path().join("pg")).unwrap() else {
        return;
    };
    pg.psql("postgres", TABLE).unwrap();
    let db = root.path().join("pillar.sqlite");
    let status = std::process::Command::new(venv.bin("python"))
        .args(["-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()"])
        .arg(&db)
        .arg(TABLE)
        .status()
        .unwrap();
    assert!(status.success());
    let tree = root.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("top.sls"), "base: {}\n").unwrap();
    let salt_conf = format!(
        "sqlite3: {{database: {}}}\n{}",
        db.display(),
        QUERIES.replace("MODULE", "sqlite3").replace("MID", "?")
    );
    let our_conf = format!(
        "postgres: {{host: {}, port: {}, user: postgres, db: postgres}}\n{}",
        pg.host().display(),
        pg.port(),
        QUERIES.replace("MODULE", "postgres").replace("MID", "%s")
    );
    let (ours, want) = ours_and_salts_with(
        &venv,
        &root.path().join("cmp"),
        &tree,
        &salt_conf,
        &our_conf,
    )
    .unwrap();
    assert_eq!(
        ours, want,
        "our postgres pillar differs from Salt's sql_base"
    );
    assert_eq!(
        want["deep"]["db"]["host"],
        serde_json::json!(["h1", "h2"]),
        "{want:#}"
    );
    assert_eq!(
        want["js"]["x"],
        serde_json::json!({"a": 1, "b": 2}),
        "{want:#}"
    );
    assert_eq!(want["app"], "web", "{want:#}");
}
