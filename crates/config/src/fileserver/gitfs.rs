//! `GitfsConfig`: the `gitfs_*` options of the master (Salt's `salt/fileserver/gitfs.py` and
//! `salt/utils/gitfs.py`), read and checked as Salt's `GitProvider.__init__` checks them: an
//! unknown per-remote parameter, a bad `ref_types` entry or a provider we do not have is a
//! config error naming it (Salt's `failhard`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::Problem;
use crate::node::{Kind, Node};
use crate::reader::{Reader, boolean, duration, string, string_list};
use crate::salt_options;
use crate::types::{Secret, invalid};

/// Parameters a remote may override (Salt's `PER_REMOTE_OVERRIDES` + `PER_REMOTE_ONLY` +
/// `AUTH_PARAMS`, all accepted by the `gitcli` provider).
pub const PER_REMOTE_PARAMS: &[&str] = &[
    "base",
    "fallback",
    "mountpoint",
    "root",
    "ssl_verify",
    "saltenv_whitelist",
    "saltenv_blacklist",
    "refspecs",
    "disable_saltenv_mapping",
    "ref_types",
    "update_interval",
    "all_saltenvs",
    "name",
    "saltenv",
    "user",
    "password",
    "pubkey",
    "privkey",
    "passphrase",
    "insecure_auth",
];

/// Salt's `gitfs_ref_types` values.
const REF_TYPES: &[&str] = &["branch", "tag", "sha"];

/// Settings of one saltenv (`saltenv:` of a remote, or `gitfs_saltenv`).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
#[non_exhaustive]
pub struct GitfsSaltenv {
    /// The branch, tag or commit served as this saltenv.
    pub git_ref: Option<String>,
    /// Subdirectory of the repository served.
    pub root: Option<String>,
    /// Where in `salt://` the files appear.
    pub mountpoint: Option<String>,
}

/// One entry of `gitfs_remotes`: the URL and the parameters set for it (unset ones take the
/// global `gitfs_*` value).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct GitfsRemote {
    /// The remote's URL (Salt's remote id).
    pub url: String,
    /// Cache directory name instead of the hash of the URL.
    pub name: Option<String>,
    /// Branch or tag served as `base`.
    pub base: Option<String>,
    /// Branch or tag served for a saltenv the remote does not have.
    pub fallback: Option<String>,
    /// Subdirectory of the repository served.
    pub root: Option<String>,
    /// Where in `salt://` the files appear.
    pub mountpoint: Option<String>,
    /// Verify the server's TLS certificate.
    pub ssl_verify: Option<bool>,
    /// Saltenvs exposed (globs or regexes).
    pub saltenv_whitelist: Option<Vec<String>>,
    /// Saltenvs hidden (globs or regexes).
    pub saltenv_blacklist: Option<Vec<String>>,
    /// Refspecs fetched.
    pub refspecs: Option<Vec<String>>,
    /// Serve only `base` and the saltenvs mapped in `saltenv`.
    pub disable_saltenv_mapping: Option<bool>,
    /// Which refs become saltenvs (`branch`, `tag`, `sha`).
    pub ref_types: Option<Vec<String>>,
    /// Seconds between fetches of this remote.
    pub update_interval: Option<Duration>,
    /// One branch or tag served for every saltenv.
    pub all_saltenvs: Option<String>,
    /// Per-saltenv settings.
    pub saltenv: BTreeMap<String, GitfsSaltenv>,
    /// HTTP(S) user name.
    pub user: Option<String>,
    /// HTTP(S) password.
    pub password: Option<Secret>,
    /// SSH public key file.
    pub pubkey: Option<PathBuf>,
    /// SSH private key file.
    pub privkey: Option<PathBuf>,
    /// Allow a password over plain `http://`.
    pub insecure_auth: Option<bool>,
}

