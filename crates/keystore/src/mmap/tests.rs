//! The mmap_key store: Salt's hashing, round trips through [`KeyStore`], crash safety.

use std::fs;
use std::path::Path;

use super::table::{Geometry, Op, Table, write_coalesced};
use crate::tests::{PEM, with_crash};
use crate::*;

fn small() -> Geometry {
    Geometry {
        size: 1000,
        ..Geometry::default()
    }
}

fn open(pki: &Path) -> KeyStore {
    OpenOptions::new()
        .mmap_key(Some(small()))
        .open(pki)
        .unwrap()
}

fn setup(n: usize) -> (tempfile::TempDir, KeyStore) {
    let d = tempfile::tempdir().unwrap();
    let ks = open(&d.path().join("pki"));
    for i in 0..n {
        ks.put_pending(&format!("m{i}"), PEM).unwrap();
    }
    (d, ks)
}

#[test]
fn xxh3_is_pythons() {
    // xxhash.xxh3_64_intdigest(...) in Salt 3008.5's venv (xxhash 3.x).
    use xxhash_rust::xxh3::xxh3_64;
    assert_eq!(xxh3_64(b""), 3244421341483603138);
    assert_eq!(xxh3_64(b"minion-1"), 17500064834229068208);
    assert_eq!(xxh3_64(&[b'a'; 200]), 12406242715336362389);
}

#[test]
fn round_trip_through_keystore() {
    let (d, ks) = setup(5);
    let pki = d.path().join("pki");
    assert!(pki.join(".mmap_keys.idx").exists());
    assert_eq!(
        fs::metadata(pki.join(".mmap_keys.idx")).unwrap().len(),
        1000 * 96
    );
    assert!(
        fs::read_dir(pki.join("minions_pre"))
            .unwrap()
            .next()
            .is_none()
    );
    assert_eq!(ks.list(KeyState::Pending).len(), 5);
    let r = ks.accept_matching("m1,m2", AcceptFrom::default()).unwrap();
    assert_eq!(r.changed.len(), 2);
    assert_eq!(ks.state("m1").unwrap(), Some(KeyState::Accepted));
    assert_eq!(
        ks.read_key(KeyState::Accepted, "m1").unwrap().as_deref(),
        Some(PEM)
    );
    assert_eq!(ks.read_key(KeyState::Pending, "m1").unwrap(), None);
    ks.reject("m3", RejectFrom::default()).unwrap();
    ks.put_denied("m1", PEM).unwrap();
    assert_eq!(
        ks.states_of("m1").unwrap(),
        vec![KeyState::Accepted, KeyState::Denied]
    );
    assert!(matches!(
        ks.put_pending("m1", PEM),
        Err(KeyStoreError::Conflict { .. })
    ));
    ks.delete("m0").unwrap();
    // A second store (another process) sees the same.
    let again = open(&pki);
    let all = again.list_all();
    assert_eq!(all[&KeyState::Accepted], vec!["m1", "m2"]);
    assert_eq!(all[&KeyState::Pending], vec!["m4"]);
    assert_eq!(all[&KeyState::Rejected], vec!["m3"]);
    assert_eq!(all[&KeyState::Denied], vec!["m1"]);
    let r = again.accept_all().unwrap();
    assert_eq!(r.changed, vec![("m4".to_owned(), KeyState::Pending)]);
    let r = again.delete_all().unwrap();
    assert_eq!(r.changed.len(), 5);
    assert!(open(&pki).list_all().values().all(Vec::is_empty));
}

#[test]
fn long_ids_are_refused() {
    let (_d, ks) = setup(0);
    let id = "x".repeat(65);
    assert!(matches!(
        ks.put_pending(&id, PEM),
        Err(KeyStoreError::InvalidId { .. })
    ));
}

#[test]
fn crash_before_index_update_keeps_old_state() {
    let (d, ks) = setup(20);
    let r = with_crash("mmap:after_heap", || ks.accept_all());
    assert!(matches!(r, Err(KeyStoreError::SimulatedCrash(_))));
    let again = open(&d.path().join("pki"));
    assert_eq!(again.list(KeyState::Pending).len(), 20);
    assert!(again.list(KeyState::Accepted).is_empty());
    // The orphan records do not disturb the next batch.
    assert_eq!(again.accept_all().unwrap().changed.len(), 20);
    assert_eq!(
        open(&d.path().join("pki")).list(KeyState::Accepted).len(),
        20
    );
}

