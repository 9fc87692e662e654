//! Where SLS files, the top file and `salt://` sources come from.
//!
//! [`LocalFileClient`] serves `file_roots` from disk (`file_client: local`, salt-call
//! `--local`); a remote client (the master's file server through the minion's request
//! channel) implements the same trait.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// A source of `salt://` files.
pub trait FileClient: Send + Sync {
    /// The bytes of `path` (relative, no `salt://`) in `saltenv`; `Ok(None)` when absent.
    fn get_file(&self, path: &str, saltenv: &str) -> Result<Option<Vec<u8>>, String>;
    /// The environments served.
    fn envs(&self) -> Vec<String>;
    /// Every file path (relative, `/`-separated, sorted) in `saltenv`, for `file.recurse`.
    /// Clients that cannot list answer so.
    fn list_files(&self, saltenv: &str) -> Result<Vec<String>, String> {
        Err(format!(
            "listing the files of saltenv '{saltenv}' is not supported by this file client"
        ))
    }
    /// The master's `_master_tops` answer for this minion, `[(saltenv, [sls...])]`, merged
    /// into the top file's matches (Salt's `RemoteClient.master_tops`). Clients without a
    /// master have none.
    fn master_tops(&self) -> Result<Vec<(String, Vec<String>)>, String> {
        Ok(Vec::new())
    }
}

/// `file_roots` on the local disk.
#[derive(Clone, Debug, Default)]
pub struct LocalFileClient {
    /// saltenv -> root directories, in order.
    pub roots: Vec<(String, Vec<PathBuf>)>,
}

/// A relative path that cannot climb out of its root.
fn safe_rel(path: &str) -> Option<PathBuf> {
    let p = Path::new(path.trim_start_matches('/'));
    if p.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        Some(p.to_path_buf())
    } else {
        None
    }
}

impl FileClient for LocalFileClient {
    fn get_file(&self, path: &str, saltenv: &str) -> Result<Option<Vec<u8>>, String> {
        let Some(rel) = safe_rel(path) else {
            return Err(format!("path {path:?} escapes the file roots"));
        };
        let Some((_, dirs)) = self.roots.iter().find(|(env, _)| env == saltenv) else {
            return Ok(None);
        };
        for dir in dirs {
            let full = dir.join(&rel);
            if full.is_file() {
                return std::fs::read(&full)
                    .map(Some)
                    .map_err(|e| format!("{}: {e}", full.display()));
            }
        }
        Ok(None)
    }

    fn envs(&self) -> Vec<String> {
        self.roots.iter().map(|(e, _)| e.clone()).collect()
    }

    fn list_files(&self, saltenv: &str) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for (_, dirs) in self.roots.iter().filter(|(env, _)| env == saltenv) {
            for root in dirs {
                let mut stack = vec![root.clone()];
                while let Some(d) = stack.pop() {
                    let Ok(rd) = std::fs::read_dir(&d) else {
                        continue;
                    };
                    for e in rd.flatten() {
                        let p = e.path();
                        if p.is_dir() {
                            stack.push(p);
                        } else if let Ok(rel) = p.strip_prefix(root) {
                            out.push(rel.to_string_lossy().replace('\\', "/"));
                        }
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }
}

/// A [`FileClient`] as the renderer's template loader.
pub struct RenderLoader(pub Arc<dyn FileClient>);

impl salt_render::Loader for RenderLoader {
    fn load(&self, path: &str, saltenv: &str) -> Result<Option<String>, String> {
        Ok(self
            .0
            .get_file(path, saltenv)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }
}

/// Parse a `salt://path?saltenv=x` URL into `(path, saltenv)`.
pub fn parse_salt_url(url: &str, default_env: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("salt://")?;
    match rest.split_once('?') {
        Some((p, q)) => {
            let env = q
                .split('&')
                .find_map(|kv| kv.strip_prefix("saltenv="))
                .unwrap_or(default_env);
            Some((p.to_owned(), env.to_owned()))
        }
        None => Some((rest.to_owned(), default_env.to_owned())),
    }
}
