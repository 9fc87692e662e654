//! `git_pillar`: the `git_pillar_*` options (Salt's `salt/pillar/git_pillar.py` over
//! `salt/utils/gitfs.py` `GitPillar`) and the remotes of an `ext_pillar: - git: [...]` item,
//! checked as Salt's `GitProvider.__init__` checks them (an unknown per-remote parameter, or
//! `base` on a remote whose branch is not `__env__`, is a config error naming it).

use std::path::PathBuf;
use std::time::Duration;

use super::gitfs::{GitfsConfig, GitfsRemote};
use crate::error::Problem;
use crate::node::{Kind, Node};
use crate::reader::{Reader, boolean, duration, string, string_list};
use crate::salt_options;
use crate::types::{Secret, invalid};

/// Salt's `PER_REMOTE_OVERRIDES` + `PER_REMOTE_ONLY` of git_pillar, and the auth parameters.
pub const GIT_PILLAR_PARAMS: &[&str] = &[
    "base",
    "env",
    "root",
    "ssl_verify",
    "refspecs",
    "fallback",
    "name",
    "mountpoint",
    "all_saltenvs",
    "user",
    "password",
    "pubkey",
    "privkey",
    "insecure_auth",
];

/// One remote of a `git` ext_pillar item: `"<branch> <url>"` (or a URL, on
/// `git_pillar_branch`), with its per-remote parameters.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct GitPillarRemote {
    /// The remote's id as written (`"<branch> <url>"` or `"<url>"`).
    pub id: String,
    /// The branch or tag checked out (`__env__`: the pillarenv/saltenv asked for).
    pub branch: String,
    /// The pillar environment this remote's SLS are compiled in (`env`, else
    /// `git_pillar_env`; empty: from the branch).
    pub env: String,
    /// URL and the parameters git_pillar shares with gitfs (`name`, `root`, `mountpoint`,
    /// `base`, `fallback`, `all_saltenvs`, `ssl_verify`, `refspecs`, auth).
    pub remote: GitfsRemote,
}

salt_options! {
    /// The git external pillar's global options (each remote may override some).
    #[derive(Clone, Debug, PartialEq)]
    #[non_exhaustive]
    pub struct GitPillarConfig {
        /// Git access: only `gitcli` (the `git` command).
        #[salt_default = "gitcli (salt-rs; Salt picks pygit2, then gitpython)"]
        pub git_pillar_provider: String,
        /// Branch of a remote written without one.
        #[salt_default = "master"]
        pub git_pillar_branch: String,
        /// Branch or tag whose pillar is the `base` environment.
        #[salt_default = "master"]
        pub git_pillar_base: String,
        /// Pillar environment of every remote (empty: from its branch).
        #[salt_default = "''"]
        pub git_pillar_env: String,
        /// Subdirectory of each repository holding the pillar SLS.
        #[salt_default = "''"]
        pub git_pillar_root: String,
        /// Branch checked out for an `__env__` remote whose environment has none.
        #[salt_default = "''"]
        pub git_pillar_fallback: String,
        /// Verify the server's TLS certificate.
        #[salt_default = "True"]
        pub git_pillar_ssl_verify: bool,
        /// Honour an update lock left by another process.
        #[salt_default = "True"]
        pub git_pillar_global_lock: bool,
        /// Other remotes of the same environment are searched for `include:`d SLS.
        #[salt_default = "True"]
        pub git_pillar_includes: bool,
        /// Seconds between background fetches.
        #[salt_default = "60"]
        pub git_pillar_update_interval: Duration,
        /// Refspecs fetched.
        #[salt_default = "['+refs/heads/*:refs/remotes/origin/*', '+refs/tags/*:refs/tags/*']"]
        pub git_pillar_refspecs: Vec<String>,
        /// HTTP(S) user name.
        #[salt_default = "''"]
        pub git_pillar_user: String,
        /// HTTP(S) password.
        #[salt_default = "''"]
        pub git_pillar_password: Option<Secret>,
        /// SSH public key file.
        #[salt_default = "''"]
        pub git_pillar_pubkey: Option<PathBuf>,
        /// SSH private key file (`ssh -i`).
        #[salt_default = "''"]
        pub git_pillar_privkey: Option<PathBuf>,
        /// Allow a password over plain `http://`.
        #[salt_default = "False"]
        pub git_pillar_insecure_auth: bool,
    }
}

