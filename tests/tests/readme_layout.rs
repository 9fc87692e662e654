//! README's "Layout" table stays true: every path it names exists, and every crate under
//! `crates/` has a row, so a newcomer who opens the crate the table names finds the code there.
//! Reads files only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use salt_integration_tests::workspace_root;

/// The first column of each row of the table under `## Layout`: the backticked path.
fn layout_paths(readme: &str) -> Vec<String> {
    let section = readme
        .split("\n## Layout\n")
        .nth(1)
        .expect("README has a `## Layout` section");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(path, _)| path.to_owned()))
        .collect()
}

#[test]
fn every_path_in_the_layout_table_exists_and_every_crate_is_in_it() {
    let root = workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let paths = layout_paths(&readme);
    assert!(paths.len() >= 10, "the table was not found: {paths:?}");

    let missing: Vec<&String> = paths
        .iter()
        .filter(|p| !root.join(p.trim_end_matches('/')).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "README's layout table names paths that do not exist: {missing:?}"
    );

    let mut crates: Vec<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| format!("crates/{}", e.file_name().to_string_lossy()))
        .collect();
    crates.sort();
    let unlisted: Vec<&String> = crates
        .iter()
        .filter(|c| !paths.iter().any(|p| p.trim_end_matches('/') == c.as_str()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "crates without a row in README's layout table: {unlisted:?}"
    );
}

#[test]
fn the_table_is_read_as_written() {
    let text = "intro\n## Layout\n\n| path | what |\n|---|---|\n| `crates/a` | x |\n\
                | `b/` | y \\| z |\n\nSee more.\n## Next\n| `not/this` | no |\n";
    assert_eq!(layout_paths(text), ["crates/a", "b/"]);
}
