//! `_file_find`, `_file_hash`, `_file_hash_and_stat` and `_serve_file`: a file found through
//! the index (or, for paths the index does not list, on disk as `roots.find_file` does),
//! hashed once per version, read with `pread` from a cached handle or, when small, from its
//! contents kept in memory per version (no open, read or close per request).

use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::sync::Arc;

use salt_pki::files::FileVersion;
use salt_proto::{Value, ValueExt};

use crate::index::{file_in_root, find_on_disk};
use crate::inline::{Budget, SMALL};
use crate::paths::{self, Refused};
use crate::{FileServer, not_found};
use salt_proto::msg::{FileRef, ServeFile};

/// Most open handles kept for `_serve_file`.
const MAX_HANDLES: usize = 512;
/// Most hashes kept.
const MAX_HASHES: usize = 200_000;
/// Most bytes of small-file contents kept (the map is cleared when a file would exceed it).
const MAX_SMALL_BYTES: usize = 64 << 20;

/// Contents of files of at most [`SMALL`] bytes, per version.
#[derive(Debug, Default)]
pub(crate) struct SmallFiles {
    map: HashMap<PathBuf, (FileVersion, Arc<[u8]>)>,
    bytes: usize,
}

/// A hash for one file version.
#[derive(Clone, Debug)]
pub(crate) struct CachedHash {
    version: FileVersion,
    hex: String,
}

/// An open file for one version.
#[derive(Clone, Debug)]
pub(crate) struct Handle {
    version: FileVersion,
    file: Arc<File>,
}

/// A file `find_file` found.
pub(crate) struct Found {
    full: PathBuf,
    rel: String,
    meta: Metadata,
}

impl FileServer {
    /// `Fileserver.find_file(path, saltenv)` for the `path`/`saltenv` of a load.
    fn find(&self, path: &Value, saltenv: &str, budget: &Budget) -> Option<Found> {
        let Some(path) = path.as_text() else {
            self.log_refusal("path-type", "request path is not text");
            return None;
        };
        let wanted = match paths::parse(path, saltenv) {
            Ok(w) => w,
            Err(Refused::Empty) => return None,
            Err(e) => {
                let shown: String = path.chars().take(120).collect();
                self.log_refusal("path", &format!("refused path {shown:?}: {e}"));
                return None;
            }
        };
        let follow = self.cfg.fileserver_followsymlinks;
        let file_meta = |p: &std::path::Path| std::fs::metadata(p).ok().filter(Metadata::is_file);
        let (root, rel, meta) = if let Some(idx) = &wanted.index {
            let roots = self.roots_for(&wanted.saltenv)?;
            let i: i64 = idx.trim().parse().ok()?;
            let i = if i < 0 { roots.len() as i64 + i } else { i };
            let root = roots.get(usize::try_from(i).ok()?)?.clone();
            if !file_in_root(&root, &wanted.rel, follow, &self.ignore) {
                return None;
            }
            let meta = file_meta(&root.join(&wanted.rel))?;
            (root, wanted.rel, meta)
        } else {
            let (index, roots) = self.index(&wanted.saltenv, budget)?;
            let listed = index
                .found
                .get(&wanted.rel)
                .and_then(|&i| roots.get(i))
                // Listed: one stat (plus the symlink check when links are not followed).
                .filter(|root| follow || paths::under_root(root, &root.join(&wanted.rel), true))
                .and_then(|root| Some((root.clone(), file_meta(&root.join(&wanted.rel))?)));
            match listed {
                Some((root, meta)) => (root, wanted.rel, meta),
                None => {
                    let i = find_on_disk(&roots, &wanted.rel, follow, &self.ignore)?;
                    let root = roots.get(i)?.clone();
                    let meta = file_meta(&root.join(&wanted.rel))?;
                    (root, wanted.rel, meta)
                }
            }
        };
        let full = root.join(&rel);
        Some(Found { full, rel, meta })
    }

    pub(crate) fn find_in_load(
        &self,
        load: &FileRef<'_>,
        need_saltenv: bool,
        budget: &Budget,
    ) -> Option<Found> {
        let path = load.path?;
        let saltenv = match &load.saltenv {
            Some(v) => v.clone(),
            None if need_saltenv => return None,
            None => "base".to_owned(),
        };
        self.find(path, &saltenv, budget)
    }

    pub(crate) fn file_find(&self, load: &FileRef<'_>, budget: &Budget) -> Value {
        if !load.path.is_some_and(ValueExt::is_truthy) {
            return not_found();
        }
        match self.find_in_load(load, false, budget) {
            None => not_found(),
            Some(f) => Value::Map(vec![
                (
                    Value::from("path"),
                    Value::from(f.full.to_string_lossy().as_ref()),
                ),
                (Value::from("rel"), Value::from(f.rel.as_str())),
                (Value::from("stat"), stat_list(&f.meta)),
                (Value::from("back"), Value::from("roots")),
            ]),
        }
    }

    pub(crate) fn file_hash(&self, load: &FileRef<'_>, budget: &Budget) -> Value {
        self.hash_reply(load, budget)
            .map_or_else(|| Value::from(""), |(h, _)| h)
    }