impl GitPillarConfig {
    /// Every option of this group, for the master's option table.
    pub(crate) fn option_docs() -> Vec<crate::OptionDoc> {
        let mut docs = Self::field_docs();
        docs.push(crate::OptionDoc {
            name: "git_pillar_passphrase",
            default: "''",
            doc: "Refused: the `git` command cannot take a key passphrase (use ssh-agent)."
                .to_owned(),
        });
        docs
    }

    /// Reads the group; problems are recorded in `r`.
    pub(crate) fn read(r: &mut Reader<'_>) -> Self {
        r.get("git_pillar_passphrase", (), |n| match &n.kind {
            Kind::Str(s) if s.is_empty() => Ok(()),
            _ => Err(invalid(
                "git_pillar_passphrase",
                "a key passphrase is not implemented by salt-rs (gitcli provider); load the \
                 key into ssh-agent or use a key without one",
            )),
        });
        let refspecs = vec![
            "+refs/heads/*:refs/remotes/origin/*".to_owned(),
            "+refs/tags/*:refs/tags/*".to_owned(),
        ];
        let opt_path = |n: &Node| string(n).map(|s| (!s.is_empty()).then(|| PathBuf::from(s)));
        Self {
            git_pillar_provider: r.get("git_pillar_provider", "gitcli".to_owned(), |n| {
                let p = string(n)?.to_lowercase();
                match p.as_str() {
                    "gitcli" => Ok(p),
                    _ => Err(invalid(
                        &p,
                        "only the `gitcli` git_pillar provider (the git command) is \
                         implemented by salt-rs: set `git_pillar_provider: gitcli` (Salt 3008 \
                         has the same provider; docs/decisions.md)",
                    )),
                }
            }),
            git_pillar_branch: r.get("git_pillar_branch", "master".to_owned(), string),
            git_pillar_base: r.get("git_pillar_base", "master".to_owned(), string),
            git_pillar_env: r.get("git_pillar_env", String::new(), string),
            git_pillar_root: r.get("git_pillar_root", String::new(), string),
            git_pillar_fallback: r.get("git_pillar_fallback", String::new(), string),
            git_pillar_ssl_verify: r.get("git_pillar_ssl_verify", true, boolean),
            git_pillar_global_lock: r.get("git_pillar_global_lock", true, boolean),
            git_pillar_includes: r.get("git_pillar_includes", true, boolean),
            git_pillar_update_interval: r.get(
                "git_pillar_update_interval",
                Duration::from_secs(60),
                duration(Duration::from_secs(1)),
            ),
            git_pillar_refspecs: r.get("git_pillar_refspecs", refspecs, string_list),
            git_pillar_user: r.get("git_pillar_user", String::new(), string),
            git_pillar_password: r
                .get("git_pillar_password", None, |n| string(n).map(Some))
                .filter(|s| !s.is_empty())
                .map(Secret::new),
            git_pillar_pubkey: r.get("git_pillar_pubkey", None, opt_path),
            git_pillar_privkey: r.get("git_pillar_privkey", None, opt_path),
            git_pillar_insecure_auth: r.get("git_pillar_insecure_auth", false, boolean),
        }
    }

    /// These options as gitfs's globals, for the shared git code.
    pub fn as_gitfs(&self) -> GitfsConfig {
        GitfsConfig {
            gitfs_remotes: Vec::new(),
            gitfs_provider: self.git_pillar_provider.clone(),
            gitfs_base: self.git_pillar_base.clone(),
            gitfs_root: self.git_pillar_root.clone(),
            gitfs_mountpoint: String::new(),
            gitfs_fallback: self.git_pillar_fallback.clone(),
            gitfs_saltenv: std::collections::BTreeMap::new(),
            gitfs_saltenv_whitelist: Vec::new(),
            gitfs_saltenv_blacklist: Vec::new(),
            gitfs_update_interval: self.git_pillar_update_interval,
            gitfs_global_lock: self.git_pillar_global_lock,
            gitfs_ssl_verify: self.git_pillar_ssl_verify,
            gitfs_ref_types: vec!["branch".to_owned(), "tag".to_owned()],
            gitfs_refspecs: self.git_pillar_refspecs.clone(),
            gitfs_disable_saltenv_mapping: false,
            gitfs_user: self.git_pillar_user.clone(),
            gitfs_password: self.git_pillar_password.clone(),
            gitfs_pubkey: self.git_pillar_pubkey.clone(),
            gitfs_privkey: self.git_pillar_privkey.clone(),
            gitfs_insecure_auth: self.git_pillar_insecure_auth,
        }
    }
}

