//! The remote file client: `salt://` files from the master's file server over the minion's
//! AES request channel, as Salt's `salt.fileclient.RemoteClient` fetches them.
//!
//! `get_file` asks `_file_hash` (and `_file_find` for the mode, as Salt does), keeps a cached
//! copy whose hash matches, else pulls the file with `_serve_file` in chunks (`loc` = bytes so
//! far, `gzip` when asked) into `cachedir/files/<saltenv>/<path>` (written atomically). Lists
//! come from `_file_list`, `_file_list_emptydirs`, `_dir_list`; `_master_opts` and `_file_recv`
//! are there for `cp.*`; `_master_tops` for the top file's matches.

use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use rmpv::Value;

use crate::master_link::MasterLink;
use salt_proto::ValueExt;
use salt_proto::msg::{FileHash, ServeChunk, find_stat};

/// `salt://` files from the master (blocking calls: run on a blocking thread).
#[derive(Debug)]
pub struct RemoteFileClient {
    link: MasterLink,
    cachedir: PathBuf,
    /// Files fetched during this client's life: `(saltenv, path)` -> cached path or absent.
    seen: Mutex<HashMap<(String, String), Option<PathBuf>>>,
}

/// A relative path that cannot climb out of the cache.
fn safe_rel(path: &str) -> Result<PathBuf, String> {
    let p = Path::new(path.trim_start_matches('/'));
    if p.as_os_str().is_empty()
        || !p
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!("path {path:?} is not a file server path"));
    }
    Ok(p.to_path_buf())
}