salt_options! {
    /// The `gitfs` file server backend (served when `fileserver_backend` lists `gitfs`).
    #[derive(Clone, Debug, PartialEq)]
    #[non_exhaustive]
    pub struct GitfsConfig {
        /// The repositories served, in order (a URL, or a URL with per-remote parameters).
        #[salt_default = "[]"]
        pub gitfs_remotes: Vec<GitfsRemote>,
        /// Git access: only `gitcli` (the `git` command, as Salt 3008's provider); `pygit2`
        /// and `gitpython` are refused by name.
        #[salt_default = "gitcli (salt-rs; Salt picks pygit2, then gitpython)"]
        pub gitfs_provider: String,
        /// Branch or tag served as `base`.
        #[salt_default = "master"]
        pub gitfs_base: String,
        /// Subdirectory of each repository served.
        #[salt_default = "''"]
        pub gitfs_root: String,
        /// Where in `salt://` the files appear.
        #[salt_default = "''"]
        pub gitfs_mountpoint: String,
        /// Branch or tag served for a saltenv a remote does not have.
        #[salt_default = "''"]
        pub gitfs_fallback: String,
        /// Per-saltenv settings for every remote (`ref`, `root`, `mountpoint`).
        #[salt_default = "[]"]
        pub gitfs_saltenv: BTreeMap<String, GitfsSaltenv>,
        /// Saltenvs exposed (globs or regexes; empty: all).
        #[salt_default = "[]"]
        pub gitfs_saltenv_whitelist: Vec<String>,
        /// Saltenvs hidden (globs or regexes).
        #[salt_default = "[]"]
        pub gitfs_saltenv_blacklist: Vec<String>,
        /// Seconds between fetches (per remote: `update_interval`).
        #[salt_default = "60"]
        pub gitfs_update_interval: Duration,
        /// Honour an update lock left by another process (else take it over when its
        /// process is gone).
        #[salt_default = "True"]
        pub gitfs_global_lock: bool,
        /// Verify the server's TLS certificate.
        #[salt_default = "True"]
        pub gitfs_ssl_verify: bool,
        /// Which refs become saltenvs (`branch`, `tag`, `sha`).
        #[salt_default = "[branch, tag, sha]"]
        pub gitfs_ref_types: Vec<String>,
        /// Refspecs fetched.
        #[salt_default = "['+refs/heads/*:refs/remotes/origin/*', '+refs/tags/*:refs/tags/*']"]
        pub gitfs_refspecs: Vec<String>,
        /// Serve only `base` and the saltenvs mapped in `saltenv`.
        #[salt_default = "False"]
        pub gitfs_disable_saltenv_mapping: bool,
        /// HTTP(S) user name.
        #[salt_default = "''"]
        pub gitfs_user: String,
        /// HTTP(S) password (sent to `git` through a credential helper's environment).
        #[salt_default = "''"]
        pub gitfs_password: Option<Secret>,
        /// SSH public key file.
        #[salt_default = "''"]
        pub gitfs_pubkey: Option<PathBuf>,
        /// SSH private key file (`ssh -i`).
        #[salt_default = "''"]
        pub gitfs_privkey: Option<PathBuf>,
        /// Allow a password over plain `http://`.
        #[salt_default = "False"]
        pub gitfs_insecure_auth: bool,
    }
}

impl GitfsConfig {
    /// Every option of this group, for the master's option table.
    pub(crate) fn option_docs() -> Vec<crate::OptionDoc> {
        let mut docs = Self::field_docs();
        docs.push(crate::OptionDoc {
            name: "gitfs_passphrase",
            default: "''",
            doc: "Refused: the `git` command cannot take a key passphrase (use ssh-agent)."
                .to_owned(),
        });
        docs
    }

    /// Reads the group; problems are recorded in `r`.
    pub(crate) fn read(r: &mut Reader<'_>) -> Self {
        let refspecs = vec![
            "+refs/heads/*:refs/remotes/origin/*".to_owned(),
            "+refs/tags/*:refs/tags/*".to_owned(),
        ];
        r.get("gitfs_passphrase", (), |n| match &n.kind {
            Kind::Str(s) if s.is_empty() => Ok(()),
            _ => Err(invalid(
                "gitfs_passphrase",
                "a key passphrase is not implemented by salt-rs (gitcli provider); \
                 load the key into ssh-agent or use a key without one",
            )),
        });
        Self {
            gitfs_remotes: r.get("gitfs_remotes", Vec::new(), remotes),
            gitfs_provider: r.get("gitfs_provider", "gitcli".to_owned(), |n| {
                let p = string(n)?.to_lowercase();
                match p.as_str() {
                    "gitcli" => Ok(p),
                    _ => Err(invalid(
                        &p,
                        "only the `gitcli` gitfs provider (the git command) is implemented \
                         by salt-rs: set `gitfs_provider: gitcli` (Salt 3008 has the same \
                         provider; docs/decisions.md)",
                    )),
                }
            }),
            gitfs_base: r.get("gitfs_base", "master".to_owned(), string),
            gitfs_root: r.get("gitfs_root", String::new(), string),
            gitfs_mountpoint: r.get("gitfs_mountpoint", String::new(), string),
            gitfs_fallback: r.get("gitfs_fallback", String::new(), string),
            gitfs_saltenv: r.get("gitfs_saltenv", BTreeMap::new(), saltenv_map),
            gitfs_saltenv_whitelist: r.get("gitfs_saltenv_whitelist", Vec::new(), string_list),
            gitfs_saltenv_blacklist: r.get("gitfs_saltenv_blacklist", Vec::new(), string_list),
            gitfs_update_interval: r.get(
                "gitfs_update_interval",
                Duration::from_secs(60),
                duration(Duration::from_secs(1)),
            ),
            gitfs_global_lock: r.get("gitfs_global_lock", true, boolean),
            gitfs_ssl_verify: r.get("gitfs_ssl_verify", true, boolean),
            gitfs_ref_types: r.get(
                "gitfs_ref_types",
                REF_TYPES.iter().map(|s| (*s).to_owned()).collect(),
                ref_types,
            ),
            gitfs_refspecs: r.get("gitfs_refspecs", refspecs, string_list),
            gitfs_disable_saltenv_mapping: r.get("gitfs_disable_saltenv_mapping", false, boolean),
            gitfs_user: r.get("gitfs_user", String::new(), string),
            gitfs_password: r
                .get("gitfs_password", None, |n| string(n).map(Some))
                .filter(|s| !s.is_empty())
                .map(Secret::new),
            gitfs_pubkey: r.get("gitfs_pubkey", None, opt_path),
            gitfs_privkey: r.get("gitfs_privkey", None, opt_path),
            gitfs_insecure_auth: r.get("gitfs_insecure_auth", false, boolean),
        }
    }
}

