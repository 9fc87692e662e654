//! The file-server commands (`_file_*`, `_serve_file`, `_master_opts`, `_master_tops`,
//! `_file_recv`; Salt's `salt/fileserver/__init__.py` and `AESFuncs` in `salt/master.py`):
//! the loads as the master's file server reads them ([`FileLoad`]) and the replies as the
//! minion's file client reads them ([`FileHash`], [`ServeChunk`], [`find_stat`]).
//!
//! Salt's file server reads its loads with `load.get(...)` and answers a missing or
//! mistyped field with a "not found" shape, never an error: so every field here is
//! optional, and a field whose type changes the answer is kept as the [`Value`] it was
//! (borrowed from the load, nothing copied).

use rmpv::Value;

use crate::value::ValueExt;

/// Which listing a list command asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// `_file_list`.
    Files,
    /// `_file_list_emptydirs`.
    EmptyDirs,
    /// `_dir_list`.
    Dirs,
}

/// `path` and `saltenv` of a load that names one file.
#[derive(Clone, Debug, PartialEq)]
pub struct FileRef<'a> {
    /// `path` as sent (the file server accepts text only, and answers "not found" otherwise).
    pub path: Option<&'a Value>,
    /// `saltenv` as Python's `str()` of what was sent (Salt formats whatever it gets).
    pub saltenv: Option<String>,
}

/// `_serve_file`: one chunk of a file.
#[derive(Clone, Debug, PartialEq)]
pub struct ServeFile<'a> {
    /// The file.
    pub file: FileRef<'a>,
    /// `loc`, the offset (Salt's `fp_.seek(loc)`: a negative or non-integer one raises).
    pub loc: Option<&'a Value>,
    /// `gzip` when truthy: the compression level asked for.
    pub gzip: Option<&'a Value>,
}

/// `_file_recv` (`cp.push`): one chunk a minion sends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FileRecv<'a> {
    /// `path` as a list of components, when it is a list.
    pub path: Option<&'a [Value]>,
    /// `loc`, the offset.
    pub loc: Option<&'a Value>,
    /// `data` (str or bin) as bytes.
    pub data: Option<&'a [u8]>,
}

