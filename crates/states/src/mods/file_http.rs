//! `file.managed` from an `http://` source, checked against `source_hash` as Salt's
//! `file.get_source_sum` and the `file.managed` state do. The download uses `ureq` (built
//! without TLS: `https://` sources are refused by name). A `source_hash` naming a file or URL
//! of hashes is refused by name too; a hash, or `<type>=<hash>`, is taken.

use std::io::Read;

use rmpv::Value;

use salt_compat::map_get;
use salt_compat::py_str;

/// Salt's `HASHES_REVMAP`: hex length -> hash type.
const HASH_LENGTHS: &[(usize, &str)] = &[
    (128, "sha512"),
    (96, "sha384"),
    (64, "sha256"),
    (56, "sha224"),
    (40, "sha1"),
    (32, "md5"),
];

/// Largest download taken (bytes).
const MAX_BODY: u64 = 512 * 1024 * 1024;

/// Whether `src` is an http(s) URL.
pub fn is_web(src: &str) -> bool {
    src.starts_with("http://") || src.starts_with("https://")
}

fn invalid(source_hash: &str) -> String {
    format!(
        "Unable to manage file: Source hash {source_hash} format is invalid. The supported formats are: 1) a hash, 2) an expression in the format <hash_type>=<hash>, or 3) either a path to a local file containing hashes, or a URI of a remote hash file. Supported protocols for remote hash files are: salt, file, http, https, ftp, swift, s3. The hash may also not be of a valid length, the following are supported hash types and lengths: md5 (32), sha1 (40), sha224 (56), sha256 (64), sha384 (96), sha512 (128)."
    )
}

/// `(hash_type, hsum)` of a `source_hash` value.
fn source_sum(source_hash: &str) -> Result<(String, String), String> {
    let sh = source_hash.trim();
    if sh.contains("://") || sh.starts_with('/') {
        return Err(format!(
            "file.managed source_hash {sh:?}: a file or URL of hashes is not supported by salt-rs (give the hash, or <type>=<hash>)"
        ));
    }
    let (htype, hsum) = match sh.split_once('=') {
        Some((t, h)) => (t.trim().to_lowercase(), h.trim().to_lowercase()),
        None => {
            let h = sh.to_lowercase();
            let Some((_, t)) = HASH_LENGTHS.iter().find(|(n, _)| *n == h.len()) else {
                return Err(invalid(sh));
            };
            ((*t).to_owned(), h)
        }
    };
    let len_ok = HASH_LENGTHS
        .iter()
        .any(|(n, t)| *t == htype && *n == hsum.len());
    if !len_ok || !hsum.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid(sh));
    }
    Ok((htype, hsum))
}

fn download(src: &str) -> Result<Vec<u8>, String> {
    let resp = ureq::get(src)
        .call()
        .map_err(|e| format!("Unable to manage file: Error: {e} reading {src}"))?;
    let mut body = Vec::new();
    resp.into_body()
        .into_reader()
        .take(MAX_BODY)
        .read_to_end(&mut body)
        .map_err(|e| format!("Unable to manage file: Error: {e} reading {src}"))?;
    Ok(body)
}

/// The bytes of `src` for the state `low`, verified against its `source_hash`.
pub fn fetch(src: &str, low: &Value) -> Result<Vec<u8>, String> {
    if src.starts_with("https://") {
        return Err(format!(
            "file.managed source {src}: https sources are not supported by salt-rs (no TLS client built in); use http:// or salt://"
        ));
    }
    let Some(sh) = map_get(low, "source_hash")
        .map(py_str)
        .filter(|s| !s.is_empty())
    else {
        return Err(format!(
            "Unable to manage file: Unable to verify upstream hash of source file {src}, please set source_hash or set skip_verify to True"
        ));
    };
    let (htype, hsum) = source_sum(&sh)?;
    let body = download(src)?;
    let got = salt_execmods::file::digest(&body, &htype)?;
    if got != hsum {
        // The state names the destination (Salt's `file.managed` check after caching).
        let name = map_get(low, "name").map(py_str).unwrap_or_default();
        return Err(format!(
            "Specified {htype} checksum for {name} ({hsum}) does not match actual checksum ({got})"
        ));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_sum_forms() {
        let h = "a".repeat(64);
        assert_eq!(source_sum(&h).unwrap(), ("sha256".into(), h.clone()));
        assert_eq!(
            source_sum(&format!("SHA256={}", h.to_uppercase())).unwrap(),
            ("sha256".into(), h)
        );
        assert_eq!(source_sum(&"b".repeat(32)).unwrap().0, "md5");
        assert!(source_sum("abc").unwrap_err().contains("format is invalid"));
        assert!(
            source_sum("md5=abc")
                .unwrap_err()
                .contains("format is invalid")
        );
        assert!(
            source_sum("http://x/h")
                .unwrap_err()
                .contains("not supported by salt-rs")
        );
    }
}
