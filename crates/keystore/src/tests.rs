//! Unit tests: transitions, permissions, crash simulation (needs the in-crate crash hook).

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::fsutil::CRASH_AT;
use crate::*;

pub(crate) const PEM: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAsdn2nZbnVJsOKkkYceyh
8Df1wXt9u6WxwhJxG6/OsYXVbt+i6knzFQa6UE7Mpd5WasYOhQ0B8WG2MGHLSuJC
4N8Pjyni6wKnpJb1wMjI8NwP/2LjzO/UtEKwfubtREXjoq5X/4400BpyESUZg8ya
P7e6tetkrZSKlS/z5J0lIfxIbPchPYNG2+rSVA0b7XQF3qQEYUXayvRbuFRBKEIP
pdmJpJwtHCZorOTy+z8BfcOmWRjCNNVDhI1yZmNUx9srD8Ed9fowbCn1vQsmzuLr
z+jN/wVDmk+hRMs6RXMcgbcG9y4ZO+71tMxptGENlZlR9MxLqPmeOzX1uBAsPYpY
mwIDAQAB
-----END PUBLIC KEY-----";

/// The same key with one body byte changed (still well-formed PEM).
fn other_pem() -> String {
    PEM.replace("mwIDAQAB", "nwIDAQAB")
}

fn setup() -> (tempfile::TempDir, KeyStore) {
    let d = tempfile::tempdir().unwrap();
    let ks = KeyStore::open(d.path().join("pki")).unwrap();
    (d, ks)
}

/// States holding `id`, read straight from the directories (not through the store).
fn on_disk(pki: &Path, id: &str) -> Vec<KeyState> {
    KeyState::ALL
        .into_iter()
        .filter(|s| pki.join(s.dir_name()).join(id).exists())
        .collect()
}

fn exclusive_count(pki: &Path, id: &str) -> usize {
    on_disk(pki, id)
        .into_iter()
        .filter(|s| *s != KeyState::Denied)
        .count()
}

