//! Two users of one pki_dir at once (a master and salt-key): every key ends in at most
//! one exclusive state, nothing panics, and a vanished file is never an error.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::sync::{Arc, Barrier};
use std::thread;

use salt_keystore::{AcceptFrom, KeyState, KeyStore, RejectFrom};

/// Each single operation fsyncs, so keep this modest.
const N: usize = 300;

fn ids() -> Vec<String> {
    (0..N).map(|i| format!("minion-{i:05}")).collect()
}

fn exclusive_states(pki: &Path, id: &str) -> usize {
    KeyState::EXCLUSIVE
        .iter()
        .filter(|s| pki.join(s.dir_name()).join(id).exists())
        .count()
}

fn no_debris(pki: &Path) {
    for s in KeyState::ALL {
        for e in std::fs::read_dir(pki.join(s.dir_name())).unwrap() {
            let name = e.unwrap().file_name();
            assert!(
                !name.to_string_lossy().starts_with('.'),
                "temp file left: {name:?}"
            );
        }
    }
}

#[test]
fn concurrent_accept_and_delete() {
    let d = tempfile::tempdir().unwrap();
    let pki = d.path().join("pki");
    let setup = KeyStore::open(&pki).unwrap();
    let ids = ids();
    for id in &ids {
        setup.put_pending(id, common::PEM).unwrap();
    }
    // Two independent stores, as two processes would have.
    let a = KeyStore::open(&pki).unwrap();
    let b = KeyStore::open(&pki).unwrap();
    let barrier = Arc::new(Barrier::new(2));
    thread::scope(|s| {
        let (ids_a, bar_a) = (ids.clone(), barrier.clone());
        let ta = s.spawn(move || {
            bar_a.wait();
            // Accept one by one (the master's auto-accept path) and in bulk halves.
            let (first, second) = ids_a.split_at(N / 2);
            for id in first {
                a.accept(id, AcceptFrom::default()).unwrap();
            }
            let r = a.accept_many(second, AcceptFrom::default()).unwrap();
            assert!(r.errors.is_empty(), "{:?}", r.errors);
        });
        let (ids_b, bar_b) = (ids.clone(), barrier);
        let tb = s.spawn(move || {
            bar_b.wait();
            // Delete from the other end, singly, while accepts happen.
            for id in ids_b.iter().rev().step_by(2) {
                b.delete(id).unwrap();
            }
            let r = b.delete_many(&ids_b[..N / 3]).unwrap();
            assert!(r.errors.is_empty(), "{:?}", r.errors);
        });
        ta.join().unwrap();
        tb.join().unwrap();
    });
    let fresh = KeyStore::open(&pki).unwrap();
    for id in &ids {
        assert!(exclusive_states(&pki, id) <= 1, "{id} in two states");
        let st = fresh.state(id).unwrap();
        assert!(
            matches!(st, None | Some(KeyState::Accepted)),
            "{id}: {st:?}"
        );
    }
    no_debris(&pki);
}

#[test]
fn concurrent_put_accepted_reject_and_delete() {
    let d = tempfile::tempdir().unwrap();
    let pki = d.path().join("pki");
    let setup = KeyStore::open(&pki).unwrap();
    let ids = ids();
    for id in &ids {
        setup.put_pending(id, common::PEM).unwrap();
    }
    let master = KeyStore::open(&pki).unwrap();
    let saltkey = KeyStore::open(&pki).unwrap();
    let barrier = Barrier::new(3);
    thread::scope(|s| {
        s.spawn(|| {
            barrier.wait();
            for id in &ids {
                // The master auto-signing: write the key as accepted (moves pending).
                master.put_accepted(id, common::PEM).unwrap();
            }
        });
        s.spawn(|| {
            barrier.wait();
            let from = RejectFrom {
                include_accepted: true,
                ..Default::default()
            };
            for id in ids.iter().rev() {
                saltkey.reject(id, from).unwrap();
            }
        });
        s.spawn(|| {
            barrier.wait();
            for id in ids.iter().step_by(3) {
                saltkey.delete(id).unwrap();
            }
        });
    });
    for id in &ids {
        assert!(exclusive_states(&pki, id) <= 1, "{id} in two states");
    }
    no_debris(&pki);
    // The stores' own listings agree with the disk after a refresh.
    let fresh = KeyStore::open(&pki).unwrap();
    master.refresh().unwrap();
    assert_eq!(master.list_all(), fresh.list_all());
}
