//! The Debian packages (`cargo deb`, see packaging/README.md): salt-rs-master, salt-rs-minion
//! and salt-rs-key have the control fields, files, conffiles and maintainer scripts the README
//! promises, their binaries run, their units are the ones in packaging/systemd and their
//! comments-only configs load.
//!
//! To keep CI cheap the packages are made from the `test`-profile binaries the other tests
//! build anyway (`cargo deb --no-build --profile test --fast`, in a temporary target dir that
//! links to them) instead of the release build packaging/build-debs.sh makes; the
//! `[package.metadata.deb]` tables, assets and scripts are the same. It needs cargo-deb and
//! dpkg-deb (.ci/run installs both).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::Signal;
use salt_integration_tests::config::current_user;
use salt_integration_tests::{
    Missing, ProcSpec, TempRoot, bins, both, command, free_port_pair, require, wait_for_log,
    workspace_root,
};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// One package: the crate `cargo deb -p` takes, the Debian name, the files it ships (path as
/// `dpkg-deb --contents` prints it, systemd units under `./lib/`, and mode).
struct Pkg {
    krate: &'static str,
    deb: &'static str,
    files: &'static [(&'static str, &'static str)],
}

const PKGS: [Pkg; 4] = [
    Pkg {
        krate: "salt-master",
        deb: "salt-rs-master",
        files: &[
            ("./etc/salt/master", "-rw-r--r--"),
            ("./lib/systemd/system/salt-master.service", "-rw-r--r--"),
            ("./usr/bin/salt", "-rwxr-xr-x"),
            ("./usr/bin/salt-master", "-rwxr-xr-x"),
            ("./usr/bin/salt-run", "-rwxr-xr-x"),
            (
                "./usr/share/doc/salt-rs-master/changelog.Debian.gz",
                "-rw-r--r--",
            ),
            ("./usr/share/doc/salt-rs-master/copyright", "-rw-r--r--"),
            ("./usr/share/man/man1/salt-master.1.gz", "-rw-r--r--"),
            ("./usr/share/man/man1/salt.1.gz", "-rw-r--r--"),
            ("./usr/share/man/man1/salt-run.1.gz", "-rw-r--r--"),
        ],
    },
    Pkg {
        krate: "salt-minion",
        deb: "salt-rs-minion",
        files: &[
            ("./etc/salt/minion", "-rw-r--r--"),
            ("./lib/systemd/system/salt-minion.service", "-rw-r--r--"),
            ("./usr/bin/salt-call", "-rwxr-xr-x"),
            ("./usr/bin/salt-minion", "-rwxr-xr-x"),
            (
                "./usr/share/doc/salt-rs-minion/changelog.Debian.gz",
                "-rw-r--r--",
            ),
            ("./usr/share/doc/salt-rs-minion/copyright", "-rw-r--r--"),
            ("./usr/share/man/man1/salt-call.1.gz", "-rw-r--r--"),
            ("./usr/share/man/man1/salt-minion.1.gz", "-rw-r--r--"),
        ],
    },
    Pkg {
        krate: "salt-key",
        deb: "salt-rs-key",
        files: &[
            ("./usr/bin/salt-key", "-rwxr-xr-x"),
            (
                "./usr/share/doc/salt-rs-key/changelog.Debian.gz",
                "-rw-r--r--",
            ),
            ("./usr/share/doc/salt-rs-key/copyright", "-rw-r--r--"),
            ("./usr/share/man/man1/salt-key.1.gz", "-rw-r--r--"),
        ],
    },
    Pkg {
        krate: "salt-api",
        deb: "salt-rs-api",
        files: &[
            ("./lib/systemd/system/salt-api.service", "-rw-r--r--"),
            ("./usr/bin/salt-api", "-rwxr-xr-x"),
            (
                "./usr/share/doc/salt-rs-api/changelog.Debian.gz",
                "-rw-r--r--",
            ),
            ("./usr/share/doc/salt-rs-api/copyright", "-rw-r--r--"),
            ("./usr/share/man/man1/salt-api.1.gz", "-rw-r--r--"),
        ],
    },
];

