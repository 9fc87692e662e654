//! One gitfs remote with its options resolved (per-remote value, else the global
//! `gitfs_*`), and Salt's per-saltenv overlay (`GitProvider.add_conf_overlay`): which ref,
//! root and mountpoint a saltenv uses, and which saltenvs the remote's refs expose
//! (`_get_envs_from_ref_paths`, `env_is_exposed`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::time::Duration;

use base64::Engine as _;
use salt_config::{GitfsConfig, GitfsRemote, GitfsSaltenv, Secret};
use salt_keystore::GlobList;

use super::libgit::Refs;

/// A remote, ready to fetch and serve.
#[derive(Debug)]
pub(crate) struct Remote {
    /// The remote's id (its URL as configured).
    pub(crate) id: String,
    pub(crate) url: String,
    pub(crate) name: Option<String>,
    base: String,
    pub(crate) fallback: String,
    root: String,
    mountpoint: String,
    pub(crate) ssl_verify: bool,
    whitelist: Vec<String>,
    blacklist: Vec<String>,
    pub(crate) refspecs: Vec<String>,
    disable_saltenv_mapping: bool,
    pub(crate) ref_types: Vec<String>,
    pub(crate) update_interval: Duration,
    all_saltenvs: Option<String>,
    saltenv: BTreeMap<String, GitfsSaltenv>,
    global_saltenv: BTreeMap<String, GitfsSaltenv>,
    /// Ref → the saltenvs mapped to it.
    revmap: BTreeMap<String, Vec<String>>,
    pub(crate) user: Option<String>,
    pub(crate) password: Option<Secret>,
    pub(crate) privkey: Option<PathBuf>,
    /// `<hash_dir>/_`: the bare repository.
    pub(crate) repo_dir: PathBuf,
    /// `<cachedir>/gitfs/work/<hash>/_`: lock files.
    pub(crate) work_dir: PathBuf,
    /// The cache directory name (`name`, or the base64 hash of the URL).
    pub(crate) basehash: String,
    /// Why this remote is not fetched (a refused setting), if so.
    pub(crate) refused: Option<String>,
    /// The cache's `remote.origin.url` is known to be `url` (set or checked once by this
    /// process: a `git config` process per fetch is spared).
    pub(crate) origin_checked: AtomicBool,
    /// Fetches of this remote by this process (git's auto maintenance runs every
    /// [`super::git::MAINTENANCE_EVERY`]th, not after each).
    pub(crate) fetches: AtomicU32,
}

impl Remote {
    /// Resolves `r` against the globals of `g`; `hash_type` names cache directories as
    /// Salt does.
    pub(crate) fn new(
        r: &GitfsRemote,
        g: &GitfsConfig,
        cache_root: &std::path::Path,
        hash_type: salt_pki::HashType,
    ) -> Self {
        let strip_mp = |s: &str| strip_proto(s).trim_matches('/').to_owned();
        let mut saltenv = r.saltenv.clone();
        let mut global_saltenv = g.gitfs_saltenv.clone();
        for conf in global_saltenv.values_mut().chain(saltenv.values_mut()) {
            if let Some(mp) = &conf.mountpoint {
                conf.mountpoint = Some(strip_proto(mp).to_owned());
            }
        }
        let mut base = r.base.clone().unwrap_or_else(|| g.gitfs_base.clone());
        let mut revmap: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (env, conf) in &mut saltenv {
            if let Some(git_ref) = conf.git_ref.clone() {
                revmap.entry(git_ref.clone()).or_default().push(env.clone());
                if env == "base" {
                    conf.git_ref = None;
                    if git_ref != base {
                        tracing::warn!(
                            "The 'base' environment has been defined in the 'saltenv' param \
                             for gitfs remote {} and will override the branch/tag specified \
                             by gitfs_base (or a per-remote 'base' parameter).",
                            r.url
                        );
                        base = git_ref;
                    }
                }
            }
        }
        let mapped: BTreeSet<String> = revmap.values().flatten().cloned().collect();
        for (env, conf) in &global_saltenv {
            if let (false, Some(git_ref)) = (mapped.contains(env), &conf.git_ref) {
                revmap.entry(git_ref.clone()).or_default().push(env.clone());
            }
        }
        let basehash = r.name.clone().unwrap_or_else(|| {
            base64::engine::general_purpose::STANDARD
                .encode(hash_type.digest(r.url.as_bytes()))
                .replace('/', "_")
        });
        let hash_dir = cache_root.join(&basehash);
        let user = r
            .user
            .clone()
            .or_else(|| Some(g.gitfs_user.clone()))
            .filter(|u| !u.is_empty());
        let password = r.password.clone().or_else(|| g.gitfs_password.clone());
        let insecure = r.insecure_auth.unwrap_or(g.gitfs_insecure_auth);
        let pubkey = r.pubkey.clone().or_else(|| g.gitfs_pubkey.clone());
        let privkey = r.privkey.clone().or_else(|| g.gitfs_privkey.clone());
        let refused = (password.is_some() && r.url.starts_with("http://") && !insecure)
            .then(|| {
                format!(
                    "Invalid configuration for gitfs remote '{}': a password over plain \
                     http:// needs insecure_auth",
                    r.url
                )
            })
            .or_else(|| {
                let any_auth = user.is_some() || password.is_some() || insecure;
                ssh_keypair_refusal(&r.url, any_auth, pubkey.as_deref(), privkey.as_deref())
            });
        Self {
            id: r.url.clone(),
            url: r.url.clone(),
            name: r.name.clone(),
            base,
            fallback: r
                .fallback
                .clone()
                .unwrap_or_else(|| g.gitfs_fallback.clone()),
            root: r.root.clone().unwrap_or_else(|| g.gitfs_root.clone()),
            mountpoint: strip_mp(r.mountpoint.as_deref().unwrap_or(&g.gitfs_mountpoint)),
            ssl_verify: r.ssl_verify.unwrap_or(g.gitfs_ssl_verify),
            whitelist: r
                .saltenv_whitelist
                .clone()
                .unwrap_or_else(|| g.gitfs_saltenv_whitelist.clone()),
            blacklist: r
                .saltenv_blacklist
                .clone()
                .unwrap_or_else(|| g.gitfs_saltenv_blacklist.clone()),
            refspecs: r
                .refspecs
                .clone()
                .unwrap_or_else(|| g.gitfs_refspecs.clone()),
            disable_saltenv_mapping: r
                .disable_saltenv_mapping
                .unwrap_or(g.gitfs_disable_saltenv_mapping),
            ref_types: r
                .ref_types
                .clone()
                .unwrap_or_else(|| g.gitfs_ref_types.clone()),
            update_interval: r.update_interval.unwrap_or(g.gitfs_update_interval),
            all_saltenvs: r.all_saltenvs.clone(),
            saltenv,
            global_saltenv,
            revmap,
            user: user.filter(|_| password.is_some()),
            password,
            privkey,
            repo_dir: hash_dir.join("_"),
            work_dir: cache_root.join("work").join(&basehash).join("_"),
            basehash,
            refused,
            origin_checked: AtomicBool::new(false),
            fetches: AtomicU32::new(0),
        }
    }

