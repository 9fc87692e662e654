//! Salt's `Fileserver` over several backends (`fileserver_backend` order): environments
//! and file/directory listings are the union of the backends'; a file is served by the first
//! backend that finds it; `_symlink_list` is the last backend's answer (Salt's loop keeps
//! only the last one); `_file_list_emptydirs` is `roots`' alone (git has no empty
//! directories).

use std::collections::BTreeSet;

use salt_proto::Value;
use salt_proto::msg::{FileLoad, FileRef, ListKind, ServeFile};

use crate::gitfs::{self, Found};
use crate::inline::Budget;
use crate::paths::{self, Refused};
use crate::{FileServer, not_found, opts};

/// A configured backend.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub(crate) enum Backend {
    /// `roots`.
    Roots,
    /// `gitfs`.
    Gitfs,
}

/// Which backend holds a file.
enum Located {
    Roots,
    Git(Found),
    Nowhere,
}

impl FileServer {
    /// [`FileServer::answer`] with gitfs (or without roots) configured.
    pub(crate) fn answer_backends(&self, req: FileLoad<'_>, id: &str, budget: &Budget) -> Value {
        match req {
            FileLoad::Envs => Value::Array(self.envs().into_iter().map(Value::from).collect()),
            FileLoad::List {
                kind,
                saltenv,
                prefix,
            } => self.list_all(saltenv.as_deref(), prefix, kind, budget),
            FileLoad::Symlinks { saltenv, prefix } => match self.order.last() {
                Some(Backend::Gitfs) => self.git_symlinks(saltenv.as_deref(), prefix, budget),
                Some(Backend::Roots) => self.symlinks(saltenv.as_deref(), prefix, budget),
                None => Value::Map(vec![]),
            },
            FileLoad::Find(f) => {
                if !f.path.is_some_and(salt_proto::ValueExt::is_truthy) {
                    return not_found();
                }
                match self.locate(&f, false, budget) {
                    Located::Roots => self.file_find(&f, budget),
                    Located::Git(found) => Value::Map(vec![
                        (
                            Value::from("path"),
                            Value::from(found.dest.to_string_lossy().as_ref()),
                        ),
                        (Value::from("rel"), Value::from(found.rel.as_str())),
                        (
                            Value::from("stat"),
                            Value::Array(vec![Value::from(found.mode())]),
                        ),
                        (Value::from("back"), Value::from("gitfs")),
                    ]),
                    Located::Nowhere => not_found(),
                }
            }
            FileLoad::Hash(f) => match self.locate(&f, true, budget) {
                Located::Roots => self.file_hash(&f, budget),
                Located::Git(found) => self
                    .git_hash(&found, budget)
                    .unwrap_or_else(|| Value::from("")),
                Located::Nowhere => Value::from(""),
            },
            FileLoad::HashAndStat(f) => match self.locate(&f, true, budget) {
                Located::Roots => self.file_hash_and_stat(&f, budget),
                Located::Git(found) => match self.git_hash(&found, budget) {
                    Some(h) => Value::Array(vec![h, Value::Array(vec![Value::from(found.mode())])]),
                    None => Value::Array(vec![Value::from(""), Value::Nil]),
                },
                Located::Nowhere => Value::Array(vec![Value::from(""), Value::Nil]),
            },
            FileLoad::Serve(s) => self.serve_any(&s, budget),
            FileLoad::MasterOpts { env_only } => {
                opts::master_opts(&self.cfg, &self.envs(), env_only)
            }
            FileLoad::MasterTops => self.master_tops(id),
            FileLoad::Recv(r) => Value::Boolean(self.file_recv(&r, id)),
        }
    }

    /// `_serve_file` through the backends.
    pub(crate) fn serve_any(&self, s: &ServeFile<'_>, budget: &Budget) -> Value {
        let empty = || {
            Value::Map(vec![
                (Value::from("data"), Value::from("")),
                (Value::from("dest"), Value::from("")),
            ])
        };
        if s.file.path.is_none() || s.loc.is_none() || s.file.saltenv.is_none() {
            return empty();
        }
        let found = match self.locate(&s.file, true, budget) {
            Located::Roots => return self.serve_file(s, budget),
            Located::Git(found) => found,
            Located::Nowhere => return empty(),
        };
        let Some(loc) = s.loc.and_then(Value::as_u64) else {
            self.log_refusal("loc", "_serve_file with a negative or non-integer loc");
            return Value::from("");
        };
        let Some(data) = self.git().and_then(|g| g.contents(&found, budget)) else {
            return empty();
        };
        let from = usize::try_from(loc).unwrap_or(usize::MAX).min(data.len());
        let to = from
            .saturating_add(self.cfg.file_buffer_size as usize)
            .min(data.len());
        self.serve_reply(s.gzip, data[from..to].to_vec(), &found.rel)
    }