#[test]
fn crash_before_roster_update_is_recovered() {
    let (d, ks) = setup(3);
    let r = with_crash("mmap:after_index", || ks.put_pending("late", PEM));
    assert!(matches!(r, Err(KeyStoreError::SimulatedCrash(_))));
    let pki = d.path().join("pki");
    // Readers fall back to scanning the index; the next writer rebuilds the roster.
    assert_eq!(open(&pki).list(KeyState::Pending).len(), 4);
    open(&pki).put_pending("later", PEM).unwrap();
    let roster = fs::read(pki.join(".mmap_keys.idx.roster")).unwrap();
    assert_eq!(roster.len(), 5 * 4);
    assert_eq!(open(&pki).list(KeyState::Pending).len(), 5);
}

/// A torn heap append (the power cut in the middle of the records of a state change)
/// loses nothing: the index still points at the old, complete records.
#[test]
fn torn_heap_write_keeps_accepted_keys() {
    let (d, ks) = setup(50);
    ks.accept_all().unwrap();
    let pki = d.path().join("pki");
    let heap = pki.join(".mmap_keys.idx.heap");
    let before = fs::metadata(&heap).unwrap().len();
    let r = with_crash("mmap:after_heap", || {
        ks.reject_matching(
            "*",
            RejectFrom {
                include_accepted: true,
                ..RejectFrom::default()
            },
        )
    });
    assert!(matches!(r, Err(KeyStoreError::SimulatedCrash(_))));
    let after = fs::metadata(&heap).unwrap().len();
    assert!(after > before);
    // Tear the appended records in the middle, and scribble over the torn part.
    let f = fs::OpenOptions::new().write(true).open(&heap).unwrap();
    f.set_len(before + (after - before) / 2).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, b"garbage", before + 3).unwrap();
    let again = open(&pki);
    assert_eq!(again.list(KeyState::Accepted).len(), 50);
    assert_eq!(
        again.read_key(KeyState::Accepted, "m7").unwrap().as_deref(),
        Some(PEM)
    );
}

/// A record whose checksum fails (Salt's in-place overwrite torn) is not listed.
#[test]
fn corrupt_record_is_skipped() {
    let d = tempfile::tempdir().unwrap();
    let t = Table::new(d.path().join(".mmap_keys.idx"), small());
    t.write(&[
        Op::Put(b"a", b"\x01xy".to_vec()),
        Op::Put(b"b", b"\x01zz".to_vec()),
    ])
    .unwrap();
    let heap = d.path().join(".mmap_keys.idx.heap");
    let f = fs::OpenOptions::new().write(true).open(&heap).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, b"Q", 9).unwrap();
    let items = t.items().unwrap();
    assert_eq!(items, vec![(b"b".to_vec(), b"\x01zz".to_vec())]);
}

#[test]
fn heap_rolls_segments_like_salt() {
    let d = tempfile::tempdir().unwrap();
    let geo = Geometry {
        size: 100,
        max_segment_bytes: 64,
        ..Geometry::default()
    };
    let t = Table::new(d.path().join(".mmap_keys.idx"), geo);
    let v = vec![7u8; 40];
    t.write(&[Op::Put(b"a", v.clone()), Op::Put(b"b", v.clone())])
        .unwrap();
    assert!(d.path().join(".mmap_keys.idx.heap.1").exists());
    assert_eq!(t.get(b"b").unwrap(), Some(v));
}

#[test]
fn repeated_key_in_a_batch_is_stored_once() {
    let d = tempfile::tempdir().unwrap();
    let t = Table::new(d.path().join(".mmap_keys.idx"), small());
    t.write(&[
        Op::Put(b"a", b"\x021".to_vec()),
        Op::Put(b"a", b"\x012".to_vec()),
    ])
    .unwrap();
    assert_eq!(t.items().unwrap(), vec![(b"a".to_vec(), b"\x012".to_vec())]);
}

