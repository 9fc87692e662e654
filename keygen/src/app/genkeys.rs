//! `salt-key --gen-keys` and `--gen-signature`, and the replies of single values.

use super::*;

impl Cli {
    /// `signing_key_pass` (Salt uses it for every key salt-key generates or loads).
    pub(super) fn passphrase(&self) -> Option<salt_pki::Zeroizing<Vec<u8>>> {
        self.cfg
            .signing_key_pass
            .as_ref()
            .map(|s| salt_pki::Zeroizing::new(s.expose().as_bytes().to_vec()))
    }

    pub(super) fn keysize(&self) -> u32 {
        self.args
            .keysize
            .and_then(|k| u32::try_from(k).ok())
            .unwrap_or(self.cfg.keysize)
    }

    pub(super) fn gen_keys(&self, name: &str) -> Result<i32> {
        check_key_name(name)?;
        let dir = &self.args.gen_keys_dir;
        fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
        let priv_path = dir.join(format!("{name}.pem"));
        let pub_path = dir.join(format!("{name}.pub"));
        if !priv_path.exists() {
            let pass = self.passphrase();
            generate_pair(
                &priv_path,
                &pub_path,
                self.keysize(),
                pass.as_ref().map(|p| p.as_slice()),
            )?;
        }
        let pub_pem = fs::read(&pub_path).map_err(|e| Error::io("read", &pub_path, e))?;
        self.display(&Val::ret(Val::Str(salt_pki::pem_finger(
            &pub_pem, self.hash,
        ))))?;
        Ok(0)
    }

    /// `salt-key --gen-signature` (Salt's `Key.gen_keys_signature`): sign the master's
    /// public key (or `--pub`) with the signing key (or `--priv`) and write
    /// `<signature-path or pki_dir>/<master_pubkey_signature>`, never replacing a file.
    pub(super) fn gen_signature(&self) -> Result<i32> {
        let pki = &self.cfg.pki_dir;
        let mut pub_path: Option<PathBuf> = None;
        if let Some(p) = self
            .args
            .pub_path
            .as_ref()
            .filter(|p| !p.as_os_str().is_empty())
        {
            if !p.is_file() {
                return self.ret_str(&format!("Public-key {} does not exist", p.display()));
            }
            pub_path = Some(p.clone());
        } else {
            let mpub = pki.join("master.pub");
            if mpub.is_file() {
                pub_path = Some(mpub);
            }
        }
        let sign_name = &self.cfg.master_sign_key_name;
        let mut priv_path: Option<PathBuf> = None;
        if let Some(p) = self
            .args
            .priv_path
            .as_ref()
            .filter(|p| !p.as_os_str().is_empty())
        {
            if !p.is_file() {
                return self.ret_str(&format!("Private-key {} does not exist", p.display()));
            }
            priv_path = Some(p.clone());
        } else {
            let mpriv = pki.join(format!("{sign_name}.pem"));
            if mpriv.is_file() {
                priv_path = Some(mpriv);
            }
        }
        let pass = self.passphrase();
        let priv_path = match priv_path {
            Some(p) => p,
            None if self.args.auto_create => {
                check_key_name(sign_name)?;
                let p = pki.join(format!("{sign_name}.pem"));
                let pubp = pki.join(format!("{sign_name}.pub"));
                fs::create_dir_all(pki).map_err(|e| Error::io("create directory", pki, e))?;
                generate_pair(
                    &p,
                    &pubp,
                    self.keysize(),
                    pass.as_ref().map(|p| p.as_slice()),
                )?;
                p
            }
            None => return self.ret_str("No usable private-key found"),
        };
        let Some(pub_path) = pub_path else {
            return self.ret_str("No usable public-key found");
        };
        let sig_dir = self
            .args
            .signature_path
            .clone()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| pki.clone());
        let sign_path = sig_dir.join(&self.cfg.master_pubkey_signature);
        if !sig_dir.is_dir() {
            return Err(Error::io(
                "write",
                &sign_path,
                io::Error::new(io::ErrorKind::NotFound, "No such file or directory"),
            ));
        }

        let pub_text = fs::read(&pub_path).map_err(|e| Error::io("read", &pub_path, e))?;
        PublicKey::from_pem(&pub_text).map_err(|e| Error::pki(&pub_path, e))?;
        let pub_text = String::from_utf8_lossy(&pub_text);
        let key =
            salt_pki::files::read_private_key(&priv_path, pass.as_ref().map(|p| p.as_slice()))
                .map_err(|e| Error::pki(&priv_path, e))?;
        // Salt's gen_signature always signs with PKCS#1 v1.5 + SHA-1.
        let sig = salt_pki::pubsig::sign_master_pubkey(&key, &pub_text, SigAlgo::Pkcs1v15Sha1)
            .map_err(|e| Error::pki(&priv_path, e))?;
        if sign_path.exists() {
            return self.ret_bool(false);
        }
        let body = salt_pki::pubsig::signature_file(&sig);
        match salt_pki::files::atomic_create(&sign_path, body.as_bytes(), 0o644) {
            Ok(()) => self.ret_bool(true),
            Err(salt_pki::Error::Io { source, .. })
                if source.kind() == io::ErrorKind::AlreadyExists =>
            {
                self.ret_bool(false)
            }
            Err(e) => Err(Error::pki(&sign_path, e)),
        }
    }

    pub(super) fn ret_str(&self, s: &str) -> Result<i32> {
        self.display(&Val::ret(Val::Str(s.to_owned())))?;
        Ok(0)
    }

    pub(super) fn ret_bool(&self, b: bool) -> Result<i32> {
        self.display(&Val::ret(Val::Bool(b)))?;
        Ok(0)
    }
}

/// Generate an RSA pair: private key created without replacing an existing one (a
/// concurrent winner's key is kept, as Salt's `gen_keys` does), then the public key.
pub(super) fn generate_pair(
    priv_path: &Path,
    pub_path: &Path,
    bits: u32,
    pass: Option<&[u8]>,
) -> Result<()> {
    let dir = priv_path.parent().unwrap_or(Path::new("."));
    let progress = Progress::spinner(&format!("generating {bits}-bit RSA key"));
    let key = PrivateKey::generate(bits);
    progress.finish();
    let key = key.map_err(|e| Error::pki(priv_path, e))?;
    let pem = key.to_pem(pass).map_err(|e| Error::pki(priv_path, e))?;
    match salt_pki::files::atomic_create(priv_path, &pem, 0o400) {
        Ok(()) => {}
        Err(salt_pki::Error::Io { source, .. })
            if source.kind() == io::ErrorKind::AlreadyExists =>
        {
            return Ok(());
        }
        Err(salt_pki::Error::Io { source, .. })
            if source.kind() == io::ErrorKind::PermissionDenied =>
        {
            let abs = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
            return Err(Error::WriteDenied {
                dir: abs,
                user: std::env::var("USER").unwrap_or_default(),
            });
        }
        Err(e) => return Err(Error::pki(priv_path, e)),
    }
    salt_pki::files::write_public_key(pub_path, &key.public_key())
        .map_err(|e| Error::pki(pub_path, e))
}

/// A key name for `--gen-keys` must be a plain file name (no path, not hidden).
pub(super) fn check_key_name(name: &str) -> Result<()> {
    salt_keystore::validate_id(name).map_err(Error::Store)
}