/// Every file in every key dir, dotfiles included.
fn all_files(pki: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for s in KeyState::ALL
        .iter()
        .map(|s| s.dir_name())
        .chain([AUTOSIGN_DIR])
    {
        for e in fs::read_dir(pki.join(s)).unwrap() {
            v.push(format!("{s}/{}", e.unwrap().file_name().to_string_lossy()));
        }
    }
    v.sort();
    v
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

// === open ===

#[test]
fn open_creates_layout_with_salt_modes() {
    let (_d, ks) = setup();
    assert_eq!(mode(ks.pki_dir()), 0o700);
    for s in KeyState::ALL {
        assert!(ks.state_dir(s).is_dir());
    }
    assert!(ks.pki_dir().join(AUTOSIGN_DIR).is_dir());
    assert!(ks.list(KeyState::Pending).is_empty());
}

#[test]
fn open_fixes_or_refuses_bad_pki_mode() {
    let d = tempfile::tempdir().unwrap();
    let pki = d.path().join("pki");
    fs::create_dir(&pki).unwrap();
    fs::set_permissions(&pki, fs::Permissions::from_mode(0o750)).unwrap();
    KeyStore::open(&pki).unwrap();
    assert_eq!(mode(&pki), 0o750, "0750 is tolerated");

    fs::set_permissions(&pki, fs::Permissions::from_mode(0o777)).unwrap();
    let err = OpenOptions::new()
        .fix_permissions(false)
        .open(&pki)
        .unwrap_err();
    assert!(matches!(
        err,
        KeyStoreError::InsecurePkiDir { mode: 0o777, .. }
    ));
    assert!(
        err.to_string().contains(&pki.display().to_string()),
        "{err}"
    );
    // Not tried: the message does not claim a failed chmod.
    assert!(err.to_string().contains("left as is"), "{err}");
    assert!(!err.to_string().contains("Unable"), "{err}");

    KeyStore::open(&pki).unwrap();
    assert_eq!(mode(&pki), 0o700, "fixed like Salt");
}

#[test]
fn open_refuses_files_in_place_of_dirs() {
    let d = tempfile::tempdir().unwrap();
    let pki = d.path().join("pki");
    fs::write(&pki, "x").unwrap();
    assert!(matches!(
        KeyStore::open(&pki).unwrap_err(),
        KeyStoreError::NotADirectory { .. }
    ));
    fs::remove_file(&pki).unwrap();
    fs::create_dir(&pki).unwrap();
    fs::write(pki.join("minions_pre"), "x").unwrap();
    let err = KeyStore::open(&pki).unwrap_err();
    assert!(err.to_string().contains("minions_pre"), "{err}");
}

// === transitions ===

#[test]
fn pending_accept_reject_delete() {
    let (_d, ks) = setup();
    let pki = ks.pki_dir().to_owned();
    ks.put_pending("m1", PEM).unwrap();
    assert_eq!(ks.state("m1").unwrap(), Some(KeyState::Pending));
    assert_eq!(ks.list(KeyState::Pending), ["m1"]);
    assert_eq!(ks.read_key(KeyState::Pending, "m1").unwrap().unwrap(), PEM);
    let f = ks.key_path(KeyState::Pending, "m1").unwrap();
    assert_eq!(mode(&f), KEY_FILE_MODE);

    assert_eq!(
        ks.accept("m1", AcceptFrom::default()).unwrap(),
        [KeyState::Pending]
    );
    assert_eq!(on_disk(&pki, "m1"), [KeyState::Accepted]);
    assert_eq!(ks.list(KeyState::Accepted), ["m1"]);
    assert!(ks.list(KeyState::Pending).is_empty());
    // Accepting again: nothing to do.
    assert!(ks.accept("m1", AcceptFrom::default()).unwrap().is_empty());

    // Reject moves only pending keys unless include_accepted.
    assert!(ks.reject("m1", RejectFrom::default()).unwrap().is_empty());
    let from = RejectFrom {
        include_accepted: true,
        ..Default::default()
    };
    assert_eq!(ks.reject("m1", from).unwrap(), [KeyState::Accepted]);
    assert_eq!(on_disk(&pki, "m1"), [KeyState::Rejected]);
    assert_eq!(ks.state("m1").unwrap(), Some(KeyState::Rejected));

    // Accept from rejected only with include_rejected.
    assert!(ks.accept("m1", AcceptFrom::default()).unwrap().is_empty());
    let from = AcceptFrom {
        include_rejected: true,
        ..Default::default()
    };
    assert_eq!(ks.accept("m1", from).unwrap(), [KeyState::Rejected]);
    assert_eq!(on_disk(&pki, "m1"), [KeyState::Accepted]);

    // Denied coexists with accepted; delete removes everything.
    ks.put_denied("m1", &other_pem()).unwrap();
    assert_eq!(
        ks.states_of("m1").unwrap(),
        [KeyState::Accepted, KeyState::Denied]
    );
    assert_eq!(ks.state("m1").unwrap(), Some(KeyState::Accepted));
    assert_eq!(
        ks.delete("m1").unwrap(),
        [KeyState::Accepted, KeyState::Denied]
    );
    assert!(on_disk(&pki, "m1").is_empty());
    assert_eq!(ks.state("m1").unwrap(), None);
    assert!(ks.list_all().values().all(Vec::is_empty));
    assert!(ks.delete("m1").unwrap().is_empty());
}

#[test]
fn accept_include_denied_replaces_accepted_key() {
    let (_d, ks) = setup();
    ks.put_accepted("m", PEM).unwrap();
    ks.put_denied("m", &other_pem()).unwrap();
    let from = AcceptFrom {
        include_denied: true,
        ..Default::default()
    };
    assert_eq!(ks.accept("m", from).unwrap(), [KeyState::Denied]);
    assert_eq!(ks.states_of("m").unwrap(), [KeyState::Accepted]);
    assert_eq!(
        ks.read_key(KeyState::Accepted, "m").unwrap().unwrap(),
        other_pem()
    );
}

#[test]
fn put_semantics() {
    let (_d, ks) = setup();
    let pki = ks.pki_dir().to_owned();
    // put_accepted of a pending id moves it (one state), with the new text.
    ks.put_pending("a", PEM).unwrap();
    ks.put_accepted("a", &other_pem()).unwrap();
    assert_eq!(on_disk(&pki, "a"), [KeyState::Accepted]);
    assert_eq!(
        ks.read_key(KeyState::Accepted, "a").unwrap().unwrap(),
        other_pem()
    );
    assert_eq!(ks.list(KeyState::Accepted), ["a"]);
    assert!(ks.list(KeyState::Pending).is_empty());
    // put_pending never demotes.
    let err = ks.put_pending("a", PEM).unwrap_err();
    assert!(matches!(
        err,
        KeyStoreError::Conflict {
            state: KeyState::Accepted,
            ..
        }
    ));
    assert_eq!(on_disk(&pki, "a"), [KeyState::Accepted]);
    // put_rejected moves an accepted key.
    ks.put_rejected("a", PEM).unwrap();
    assert_eq!(on_disk(&pki, "a"), [KeyState::Rejected]);
    // Replacing in place.
    ks.put_rejected("a", &other_pem()).unwrap();
    assert_eq!(
        ks.read_key(KeyState::Rejected, "a").unwrap().unwrap(),
        other_pem()
    );
    // Duplicates made by someone else are collapsed by a put.
    fs::write(pki.join("minions_pre/a"), PEM).unwrap();
    ks.put_accepted("a", PEM).unwrap();
    assert_eq!(on_disk(&pki, "a"), [KeyState::Accepted]);
    // No temp files left behind.
    assert!(all_files(&pki).iter().all(|f| !f.contains(".keystore-tmp")));
}

#[test]
fn key_matches_uses_clean_key() {
    let (_d, ks) = setup();
    ks.put_accepted("m", &format!("{PEM}\n")).unwrap();
    assert_eq!(
        ks.key_matches(KeyState::Accepted, "m", &PEM.replace('\n', "\r\n"))
            .unwrap(),
        Some(true)
    );
    assert_eq!(
        ks.key_matches(KeyState::Accepted, "m", &other_pem())
            .unwrap(),
        Some(false)
    );
    assert_eq!(ks.key_matches(KeyState::Pending, "m", PEM).unwrap(), None);
}

#[test]
fn invalid_key_is_refused_and_nothing_changes() {
    let (_d, ks) = setup();
    let pki = ks.pki_dir().to_owned();
    let before = all_files(&pki);
    let err = ks.put_pending("m", "not a key").unwrap_err();
    assert!(matches!(err, KeyStoreError::InvalidKey { .. }));
    assert!(err.to_string().contains("minions_pre/m"), "{err}");
    assert_eq!(all_files(&pki), before);

    // A junk file in minions_pre (written by something else) is not accepted.
    fs::write(pki.join("minions_pre/junk"), "garbage").unwrap();
    ks.refresh().unwrap();
    let err = ks.accept("junk", AcceptFrom::default()).unwrap_err();
    assert!(err.to_string().contains("minions_pre/junk"), "{err}");
    assert_eq!(on_disk(&pki, "junk"), [KeyState::Pending]);
    // ... but -A (accept_all) does not validate, as in Salt.
    let r = ks.accept_all().unwrap();
    assert_eq!(r.ids(), ["junk"]);

    // Non-UTF-8 content: error naming the file.
    fs::write(pki.join("minions_pre/bin"), [0xff, 0xfe]).unwrap();
    let err = ks.read_key(KeyState::Pending, "bin").unwrap_err();
    assert!(err.to_string().contains("minions_pre/bin"), "{err}");
}

/// The one id rule is Salt's `valid_id`: a `.` id is valid (a dotfile that no listing
/// shows, as in Salt), and an id too long for a file name fails with the file system's error.
#[test]
fn dot_and_long_ids_follow_salt() {
    let (_d, ks) = setup();
    ks.put_pending(".dot", PEM).unwrap();
    assert!(ks.pki_dir().join("minions_pre/.dot").is_file());
    assert_eq!(ks.state(".dot").unwrap(), Some(KeyState::Pending));
    // A fresh open (salt-key) lists no dotfile, as Salt's `list_keys`.
    let again = KeyStore::open(ks.pki_dir()).unwrap();
    assert!(!again.list(KeyState::Pending).contains(&".dot".to_owned()));
    // The store that wrote it agrees (it used to list it until reopened), also after an
    // accept moved it.
    assert!(!ks.list(KeyState::Pending).contains(&".dot".to_owned()));
    ks.accept(".dot", AcceptFrom::default()).unwrap();
    assert_eq!(ks.state(".dot").unwrap(), Some(KeyState::Accepted));
    assert!(ks.list_all().values().flatten().all(|id| id != ".dot"));
    let long = "x".repeat(256);
    let r = ks.put_pending(&long, PEM);
    assert!(matches!(r, Err(KeyStoreError::Io { .. })), "{r:?}");
}

#[test]
fn bad_ids_are_refused_and_nothing_written() {
    let (_d, ks) = setup();
    let pki = ks.pki_dir().to_owned();
    let before = all_files(&pki);
    for id in ["", ".", "..", "../escape", "a/b", "a\\b", "n\0l"] {
        let bad = |r: Result<()>| {
            assert!(
                matches!(r, Err(KeyStoreError::InvalidId { .. })),
                "{id:?}: {r:?}"
            )
        };
        bad(ks.put_pending(id, PEM));
        bad(ks.put_accepted(id, PEM));
        bad(ks.put_rejected(id, PEM));
        bad(ks.put_denied(id, PEM));
        bad(ks.put_autosign_stub(id));
        bad(ks.accept(id, AcceptFrom::default()).map(drop));
        bad(ks.reject(id, RejectFrom::default()).map(drop));
        bad(ks.delete(id).map(drop));
        bad(ks.state(id).map(drop));
        bad(ks.read_key(KeyState::Pending, id).map(drop));
        bad(ks.consume_autosign_stub(id, Duration::ZERO).map(drop));
        // One bad id fails the whole bulk call before anything moves.
        ks.put_pending("good", PEM).unwrap();
        bad(ks
            .accept_many(&["good", id], AcceptFrom::default())
            .map(drop));
        assert_eq!(on_disk(&pki, "good"), [KeyState::Pending]);
        ks.delete("good").unwrap();
    }
    assert_eq!(all_files(&pki), before);
    assert!(!pki.parent().unwrap().join("escape").exists());
}

#[test]
fn listing_and_globbing() {
    let (_d, ks) = setup();
    for id in ["web2", "Web1", "db1", "web10", "apple", "Apple"] {
        ks.put_pending(id, PEM).unwrap();
    }
    ks.put_accepted("web3", PEM).unwrap();
    // Dotfiles and Salt's .key_cache are ignored.
    fs::write(ks.state_dir(KeyState::Accepted).join(".key_cache"), "x").unwrap();
    ks.refresh().unwrap();
    // Salt's sorted_ignorecase.
    assert_eq!(
        ks.list(KeyState::Pending),
        ["Apple", "apple", "db1", "Web1", "web10", "web2"]
    );
    assert_eq!(ks.list(KeyState::Accepted), ["web3"]);
    let m = ks.matching("web*,db?", &KeyState::ALL).unwrap();
    assert_eq!(m[&KeyState::Pending], ["db1", "web10", "web2"]);
    assert_eq!(m[&KeyState::Accepted], ["web3"]);
    assert!(!m.contains_key(&KeyState::Rejected));
    let m = ks.matching("web[0-9]", &[KeyState::Pending]).unwrap();
    assert_eq!(m[&KeyState::Pending], ["web2"]);

    let r = ks.accept_matching("web*", AcceptFrom::default()).unwrap();
    assert_eq!(r.ids(), ["web10", "web2"]);
    assert!(r.touched(KeyState::Pending));
    assert!(!r.touched(KeyState::Accepted));
    assert_eq!(ks.list(KeyState::Accepted), ["web10", "web2", "web3"]);

    let r = ks.delete_matching("*pple").unwrap();
    assert_eq!(r.ids().len(), 2);
    let r = ks.reject_all().unwrap();
    assert_eq!(r.ids(), ["db1", "Web1"]);
    assert_eq!(ks.list(KeyState::Rejected), ["db1", "Web1"]);
    let r = ks.delete_all().unwrap();
    assert!(r.touched(KeyState::Accepted) && r.touched(KeyState::Rejected));
    assert!(ks.list_all().values().all(Vec::is_empty));
}

#[test]
fn index_follows_external_changes_after_refresh() {
    let (_d, ks) = setup();
    let other = KeyStore::open(ks.pki_dir()).unwrap();
    other.put_pending("x", PEM).unwrap();
    // state() asks the file system: never stale.
    assert_eq!(ks.state("x").unwrap(), Some(KeyState::Pending));
    assert!(ks.list(KeyState::Pending).is_empty());
    ks.refresh().unwrap();
    assert_eq!(ks.list(KeyState::Pending), ["x"]);
    // A key that vanished is "not found", not an error.
    other.delete("x").unwrap();
    assert_eq!(ks.read_key(KeyState::Pending, "x").unwrap(), None);
    assert!(ks.accept("x", AcceptFrom::default()).unwrap().is_empty());
    assert_eq!(
        ks.fingerprints(&KeyState::ALL, FingerprintHash::Sha256)
            .unwrap()[&KeyState::Pending],
        []
    );
}

#[test]
fn fingerprints_and_local_keys() {
    let (_d, ks) = setup();
    ks.put_pending("m", PEM).unwrap();
    fs::write(ks.pki_dir().join("master.pub"), format!("{PEM}\n")).unwrap();
    fs::write(ks.pki_dir().join("other.txt"), "x").unwrap();
    let f = ks
        .fingerprint(KeyState::Pending, "m", FingerprintHash::Sha256)
        .unwrap()
        .unwrap();
    assert_eq!(
        ks.local_fingerprint("master.pub", FingerprintHash::Sha256)
            .unwrap()
            .unwrap(),
        f
    );
    assert_eq!(ks.local_keys().unwrap(), ["master.pub"]);
    let all = ks
        .fingerprints(&KeyState::ALL, FingerprintHash::Sha256)
        .unwrap();
    assert_eq!(all[&KeyState::Pending], [("m".to_owned(), f)]);
}

#[test]
fn autosign_stubs() {
    let (_d, ks) = setup();
    assert!(
        !ks.consume_autosign_stub("m", Duration::from_secs(7200))
            .unwrap()
    );
    ks.put_autosign_stub("m").unwrap();
    assert!(
        ks.consume_autosign_stub("m", Duration::from_secs(7200))
            .unwrap()
    );
    assert!(
        !ks.consume_autosign_stub("m", Duration::from_secs(7200))
            .unwrap(),
        "one-shot"
    );
    // Expired stubs are removed and refused.
    ks.put_autosign_stub("old").unwrap();
    let path = ks.pki_dir().join(AUTOSIGN_DIR).join("old");
    let f = fs::File::options().write(true).open(&path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(3 * 3600))
        .unwrap();
    drop(f);
    assert!(
        !ks.consume_autosign_stub("old", Duration::from_secs(7200))
            .unwrap()
    );
    assert!(!path.exists());
    // Zero timeout: no expiry.
    ks.put_autosign_stub("old").unwrap();
    let f = fs::File::options().write(true).open(&path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(3 * 3600))
        .unwrap();
    drop(f);
    assert_eq!(ks.purge_expired_autosign(Duration::ZERO).unwrap(), 0);
    assert!(ks.consume_autosign_stub("old", Duration::ZERO).unwrap());
    // purge
    ks.put_autosign_stub("p").unwrap();
    let p = ks.pki_dir().join(AUTOSIGN_DIR).join("p");
    let f = fs::File::options().write(true).open(&p).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(3 * 3600))
        .unwrap();
    drop(f);
    ks.put_autosign_stub("fresh").unwrap();
    assert_eq!(
        ks.purge_expired_autosign(Duration::from_secs(7200))
            .unwrap(),
        1
    );
    assert!(!p.exists());
    assert!(ks.pki_dir().join(AUTOSIGN_DIR).join("fresh").exists());
}

