//! Shared fixtures: a temp master config + pki_dir, and a pool of real RSA keys.
#![allow(dead_code, clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use assert_cmd::Command;

/// Four RSA-2048 public keys (PEM) and their private keys, generated once per test binary.
pub fn keys() -> &'static [(String, salt_pki::PrivateKey)] {
    static KEYS: OnceLock<Vec<(String, salt_pki::PrivateKey)>> = OnceLock::new();
    KEYS.get_or_init(|| {
        (0..4)
            .map(|_| {
                let k = salt_pki::PrivateKey::generate(2048).unwrap();
                (k.public_key().to_pem(), k)
            })
            .collect()
    })
}

/// A public key PEM from the pool.
pub fn pem(i: usize) -> &'static str {
    &keys()[i % 4].0
}

/// A temp master: `conf/master` pointing at `pki/` (0700) and `cache/`.
pub struct Lab {
    pub dir: tempfile::TempDir,
    pub conf: PathBuf,
    pub pki: PathBuf,
    pub cache: PathBuf,
}

impl Lab {
    pub fn new() -> Self {
        Self::with_extra("")
    }

    /// With extra YAML lines appended to the master config.
    pub fn with_extra(extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let conf = root.join("conf");
        let pki = root.join("pki");
        let cache = root.join("cache");
        fs::create_dir_all(&conf).unwrap();
        fs::create_dir_all(&cache).unwrap();
        for d in [
            "",
            "minions",
            "minions_pre",
            "minions_rejected",
            "minions_denied",
        ] {
            fs::create_dir_all(pki.join(d)).unwrap();
        }
        fs::set_permissions(&pki, fs::Permissions::from_mode(0o700)).unwrap();
        fs::write(
            conf.join("master"),
            format!(
                "root_dir: {r}\npki_dir: {p}\ncachedir: {c}\nsock_dir: {r}/sock\nkey_logfile: {r}/key.log\nlog_file: {r}/master.log\nid: testmaster\nuser: {u}\n{extra}",
                r = root.display(),
                p = pki.display(),
                c = cache.display(),
                u = current_user(),
            ),
        )
        .unwrap();
        Self {
            dir,
            conf,
            pki,
            cache,
        }
    }

    /// Put key `i` of the pool as `id` in state dir `state` ("minions_pre", ...).
    pub fn put(&self, state: &str, id: &str, i: usize) -> &Self {
        fs::write(self.pki.join(state).join(id), pem(i)).unwrap();
        self
    }

    /// A standard layout: acc1 accepted; Alpha, db1, web1, web2 pending; rej1 rejected;
    /// web1 denied (a different key).
    pub fn standard(&self) -> &Self {
        self.put("minions", "acc1", 0)
            .put("minions_pre", "Alpha", 1)
            .put("minions_pre", "db1", 2)
            .put("minions_pre", "web1", 1)
            .put("minions_pre", "web2", 3)
            .put("minions_rejected", "rej1", 0)
            .put("minions_denied", "web1", 2)
    }

    /// `salt-key -c conf` (ours), no stdin.
    pub fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("salt-key").unwrap();
        c.arg("-c").arg(&self.conf).current_dir(self.dir.path());
        c
    }

    /// Sorted file names in a state dir.
    pub fn ls(&self, state: &str) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.pki.join(state))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| !n.starts_with('.'))
            .collect();
        v.sort();
        v
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
}

/// Real Salt 3007.17's venv (`salt_testkit::salt_venv`), or `None` after
/// `salt_testkit::require` recorded the skip (under CI=true the test fails instead).
pub fn salt_venv() -> Option<PathBuf> {
    salt_testkit::require(salt_testkit::salt_venv("3007.17"))
}

pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// The user running the tests (Salt's check_user wants the configured user to be us).
pub fn current_user() -> String {
    std::process::Command::new("id")
        .arg("-un")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "root".to_owned())
}
