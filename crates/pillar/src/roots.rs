//! `pillar_roots` as Salt's local file client sees it during pillar compilation: the
//! environments (with `__env__`), SLS names to files, and the list of SLS available.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use salt_render::Loader;

/// The pillar environments of one compilation, `__env__` already resolved.
#[derive(Clone, Debug)]
pub struct Roots {
    envs: Vec<(String, Vec<PathBuf>)>,
}

impl Roots {
    /// Salt's `Pillar.__gen_opts`: `__env__` becomes `env` (the pillarenv, else the
    /// saltenv, else `base`) unless `env` is configured already.
    pub fn new(config: &BTreeMap<String, Vec<String>>, env: &str) -> Self {
        let mut envs: Vec<(String, Vec<PathBuf>)> = Vec::new();
        // `base` first, then the others (Salt's `_get_envs`).
        let mut names: Vec<&String> = config.keys().collect();
        names.sort_by_key(|n| (n.as_str() != "base", n.as_str() == "__env__"));
        for name in names {
            let dirs = &config[name];
            if name == "__env__" {
                if config.contains_key(env) {
                    continue;
                }
                envs.push((
                    env.to_owned(),
                    dirs.iter()
                        .map(|d| PathBuf::from(d.replace("__env__", env)))
                        .collect(),
                ));
            } else {
                envs.push((name.clone(), dirs.iter().map(PathBuf::from).collect()));
            }
        }
        Roots { envs }
    }

    /// Environment names, `base` first.
    pub fn names(&self) -> Vec<String> {
        let mut out: Vec<String> = vec!["base".to_owned()];
        out.extend(
            self.envs
                .iter()
                .map(|(n, _)| n.clone())
                .filter(|n| n != "base"),
        );
        out
    }

    /// Whether `env` has roots configured.
    pub fn has(&self, env: &str) -> bool {
        self.dirs(env).is_some_and(|d| !d.is_empty())
    }

    fn dirs(&self, env: &str) -> Option<&[PathBuf]> {
        self.envs
            .iter()
            .find(|(n, _)| n == env)
            .map(|(_, d)| d.as_slice())
    }

    /// The first file `rel` under the roots of `env`. `..` and absolute paths find nothing.
    pub fn find(&self, rel: &str, env: &str) -> Option<PathBuf> {
        let rel = rel.trim_start_matches('/');
        if rel.is_empty()
            || Path::new(rel)
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return None;
        }
        self.dirs(env)?
            .iter()
            .map(|d| d.join(rel))
            .find(|p| p.is_file())
    }

    /// An SLS name's file (`a.b` -> `a/b.sls` or `a/b/init.sls`), with its relative path.
    pub fn sls_file(&self, sls: &str, env: &str) -> Option<(PathBuf, String)> {
        let base = sls.replace('.', "/");
        [format!("{base}.sls"), format!("{base}/init.sls")]
            .into_iter()
            .find_map(|rel| self.find(&rel, env).map(|p| (p, rel)))
    }

    /// Every SLS of `env` (Salt's `list_states`), sorted.
    pub fn list_states(&self, env: &str) -> Vec<String> {
        let mut out = Vec::new();
        for dir in self.dirs(env).unwrap_or_default() {
            walk(dir, dir, &mut out, 0);
        }
        out.sort();
        out.dedup();
        out
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>, depth: usize) {
    if depth > 32 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(root, &path, out, depth + 1);
        } else if let Some(rel) = path
            .strip_prefix(root)
            .ok()
            .and_then(|r| r.to_str())
            .and_then(|r| r.strip_suffix(".sls"))
        {
            let rel = rel.strip_suffix("/init").unwrap_or(rel);
            if rel != "top" && rel != "init" {
                out.push(rel.replace('/', "."));
            }
        }
    }
}

/// Templates' `salt://` look-ups go to the pillar roots.
impl Loader for Roots {
    fn load(&self, path: &str, saltenv: &str) -> Result<Option<String>, String> {
        let path = path.split('?').next().unwrap_or(path);
        match self.find(path, saltenv) {
            None => Ok(None),
            Some(p) => std::fs::read_to_string(&p)
                .map(Some)
                .map_err(|e| format!("{}: {e}", p.display())),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn env_resolution_and_listing() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("base/a/b")).unwrap();
        std::fs::create_dir_all(d.join("dev")).unwrap();
        std::fs::write(d.join("base/top.sls"), "").unwrap();
        std::fs::write(d.join("base/x.sls"), "").unwrap();
        std::fs::write(d.join("base/a/b/init.sls"), "").unwrap();
        std::fs::write(d.join("dev/y.sls"), "").unwrap();
        let cfg = BTreeMap::from([
            (
                "base".to_owned(),
                vec![d.join("base").display().to_string()],
            ),
            (
                "__env__".to_owned(),
                vec![d.join("__env__").display().to_string()],
            ),
        ]);
        let roots = Roots::new(&cfg, "dev");
        assert_eq!(roots.names(), vec!["base", "dev"]);
        assert_eq!(roots.list_states("base"), vec!["a.b", "x"]);
        assert_eq!(roots.list_states("dev"), vec!["y"]);
        assert!(
            roots
                .sls_file("a.b", "base")
                .unwrap()
                .1
                .ends_with("a/b/init.sls")
        );
        assert!(roots.find("../base/x.sls", "dev").is_none());
        assert!(Roots::new(&cfg, "base").names() == vec!["base"]);
    }
}