fn opt_path(n: &Node) -> Result<Option<PathBuf>, Problem> {
    let s = string(n)?;
    Ok((!s.is_empty()).then(|| PathBuf::from(s)))
}

fn ref_types(n: &Node) -> Result<Vec<String>, Problem> {
    let list: Vec<String> = string_list(n)?.iter().map(|s| s.to_lowercase()).collect();
    if let Some(bad) = list.iter().find(|t| !REF_TYPES.contains(&t.as_str())) {
        return Err(invalid(
            bad,
            "invalid ref_types; the supported values are: branch, tag, sha",
        ));
    }
    Ok(list)
}

/// Salt's `repack_dictlist`: a mapping, or a list of one-key mappings, as `(key, value)`.
fn dictlist(n: &Node) -> Result<Vec<(String, &Node)>, Problem> {
    match &n.kind {
        Kind::Map(entries) => Ok(entries.iter().map(|(k, v)| (k.key_string(), v)).collect()),
        Kind::Seq(items) => {
            let mut out = Vec::new();
            for item in items {
                let Kind::Map(entries) = &item.kind else {
                    return Err(Problem::WrongType {
                        expected: "a list of one-key mappings",
                        found: item.describe(),
                    });
                };
                out.extend(entries.iter().map(|(k, v)| (k.key_string(), v)));
            }
            Ok(out)
        }
        _ => Err(Problem::WrongType {
            expected: "a list of one-key mappings",
            found: n.describe(),
        }),
    }
}

/// `gitfs_saltenv` or a remote's `saltenv`: `{env: [{ref: ...}, {root: ...}]}`.
fn saltenv_map(n: &Node) -> Result<BTreeMap<String, GitfsSaltenv>, Problem> {
    let mut out = BTreeMap::new();
    for (env, conf) in dictlist(n)? {
        let mut s = GitfsSaltenv::default();
        for (k, v) in dictlist(conf)? {
            let v = string(v)?;
            match k.as_str() {
                "ref" => s.git_ref = Some(v),
                "root" => s.root = Some(v),
                "mountpoint" => s.mountpoint = Some(v),
                other => {
                    return Err(invalid(
                        other,
                        &format!(
                            "invalid per-saltenv parameter for saltenv {env:?}; valid \
                             parameters are: ref, root, mountpoint"
                        ),
                    ));
                }
            }
        }
        out.insert(env, s);
    }
    Ok(out)
}

/// `gitfs_remotes`: each a URL, or `{url: [{param: value}, ...]}`.
fn remotes(n: &Node) -> Result<Vec<GitfsRemote>, Problem> {
    let Kind::Seq(items) = &n.kind else {
        return Err(Problem::WrongType {
            expected: "a list of remotes",
            found: n.describe(),
        });
    };
    let list = items.iter().map(remote).collect::<Result<Vec<_>, _>>()?;
    // Two remotes sharing a cache directory (same `name`, or the same URL without one).
    let mut seen = std::collections::HashSet::new();
    for rem in &list {
        let key = rem
            .name
            .clone()
            .unwrap_or_else(|| format!("url:{}", rem.url));
        if !seen.insert(key) {
            return Err(invalid(
                &rem.url,
                "gitfs remotes have conflicting cachedirs; give each a per-remote `name`",
            ));
        }
    }
    Ok(list)
}