    /// A per-saltenv setting: the remote's `saltenv` entry, else `gitfs_saltenv`'s.
    fn per_saltenv(&self, env: &str, pick: fn(&GitfsSaltenv) -> Option<&String>) -> Option<&str> {
        self.saltenv
            .get(env)
            .and_then(pick)
            .or_else(|| self.global_saltenv.get(env).and_then(pick))
            .map(String::as_str)
    }

    /// The branch or tag served as `base`.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// `all_saltenvs`, when set.
    pub(crate) fn all_saltenvs(&self) -> Option<&str> {
        self.all_saltenvs.as_deref()
    }

    /// The branch, tag or commit `env` is served from (`None`: not served).
    pub(crate) fn ref_for(&self, env: &str) -> Option<String> {
        let per = self.per_saltenv(env, |c| c.git_ref.as_ref());
        if let Some(all) = &self.all_saltenvs {
            return Some(all.clone());
        }
        if env == "base" {
            return Some(self.base.clone());
        }
        if self.disable_saltenv_mapping {
            return per.map(str::to_owned);
        }
        Some(per.unwrap_or(env).to_owned())
    }

    /// The repository subdirectory served for `env` (no trailing `/`).
    pub(crate) fn root_for(&self, env: &str) -> String {
        self.per_saltenv(env, |c| c.root.as_ref())
            .unwrap_or(&self.root)
            .trim_end_matches('/')
            .to_owned()
    }

    /// Where `env`'s files appear in `salt://` (no trailing `/`).
    pub(crate) fn mountpoint_for(&self, env: &str) -> String {
        self.per_saltenv(env, |c| c.mountpoint.as_ref())
            .unwrap_or(&self.mountpoint)
            .trim_end_matches('/')
            .to_owned()
    }

    /// `env_is_exposed`: the whitelist and blacklist (globs, exact names or regexes).
    pub(crate) fn exposed(&self, env: &str) -> bool {
        let hit = |list: &[String]| list.iter().any(|e| expr_match(env, e));
        match (self.whitelist.is_empty(), self.blacklist.is_empty()) {
            (true, true) => true,
            (false, true) => hit(&self.whitelist),
            (true, false) => !hit(&self.blacklist),
            (false, false) => hit(&self.whitelist) && !hit(&self.blacklist),
        }
    }