// === crash simulation ===

pub(crate) fn with_crash<T>(point: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    CRASH_AT.with(|c| c.set(Some(point)));
    let r = f();
    CRASH_AT.with(|c| c.set(None));
    r
}

/// After a simulated crash at `point` during `put_accepted` of a pending id: the id is in
/// exactly one exclusive state with complete content (old or new), a fresh store sees the
/// same, and the debris is an ignored dotfile that the sweep removes.
#[test]
fn crash_during_put_accepted_leaves_one_state() {
    for point in [
        "atomic_write:after_create",
        "atomic_write:before_rename",
        "put:after_tmp",
        "put:after_move",
    ] {
        let (_d, ks) = setup();
        let pki = ks.pki_dir().to_owned();
        ks.put_pending("m", PEM).unwrap();
        let err = with_crash(point, || ks.put_accepted("m", &other_pem())).unwrap_err();
        assert!(matches!(err, KeyStoreError::SimulatedCrash(p) if p == point));

        assert_eq!(
            exclusive_count(&pki, "m"),
            1,
            "{point}: {:?}",
            on_disk(&pki, "m")
        );
        let fresh = KeyStore::open(&pki).unwrap();
        let state = fresh.state("m").unwrap().unwrap();
        let text = fresh.read_key(state, "m").unwrap().unwrap();
        assert!(text == PEM || text == other_pem(), "{point}: torn content");
        let listed: usize = fresh.list_all().values().map(Vec::len).sum();
        assert_eq!(listed, 1, "{point}: temp files must not be listed");
        match point {
            "put:after_move" | "atomic_write:before_rename" => {
                // Moved, new text not yet in place.
                assert_eq!(state, KeyState::Accepted);
                assert_eq!(text, PEM);
            }
            _ => {
                assert_eq!(state, KeyState::Pending);
                assert_eq!(text, PEM);
            }
        }
        // Debris is swept; finishing the operation afterwards works.
        fresh.sweep_temp_files(Duration::ZERO).unwrap();
        assert!(all_files(&pki).iter().all(|f| !f.contains(".keystore-tmp")));
        fresh.put_accepted("m", &other_pem()).unwrap();
        assert_eq!(on_disk(&pki, "m"), [KeyState::Accepted]);
    }
}

