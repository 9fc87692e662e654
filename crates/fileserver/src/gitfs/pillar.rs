//! git_pillar's checkouts (Salt's `salt/utils/gitfs.py` `GitPillar`), on the gitfs git code:
//! each remote's bare repository under `<cachedir>/git_pillar/<hash>/_` is fetched at start,
//! every `git_pillar_update_interval` in the background and by `git_pillar.update`; a request
//! resolves its branch (`__env__`: the pillarenv or saltenv asked for) to a commit of the
//! last fetch and reads that commit's tree, written once under
//! `<cachedir>/git_pillar/trees/<hash>/<commit>` (Salt checks out into one working tree per
//! remote instead). A ref the last fetch lacks is fetched once then (Salt's
//! `fetch_on_fail`). A `mountpoint` remote is linked under `<cachedir>/git_pillar/links/`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::time::Duration;

use salt_config::{GitPillarConfig, GitPillarRemote};
use salt_pillar::{GitPillarSource, PillarDir};

use super::git;
use super::libgit::{self, Refs};
use super::remote::Remote;

/// The checkouts of one `ext_pillar: - git: [...]` item.
pub struct GitPillar {
    inner: Arc<Inner>,
    /// Dropping it stops the background updater.
    _stop: Option<mpsc::Sender<()>>,
}

impl std::fmt::Debug for GitPillar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitPillar")
            .field("remotes", &self.inner.remotes.len())
            .finish_non_exhaustive()
    }
}

struct PillarRemote {
    /// The remote as written (`"<branch> <url>"`): Salt's remote id.
    id: String,
    remote: Remote,
    /// The branch or tag checked out (`__env__`: per request).
    branch: String,
    /// `env` (else `git_pillar_env`; empty: from the branch).
    env: String,
}

struct Inner {
    remotes: Vec<PillarRemote>,
    cache_root: PathBuf,
    includes: bool,
    base: String,
    global_lock: bool,
    interval: Duration,
    machine_id: String,
    /// Each remote's refs as of its last good fetch.
    refs: RwLock<Vec<Option<Refs>>>,
    /// One update at a time.
    updating: Mutex<()>,
    /// Trees written, by (cache hash, commit).
    trees: Mutex<HashSet<(String, String)>>,
}