fn remote(n: &Node) -> Result<GitfsRemote, Problem> {
    let (url, params) = match &n.kind {
        Kind::Str(_) => (string(n)?, None),
        Kind::Map(entries) if entries.len() == 1 => {
            (entries[0].0.key_string(), Some(&entries[0].1))
        }
        _ => {
            return Err(Problem::WrongType {
                expected: "a remote URL, or a URL mapped to its parameters",
                found: n.describe(),
            });
        }
    };
    let mut r = GitfsRemote {
        url,
        ..GitfsRemote::default()
    };
    let Some(params) = params else {
        return Ok(r);
    };
    let params = match &params.kind {
        Kind::Null => Vec::new(),
        _ => dictlist(params)?,
    };
    if params.is_empty() {
        return Err(invalid(
            &r.url,
            "invalid per-remote configuration; if no per-remote parameters are set, remove \
             the trailing colon after the URL",
        ));
    }
    for (k, v) in params {
        let at = |p: Problem| match p {
            Problem::WrongType { expected, found } => Problem::WrongType {
                expected,
                found: format!("{found} for `{k}` of remote {:?}", r.url),
            },
            other => other,
        };
        match k.as_str() {
            "name" => r.name = Some(string(v).map_err(at)?),
            "base" => r.base = Some(string(v).map_err(at)?),
            "fallback" => r.fallback = Some(string(v).map_err(at)?),
            "root" => r.root = Some(string(v).map_err(at)?),
            "mountpoint" => r.mountpoint = Some(string(v).map_err(at)?),
            "all_saltenvs" => r.all_saltenvs = Some(string(v).map_err(at)?),
            "user" => r.user = Some(string(v).map_err(at)?),
            "password" => r.password = Some(Secret::new(string(v).map_err(at)?)),
            "pubkey" => r.pubkey = opt_path(v).map_err(at)?,
            "privkey" => r.privkey = opt_path(v).map_err(at)?,
            "ssl_verify" => r.ssl_verify = Some(boolean(v).map_err(at)?),
            "insecure_auth" => r.insecure_auth = Some(boolean(v).map_err(at)?),
            "disable_saltenv_mapping" => {
                r.disable_saltenv_mapping = Some(boolean(v).map_err(at)?);
            }
            "saltenv_whitelist" => r.saltenv_whitelist = Some(string_list(v).map_err(at)?),
            "saltenv_blacklist" => r.saltenv_blacklist = Some(string_list(v).map_err(at)?),
            "refspecs" => r.refspecs = Some(string_list(v).map_err(at)?),
            "ref_types" => r.ref_types = Some(ref_types(v).map_err(at)?),
            "update_interval" => {
                r.update_interval = Some(duration(Duration::from_secs(1))(v).map_err(at)?);
            }
            "saltenv" => r.saltenv = saltenv_map(v).map_err(at)?,
            "passphrase" => {
                return Err(invalid(
                    "passphrase",
                    &format!(
                        "a key passphrase (remote {:?}) is not implemented by salt-rs \
                         (gitcli provider); load the key into ssh-agent or use a key without one",
                        r.url
                    ),
                ));
            }
            other => {
                return Err(invalid(
                    other,
                    &format!(
                        "invalid gitfs configuration parameter in remote {:?}; valid \
                         parameters are: {}",
                        r.url,
                        PER_REMOTE_PARAMS.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use crate::{LoadOptions, MasterConfig};

    fn load(yaml: &str) -> Result<super::GitfsConfig, String> {
        MasterConfig::from_yaml_str(yaml, &LoadOptions::new("/nonexistent"))
            .map(|l| l.config.fileserver.gitfs)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn remotes_with_parameters() {
        let c = load(
            "gitfs_remotes:\n  - file:///a.git\n  - https://x/b.git:\n    - name: b\n    - root: salt\n    - mountpoint: salt://m/n\n    - saltenv:\n      - dev:\n        - ref: develop\n    - update_interval: 5\n",
        )
        .unwrap();
        assert_eq!(c.gitfs_remotes.len(), 2);
        assert_eq!(c.gitfs_remotes[0].url, "file:///a.git");
        let b = &c.gitfs_remotes[1];
        assert_eq!(b.name.as_deref(), Some("b"));
        assert_eq!(b.root.as_deref(), Some("salt"));
        assert_eq!(b.saltenv["dev"].git_ref.as_deref(), Some("develop"));
        assert_eq!(b.update_interval, Some(std::time::Duration::from_secs(5)));
        assert_eq!(c.gitfs_base, "master");
        assert_eq!(c.gitfs_provider, "gitcli");
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        let e = load("gitfs_remotes:\n  - file:///a.git:\n    - bogus: 1\n").unwrap_err();
        assert!(e.contains("bogus"), "{e}");
        let e = load("gitfs_provider: pygit2\n").unwrap_err();
        assert!(e.contains("pygit2"), "{e}");
        let e = load("gitfs_ref_types: [branch, commit]\n").unwrap_err();
        assert!(e.contains("commit"), "{e}");
        let e = load("gitfs_passphrase: x\n").unwrap_err();
        assert!(e.contains("passphrase"), "{e}");
        let e = load("gitfs_remotes:\n  - file:///a.git\n  - file:///a.git\n").unwrap_err();
        assert!(e.contains("name"), "{e}");
    }
}
