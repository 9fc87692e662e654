//! Salt's sources-line parser and writer (`aptpkg.SourceEntry` without python3-apt): lines
//! as Salt 3007.17 writes them back (figures taken from its runs in `states_pkgrepo`).
#![allow(clippy::unwrap_used)]

use salt_execmods::apt_sources::{SourceEntry, SourcesList};

fn line(l: &str) -> String {
    SourceEntry::new(l, None).unwrap().repo_line()
}

#[test]
fn lines_written_back_as_salts() {
    // A disabled line gets "# ", a comment after "#" keeps its text.
    assert_eq!(
        line("#deb [arch=amd64] file:/srv/x/old bookworm main # old repo\n"),
        "# deb [arch=amd64] file:/srv/x/old bookworm main # old repo\n"
    );
    // No comps: the empty join still leaves its separator.
    assert_eq!(
        line("deb [trusted=yes] file:/r/one ./\n"),
        "deb [trusted=yes] file:/r/one ./ \n"
    );
    let e = SourceEntry::new("deb [signed-by=/k.gpg] file:/t trixie main", None).unwrap();
    assert_eq!(e.signedby, "/k.gpg");
    assert_eq!(
        (e.kind.as_str(), e.uri.as_str(), e.dist.as_str()),
        ("deb", "file:/t", "trixie")
    );
    assert_eq!(e.comps, ["main"]);
    // Invalid lines are kept as they are.
    assert!(
        SourceEntry::new("# salt-rs test sources\n", None)
            .unwrap()
            .invalid
    );
    assert_eq!(line("# just a comment\n"), "# just a comment\n");
}

#[test]
fn add_puts_arch_before_signed_by() {
    let e = SourcesList::add(
        "deb",
        "file:/t",
        "trixie",
        &["main".into()],
        &["amd64".into(), "arm64".into()],
        "/k.gpg",
    )
    .unwrap();
    assert_eq!(
        e.repo_line(),
        "deb [arch=amd64,arm64 signed-by=/k.gpg] file:/t trixie main\n"
    );
    // An entry whose line had signed-by first keeps that order when arch is added.
    let mut e = SourceEntry::new("deb [signed-by=/k.gpg] file:/t trixie main", None).unwrap();
    e.architectures = vec!["amd64".into(), "arm64".into()];
    e.disabled = true;
    assert_eq!(
        e.repo_line(),
        "# deb [signed-by=/k.gpg arch=amd64,arm64] file:/t trixie main\n"
    );
}