#[test]
fn crash_during_new_pending_write_leaves_no_key() {
    for point in ["atomic_write:after_create", "atomic_write:before_rename"] {
        let (_d, ks) = setup();
        let pki = ks.pki_dir().to_owned();
        with_crash(point, || ks.put_pending("m", PEM)).unwrap_err();
        assert!(on_disk(&pki, "m").is_empty(), "{point}");
        let fresh = KeyStore::open(&pki).unwrap();
        assert_eq!(fresh.state("m").unwrap(), None);
        assert!(fresh.list_all().values().all(Vec::is_empty));
    }
}

#[test]
fn crash_during_bulk_accept_leaves_prefix_done() {
    let (_d, ks) = setup();
    let pki = ks.pki_dir().to_owned();
    let ids = ["a", "b", "c"];
    for id in ids {
        ks.put_pending(id, PEM).unwrap();
    }
    with_crash("move_many:after_rename", || {
        ks.accept_many(&ids, AcceptFrom::default())
    })
    .unwrap_err();
    for id in ids {
        assert_eq!(exclusive_count(&pki, id), 1, "{id}");
    }
    let fresh = KeyStore::open(&pki).unwrap();
    assert_eq!(fresh.list(KeyState::Accepted), ["a"]);
    assert_eq!(fresh.list(KeyState::Pending), ["b", "c"]);
    // Resuming finishes the job.
    let r = fresh.accept_all().unwrap();
    assert_eq!(r.ids(), ["b", "c"]);
    assert_eq!(fresh.list(KeyState::Accepted), ids);
}

