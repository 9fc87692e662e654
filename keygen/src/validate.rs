//! Checking key files before accepting them (Salt's `get_rsa_pub_key` in `Key.accept`).

use std::path::PathBuf;

/// Parse every file as an RSA public key (on up to as many threads as there are CPUs).
/// Returns `(id, problem naming the file)` for each file that is not one. A file that
/// vanished meanwhile is not a problem (another process moved it; the move will skip it).
pub fn check_public_keys(paths: &[(String, PathBuf)]) -> Vec<(String, String)> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    if paths.len() < 256 || threads == 1 {
        return check_slice(paths);
    }
    let chunk = paths.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|c| s.spawn(move || check_slice(c)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

fn check_slice(paths: &[(String, PathBuf)]) -> Vec<(String, String)> {
    let mut bad = Vec::new();
    for (id, path) in paths {
        match std::fs::read(path) {
            Ok(bytes) => {
                if let Err(e) = salt_pki::PublicKey::from_pem(&bytes) {
                    bad.push((
                        id.clone(),
                        format!("{}: not a PEM RSA public key ({e})", path.display()),
                    ));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => bad.push((id.clone(), format!("{}: {e}", path.display()))),
        }
    }
    bad
}
