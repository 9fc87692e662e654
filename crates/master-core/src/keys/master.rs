//! The master's RSA identity: `master.pem`/`master.pub`, and the `pub_sig` it sends.
//!
//! * `master_sign_pubkey: True` (and no pre-computed file): the signing pair
//!   `{master_sign_key_name}.pem/.pub` is loaded or generated, and its signature over
//!   `clean_key(master.pub)` is computed the first time a minion asks with a given
//!   `sig_algo`, then cached: RSA signing is not repeated per sign-in.
//! * `master_use_pubkey_signature: True`: the file `{master_pubkey_signature}` is sent
//!   instead (clean_key form). It must exist; when `{master_sign_key_name}.pub` exists the
//!   file is verified against it (PKCS1v15-SHA1, as `salt-key --gen-signature` writes it),
//!   so a stale signature stops the master at start instead of locking minions out.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use salt_config::MasterConfig;
use salt_pki::{PrivateKey, PublicKey, SigAlgo, clean_key, files, pubsig};

/// Key problems that stop the master at start.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Reading, generating or parsing a key failed.
    #[error("{path}: {source}")]
    Pki {
        /// The key file.
        path: PathBuf,
        /// The cause.
        source: salt_pki::Error,
    },
    /// `master_use_pubkey_signature` is on but the signature file is missing.
    #[error(
        "master_use_pubkey_signature is True but {0} is missing; create it with \
         `salt-key --gen-signature`"
    )]
    SignatureMissing(PathBuf),
    /// The signature file does not verify against `master_sign.pub` and `master.pub`.
    #[error("{path} is not a valid signature of master.pub by {sign_pub}")]
    SignatureInvalid {
        /// The signature file.
        path: PathBuf,
        /// The signing public key used to check it.
        sign_pub: PathBuf,
    },
    /// An I/O error on a key file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

enum PubSig {
    None,
    Dynamic {
        key: PrivateKey,
        cache: Mutex<Vec<(SigAlgo, Arc<Vec<u8>>)>>,
    },
    File(Arc<Vec<u8>>),
}

/// The master's keys, loaded once at start and shared by every worker.
pub struct MasterKeys {
    /// `master.pem`.
    pub key: PrivateKey,
    /// `clean_key(master.pub)` as read from the file: the `pub_key` of auth replies.
    pub pub_clean: String,
    pub_sig: PubSig,
}

impl std::fmt::Debug for MasterKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MasterKeys")
            .field(
                "pub_sig",
                &match self.pub_sig {
                    PubSig::None => "none",
                    PubSig::Dynamic { .. } => "dynamic",
                    PubSig::File(_) => "file",
                },
            )
            .finish_non_exhaustive()
    }
}

/// An existing private key others may read (group or other bits set, e.g. 0644 after a
/// copy) is set to 0400, as Salt writes it, with a warning; refused when that fails.
fn secure_private_key(path: &Path) -> Result<(), KeyError> {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(()); // absent: generated with 0400
    };
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 == 0 {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(files::PRIVATE_KEY_MODE))
        .map_err(|source| KeyError::Io {
            path: path.to_owned(),
            source: std::io::Error::new(
                source.kind(),
                format!("private key has mode {mode:04o} (readable by others) and chmod 0400 failed: {source}"),
            ),
        })?;
    tracing::warn!(
        "{} had mode {mode:04o} (readable by others): set to 0400 as Salt creates it",
        path.display()
    );
    Ok(())
}

fn pki_err(path: &Path) -> impl FnOnce(salt_pki::Error) -> KeyError + '_ {
    move |source| KeyError::Pki {
        path: path.to_owned(),
        source,
    }
}

impl MasterKeys {
    /// Load or create the keys named by `cfg` under its `pki_dir`.
    pub fn load(cfg: &MasterConfig) -> Result<Self, KeyError> {
        let dir = &cfg.pki_dir;
        let pem = dir.join("master.pem");
        secure_private_key(&pem)?;
        let key = files::load_or_generate(dir, "master", cfg.keysize).map_err(pki_err(&pem))?;
        let pub_path = dir.join("master.pub");
        let pub_text = std::fs::read_to_string(&pub_path).map_err(|source| KeyError::Io {
            path: pub_path.clone(),
            source,
        })?;
        let pub_clean = clean_key(&pub_text);
        let sign_name = &cfg.master_sign_key_name;
        let pub_sig = if cfg.master_use_pubkey_signature {
            let sig_path = dir.join(&cfg.master_pubkey_signature);
            let text = match std::fs::read_to_string(&sig_path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(KeyError::SignatureMissing(sig_path));
                }
                Err(source) => {
                    return Err(KeyError::Io {
                        path: sig_path,
                        source,
                    });
                }
            };
            let sign_pub_path = dir.join(format!("{sign_name}.pub"));
            if sign_pub_path.exists() {
                let sign_pub: PublicKey =
                    files::read_public_key(&sign_pub_path).map_err(pki_err(&sign_pub_path))?;
                pubsig::verify_master_pubkey(
                    &sign_pub,
                    pub_clean.as_bytes(),
                    text.as_bytes(),
                    SigAlgo::Pkcs1v15Sha1,
                )
                .map_err(|_| KeyError::SignatureInvalid {
                    path: sig_path.clone(),
                    sign_pub: sign_pub_path.clone(),
                })?;
            }
            PubSig::File(Arc::new(
                pubsig::pub_sig_from_signature_file(&text).into_bytes(),
            ))
        } else if cfg.master_sign_pubkey {
            let sign_pem = dir.join(format!("{sign_name}.pem"));
            let key =
                files::load_or_generate(dir, sign_name, cfg.keysize).map_err(pki_err(&sign_pem))?;
            PubSig::Dynamic {
                key,
                cache: Mutex::new(Vec::new()),
            }
        } else {
            PubSig::None
        };
        Ok(MasterKeys {
            key,
            pub_clean,
            pub_sig,
        })
    }

    /// The `pub_sig` for a minion signing with `alg`, if the master signs its key.
    /// Computed at most once per algorithm.
    pub fn pub_sig(&self, alg: SigAlgo) -> Result<Option<Arc<Vec<u8>>>, salt_pki::Error> {
        match &self.pub_sig {
            PubSig::None => Ok(None),
            PubSig::File(sig) => Ok(Some(sig.clone())),
            PubSig::Dynamic { key, cache } => {
                let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((_, sig)) = cache.iter().find(|(a, _)| *a == alg) {
                    return Ok(Some(sig.clone()));
                }
                let raw = pubsig::sign_master_pubkey(key, &self.pub_clean, alg)?;
                let sig = Arc::new(pubsig::pub_sig_value(&raw));
                cache.push((alg, sig.clone()));
                Ok(Some(sig))
            }
        }
    }
}

#[cfg(test)]
mod secure_key_tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn a_private_key_readable_by_others_is_set_to_0400() {
        let dir = tempfile::tempdir().unwrap();
        let pem = dir.path().join("master.pem");
        std::fs::write(&pem, "x").unwrap();
        std::fs::set_permissions(&pem, std::fs::Permissions::from_mode(0o644)).unwrap();
        secure_private_key(&pem).unwrap();
        let mode = std::fs::metadata(&pem).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o400);
        // 0600 is left alone, an absent key is fine.
        std::fs::set_permissions(&pem, std::fs::Permissions::from_mode(0o600)).unwrap();
        secure_private_key(&pem).unwrap();
        let mode = std::fs::metadata(&pem).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        secure_private_key(&dir.path().join("none.pem")).unwrap();
    }
}
