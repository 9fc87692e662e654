//! Salt's `local_cache` layout (`salt/returners/local_cache.py`), which Python's
//! `salt-run jobs.*` reads and Salt's master writes:
//!
//! ```text
//! {cachedir}/jobs/<h[:2]>/<h[2:]>/      h = hash_type(jid) in hex (sha256 by default)
//!     jid                               the jid as text (prep_jid); its mtime is the job's age
//!     nocache                           returns of this job are not kept
//!     .load.p                           msgpack of the job load
//!     .minions.p, .minions.<syndic>.p   msgpack list of the targeted minions
//!     <minion id>/return.p              msgpack of {return, retcode, success} (those present)
//!     <minion id>/out.p                 msgpack of the return's `out`, when it has one
//! ```
//!
//! Before this layout, salt-rs wrote `{cachedir}/jobs/<jid>/` with the whole return load in
//! `return.p`; [`migrate_old_layout`] moves such jobs into this layout at start.

use std::path::{Path, PathBuf};

use rmpv::Value;
use salt_pki::HashType;

use super::safe_jid;

/// The job load.
pub const LOAD_P: &str = ".load.p";
/// The targeted minions.
pub const MINIONS_P: &str = ".minions.p";
/// A minion's return.
pub const RETURN_P: &str = "return.p";
/// A return's `out`.
pub const OUT_P: &str = "out.p";
/// The jid file (`prep_jid`).
pub const JID: &str = "jid";
/// The marker of a job whose returns are not kept.
pub const NOCACHE: &str = "nocache";

/// Salt's `salt.utils.jid.jid_dir`: `jobs/<h[:2]>/<h[2:]>` for `jid`.
pub fn jid_dir(jobs: &Path, jid: &str, hash: HashType) -> PathBuf {
    let h = hex::encode(hash.digest(jid.as_bytes()));
    jobs.join(&h[..2]).join(&h[2..])
}

/// What Salt's `local_cache.returner` keeps of a return load: `return.p` (the `return`,
/// `retcode` and `success` present, in that order) and `out.p` (its `out`, if any).
pub fn split_return(load: &Value) -> (Value, Option<Value>) {
    let kept = ["return", "retcode", "success"]
        .iter()
        .filter_map(|k| Some((Value::from(*k), salt_compat::map_get(load, k)?.clone())))
        .collect();
    let out = salt_compat::map_get(load, "out").cloned();
    (Value::Map(kept), out)
}

/// Salt's `get_jid` of one minion: `return.p` as a map with `return` (an older format held
/// the bare return), with `out` from `out.p`.
pub fn read_return(minion_dir: &Path) -> Option<Value> {
    let data = read_mp(&minion_dir.join(RETURN_P))?;
    let mut data = match data {
        Value::Map(m) if m.iter().any(|(k, _)| k.as_str() == Some("return")) => m,
        other => vec![(Value::from("return"), other)],
    };
    if let Some(out) = read_mp(&minion_dir.join(OUT_P)) {
        data.retain(|(k, _)| k.as_str() != Some("out"));
        data.push((Value::from("out"), out));
    }
    Some(Value::Map(data))
}

/// Salt's `get_load`: `.load.p`, with `Minions` (sorted, deduplicated) from `.minions.p` and
/// every `.minions.<syndic>.p` when any is there.
pub fn read_load(job: &Path) -> Option<Value> {
    let load = read_mp(&job.join(LOAD_P))?;
    let mut minions = std::collections::BTreeSet::new();
    if let Ok(rd) = std::fs::read_dir(job) {
        for e in rd.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let is_minions =
                name == MINIONS_P || (name.starts_with(".minions.") && name.ends_with(".p"));
            if is_minions && let Some(Value::Array(a)) = read_mp(&e.path()) {
                minions.extend(a.iter().filter_map(|m| m.as_str().map(str::to_owned)));
            }
        }
    }
    let mut load = match load {
        Value::Nil => Vec::new(),
        Value::Map(m) => m,
        other => return Some(other),
    };
    if !minions.is_empty() {
        load.retain(|(k, _)| k.as_str() != Some("Minions"));
        load.push((
            Value::from("Minions"),
            Value::Array(minions.into_iter().map(Value::from).collect()),
        ));
    }
    Some(Value::Map(load))
}

/// Salt's `_walk_through`: every job directory with a `.load.p` that decodes to a non-empty
/// map holding `jid`, as (jid, job directory), by jid.
pub fn walk(jobs: &Path) -> Vec<(String, PathBuf)> {
    walk_loads(jobs)
        .into_iter()
        .map(|(jid, dir, _)| (jid, dir))
        .collect()
}

/// [`walk`] with each job's load as read there (one read of each `.load.p`).
pub fn walk_loads(jobs: &Path) -> Vec<(String, PathBuf, Value)> {
    let mut found = Vec::new();
    let Ok(tops) = std::fs::read_dir(jobs) else {
        return found;
    };
    for top in tops.flatten() {
        let Ok(finals) = std::fs::read_dir(top.path()) else {
            continue;
        };
        for f in finals.flatten() {
            let path = f.path();
            let Some(load @ Value::Map(_)) = read_mp(&path.join(LOAD_P)) else {
                continue;
            };
            let Value::Map(m) = &load else { continue };
            let jid = m
                .iter()
                .find(|(k, _)| k.as_str() == Some("jid"))
                .and_then(|(_, v)| v.as_str());
            if let Some(jid) = jid {
                found.push((jid.to_owned(), path, load));
            }
        }
    }
    found.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    found
}