    pub(crate) fn file_hash_and_stat(&self, load: &FileRef<'_>, budget: &Budget) -> Value {
        match self.hash_reply(load, budget) {
            Some((h, stat)) => Value::Array(vec![h, stat]),
            None => Value::Array(vec![Value::from(""), Value::Nil]),
        }
    }

    fn hash_reply(&self, load: &FileRef<'_>, budget: &Budget) -> Option<(Value, Value)> {
        let found = self.find_in_load(load, true, budget)?;
        let hex = self.hash_of(&found, budget)?;
        let reply = Value::Map(vec![
            (
                Value::from("hash_type"),
                Value::from(self.hash_type.as_str()),
            ),
            (Value::from("hsum"), Value::from(hex)),
        ]);
        Some((reply, stat_list(&found.meta)))
    }

    /// The hex digest of a found file, computed once per version.
    fn hash_of(&self, f: &Found, budget: &Budget) -> Option<String> {
        let version = FileVersion::of(&f.meta);
        if let Some(c) = self
            .hashes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&f.full)
            .filter(|c| c.version == version)
        {
            return Some(c.hex.clone());
        }
        let hex = if version.size() <= SMALL {
            hex::encode(self.hash_type.digest(&self.small_contents(f, version)?))
        } else {
            if budget.declines_size(version.size()) {
                return None;
            }
            let file = self.open(f, version)?;
            hex::encode(
                self.hash_type
                    .digest_reader(std::io::BufReader::new(ReadAt::new(&file)))
                    .ok()?,
            )
        };
        let mut map = self.hashes.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_HASHES {
            map.clear();
        }
        map.insert(
            f.full.clone(),
            CachedHash {
                version,
                hex: hex.clone(),
            },
        );
        Some(hex)
    }

    /// The open handle of a found file version.
    fn open(&self, f: &Found, version: FileVersion) -> Option<Arc<File>> {
        if let Some(h) = self
            .handles
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&f.full)
            .filter(|h| h.version == version)
        {
            return Some(h.file.clone());
        }
        let file = File::open(&f.full).ok()?;
        // The file opened must be the one stat'ed (not swapped in between).
        let opened = file.metadata().ok()?;
        if !FileVersion::of(&opened).same_file(&version) {
            return None;
        }
        let file = Arc::new(file);
        let mut map = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_HANDLES {
            map.clear();
        }
        map.insert(
            f.full.clone(),
            Handle {
                version,
                file: file.clone(),
            },
        );
        Some(file)
    }

    /// The contents of a small found file version, read once and kept.
    fn small_contents(&self, f: &Found, version: FileVersion) -> Option<Arc<[u8]>> {
        if let Some((_, data)) = self
            .small
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map
            .get(&f.full)
            .filter(|(v, _)| *v == version)
        {
            return Some(data.clone());
        }
        let file = File::open(&f.full).ok()?;
        let mut data = Vec::with_capacity(usize::try_from(version.size()).ok()? + 1);
        (&file).take(SMALL + 1).read_to_end(&mut data).ok()?;
        // What was read must be the version stat'ed: same file, unchanged since.
        let after = file.metadata().ok()?;
        if FileVersion::of(&after) != version || data.len() as u64 != version.size() {
            return None;
        }
        let data: Arc<[u8]> = data.into();
        let mut small = self.small.lock().unwrap_or_else(|e| e.into_inner());
        if small.bytes + data.len() > MAX_SMALL_BYTES {
            *small = SmallFiles::default();
        }
        small.bytes += data.len();
        if let Some((_, old)) = small.map.insert(f.full.clone(), (version, data.clone())) {
            small.bytes -= old.len();
        }
        Some(data)
    }

    /// The checks of `_serve_file`: the chunk to read, or the reply when there is none.
    fn serve_plan(&self, load: &ServeFile<'_>, budget: &Budget) -> Result<Chunk, Value> {
        let empty = || {
            Value::Map(vec![
                (Value::from("data"), Value::from("")),
                (Value::from("dest"), Value::from("")),
            ])
        };
        let (Some(_), Some(loc), Some(_)) = (load.file.path, load.loc, &load.file.saltenv) else {
            return Err(empty());
        };
        let Some(found) = self.find_in_load(&load.file, true, budget) else {
            return Err(empty());
        };
        // Salt's `fp_.seek(loc)` raises for a negative or non-integer `loc`, and the
        // master then answers `""`.
        let Some(loc) = loc.as_u64() else {
            self.log_refusal("loc", "_serve_file with a negative or non-integer loc");
            return Err(Value::from(""));
        };
        let want = self.cfg.file_buffer_size as usize;
        let len = if loc < found.meta.size() {
            let left = usize::try_from(found.meta.size() - loc).unwrap_or(usize::MAX);
            want.min(left)
        } else {
            0
        };
        if budget.declines_size(len as u64) {
            return Err(empty());
        }
        let version = FileVersion::of(&found.meta);
        let source = if version.size() <= SMALL {
            Source::Memory(self.small_contents(&found, version).ok_or_else(empty)?)
        } else {
            Source::File(self.open(&found, version).ok_or_else(empty)?)
        };
        Ok(Chunk {
            source,
            loc,
            len,
            rel: found.rel,
        })
    }

    pub(crate) fn serve_file(&self, load: &ServeFile<'_>, budget: &Budget) -> Value {
        let chunk = match self.serve_plan(load, budget) {
            Ok(c) => c,
            Err(reply) => return reply,
        };
        let mut data = Vec::new();
        if chunk.read_into(&mut data).is_err() {
            return Value::from("");
        }
        self.serve_reply(load.gzip, data, &chunk.rel)
    }

    pub(crate) fn serve_reply(&self, gzip: Option<&Value>, mut data: Vec<u8>, rel: &str) -> Value {
        let mut reply = vec![
            (Value::from("data"), Value::from("")),
            (Value::from("dest"), Value::from(rel)),
        ];
        if let (Some(level), false) = (gzip, data.is_empty()) {
            let Some(n) = level.as_u64().filter(|n| *n <= 9) else {
                return Value::from("");
            };
            let mut enc = flate2::write::GzEncoder::new(
                Vec::with_capacity(data.len() / 2),
                flate2::Compression::new(n as u32),
            );
            if enc.write_all(&data).is_err() {
                return Value::from("");
            }
            let Ok(z) = enc.finish() else {
                return Value::from("");
            };
            data = z;
            reply.push((Value::from("gzip"), level.clone()));
        }
        reply[0].1 = Value::Binary(data);
        Value::Map(reply)
    }

    /// `_serve_file` with the reply msgpack-encoded straight into `out` and the chunk read
    /// in place (no intermediate buffers): `Ok` when written, else the reply to encode the
    /// ordinary way (a miss, an error, `gzip`). The bytes equal `encode(serve_file(load))`.
    pub fn serve_file_into(
        &self,
        load: &ServeFile<'_>,
        out: &mut Vec<u8>,
        budget: &Budget,
    ) -> Result<(), Value> {
        if self.order != [crate::backends::Backend::Roots] {
            return Err(self.serve_any(load, budget));
        }
        if load.gzip.is_some() {
            return Err(self.serve_file(load, budget));
        }
        let chunk = self.serve_plan(load, budget)?;
        let mark = out.len();
        out.push(0x82);
        put_str(out, "data");
        salt_proto::codec::write_raw_header(out, chunk.len);
        let at = out.len();
        match chunk.read_into(out) {
            Ok(got) if got == chunk.len => {}
            // The file shrank under us: the header is wrong, build the reply anew.
            Ok(_) => {
                let data = out[at..].to_vec();
                out.truncate(mark);
                return Err(self.serve_reply(load.gzip, data, &chunk.rel));
            }
            Err(()) => {
                out.truncate(mark);
                return Err(Value::from(""));
            }
        }
        put_str(out, "dest");
        put_str(out, &chunk.rel);
        Ok(())
    }
}