    /// The environments of every backend, sorted.
    pub(crate) fn envs_all(&self) -> Vec<String> {
        let mut all = BTreeSet::new();
        for b in &self.order {
            match b {
                Backend::Roots => all.extend(self.roots_envs()),
                Backend::Gitfs => {
                    all.extend(self.git().map(gitfs::GitFs::envs).unwrap_or_default())
                }
            }
        }
        all.into_iter().collect()
    }

    fn git(&self) -> Option<&gitfs::GitFs> {
        self.gitfs.as_ref()
    }

    fn list_all(
        &self,
        saltenv: Option<&str>,
        prefix: &str,
        kind: ListKind,
        budget: &Budget,
    ) -> Value {
        let Some(env) = saltenv else {
            return Value::Array(vec![]);
        };
        let mut all = BTreeSet::new();
        for b in &self.order {
            match (b, kind) {
                (Backend::Roots, _) => {
                    if let Value::Array(items) = self.list(Some(env), prefix, kind, budget) {
                        all.extend(items.iter().filter_map(|v| v.as_str().map(str::to_owned)));
                    }
                }
                (Backend::Gitfs, ListKind::EmptyDirs) => {}
                (Backend::Gitfs, ListKind::Files | ListKind::Dirs) => {
                    let k = if kind == ListKind::Files {
                        gitfs::ListKind::Files
                    } else {
                        gitfs::ListKind::Dirs
                    };
                    if let Some(list) = self.git().and_then(|g| g.list(env, k, budget)) {
                        all.extend(list.into_iter().filter(|p| p.starts_with(prefix)));
                    }
                }
            }
        }
        Value::Array(all.into_iter().map(Value::from).collect())
    }

    /// gitfs's `symlink_list`: `{}` for a saltenv it does not serve.
    fn git_symlinks(&self, saltenv: Option<&str>, prefix: &str, budget: &Budget) -> Value {
        let Some(env) = saltenv else {
            return Value::Map(vec![]);
        };
        let links = self.git().and_then(|g| {
            if !gitfs::is_hex(env) && !g.envs().iter().any(|e| e == env) {
                return None;
            }
            g.symlinks(env, budget)
        });
        Value::Map(
            links
                .unwrap_or_default()
                .into_iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (Value::from(k), Value::from(v)))
                .collect(),
        )
    }

    fn git_hash(&self, found: &Found, budget: &Budget) -> Option<Value> {
        let hex = self.git()?.hash(found, budget)?;
        Some(Value::Map(vec![
            (
                Value::from("hash_type"),
                Value::from(self.hash_type.as_str()),
            ),
            (Value::from("hsum"), Value::from(hex)),
        ]))
    }

    /// The first backend (in `fileserver_backend` order) that has the file of `load`.
    fn locate(&self, load: &FileRef<'_>, need_saltenv: bool, budget: &Budget) -> Located {
        for b in &self.order {
            match b {
                Backend::Roots => {
                    if self.find_in_load(load, need_saltenv, budget).is_some() {
                        return Located::Roots;
                    }
                }
                Backend::Gitfs => {
                    if let Some(found) = self.git_find(load, need_saltenv, budget) {
                        return Located::Git(found);
                    }
                }
            }
        }
        Located::Nowhere
    }

    fn git_find(&self, load: &FileRef<'_>, need_saltenv: bool, budget: &Budget) -> Option<Found> {
        let git = self.git()?;
        let path = salt_proto::ValueExt::as_text(load.path?)?;
        let saltenv = match &load.saltenv {
            Some(v) => v.clone(),
            None if need_saltenv => return None,
            None => "base".to_owned(),
        };
        match paths::parse(path, &saltenv) {
            Ok(w) => git.find(&w.rel, &w.saltenv, budget),
            Err(Refused::Empty) => None,
            Err(e) => {
                let shown: String = path.chars().take(120).collect();
                self.log_refusal("path", &format!("refused path {shown:?}: {e}"));
                None
            }
        }
    }
}