/// The msgpack in `path`, if it is there and decodes.
pub fn read_mp(path: &Path) -> Option<Value> {
    let bytes = std::fs::read(path).ok()?;
    salt_proto::decode(&bytes).ok()
}

/// Moves the jobs of salt-rs's old layout (`jobs/<jid>/`, the whole return load in
/// `return.p`) into Salt's: the directory renamed to its hashed place, a `jid` file written
/// with the age of the old `.load.p` (Salt ages a job by that file), each `return.p` cut to
/// what Salt keeps with `out` in `out.p`. A jid whose hashed directory exists already is
/// merged into it (returns there win). Returns how many jobs were moved.
pub fn migrate_old_layout(jobs: &Path, hash: HashType) -> std::io::Result<usize> {
    let entries = match std::fs::read_dir(jobs) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut moved = 0;
    for entry in entries {
        let entry = entry?;
        let Ok(jid) = entry.file_name().into_string() else {
            continue;
        };
        // A hashed layout's first level is two hex digits; an old jid is longer.
        if jid.len() <= 2 || !safe_jid(&jid) || !entry.file_type()?.is_dir() {
            continue;
        }
        let old = entry.path();
        let age = std::fs::metadata(old.join(LOAD_P))
            .or_else(|_| std::fs::metadata(&old))
            .and_then(|m| m.modified())
            .ok();
        // Returns first: their `return.p` become Salt's.
        for m in std::fs::read_dir(&old)?.flatten() {
            let name = m.file_name();
            if name.to_string_lossy().starts_with('.') || !m.file_type()?.is_dir() {
                continue;
            }
            let ret = m.path().join(RETURN_P);
            if let Some(load) = read_mp(&ret) {
                let (kept, out) = split_return(&load);
                std::fs::write(&ret, salt_proto::encode(&kept))?;
                if let Some(out) = out {
                    std::fs::write(m.path().join(OUT_P), salt_proto::encode(&out))?;
                }
            }
        }
        let jid_file = old.join(JID);
        std::fs::write(&jid_file, jid.as_bytes())?;
        if let Some(t) = age {
            std::fs::File::options()
                .write(true)
                .open(&jid_file)?
                .set_modified(t)?;
        }
        let new = jid_dir(jobs, &jid, hash);
        if let Some(parent) = new.parent() {
            std::fs::create_dir_all(parent)?;
        }
        match std::fs::rename(&old, &new) {
            Ok(()) => {}
            Err(_) if new.is_dir() => {
                for e in std::fs::read_dir(&old)?.flatten() {
                    let to = new.join(e.file_name());
                    if !to.exists() {
                        std::fs::rename(e.path(), to)?;
                    }
                }
                std::fs::remove_dir_all(&old)?;
            }
            Err(e) => return Err(e),
        }
        moved += 1;
    }
    if moved > 0 {
        salt_pki::files::fsync_dir(jobs)?;
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Salt's `jid_dir("20250101000000000001", "/c/jobs", "sha256")`.
    #[test]
    fn jid_dir_is_salts() {
        let d = jid_dir(
            Path::new("/c/jobs"),
            "20250101000000000001",
            HashType::Sha256,
        );
        let h = hex::encode(HashType::Sha256.digest(b"20250101000000000001"));
        assert_eq!(d, Path::new("/c/jobs").join(&h[..2]).join(&h[2..]));
        assert_eq!(d.parent().unwrap().file_name().unwrap().len(), 2);
    }

    #[test]
    fn old_jobs_move_into_the_hashed_layout() {
        let t = tempfile::tempdir().unwrap();
        let jobs = t.path();
        let jid = "20250101000000000009";
        std::fs::create_dir_all(jobs.join(jid).join("m1")).unwrap();
        let load = Value::Map(vec![
            (Value::from("fun"), Value::from("test.ping")),
            (Value::from("jid"), Value::from(jid)),
        ]);
        std::fs::write(jobs.join(jid).join(LOAD_P), salt_proto::encode(&load)).unwrap();
        let ret = Value::Map(vec![
            (Value::from("id"), Value::from("m1")),
            (Value::from("return"), Value::Boolean(true)),
            (Value::from("success"), Value::Boolean(true)),
            (Value::from("retcode"), Value::from(0)),
            (Value::from("out"), Value::from("nested")),
        ]);
        std::fs::write(
            jobs.join(jid).join("m1").join(RETURN_P),
            salt_proto::encode(&ret),
        )
        .unwrap();
        assert_eq!(migrate_old_layout(jobs, HashType::Sha256).unwrap(), 1);
        assert!(!jobs.join(jid).exists());
        let new = jid_dir(jobs, jid, HashType::Sha256);
        assert_eq!(std::fs::read(new.join(JID)).unwrap(), jid.as_bytes());
        assert_eq!(read_load(&new).unwrap(), load);
        let want = Value::Map(vec![
            (Value::from("return"), Value::Boolean(true)),
            (Value::from("retcode"), Value::from(0)),
            (Value::from("success"), Value::Boolean(true)),
        ]);
        assert_eq!(read_mp(&new.join("m1").join(RETURN_P)).unwrap(), want);
        assert_eq!(
            read_mp(&new.join("m1").join(OUT_P)).unwrap(),
            Value::from("nested")
        );
        assert_eq!(walk(jobs), vec![(jid.to_owned(), new)]);
        // Nothing left to move.
        assert_eq!(migrate_old_layout(jobs, HashType::Sha256).unwrap(), 0);
    }
}