fn str_list(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a
            .iter()
            .filter_map(|x| {
                x.as_bytes()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The hex digest of `data` with a hash Salt names (`md5`, `sha1`, `sha224`, `sha256`,
/// `sha384`, `sha512`).
pub fn hex_digest(hash_type: &str, data: &[u8]) -> Option<String> {
    use sha2::Digest as _;
    Some(match hash_type {
        "md5" => hex::encode(md5::Md5::digest(data)),
        "sha1" => hex::encode(sha1::Sha1::digest(data)),
        "sha224" => hex::encode(sha2::Sha224::digest(data)),
        "sha256" => hex::encode(sha2::Sha256::digest(data)),
        "sha384" => hex::encode(sha2::Sha384::digest(data)),
        "sha512" => hex::encode(sha2::Sha512::digest(data)),
        _ => return None,
    })
}

impl RemoteFileClient {
    /// A client caching under `cachedir/files/`.
    pub fn new(link: MasterLink, cachedir: PathBuf) -> Self {
        Self {
            link,
            cachedir,
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// The link to the master.
    pub fn link(&self) -> &MasterLink {
        &self.link
    }

    /// `cachedir/files/<saltenv>/<path>` (Salt's `_cache_loc`).
    pub fn cache_loc(&self, path: &str, saltenv: &str) -> Result<PathBuf, String> {
        Ok(self
            .cachedir
            .join("files")
            .join(safe_rel(saltenv)?)
            .join(safe_rel(path)?))
    }

    fn send(&self, load: Vec<(&str, Value)>) -> Result<Value, String> {
        let m = Value::Map(load.into_iter().map(|(k, v)| (Value::from(k), v)).collect());
        self.link.send_blocking(&m)
    }

    /// `_file_hash`: `(hsum, hash_type)`, `None` when the master has no such file.
    pub fn hash_file(&self, path: &str, saltenv: &str) -> Result<Option<(String, String)>, String> {
        let r = self.send(vec![
            ("path", Value::from(path)),
            ("saltenv", Value::from(saltenv)),
            ("cmd", Value::from("_file_hash")),
        ])?;
        Ok(FileHash::from_value(&r).map(|h| (h.hsum, h.hash_type)))
    }

    /// `_file_find`: the master's `os.stat` list of the file (`None` when absent).
    pub fn stat_file(&self, path: &str, saltenv: &str) -> Result<Option<Vec<Value>>, String> {
        let r = self.send(vec![
            ("path", Value::from(path)),
            ("saltenv", Value::from(saltenv)),
            ("cmd", Value::from("_file_find")),
        ])?;
        Ok(find_stat(&r).map(<[Value]>::to_vec))
    }

    /// `_file_list`, `_file_list_emptydirs` or `_dir_list` of `saltenv` under `prefix`.
    pub fn list(&self, cmd: &str, saltenv: &str, prefix: &str) -> Result<Vec<String>, String> {
        let r = self.send(vec![
            ("saltenv", Value::from(saltenv)),
            ("prefix", Value::from(prefix)),
            ("cmd", Value::from(cmd)),
        ])?;
        Ok(str_list(&r))
    }

    /// `_master_opts`.
    pub fn master_opts(&self) -> Result<Value, String> {
        self.send(vec![("cmd", Value::from("_master_opts"))])
    }

    /// Salt's `get_file(salt://path, dest)`: the local path written (the cache when `dest`
    /// is `None`), `None` when the master has no such file.
    pub fn fetch(
        &self,
        path: &str,
        saltenv: &str,
        dest: Option<&Path>,
        makedirs: bool,
        gzip: Option<u32>,
    ) -> Result<Option<PathBuf>, String> {
        let Some((hsum, hash_type)) = self.hash_file(path, saltenv)? else {
            tracing::debug!("Could not find file '{path}' in saltenv '{saltenv}'");
            return Ok(None);
        };
        let dest = match dest {
            Some(d) if d.is_dir() || d.as_os_str().to_string_lossy().ends_with('/') => {
                d.join(Path::new(path).file_name().unwrap_or_default())
            }
            Some(d) => d.to_path_buf(),
            None => self.cache_loc(path, saltenv)?,
        };
        if let Ok(local) = std::fs::read(&dest)
            && hex_digest(&hash_type, &local).as_deref() == Some(hsum.as_str())
        {
            return Ok(Some(dest));
        }
        match dest.parent() {
            Some(parent) if !parent.is_dir() => {
                if !makedirs && !dest.starts_with(&self.cachedir) {
                    return Err(format!(
                        "Could not write to {}: the directory {} does not exist (makedirs=True creates it)",
                        dest.display(),
                        parent.display()
                    ));
                }
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            _ => {}
        }
        let mut data: Vec<u8> = Vec::new();
        for _try in 0..3 {
            data.clear();
            loop {
                let mut load = vec![
                    ("path", Value::from(path)),
                    ("saltenv", Value::from(saltenv)),
                    ("cmd", Value::from("_serve_file")),
                    ("loc", Value::from(data.len() as u64)),
                ];
                if let Some(g) = gzip {
                    load.push(("gzip", Value::from(g)));
                }
                let r = self.send(load)?;
                let ServeChunk { data: chunk, gzip } = ServeChunk::from_value(&r)
                    .ok_or_else(|| format!("_serve_file of {path}: no data in the reply"))?;
                if chunk.is_empty() {
                    break;
                }
                if gzip {
                    let mut out = Vec::new();
                    flate2::read::GzDecoder::new(chunk)
                        .read_to_end(&mut out)
                        .map_err(|e| format!("_serve_file of {path}: gzip: {e}"))?;
                    data.extend_from_slice(&out);
                } else {
                    data.extend_from_slice(chunk);
                }
            }
            if hex_digest(&hash_type, &data).is_none_or(|h| h == hsum) {
                break;
            }
            tracing::warn!("Bad download of file {path}, attempt {} of 3", _try + 1);
        }
        let tmp = dest.with_file_name(format!(
            ".{}.salt-rs-tmp",
            dest.file_name().unwrap_or_default().to_string_lossy()
        ));
        std::fs::write(&tmp, &data).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
        Ok(Some(dest))
    }

    /// `cache_file`: the cached copy of `salt://path`, memoised for this client.
    pub fn cache_file(&self, path: &str, saltenv: &str) -> Result<Option<PathBuf>, String> {
        let key = (saltenv.to_owned(), path.to_owned());
        if let Some(hit) = self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(hit.clone());
        }
        let got = self.fetch(path, saltenv, None, true, None)?;
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, got.clone());
        Ok(got)
    }
}

impl salt_states::FileClient for RemoteFileClient {
    fn get_file(&self, path: &str, saltenv: &str) -> Result<Option<Vec<u8>>, String> {
        match self.cache_file(path, saltenv)? {
            Some(p) => std::fs::read(&p)
                .map(Some)
                .map_err(|e| format!("{}: {e}", p.display())),
            None => Ok(None),
        }
    }

    fn envs(&self) -> Vec<String> {
        self.send(vec![("cmd", Value::from("_file_envs"))])
            .map(|v| str_list(&v))
            .unwrap_or_default()
    }

    /// Every file of `saltenv`, as the master's `_file_list` lists them (`file.recurse`).
    fn list_files(&self, saltenv: &str) -> Result<Vec<String>, String> {
        self.list("_file_list", saltenv, "")
    }

    /// `_master_tops`: the master's `{saltenv: [sls...]}` for this minion (`master_tops`).
    /// Salt's master hands the load's `opts` to its tops modules (`ext_nodes` reads
    /// `opts["id"]`): the id is sent there, as the Python minion sends its whole opts.
    fn master_tops(&self) -> Result<Vec<(String, Vec<String>)>, String> {
        let id = Value::from(self.link.session.id.as_str());
        let opts = Value::Map(vec![(Value::from("id"), id.clone())]);
        let v = self.send(vec![
            ("cmd", Value::from("_master_tops")),
            ("id", id),
            ("opts", opts),
        ])?;
        Ok(match v {
            Value::Map(m) => m
                .iter()
                .map(|(env, slses)| (salt_compat::py_str(env), str_list(slses)))
                .collect(),
            _ => Vec::new(),
        })
    }
}