/// The cargo running the tests (`cargo deb` is a subcommand of it).
fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn succeeds(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The regular files of a package (path → mode), `usr/lib/systemd` written as `lib/systemd`
/// (cargo-deb 3 installs units under /usr/lib, older versions under /lib; both are found by
/// systemd and deb-systemd-helper).
fn files(deb: &Path) -> BTreeMap<String, String> {
    run(Command::new("dpkg-deb").arg("--contents").arg(deb))
        .lines()
        .filter(|l| l.starts_with('-'))
        .map(|l| {
            let mode = l.split_whitespace().next().unwrap().to_owned();
            let path = l.split_whitespace().last().unwrap();
            let path = path.replacen("./usr/lib/systemd/", "./lib/systemd/", 1);
            (path, mode)
        })
        .collect()
}

fn field(deb: &Path, name: &str) -> String {
    run(Command::new("dpkg-deb").arg("--field").arg(deb).arg(name))
        .trim()
        .to_owned()
}

/// A control-archive member (`conffiles`, `postinst`, ...), empty when absent.
fn control_file(deb: &Path, name: &str, scratch: &Path) -> String {
    let dir = scratch.join(format!(
        "control-{}",
        deb.file_stem().unwrap().to_string_lossy()
    ));
    if !dir.exists() {
        run(Command::new("dpkg-deb").arg("--control").arg(deb).arg(&dir));
    }
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

/// Builds the three packages from the `test`-profile binaries into `<root>/out`.
fn build_debs(root: &Path) -> BTreeMap<&'static str, PathBuf> {
    let b = bins().expect("our binaries");
    // cargo-deb maps the assets' `target/release/` to `<target dir>/<profile>/`; the `test`
    // profile's binaries are in `target/debug/`, so a scratch target dir links to them.
    let target = root.join("target");
    let profile_dir = target.join("test");
    std::fs::create_dir_all(&profile_dir).unwrap();
    let (salt_run, salt_call) = (
        b.salt.with_file_name("salt-run"),
        b.minion.with_file_name("salt-call"),
    );
    let salt_api = b.master.with_file_name("salt-api");
    for bin in [
        &b.master, &b.salt, &salt_run, &b.minion, &salt_call, &b.key, &salt_api,
    ] {
        let bin = std::fs::canonicalize(bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        std::os::unix::fs::symlink(&bin, profile_dir.join(bin.file_name().unwrap())).unwrap();
    }
    let out = root.join("out");
    let mut debs = BTreeMap::new();
    for pkg in &PKGS {
        let printed = run(Command::new(cargo())
            .current_dir(workspace_root())
            .env("CARGO_TARGET_DIR", &target)
            .args(["deb", "--no-build", "--profile", "test", "--fast", "-p"])
            .arg(pkg.krate)
            .arg("--output")
            .arg(&out));
        let deb = out.join(format!("{}_{VERSION}-1_amd64.deb", pkg.deb));
        let deb = if deb.is_file() {
            deb
        } else {
            // Another architecture: the path cargo-deb printed.
            PathBuf::from(printed.lines().last().unwrap_or_default().trim())
        };
        assert!(deb.is_file(), "{}: no package in {printed}", pkg.krate);
        debs.insert(pkg.deb, deb);
    }
    debs
}

#[test]
fn debian_packages() {
    let cargo_deb = if succeeds(cargo(), &["deb", "--version"]) {
        Ok(())
    } else {
        Err(Missing::new(
            "cargo-deb is not installed (cargo install cargo-deb --locked)",
        ))
    };
    let Some(_) = require(both(cargo_deb, command("dpkg-deb"))) else {
        return;
    };
    let root = TempRoot::new().unwrap();
    let debs = build_debs(root.path());

    // The changelog's newest entry is this version (lintian's no-changelog is fixed with it;
    // bump both together).
    let changelog =
        std::fs::read_to_string(workspace_root().join("packaging/debian/changelog")).unwrap();
    assert!(
        changelog.starts_with(&format!("salt-rs ({VERSION}-1) ")),
        "packaging/debian/changelog does not start with version {VERSION}-1:\n{changelog}"
    );

    for pkg in &PKGS {
        let deb = &debs[pkg.deb];
        let name = pkg.deb;
        assert_eq!(field(deb, "Package"), name);
        assert_eq!(field(deb, "Version"), format!("{VERSION}-1"), "{name}");
        assert_eq!(field(deb, "Section"), "admin", "{name}");
        assert!(
            field(deb, "Maintainer").starts_with("salt-rs maintainers <"),
            "{name}"
        );
        // `$auto`: from the shared libraries the binaries link (OpenSSL for the crypto).
        let depends = field(deb, "Depends");
        for lib in ["libc6", "libssl"] {
            assert!(depends.contains(lib), "{name}: Depends: {depends}");
        }
        // Salt's own packages ship the same paths: never both installed.
        let salt_pkg = if name == "salt-rs-minion" {
            "salt-minion"
        } else if name == "salt-rs-api" {
            "salt-api"
        } else {
            "salt-master"
        };
        assert_eq!(field(deb, "Conflicts"), salt_pkg, "{name}");
        assert_eq!(field(deb, "Replaces"), salt_pkg, "{name}");
        assert_eq!(
            field(deb, "Provides"),
            "",
            "{name}: no Provides (see README)"
        );
        let description = field(deb, "Description");
        assert!(
            description.lines().count() > 2
                && description.contains("salt-rs reimplements")
                && !description.contains("generated from Rust crate"),
            "{name}: an extended description:\n{description}"
        );

        let want: BTreeMap<String, String> = pkg
            .files
            .iter()
            .map(|(p, m)| ((*p).to_owned(), (*m).to_owned()))
            .collect();
        assert_eq!(files(deb), want, "{name}: dpkg-deb --contents");

        let conffiles = control_file(deb, "conffiles", root.path());
        let postinst = control_file(deb, "postinst", root.path());
        let prerm = control_file(deb, "prerm", root.path());
        match name {
            "salt-rs-key" => {
                assert_eq!(conffiles, "", "{name}: no conffiles");
                assert_eq!(postinst, "", "{name}: no maintainer scripts");
            }
            "salt-rs-api" => {
                // The master's config is salt-rs-master's conffile.
                assert_eq!(conffiles, "", "{name}: no conffiles");
                assert!(
                    postinst.contains("deb-systemd-helper enable salt-api.service"),
                    "{name}: postinst\n{postinst}"
                );
                assert!(
                    prerm.contains("deb-systemd-invoke stop salt-api.service"),
                    "{name}: prerm\n{prerm}"
                );
            }
            _ => {
                let role = name.trim_start_matches("salt-rs-");
                let unit = format!("salt-{role}.service");
                assert_eq!(conffiles.trim(), format!("/etc/salt/{role}"), "{name}");
                assert!(postinst.starts_with("#!/bin/sh\n"), "{name}");
                assert!(postinst.contains("\nset -e\n"), "{name}");
                // Enabled and started on installation, restarted after an upgrade, as
                // Salt's own packages (dh_installsystemd defaults).
                for needle in [
                    format!("deb-systemd-helper enable {unit}"),
                    format!("deb-systemd-invoke $_dh_action {unit}"),
                    format!("mkdir -p -m 0700 /etc/salt/pki/{role}"),
                ] {
                    assert!(
                        postinst.contains(&needle),
                        "{name}: {needle} in\n{postinst}"
                    );
                }
                assert!(
                    prerm.contains(&format!("deb-systemd-invoke stop {unit}")),
                    "{name}: prerm\n{prerm}"
                );
                if role == "master" {
                    // The unit's ProtectSystem=strict needs its ReadWritePaths= to exist.
                    for dir in ["/var/cache/salt/master", "/var/log/salt"] {
                        assert!(postinst.contains(dir), "{name}: {dir} in\n{postinst}");
                    }
                }
            }
        }
    }

    // Unpacked together, as dpkg -i of the three would lay them out.
    let fs_root = root.path().join("fs");
    for deb in debs.values() {
        run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(&fs_root));
    }
    for (bin, version) in [
        ("salt-master", format!("salt-master {VERSION} (salt-rs;")),
        ("salt-minion", format!("salt-minion {VERSION} (salt-rs;")),
        ("salt-call", format!("salt-call {VERSION} (salt-rs;")),
        ("salt-key", format!("salt-key {VERSION} (salt-rs;")),
        ("salt", format!("salt {VERSION} (salt-rs;")),
        ("salt-api", format!("salt-api {VERSION} (salt-rs;")),
    ] {
        let out = run(Command::new(fs_root.join("usr/bin").join(bin)).arg("--version"));
        assert!(out.starts_with(&version), "{bin} --version: {out}");
    }
    let unit_dir = ["usr/lib/systemd/system", "lib/systemd/system"]
        .iter()
        .map(|d| fs_root.join(d))
        .find(|d| d.is_dir())
        .expect("a systemd unit directory");
    for unit in [
        "salt-master.service",
        "salt-minion.service",
        "salt-api.service",
    ] {
        // Byte for byte the units tests/tests/systemd.rs checks with systemd-analyze verify.
        assert_eq!(
            std::fs::read_to_string(unit_dir.join(unit)).unwrap(),
            std::fs::read_to_string(workspace_root().join("packaging/systemd").join(unit)).unwrap(),
            "{unit}"
        );
    }

    check_configs(&fs_root, root.path());
}

/// The packaged /etc/salt/master and /etc/salt/minion: comments only (the defaults apply), and
/// both daemons' tools load them, plus a drop-in that moves everything under a scratch root.
fn check_configs(fs_root: &Path, scratch: &Path) {
    let etc = fs_root.join("etc/salt");
    for role in ["master", "minion"] {
        let text = std::fs::read_to_string(etc.join(role)).unwrap();
        assert!(
            text.lines()
                .all(|l| l.trim().is_empty() || l.starts_with('#')),
            "/etc/salt/{role} sets nothing:\n{text}"
        );
    }
    let state = scratch.join("state");
    let user = current_user();
    let (publish, ret) = free_port_pair().unwrap();
    std::fs::create_dir_all(etc.join("master.d")).unwrap();
    std::fs::write(
        etc.join("master.d/test.conf"),
        format!("root_dir: {}\nuser: {user}\n", state.display()),
    )
    .unwrap();
    std::fs::create_dir_all(etc.join("minion.d")).unwrap();
    std::fs::write(
        etc.join("minion.d/test.conf"),
        format!(
            "root_dir: {}\nuser: {user}\nid: deb-minion\nmaster: 127.0.0.1\n\
             master_port: {ret}\npublish_port: {publish}\n",
            state.display()
        ),
    )
    .unwrap();

    // salt-key reads the master config (pki_dir under the drop-in's root_dir).
    let listed = run(Command::new(fs_root.join("usr/bin/salt-key"))
        .arg("-c")
        .arg(&etc)
        .arg("-L"));
    assert!(listed.contains("Accepted Keys:"), "{listed}");

    // The minion starts with it (no master listens: it keeps trying, which is fine here).
    let mut minion = ProcSpec::new("minion", fs_root.join("usr/bin/salt-minion"), scratch)
        .args([
            "-c".as_ref(),
            etc.as_os_str(),
            "-l".as_ref(),
            "info".as_ref(),
        ])
        .spawn()
        .unwrap();
    wait_for_log(
        &minion,
        "Setting up the Salt Minion \"deb-minion\"",
        Duration::from_secs(30),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", minion.tail(20)));
    minion.signal(Signal::SIGTERM);
    minion
        .wait_exit(Duration::from_secs(30))
        .expect("the minion exits on SIGTERM");
}
