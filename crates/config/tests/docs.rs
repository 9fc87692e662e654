//! docs/configuration.md is generated from the option tables; this test keeps it current.
//! Regenerate with `UPDATE_DOCS=1 cargo test -p salt-config --test docs`.

#![allow(clippy::unwrap_used)]

use std::path::Path;

#[test]
fn configuration_md_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let expected = salt_config::render_markdown();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &expected).expect("write docs/configuration.md");
        println!("regenerated {}", path.display());
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != expected {
        let first_diff = committed
            .lines()
            .zip(expected.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(expected.lines().count()));
        panic!(
            "docs/configuration.md is stale (first difference at line {}).\n\
             Regenerate it with: UPDATE_DOCS=1 cargo test -p salt-config --test docs",
            first_diff + 1
        );
    }
}

#[test]
fn every_option_has_a_description_and_a_default() {
    for table in [
        salt_config::MasterConfig::option_table(),
        salt_config::MinionConfig::option_table(),
    ] {
        for row in table {
            assert!(!row.doc.is_empty(), "{} has no description", row.name);
            assert!(!row.default.is_empty(), "{} has no default", row.name);
        }
    }
}
