//! The spool of the job cache: what could not be written to the database (it was down)
//! waits here, one file per item, until the replay writes it and removes the file.
//!
//! A file is `<unix nanos>-<pid>-<n>.json`, written to a dot name, flushed and renamed,
//! so a crash leaves either nothing or a whole item (dot files of dead writers are
//! removed at start). The rows are inserted with `ON CONFLICT DO NOTHING`, so replaying an
//! item twice (a crash between the insert and the removal) stores it once.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// One spooled item.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Item {
    /// A job load (`jids`).
    Load {
        /// The job id.
        jid: String,
        /// The load, JSON text.
        load: String,
    },
    /// A minion's return (`salt_returns`).
    Return(crate::ReturnRow),
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// The spool directory.
#[derive(Debug)]
pub(crate) struct Spool {
    dir: PathBuf,
}

impl Spool {
    pub(crate) fn new(dir: PathBuf) -> Self {
        let spool = Self { dir };
        // Half-written items of a writer that died: never renamed, never complete.
        if let Ok(rd) = std::fs::read_dir(&spool.dir) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with('.') {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        spool
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Write `item` (flushed before it gets its name).
    pub(crate) fn put(&self, item: &Item) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!(
            "{nanos:020}-{}-{}.json",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let tmp = self.dir.join(format!(".{name}"));
        let data = serde_json::to_vec(item).map_err(std::io::Error::other)?;
        let written = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&data)?;
            f.sync_all()?;
            std::fs::rename(&tmp, self.dir.join(&name))
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// The spooled items' paths, oldest first.
    pub(crate) fn list(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.extension().is_some_and(|x| x == "json")
                            && !p
                                .file_name()
                                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// How many items wait.
    pub(crate) fn len(&self) -> usize {
        self.list().len()
    }

    /// Read one item; `None` (and the file set aside as `.bad`) when it cannot be parsed.
    pub(crate) fn read(path: &Path) -> Option<Item> {
        let parsed = std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        if parsed.is_none() {
            tracing::error!(
                "job cache spool: {} is unreadable; set aside as .bad",
                path.display()
            );
            Self::set_aside(path);
        }
        parsed
    }

    /// Keep a file the database refuses out of the replay (renamed `<name>.bad`).
    pub(crate) fn set_aside(path: &Path) {
        let _ = std::fs::rename(path, path.with_extension("bad"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_round_trip_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        assert_eq!(spool.len(), 0);
        let a = Item::Load {
            jid: "1".into(),
            load: "{}".into(),
        };
        let b = Item::Return(crate::ReturnRow {
            jid: "1".into(),
            id: "m".into(),
            fun: "test.ping".into(),
            success: true,
            full_ret: r#"{"return":true}"#.into(),
        });
        spool.put(&a).unwrap();
        spool.put(&b).unwrap();
        std::fs::write(spool.dir().join(".x.json"), b"half").unwrap();
        let list = spool.list();
        assert_eq!(list.len(), 2);
        assert_eq!(Spool::read(&list[0]), Some(a));
        assert_eq!(Spool::read(&list[1]), Some(b));
        // A new start removes the half-written dot file.
        let spool = Spool::new(dir.path().join("spool"));
        assert!(!spool.dir().join(".x.json").exists());
        std::fs::write(spool.dir().join("0-0-0.json"), b"nonsense").unwrap();
        let list = spool.list();
        assert_eq!(Spool::read(&list[0]), None);
        assert!(spool.dir().join("0-0-0.bad").exists());
    }
}