#[test]
fn unreadable_key_file_is_an_error_naming_it_and_nothing_moves() {
    // (Running as root, permission bits cannot make a file unreadable; a directory in
    // place of a key file gives the same kind of read error.)
    let (_d, ks) = setup();
    let pki = ks.pki_dir().to_owned();
    fs::create_dir(pki.join("minions_pre/weird")).unwrap();
    ks.refresh().unwrap();
    let err = ks.read_key(KeyState::Pending, "weird").unwrap_err();
    assert!(err.to_string().contains("minions_pre/weird"), "{err}");
    let err = ks.accept("weird", AcceptFrom::default()).unwrap_err();
    assert!(err.to_string().contains("minions_pre/weird"), "{err}");
    assert!(pki.join("minions_pre/weird").is_dir());
    assert!(!pki.join("minions/weird").exists());
    let r = ks.accept_matching("*", AcceptFrom::default()).unwrap();
    assert!(r.changed.is_empty());
    assert_eq!(r.errors.len(), 1);
}

#[test]
fn unreadable_dir_is_a_clear_error() {
    if salt_testkit::root().is_ok() {
        // Root reads a mode-000 directory: the check runs as nobody, in a child.
        let Some(out) = salt_testkit::require(salt_testkit::rerun_as_nobody()) else {
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "as nobody: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let (_d, ks) = setup();
    let pre = ks.state_dir(KeyState::Pending);
    fs::set_permissions(&pre, fs::Permissions::from_mode(0o000)).unwrap();
    assert!(
        fs::read_dir(&pre).is_err(),
        "mode 000 is enforced (not root)"
    );
    let err = KeyStore::open(ks.pki_dir()).unwrap_err();
    fs::set_permissions(&pre, fs::Permissions::from_mode(0o755)).unwrap();
    assert!(err.to_string().contains("minions_pre"), "{err}");
    assert!(err.to_string().contains("ermission denied"), "{err}");
}

#[test]
fn non_durable_store_writes_atomically_with_the_same_state_rules() {
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    let s = OpenOptions::new().durable(false).open(&pki).unwrap();
    s.put_pending("m1", PEM).unwrap();
    assert_eq!(on_disk(&pki, "m1"), vec![KeyState::Pending]);
    s.put_accepted("m1", PEM).unwrap();
    assert_eq!(on_disk(&pki, "m1"), vec![KeyState::Accepted]);
    assert_eq!(exclusive_count(&pki, "m1"), 1);
    assert_eq!(
        s.read_key(KeyState::Accepted, "m1").unwrap().as_deref(),
        Some(PEM)
    );
    assert_eq!(mode(&pki.join("minions/m1")), 0o644);
    s.put_denied("m1", &other_pem()).unwrap();
    assert_eq!(
        on_disk(&pki, "m1"),
        vec![KeyState::Accepted, KeyState::Denied]
    );
    assert!(
        all_files(&pki).iter().all(|f| !f.contains("/.")),
        "no temp file left: {:?}",
        all_files(&pki)
    );
    // A durable store sees the same files.
    let d = KeyStore::open(&pki).unwrap();
    assert_eq!(d.state("m1").unwrap(), Some(KeyState::Accepted));
}

#[test]
fn non_durable_new_key_is_created_whole_and_later_puts_replace_or_move_it() {
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    let s = OpenOptions::new().durable(false).open(&pki).unwrap();
    // A new minion (no file anywhere): created under its name, Salt's mode.
    s.put_accepted("m1", PEM).unwrap();
    assert_eq!(on_disk(&pki, "m1"), vec![KeyState::Accepted]);
    assert_eq!(mode(&pki.join("minions/m1")), 0o644);
    assert_eq!(s.list(KeyState::Accepted), vec!["m1".to_owned()]);
    // An existing accepted key is replaced with the new text.
    s.put_accepted("m1", &other_pem()).unwrap();
    assert_eq!(
        s.read_key(KeyState::Accepted, "m1").unwrap(),
        Some(other_pem())
    );
    // Rejecting moves it: one state at a time, the new text in place.
    s.put_rejected("m1", PEM).unwrap();
    assert_eq!(on_disk(&pki, "m1"), vec![KeyState::Rejected]);
    assert_eq!(exclusive_count(&pki, "m1"), 1);
    assert_eq!(
        s.read_key(KeyState::Rejected, "m1").unwrap().as_deref(),
        Some(PEM)
    );
    assert!(s.list(KeyState::Accepted).is_empty());
    assert!(
        all_files(&pki).iter().all(|f| !f.contains("/.")),
        "no temp file left: {:?}",
        all_files(&pki)
    );
    let d = KeyStore::open(&pki).unwrap();
    assert_eq!(d.state("m1").unwrap(), Some(KeyState::Rejected));
}

#[test]
fn create_linked_makes_a_complete_file_and_refuses_an_existing_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k");
    let f = create_linked(&path, b"secret", 0o600, true).unwrap();
    let Some(_file) = salt_testkit::require(f.ok_or_else(|| {
        salt_testkit::Missing::new(
            "no O_TMPFILE or /proc here (the callers fall back to tmp + rename)",
        )
    })) else {
        return;
    };
    assert_eq!(fs::read(&path).unwrap(), b"secret");
    assert_eq!(mode(&path), 0o600);
    let err = create_linked(&path, b"other", 0o600, false).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(fs::read(&path).unwrap(), b"secret");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn open_sweeps_only_stale_temp_files_in_its_one_directory_read() {
    let (_d, ks) = setup();
    let pki = ks.pki_dir().to_owned();
    ks.put_pending("m1", PEM).unwrap();
    let stale = pki.join("minions_pre/.keystore-tmp.1.1");
    let fresh_tmp = pki.join("minions/.keystore-tmp.1.2");
    let stale_stub = pki.join("minions_autosign/.keystore-tmp.1.3");
    let salt_cache = pki.join("minions/.key_cache");
    for p in [&stale, &fresh_tmp, &stale_stub, &salt_cache] {
        fs::write(p, "x").unwrap();
    }
    let old = SystemTime::now() - Duration::from_secs(2 * 3600);
    for p in [&stale, &stale_stub] {
        fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let ks = KeyStore::open(&pki).unwrap();
    assert!(!stale.exists(), "stale temp file swept");
    assert!(!stale_stub.exists(), "stale autosign temp file swept");
    assert!(
        fresh_tmp.exists(),
        "a concurrent writer's temp file is kept"
    );
    assert!(salt_cache.exists(), "other dotfiles are not ours");
    assert_eq!(ks.list(KeyState::Pending), ["m1"]);
    assert!(ks.list(KeyState::Accepted).is_empty());
}

#[test]
fn read_keys_and_check_keys_keep_order_skip_vanished_and_name_bad_files() {
    // Above the threshold at which the work is split over threads, and below it.
    for n in [5usize, 3000] {
        let (_d, ks) = setup();
        let pki = ks.pki_dir().to_owned();
        let ids: Vec<String> = (0..n).map(|i| format!("m-{i:05}")).collect();
        for (i, id) in ids.iter().enumerate() {
            let state = if i % 3 == 0 {
                KeyState::Rejected
            } else {
                KeyState::Pending
            };
            let text = if i == 3 {
                "garbage".to_owned()
            } else {
                PEM.to_owned()
            };
            fs::write(pki.join(state.dir_name()).join(id), text).unwrap();
        }
        fs::remove_file(pki.join("minions_pre/m-00001")).unwrap(); // vanished
        fs::remove_file(pki.join("minions_pre/m-00002")).unwrap();
        fs::create_dir(pki.join("minions_pre/m-00002")).unwrap(); // unreadable
        let keys: Vec<(KeyState, &str)> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let state = if i % 3 == 0 {
                    KeyState::Rejected
                } else {
                    KeyState::Pending
                };
                (state, id.as_str())
            })
            .collect();
        let lens = ks.read_keys(&keys, <[u8]>::len).unwrap();
        assert_eq!(lens.len(), n);
        for (i, r) in lens.iter().enumerate() {
            match i {
                1 => assert!(matches!(r, Ok(None)), "{i}: {r:?}"),
                2 => assert!(
                    r.as_ref()
                        .unwrap_err()
                        .to_string()
                        .contains("minions_pre/m-00002"),
                    "{r:?}"
                ),
                3 => assert_eq!(*r.as_ref().unwrap(), Some("garbage".len())),
                _ => assert_eq!(*r.as_ref().unwrap(), Some(PEM.len()), "{i}"),
            }
        }
        let bad = ks
            .check_keys(&keys, |b| {
                PemArmorValidator.validate(std::str::from_utf8(b).map_err(|e| e.to_string())?)
            })
            .unwrap();
        let got: Vec<(usize, String)> = bad.iter().map(|(i, e)| (*i, e.to_string())).collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, 2);
        assert!(got[0].1.contains("minions_pre/m-00002"), "{got:?}");
        assert_eq!(got[1].0, 3);
        assert!(
            got[1].1.contains("minions_rejected/m-00003") && got[1].1.contains("not a PEM"),
            "{got:?}"
        );
        assert!(
            ks.check_keys(&[(KeyState::Pending, "../x")], |_| Ok(()))
                .is_err()
        );
    }
}