/// The remotes of a `git` ext_pillar item (its argument: a list of `"<branch> <url>"`, each
/// alone or mapped to a list of `{param: value}`).
pub(crate) fn remotes(arg: &Node) -> Result<Vec<GitPillarRemote>, Problem> {
    let items: Vec<&Node> = match &arg.kind {
        Kind::Seq(items) => items.iter().collect(),
        _ => vec![arg],
    };
    items.into_iter().map(remote).collect()
}

fn remote(n: &Node) -> Result<GitPillarRemote, Problem> {
    let (id, params) = match &n.kind {
        Kind::Str(_) => (string(n)?, None),
        Kind::Map(entries) if entries.len() == 1 => {
            (entries[0].0.key_string(), Some(&entries[0].1))
        }
        _ => {
            return Err(Problem::WrongType {
                expected: "a git_pillar remote (\"<branch> <url>\"), or one mapped to its \
                           parameters",
                found: n.describe(),
            });
        }
    };
    let mut words = id.trim().splitn(2, char::is_whitespace);
    let (branch, url) = match (words.next(), words.next()) {
        (Some(b), Some(u)) => (b.to_owned(), u.trim().to_owned()),
        _ => (String::new(), id.trim().to_owned()),
    };
    let mut r = GitPillarRemote {
        id: id.clone(),
        branch,
        env: String::new(),
        remote: GitfsRemote {
            url,
            ..GitfsRemote::default()
        },
    };
    let params = match params.map(|p| &p.kind) {
        None => return Ok(r),
        Some(Kind::Seq(items)) if !items.is_empty() => items,
        _ => {
            return Err(invalid(
                &id,
                "invalid per-remote configuration for git_pillar remote; if no per-remote \
                 parameters are set, remove the trailing colon after the URL",
            ));
        }
    };
    for item in params {
        let Kind::Map(entries) = &item.kind else {
            return Err(Problem::WrongType {
                expected: "a list of one-key mappings",
                found: item.describe(),
            });
        };
        for (k, v) in entries {
            let k = k.key_string();
            let at = |p: Problem| match p {
                Problem::WrongType { expected, found } => Problem::WrongType {
                    expected,
                    found: format!("{found} for `{k}` of git_pillar remote {id:?}"),
                },
                other => other,
            };
            let g = &mut r.remote;
            match k.as_str() {
                "env" => r.env = string(v).map_err(at)?,
                "name" => g.name = Some(string(v).map_err(at)?),
                "base" => g.base = Some(string(v).map_err(at)?),
                "fallback" => g.fallback = Some(string(v).map_err(at)?),
                "root" => g.root = Some(string(v).map_err(at)?),
                "mountpoint" => g.mountpoint = Some(string(v).map_err(at)?),
                "all_saltenvs" => g.all_saltenvs = Some(string(v).map_err(at)?),
                "user" => g.user = Some(string(v).map_err(at)?),
                "password" => g.password = Some(Secret::new(string(v).map_err(at)?)),
                "pubkey" => g.pubkey = Some(PathBuf::from(string(v).map_err(at)?)),
                "privkey" => g.privkey = Some(PathBuf::from(string(v).map_err(at)?)),
                "ssl_verify" => g.ssl_verify = Some(boolean(v).map_err(at)?),
                "insecure_auth" => g.insecure_auth = Some(boolean(v).map_err(at)?),
                "refspecs" => g.refspecs = Some(string_list(v).map_err(at)?),
                "passphrase" => {
                    return Err(invalid(
                        "passphrase",
                        &format!(
                            "a key passphrase (git_pillar remote {id:?}) is not implemented \
                             by salt-rs (gitcli provider); use ssh-agent"
                        ),
                    ));
                }
                other => {
                    return Err(invalid(
                        other,
                        &format!(
                            "invalid git_pillar configuration parameter in remote {id:?}; \
                             valid parameters are: {}",
                            GIT_PILLAR_PARAMS.join(", ")
                        ),
                    ));
                }
            }
        }
    }
    if r.remote.base.is_some() && r.branch != "__env__" {
        return Err(invalid(
            &id,
            "invalid per-remote configuration for git_pillar remote: base can only be \
             specified if __env__ is specified as the branch name",
        ));
    }
    Ok(r)
}