/// A file-server request load, read the way Salt's file server reads it.
#[derive(Clone, Debug, PartialEq)]
pub enum FileLoad<'a> {
    /// `_file_envs`.
    Envs,
    /// `_file_list`, `_file_list_emptydirs`, `_dir_list`.
    List {
        /// Which listing.
        kind: ListKind,
        /// `saltenv` as for [`FileRef::saltenv`] (the reply is empty without one).
        saltenv: Option<String>,
        /// `load.get("prefix", "").strip("/")` (a non-text prefix counts as none).
        prefix: &'a str,
    },
    /// `_symlink_list`.
    Symlinks {
        /// `saltenv` as for [`FileRef::saltenv`] (the reply is empty without one).
        saltenv: Option<String>,
        /// As for [`FileLoad::List`].
        prefix: &'a str,
    },
    /// `_file_find`.
    Find(FileRef<'a>),
    /// `_file_hash`.
    Hash(FileRef<'a>),
    /// `_file_hash_and_stat`.
    HashAndStat(FileRef<'a>),
    /// `_serve_file`.
    Serve(ServeFile<'a>),
    /// `_master_opts`, with whether `env_only` is truthy.
    MasterOpts {
        /// Only the top-file keys.
        env_only: bool,
    },
    /// `_master_tops`.
    MasterTops,
    /// `_file_recv`.
    Recv(FileRecv<'a>),
}

impl<'a> FileLoad<'a> {
    /// Reads the load of file-server command `cmd`; `None` when `cmd` is not one of
    /// [`super::FILE_COMMANDS`]. Never fails otherwise: see the module doc.
    pub fn read(cmd: &str, load: &'a Value) -> Option<Self> {
        let file = || FileRef {
            path: load.get("path"),
            saltenv: load.get("saltenv").map(salt_compat::py_str),
        };
        let prefix = || {
            load.get("prefix")
                .and_then(ValueExt::as_text)
                .unwrap_or_default()
                .trim_matches('/')
        };
        let list = |kind| Self::List {
            kind,
            saltenv: load.get("saltenv").map(salt_compat::py_str),
            prefix: prefix(),
        };
        Some(match cmd {
            "_file_envs" => Self::Envs,
            "_file_list" => list(ListKind::Files),
            "_file_list_emptydirs" => list(ListKind::EmptyDirs),
            "_dir_list" => list(ListKind::Dirs),
            "_symlink_list" => Self::Symlinks {
                saltenv: load.get("saltenv").map(salt_compat::py_str),
                prefix: prefix(),
            },
            "_file_find" => Self::Find(file()),
            "_file_hash" => Self::Hash(file()),
            "_file_hash_and_stat" => Self::HashAndStat(file()),
            "_serve_file" => Self::Serve(ServeFile {
                file: file(),
                loc: load.get("loc"),
                gzip: load.get("gzip").filter(|g| g.is_truthy()),
            }),
            "_master_opts" => Self::MasterOpts {
                env_only: load.get("env_only").is_some_and(ValueExt::is_truthy),
            },
            "_master_tops" => Self::MasterTops,
            "_file_recv" => Self::Recv(FileRecv {
                path: load.get("path").and_then(ValueExt::as_items),
                loc: load.get("loc"),
                data: load.get("data").and_then(ValueExt::as_bytes),
            }),
            _ => return None,
        })
    }
}

/// The `_file_hash` reply `{hash_type, hsum}` (`""` when the master has no such file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHash {
    /// `hsum`, the hex digest.
    pub hsum: String,
    /// `hash_type` (`sha256`, ...).
    pub hash_type: String,
}

impl FileHash {
    /// Reads the reply: `None` for "no such file" (`""`, or no text `hsum`/`hash_type`, or
    /// an empty `hsum`).
    pub fn from_value(v: &Value) -> Option<Self> {
        let text = |k| v.get(k).and_then(ValueExt::as_text).map(str::to_owned);
        Some(Self {
            hsum: text("hsum").filter(|h| !h.is_empty())?,
            hash_type: text("hash_type")?,
        })
    }
}

/// The `stat` list of a `_file_find` reply (`None` when the master has no such file).
pub fn find_stat(reply: &Value) -> Option<&[Value]> {
    reply.get("stat").and_then(ValueExt::as_items)
}

/// A `_serve_file` reply `{data, dest[, gzip]}`, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeChunk<'a> {
    /// `data` (str or bin): empty at the end of the file (or when there is no such file).
    pub data: &'a [u8],
    /// `gzip` present and not `None`: `data` is gzip-compressed.
    pub gzip: bool,
}

impl<'a> ServeChunk<'a> {
    /// Reads the reply; `None` when it has no `data` (the master answered `""`).
    pub fn from_value(v: &'a Value) -> Option<Self> {
        Some(Self {
            data: v.get("data").and_then(ValueExt::as_bytes)?,
            gzip: v.get("gzip").is_some_and(|g| !g.is_nil()),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::value::map;

    #[test]
    fn loads_read_as_salts_file_server_reads_them() {
        let load = map([
            ("path", Value::from("a/b.sls")),
            ("saltenv", Value::from(7)),
            ("loc", Value::from(-1)),
            ("gzip", Value::from(0)),
            ("prefix", Value::from("/x/")),
        ]);
        let Some(FileLoad::Serve(s)) = FileLoad::read("_serve_file", &load) else {
            panic!()
        };
        assert_eq!(s.file.saltenv.as_deref(), Some("7"));
        assert_eq!(s.loc, Some(&Value::from(-1)));
        assert_eq!(s.gzip, None, "gzip 0 is no gzip");
        let Some(FileLoad::List { kind, prefix, .. }) = FileLoad::read("_dir_list", &load) else {
            panic!()
        };
        assert_eq!((kind, prefix), (ListKind::Dirs, "x"));
        assert_eq!(FileLoad::read("_pillar", &load), None);
        for cmd in super::super::FILE_COMMANDS {
            assert!(FileLoad::read(cmd, &Value::Nil).is_some(), "{cmd}");
        }
    }

    #[test]
    fn replies_read_as_the_minion_needs_them() {
        let h = map([
            ("hash_type", Value::from("sha256")),
            ("hsum", Value::from("ab")),
        ]);
        assert_eq!(FileHash::from_value(&h).unwrap().hsum, "ab");
        assert_eq!(FileHash::from_value(&Value::from("")), None);
        let c = map([
            ("data", Value::Binary(b"z".to_vec())),
            ("dest", Value::from("f")),
            ("gzip", Value::from(1)),
        ]);
        assert_eq!(
            ServeChunk::from_value(&c),
            Some(ServeChunk {
                data: b"z",
                gzip: true
            })
        );
        assert_eq!(ServeChunk::from_value(&Value::from("")), None);
        assert_eq!(find_stat(&map([("path", Value::from(""))])), None);
    }
}
