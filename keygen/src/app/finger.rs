//! Fingerprints of many key files, on a few threads, in order.

use super::*;

/// `(id, fingerprint)` of each file, `None` for one that vanished meanwhile, in input order;
/// on up to as many threads as there are CPUs for large inputs.
pub(super) fn fingerprint_files(
    paths: &[(String, PathBuf)],
    hash: HashType,
) -> Vec<Result<(String, Option<String>)>> {
    let one = |(id, path): &(String, PathBuf)| match fs::read(path) {
        Ok(bytes) => Ok((id.clone(), Some(salt_pki::pem_finger(&bytes, hash)))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((id.clone(), None)),
        Err(e) => Err(Error::io("read", path, e)),
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    if paths.len() < 512 || threads == 1 {
        return paths.iter().map(one).collect();
    }
    let chunk = paths.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(one).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join().unwrap_or_else(|_| {
                    vec![Err(Error::io(
                        "fingerprint",
                        Path::new("(worker thread)"),
                        io::Error::other("panicked"),
                    ))]
                })
            })
            .collect()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod fingerprint_tests {
    use super::*;

    #[test]
    pub(super) fn threaded_fingerprints_keep_order_and_skip_vanished_files() {
        let dir = tempfile::tempdir().unwrap();
        let pem = PrivateKey::generate(2048).unwrap().public_key().to_pem();
        let other = PrivateKey::generate(2048).unwrap().public_key().to_pem();
        let mut paths = Vec::new();
        for i in 0..1500 {
            let p = dir.path().join(format!("m-{i}"));
            if i != 700 {
                fs::write(&p, if i % 2 == 0 { &pem } else { &other }).unwrap();
            }
            paths.push((format!("m-{i}"), p));
        }
        let got = fingerprint_files(&paths, HashType::Sha256);
        assert_eq!(got.len(), 1500);
        let even = salt_pki::pem_finger(pem.as_bytes(), HashType::Sha256);
        let odd = salt_pki::pem_finger(other.as_bytes(), HashType::Sha256);
        for (i, r) in got.into_iter().enumerate() {
            let (id, fp) = r.unwrap();
            assert_eq!(id, format!("m-{i}"), "input order kept");
            match i {
                700 => assert_eq!(fp, None, "vanished file skipped"),
                _ if i % 2 == 0 => assert_eq!(fp.as_deref(), Some(even.as_str())),
                _ => assert_eq!(fp.as_deref(), Some(odd.as_str())),
            }
        }
    }
}