#[test]
fn a_fifo_in_place_of_a_key_does_not_hang_a_read() {
    let (_d, ks) = setup();
    let pki = ks.pki_dir().to_owned();
    nix::unistd::mkfifo(
        &pki.join("minions_pre/fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    ks.refresh().unwrap();
    let r = ks
        .read_keys(&[(KeyState::Pending, "fifo")], <[u8]>::len)
        .unwrap();
    assert_eq!(r[0].as_ref().unwrap(), &Some(0));
    let err = ks.accept("fifo", AcceptFrom::default()).unwrap_err();
    assert!(err.to_string().contains("minions_pre/fifo"), "{err}");
    assert_eq!(ks.state("fifo").unwrap(), Some(KeyState::Pending));
}

#[test]
fn bulk_moves_and_deletes_many_keys_between_opened_directories() {
    let (_d, ks) = setup();
    let pki = ks.pki_dir().to_owned();
    let ids: Vec<String> = (0..2500).map(|i| format!("m{i}")).collect();
    for id in &ids {
        fs::write(pki.join("minions_pre").join(id), PEM).unwrap();
    }
    fs::write(pki.join("minions_rejected/m7"), PEM).unwrap();
    ks.refresh().unwrap();
    // Validated accept of everything, the rejected m7 too.
    let from = AcceptFrom {
        include_rejected: true,
        ..Default::default()
    };
    let r = ks.accept_many(&ids, from).unwrap();
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.changed.len(), 2501);
    assert_eq!(ks.list(KeyState::Accepted).len(), 2500);
    assert!(ks.list(KeyState::Pending).is_empty());
    assert!(ks.list(KeyState::Rejected).is_empty());
    assert_eq!(fs::read_dir(pki.join("minions")).unwrap().count(), 2500);
    assert_eq!(fs::read_to_string(pki.join("minions/m7")).unwrap(), PEM);
    // Reject half back, then delete everything.
    let half: Vec<&str> = ids.iter().step_by(2).map(String::as_str).collect();
    let from = RejectFrom {
        include_accepted: true,
        ..Default::default()
    };
    assert_eq!(ks.reject_many(&half, from).unwrap().changed.len(), 1250);
    assert_eq!(ks.list(KeyState::Rejected).len(), 1250);
    let r = ks.delete_all().unwrap();
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.changed.len(), 2500);
    assert!(all_files(&pki).is_empty(), "{:?}", all_files(&pki));
}
