//! The batches' files: `.batch.p` in the job's directory and the index of active batches
//! `cachedir/batch_active.p`, msgpack as Salt 3008 writes them (`salt/utils/batch_state.py`),
//! so a Salt 3008 `salt --async -b` beside our master and our runners read the same files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use salt_client::batch::BatchState;
use salt_compat::json::{json_to_msgpack, msgpack_to_json};
use serde_json::Value;

/// Where the batch files are: the job cache's directory and its `hash_type`.
#[derive(Clone, Debug)]
pub(crate) struct Files {
    pub jobs: PathBuf,
    pub cachedir: PathBuf,
    pub hash: salt_pki::HashType,
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

impl Files {
    fn state_path(&self, jid: &str) -> PathBuf {
        crate::jobs::local_cache::jid_dir(&self.jobs, jid, self.hash).join(".batch.p")
    }

    fn index_path(&self) -> PathBuf {
        self.cachedir.join("batch_active.p")
    }

    /// `write_batch_state`.
    pub(crate) fn write(&self, state: &BatchState) -> std::io::Result<()> {
        if !crate::jobs::jid::safe_jid(&state.jid) {
            return Err(std::io::Error::other(format!("bad jid {:?}", state.jid)));
        }
        let bytes = salt_proto::encode(&json_to_msgpack(&state.to_json()));
        write_atomic(&self.state_path(&state.jid), &bytes)
    }

    /// `read_batch_state`: `None` when missing or unreadable.
    pub(crate) fn read(&self, jid: &str) -> Option<BatchState> {
        if !crate::jobs::jid::safe_jid(jid) {
            return None;
        }
        let bytes = std::fs::read(self.state_path(jid)).ok()?;
        let v = salt_proto::decode(&bytes).ok()?;
        BatchState::from_json(&msgpack_to_json(&v))
    }

    /// `read_active_index`.
    pub(crate) fn active(&self) -> BTreeSet<String> {
        let Ok(bytes) = std::fs::read(self.index_path()) else {
            return BTreeSet::new();
        };
        match salt_proto::decode(&bytes).map(|v| msgpack_to_json(&v)) {
            Ok(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => BTreeSet::new(),
        }
    }

    fn write_index(&self, jids: &BTreeSet<String>) -> std::io::Result<()> {
        let list: Vec<Value> = jids.iter().map(|j| Value::from(j.as_str())).collect();
        write_atomic(
            &self.index_path(),
            &salt_proto::encode(&json_to_msgpack(&Value::Array(list))),
        )
    }

    /// `add_to_active_index`.
    pub(crate) fn add_active(&self, jid: &str) -> std::io::Result<()> {
        let mut jids = self.active();
        jids.insert(jid.to_owned());
        self.write_index(&jids)
    }

    /// `remove_from_active_index`.
    pub(crate) fn remove_active(&self, jid: &str) -> std::io::Result<()> {
        let mut jids = self.active();
        if jids.remove(jid) {
            self.write_index(&jids)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_round_trip_in_salts_layout() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files {
            jobs: dir.path().join("jobs"),
            cachedir: dir.path().to_path_buf(),
            hash: salt_pki::HashType::Sha256,
        };
        let s = BatchState {
            jid: "20260101000000000000".into(),
            all_minions: vec!["m1".into()],
            driver: "master".into(),
            ..Default::default()
        };
        files.write(&s).unwrap();
        assert_eq!(files.read(&s.jid), Some(s.clone()));
        files.add_active(&s.jid).unwrap();
        assert!(files.active().contains(&s.jid));
        files.remove_active(&s.jid).unwrap();
        assert!(files.active().is_empty());
        assert!(files.read("../x").is_none());
    }
}