    /// The saltenvs this remote's refs expose, plus every saltenv mapped by `saltenv`, kept
    /// when exposed (`GitFS.envs` for one remote).
    pub(crate) fn envs(&self, refs: &Refs) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut check = |name: &str| {
            if let Some(envs) = self.revmap.get(name) {
                out.extend(envs.iter().cloned());
            } else if name == self.base {
                out.insert("base".to_owned());
            } else if !self.disable_saltenv_mapping {
                out.insert(name.to_owned());
            }
        };
        if self.ref_types.iter().any(|t| t == "branch") {
            refs.branches.keys().for_each(|b| check(b));
        }
        if self.ref_types.iter().any(|t| t == "tag") {
            refs.tags.keys().for_each(|t| check(t));
        }
        let mut out: BTreeSet<String> = out;
        if is_hex(&self.base) {
            out.insert("base".to_owned());
        }
        out.extend(self.revmap.values().flatten().cloned());
        out.retain(|e| self.exposed(e));
        out
    }
}

/// `salt.utils.url.strip_proto`: drops a leading `salt://`.
/// Salt's `verify_auth` for an ssh remote (its pygit2 provider's `Keypair`): with any
/// authentication parameter set, the URL must name the user, and `pubkey` and `privkey`
/// must both be given and exist. `None`: fine (or not ssh).
fn ssh_keypair_refusal(
    url: &str,
    any_auth: bool,
    pubkey: Option<&std::path::Path>,
    privkey: Option<&std::path::Path>,
) -> Option<String> {
    if std::path::Path::new(url).is_absolute()
        || !(any_auth || pubkey.is_some() || privkey.is_some())
    {
        return None;
    }
    let (transport, address) = url.split_once("://").unwrap_or(("ssh", url));
    if !transport.to_ascii_lowercase().contains("ssh") {
        return None;
    }
    if !address.contains('@') {
        return Some(format!(
            "Keypair specified for gitfs remote '{url}', but remote URL is missing a username"
        ));
    }
    let missing: Vec<&str> = [("pubkey", pubkey), ("privkey", privkey)]
        .iter()
        .filter(|(_, p)| p.is_none())
        .map(|(n, _)| *n)
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "Incomplete authentication information for gitfs remote '{url}'. Missing \
             parameters: {}",
            missing.join(", ")
        ));
    }
    [("pubkey", pubkey), ("privkey", privkey)]
        .into_iter()
        .find_map(|(kind, p)| {
            let p = p?;
            (!p.is_file()).then(|| {
                format!(
                    "SSH {kind} ({}) for gitfs remote '{url}' could not be found",
                    p.display()
                )
            })
        })
}

fn strip_proto(s: &str) -> &str {
    s.strip_prefix("salt://").unwrap_or(s)
}

/// `salt.utils.stringutils.is_hex`: Python's `int(value, 16)` succeeds.
pub(crate) fn is_hex(s: &str) -> bool {
    let t = s.trim();
    let t = t.strip_prefix(['-', '+']).unwrap_or(t);
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    !t.is_empty()
        && !t.starts_with('_')
        && !t.ends_with('_')
        && !t.contains("__")
        && t.chars().all(|c| c.is_ascii_hexdigit() || c == '_')
}

/// `salt.utils.stringutils.expr_match`: `fnmatch`, else an anchored regex.
fn expr_match(line: &str, expr: &str) -> bool {
    if GlobList::single(expr).is_ok_and(|g| g.is_match(line)) {
        return true;
    }
    regex::Regex::new(&format!(r"\A(?:{expr})\z")).is_ok_and(|r| r.is_match(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_keypair_checked_as_salt() {
        use super::ssh_keypair_refusal as refusal;
        let key = std::env::temp_dir().join(format!("gitfs-key-{}", std::process::id()));
        std::fs::write(&key, "k").unwrap();
        let k = Some(key.as_path());
        assert_eq!(refusal("ssh://git@h/r.git", false, None, None), None);
        assert_eq!(refusal("file:///srv/r.git", true, k, None), None);
        assert_eq!(refusal("https://h/r.git", true, None, None), None);
        assert_eq!(refusal("ssh://git@h/r.git", false, k, k), None);
        assert_eq!(refusal("git@h:r.git", false, k, k), None);
        assert!(
            refusal("ssh://h/r.git", false, k, k)
                .unwrap()
                .contains("missing a username")
        );
        assert!(
            refusal("git@h:r.git", false, None, k)
                .unwrap()
                .ends_with("Missing parameters: pubkey")
        );
        let gone = key.with_extension("gone");
        assert!(
            refusal("ssh://git@h/r.git", false, k, Some(&gone))
                .unwrap()
                .starts_with("SSH privkey")
        );
        let _ = std::fs::remove_file(&key);
    }

    #[test]
    fn hex_like_python_int16() {
        assert!(is_hex("deadbeef"));
        assert!(is_hex("0xff"));
        assert!(!is_hex("master"));
        assert!(!is_hex(""));
    }

    #[test]
    fn whitelist_globs_and_regexes() {
        assert!(expr_match("dev", "dev"));
        assert!(expr_match("feature-1", "feature-*"));
        assert!(expr_match("v1.2", r"v\d\.\d"));
        assert!(!expr_match("prod", "dev*"));
    }
}