/// Where a chunk's bytes come from.
enum Source {
    File(Arc<File>),
    Memory(Arc<[u8]>),
}

/// One `_serve_file` chunk: `len` bytes of the file from `loc`.
struct Chunk {
    source: Source,
    loc: u64,
    len: usize,
    rel: String,
}

impl Chunk {
    /// Append up to `len` bytes to `out` (`pread`, or a copy of kept contents); how many
    /// were read (fewer at EOF).
    fn read_into(&self, out: &mut Vec<u8>) -> Result<usize, ()> {
        let file = match &self.source {
            Source::File(f) => f,
            Source::Memory(data) => {
                let from = usize::try_from(self.loc)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                let to = from.saturating_add(self.len).min(data.len());
                out.extend_from_slice(&data[from..to]);
                return Ok(to - from);
            }
        };
        let start = out.len();
        out.resize(start + self.len, 0);
        let mut got = 0;
        while got < self.len {
            match file.read_at(&mut out[start + got..], self.loc + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Err(()),
            }
        }
        out.truncate(start + got);
        Ok(got)
    }
}

/// A msgpack raw string as [`salt_proto::encode`] writes it.
fn put_str(out: &mut Vec<u8>, s: &str) {
    salt_proto::codec::write_raw_header(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// `list(os.stat(path))`: mode, ino, dev, nlink, uid, gid, size, atime, mtime, ctime.
fn stat_list(m: &Metadata) -> Value {
    Value::Array(vec![
        Value::from(m.mode()),
        Value::from(m.ino()),
        Value::from(m.dev()),
        Value::from(m.nlink()),
        Value::from(m.uid()),
        Value::from(m.gid()),
        Value::from(m.size()),
        Value::from(m.atime()),
        Value::from(m.mtime()),
        Value::from(m.ctime()),
    ])
}

/// A `Read` over a shared file with `pread`, from offset 0.
struct ReadAt<'a> {
    file: &'a File,
    pos: u64,
}

impl<'a> ReadAt<'a> {
    fn new(file: &'a File) -> Self {
        Self { file, pos: 0 }
    }
}

impl std::io::Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}