/// Coalesced patches leave the file as one `pwrite` per patch would: near patches merged
/// with the bytes between them, far ones alone, runs cut at the length cap.
#[test]
fn coalesced_writes_equal_one_write_per_patch() {
    use std::os::unix::fs::FileExt;
    let d = tempfile::tempdir().unwrap();
    let len = 20 << 20;
    let base: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    fs::write(&a, &base).unwrap();
    fs::write(&b, &base).unwrap();
    let mut patches: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut at = 3u64;
    let mut step = 1u64;
    while at + 40 < len as u64 {
        patches.push((at, vec![(at % 256) as u8 ^ 0x5a; (at % 37 + 1) as usize]));
        step = step * 5 % 9973 + 1;
        at += 40 + step * if at > (8 << 20) { 1 } else { 7 };
    }
    patches.reverse();
    let fa = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&a)
        .unwrap();
    for (at, bytes) in &patches {
        fa.write_all_at(bytes, *at).unwrap();
    }
    let fb = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&b)
        .unwrap();
    write_coalesced(&fb, &base, &mut patches).unwrap();
    assert_eq!(fs::read(&a).unwrap(), fs::read(&b).unwrap());
}

/// A bank large enough to be read on several threads lists what it holds: every state,
/// sorted, deleted and moved keys where they now are, a denied key beside an accepted one;
/// and a bulk accept of most keys (coalesced index writes) is read back the same way.
#[test]
fn large_bank_lists_every_state_sorted() {
    let d = tempfile::tempdir().unwrap();
    let pki = d.path().join("pki");
    let geo = Geometry {
        size: 40_000,
        ..Geometry::default()
    };
    let ks = OpenOptions::new().mmap_key(Some(geo)).open(&pki).unwrap();
    let n = 12_000;
    let items: Vec<(KeyState, String, String)> = (0..n)
        .map(|i| {
            (
                KeyState::Pending,
                format!("m-{:05}", (i * 7919) % n),
                PEM.to_owned(),
            )
        })
        .collect();
    ks.put_new_many(&items).unwrap();
    let rejected: Vec<String> = (0..n).step_by(5).map(|i| format!("m-{i:05}")).collect();
    ks.reject_many(&rejected, RejectFrom::default()).unwrap();
    let gone: Vec<String> = (1..n).step_by(50).map(|i| format!("m-{i:05}")).collect();
    ks.delete_many(&gone).unwrap();
    let accept: Vec<String> = (0..n)
        .filter(|i| i % 5 != 0 && i % 50 != 1 && i % 3 != 0)
        .map(|i| format!("m-{i:05}"))
        .collect();
    ks.accept_many_prevalidated(&accept, AcceptFrom::default())
        .unwrap();
    ks.put_denied("m-00002", PEM).unwrap();
    let reopened = OpenOptions::new().mmap_key(Some(geo)).open(&pki).unwrap();
    let want = |f: &dyn Fn(usize) -> bool| -> Vec<String> {
        (0..n)
            .filter(|&i| f(i))
            .map(|i| format!("m-{i:05}"))
            .collect()
    };
    let lists = reopened.list_all();
    assert_eq!(lists[&KeyState::Rejected], want(&|i| i % 5 == 0));
    assert_eq!(
        lists[&KeyState::Accepted],
        want(&|i| i % 5 != 0 && i % 50 != 1 && i % 3 != 0)
    );
    assert_eq!(
        lists[&KeyState::Pending],
        want(&|i| i % 5 != 0 && i % 50 != 1 && i % 3 == 0)
    );
    assert_eq!(lists[&KeyState::Denied], vec!["m-00002".to_owned()]);
    // The bank's own lists (read on several threads, merged) come sorted.
    let raw = reopened.mmap.as_ref().unwrap().list_sorted().unwrap();
    for state in KeyState::ALL {
        assert_eq!(raw[state.idx()], lists[&state], "{state:?}");
    }
    assert_eq!(reopened.state("m-00002").unwrap(), Some(KeyState::Accepted));
    assert_eq!(reopened.state("m-00001").unwrap(), None);
}