impl GitPillar {
    /// The checkouts of `remotes` (one `git` item) under `cache_root`
    /// (`<cachedir>/git_pillar`); starts the background fetcher.
    pub fn start(
        remotes: &[GitPillarRemote],
        cfg: &GitPillarConfig,
        cache_root: PathBuf,
        hash_type: salt_pki::HashType,
    ) -> Self {
        let g = cfg.as_gitfs();
        let remotes: Vec<PillarRemote> = remotes
            .iter()
            .map(|r| PillarRemote {
                id: r.id.clone(),
                remote: Remote::new(&r.remote, &g, &cache_root, hash_type),
                branch: if r.branch.is_empty() {
                    cfg.git_pillar_branch.clone()
                } else {
                    r.branch.clone()
                },
                env: if r.env.is_empty() {
                    cfg.git_pillar_env.clone()
                } else {
                    r.env.clone()
                },
            })
            .collect();
        let n = remotes.len();
        let inner = Arc::new(Inner {
            remotes,
            cache_root,
            includes: cfg.git_pillar_includes,
            base: cfg.git_pillar_base.clone(),
            global_lock: cfg.git_pillar_global_lock,
            interval: cfg.git_pillar_update_interval,
            machine_id: git::machine_id(),
            refs: RwLock::new(vec![None; n]),
            updating: Mutex::new(()),
            trees: Mutex::default(),
        });
        let (tx, rx) = mpsc::channel::<()>();
        let bg = inner.clone();
        let spawned = std::thread::Builder::new()
            .name("git-pillar-update".into())
            .spawn(move || {
                let all: Vec<usize> = (0..bg.remotes.len()).collect();
                loop {
                    bg.update(&all);
                    match rx.recv_timeout(bg.interval) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!("git_pillar: cannot start the updater thread: {e}");
        }
        Self {
            inner,
            _stop: Some(tx),
        }
    }

    /// `git_pillar.update [branch=] [repo=]`: fetches the remotes picked now; per remote id
    /// (`"<branch> <url>"`), Salt's answer: `Some(true)` its refs changed, `None` they did
    /// not, `Some(false)` the fetch failed (logged).
    pub fn update(&self, branch: Option<&str>, repo: Option<&str>) -> Vec<(String, Option<bool>)> {
        let picked: Vec<usize> = (0..self.inner.remotes.len())
            .filter(|&i| {
                let r = &self.inner.remotes[i];
                branch.is_none_or(|b| b == r.branch)
                    && repo.is_none_or(|x| x == r.remote.url || r.remote.name.as_deref() == Some(x))
            })
            .collect();
        let (changed, failed) = self.inner.update(&picked);
        picked
            .iter()
            .map(|&i| {
                let result = if failed.contains(&i) {
                    Some(false)
                } else {
                    changed.contains(&i).then_some(true)
                };
                (self.inner.remotes[i].id.clone(), result)
            })
            .collect()
    }
}

impl GitPillar {
    /// `cache.clear_git_lock git_pillar [remote=glob] [type=...]`: (removed, errors).
    pub fn clear_lock(
        &self,
        remote: Option<&str>,
        lock_types: &[String],
    ) -> (Vec<String>, Vec<String>) {
        git::clear_locks(
            "git_pillar",
            self.inner.remotes.iter().map(|p| &p.remote),
            &self.inner.machine_id,
            remote,
            lock_types,
        )
    }
}

impl Inner {
    /// Fetches the remotes `picked` (each repository once) and records their refs; the
    /// indices whose refs changed, and those whose fetch failed.
    fn update(&self, picked: &[usize]) -> (HashSet<usize>, HashSet<usize>) {
        let _one = self.updating.lock().unwrap_or_else(|e| e.into_inner());
        let mut done: HashMap<PathBuf, Option<Refs>> = HashMap::new();
        let (mut changed, mut failed) = (HashSet::new(), HashSet::new());
        for &i in picked {
            let r = &self.remotes[i].remote;
            let refs = done
                .entry(r.repo_dir.clone())
                .or_insert_with(|| self.fetch(r))
                .clone();
            let Some(refs) = refs else {
                failed.insert(i);
                continue;
            };
            let mut all = self.refs.write().unwrap_or_else(|e| e.into_inner());
            if all[i].as_ref() != Some(&refs) {
                changed.insert(i);
            }
            all[i] = Some(refs);
        }
        (changed, failed)
    }

    /// One repository: init, fetch under the update lock, read its refs (`None`: failed,
    /// logged; the last good refs stay).
    fn fetch(&self, r: &Remote) -> Option<Refs> {
        let fail = |what: String| {
            tracing::error!("git_pillar remote '{}': {what}", r.id);
            None
        };
        if let Some(why) = &r.refused {
            return fail(why.clone());
        }
        if let Err(e) = git::init(&r.repo_dir, r) {
            return fail(format!("cannot initialize the cache: {e}"));
        }
        match git::take_lock(&r.work_dir, &r.id, &self.machine_id, self.global_lock) {
            Ok(git::Lock::Taken(lock)) => {
                let fetched = git::fetch(&r.repo_dir, r);
                let _ = std::fs::remove_file(&lock);
                if let Err(e) = fetched {
                    return fail(format!("fetch failed: {e}"));
                }
            }
            Ok(git::Lock::Busy(msg)) => tracing::warn!("{msg}"),
            Err(e) => return fail(format!("cannot set the update lock: {e}")),
        }
        libgit::refs(&r.repo_dir).map_or_else(|e| fail(format!("cannot read refs: {e}")), Some)
    }

    /// `get_checkout_target`.
    fn target(&self, p: &PillarRemote, pillarenv: Option<&str>, saltenv: Option<&str>) -> String {
        if p.branch != "__env__" {
            return p.branch.clone();
        }
        if let Some(all) = p.remote.all_saltenvs() {
            return all.to_owned();
        }
        let t = pillarenv.or(saltenv).unwrap_or("base");
        if t == "base" {
            p.remote.base().to_owned()
        } else {
            t.to_owned()
        }
    }

    /// The commit `target` names in remote `i`'s last fetch; fetched once more when absent.
    fn commit(&self, i: usize, target: &str) -> Option<String> {
        let lookup = |refs: &Option<Refs>| {
            refs.as_ref().and_then(|r| {
                r.branches
                    .get(target)
                    .or_else(|| r.tags.get(target))
                    .cloned()
            })
        };
        let found = lookup(&self.refs.read().unwrap_or_else(|e| e.into_inner())[i]);
        found.or_else(|| {
            self.update(&[i]);
            lookup(&self.refs.read().unwrap_or_else(|e| e.into_inner())[i])
        })
    }

    /// The tree of `commit` on disk (written once).
    fn tree(&self, r: &Remote, commit: &str) -> Option<PathBuf> {
        let dest = self.cache_root.join("trees").join(&r.basehash).join(commit);
        let key = (r.basehash.clone(), commit.to_owned());
        let mut trees = self.trees.lock().unwrap_or_else(|e| e.into_inner());
        if trees.contains(&key) {
            return Some(dest);
        }
        let tmp = dest.with_extension(format!("tmp{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let _ = std::fs::remove_dir_all(&dest);
        let written = git::export(&r.repo_dir, commit, &tmp).and_then(|()| {
            std::fs::rename(&tmp, &dest)
                .map_err(|e| git::GitError::new("archive", format!("{}: {e}", dest.display())))
        });
        if let Err(e) = written {
            tracing::error!(
                "git_pillar remote '{}': cannot check out {commit}: {e}",
                r.id
            );
            let _ = std::fs::remove_dir_all(&tmp);
            return None;
        }
        trees.insert(key);
        Some(dest)
    }

    /// `link_mountpoint`: `<links>/<hash>/<commit>/<mountpoint>` → the pillar directory.
    fn link(&self, r: &Remote, commit: &str, mountpoint: &str, dir: &Path) -> Option<PathBuf> {
        let linkdir = self.cache_root.join("links").join(&r.basehash).join(commit);
        let link = linkdir.join(mountpoint);
        if std::fs::read_link(&link).ok().as_deref() == Some(dir) {
            return Some(linkdir);
        }
        let made = link
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                let _ = std::fs::remove_file(&link);
                std::os::unix::fs::symlink(dir, &link)
            });
        match made {
            Ok(()) => Some(linkdir),
            Err(e) => {
                tracing::error!(
                    "Failed to create symlink to {} at path {}: {e}",
                    dir.display(),
                    link.display()
                );
                None
            }
        }
    }
}

impl GitPillarSource for GitPillar {
    fn pillar_dirs(&self, pillarenv: Option<&str>, saltenv: Option<&str>) -> Vec<PillarDir> {
        let inner = &self.inner;
        let mut out: Vec<PillarDir> = Vec::new();
        for (i, p) in inner.remotes.iter().enumerate() {
            let r = &p.remote;
            let target = inner.target(p, pillarenv, saltenv);
            let mut commit = inner.commit(i, &target);
            // `fallback` only picks what is checked out: the environment stays the target's
            // (Salt's GitPillar.checkout names it from `get_checkout_target`).
            if commit.is_none() && p.branch == "__env__" && !r.fallback.is_empty() {
                commit = inner.commit(i, &r.fallback);
            }
            let Some(commit) = commit else {
                tracing::error!(
                    "Failed to checkout {target} from git_pillar remote '{}': remote ref does \
                     not exist",
                    r.id
                );
                continue;
            };
            let Some(tree) = inner.tree(r, &commit) else {
                continue;
            };
            let root = r.root_for("");
            let dir = if root.is_empty() {
                tree
            } else {
                tree.join(&root)
            };
            if !dir.is_dir() {
                tracing::error!(
                    "Root path '{root}' not present in git_pillar remote '{}', skipping.",
                    r.id
                );
                continue;
            }
            let env = if p.branch == "__env__" && r.all_saltenvs().is_some() {
                pillarenv.or(saltenv).unwrap_or("base").to_owned()
            } else if !p.env.is_empty() {
                p.env.clone()
            } else if p.branch == r.base() || target == r.base() {
                "base".to_owned()
            } else {
                target
            };
            let mountpoint = r.mountpoint_for("");
            let entry = if mountpoint.is_empty() {
                Some(PillarDir {
                    dir,
                    env,
                    linked: false,
                })
            } else {
                inner
                    .link(r, &commit, &mountpoint, &dir)
                    .map(|linkdir| PillarDir {
                        dir: linkdir,
                        env,
                        linked: true,
                    })
            };
            // Salt gives each remote its own working tree: two remotes on one commit are
            // still two pillar directories (here the same tree, listed twice).
            out.extend(entry);
        }
        out
    }

    fn includes(&self) -> bool {
        self.inner.includes
    }

    fn base(&self) -> String {
        self.inner.base.clone()
    }
}
