//! packaging/man/salt-key.1 is generated from the clap definition (UPDATE_MAN=1 rewrites it).

#[test]
fn man_page_is_current() {
    use clap::CommandFactory as _;
    salt_daemon::man::check(
        salt_key::cli::Args::command().version(env!("CARGO_PKG_VERSION")),
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/man/salt-key.1"),
    );
}
