//! Returns kept until a master acknowledges them (issue #19, docs/group.md): a job's
//! `_return` that no master answered (the master died mid-job, the request timed out, the
//! minion was between masters) is kept here and sent again to the master the minion signs
//! in to next (after a failover: the next master of the list). A master's AES reply is
//! the acknowledgement: it answers once the return is stored (or spooled). A return sent
//! twice is stored once (the group job cache's `(jid, id)` is unique; the files driver
//! rewrites the same file).
//!
//! Kept in memory, at most [`LIMIT`] (the oldest dropped first, with a warning), and, with
//! [`Kept::persistent`], each also in a file of `cachedir/kept_returns/` (written
//! atomically) until a master acknowledges it: a minion restarted before it reached a
//! master sends them after its first sign-in. A return larger than [`MAX_FILE`] stays in
//! memory only (with a warning).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmpv::Value;

/// Most returns kept at once.
pub const LIMIT: usize = 1000;
/// Largest return written to disk (its msgpack bytes).
pub const MAX_FILE: usize = 4 << 20;
/// Mode of the files (returns may hold secrets).
const FILE_MODE: u32 = 0o600;

/// The returns waiting for an acknowledgement (cheap to clone: shared).
#[derive(Clone, Debug, Default)]
pub struct Kept(Arc<Mutex<Inner>>);

#[derive(Debug, Default)]
struct Inner {
    /// Waiting to be sent, oldest first, with their files.
    queue: VecDeque<(Value, Option<PathBuf>)>,
    /// Sent, not acknowledged yet: jid -> file.
    sent: HashMap<String, PathBuf>,
    dir: Option<PathBuf>,
    serial: u64,
}

fn is_return(load: &Value) -> bool {
    crate::matcher::map_lookup(load, "cmd").and_then(Value::as_str) == Some("_return")
}

fn jid_of(load: &Value) -> String {
    crate::matcher::map_lookup(load, "jid")
        .map(crate::matcher::py_str)
        .unwrap_or_default()
}

fn remove(path: &Path) {
    if let Err(e) = std::fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("Cannot remove kept return {}: {e}", path.display());
    }
}

impl Inner {
    /// Write `load` to a new file of the directory (if any, and not too large).
    fn write(&mut self, load: &Value, jid: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        let mut bytes = Vec::new();
        if rmpv::encode::write_value(&mut bytes, load).is_err() {
            return None;
        }
        if bytes.len() > MAX_FILE {
            tracing::warn!(
                "The return of job {jid} ({} bytes) is kept in memory only (over {MAX_FILE})",
                bytes.len()
            );
            return None;
        }
        self.serial += 1;
        let safe: String = jid
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(64)
            .collect();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_micros();
        let path = dir.join(format!("{stamp:020}-{:06}-{safe}.mp", self.serial));
        match salt_pki::files::atomic_write(&path, &bytes, FILE_MODE) {
            Ok(()) => Some(path),
            Err(e) => {
                tracing::warn!("The return of job {jid} is kept in memory only: {e}");
                None
            }
        }
    }
}

impl Kept {
    /// Kept returns also written to `dir` (created), with the ones a previous run left
    /// there loaded first (oldest first; unreadable files are set aside with a warning).
    pub fn persistent(dir: &Path) -> Self {
        let mut inner = Inner {
            dir: Some(dir.to_owned()),
            ..Inner::default()
        };
        if let Err(e) = std::fs::create_dir_all(dir) {
            tracing::warn!("Kept returns stay in memory only: {}: {e}", dir.display());
            inner.dir = None;
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "mp"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        let excess = files.len().saturating_sub(LIMIT);
        for path in files.drain(..excess) {
            tracing::warn!(
                "More than {LIMIT} kept returns: dropping {}",
                path.display()
            );
            remove(&path);
        }
        for path in files {
            let load = std::fs::read(&path)
                .ok()
                .and_then(|b| rmpv::decode::read_value(&mut b.as_slice()).ok())
                .filter(is_return);
            match load {
                Some(load) => inner.queue.push_back((load, Some(path))),
                None => {
                    tracing::warn!("Unreadable kept return {}: set aside", path.display());
                    let _ = std::fs::rename(&path, path.with_extension("bad"));
                }
            }
        }
        if !inner.queue.is_empty() {
            tracing::info!(
                "{} return(s) kept from a previous run wait for a master",
                inner.queue.len()
            );
        }
        Self(Arc::new(Mutex::new(inner)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keep `load` if it is a job return (events are not kept). Returns whether it was.
    pub fn keep(&self, load: Value) -> bool {
        if !is_return(&load) {
            return false;
        }
        let jid = jid_of(&load);
        let mut q = self.lock();
        if q.queue.len() >= LIMIT
            && let Some((old, path)) = q.queue.pop_front()
        {
            if let Some(p) = path {
                remove(&p);
            }
            tracing::warn!(
                "More than {LIMIT} returns wait for a master: dropping the oldest (job {})",
                jid_of(&old)
            );
        }
        // Sent before and failed again: its file is still there.
        let path = match q.sent.remove(&jid) {
            Some(p) => Some(p),
            None => q.write(&load, &jid),
        };
        q.queue.push_back((load, path));
        tracing::info!(
            "Keeping the return of job {jid} until a master acknowledges it ({} kept)",
            q.queue.len()
        );
        true
    }

    /// Everything kept, oldest first (to send to the master just signed in to). Their
    /// files stay until [`acked`](Self::acked).
    pub fn take(&self) -> Vec<Value> {
        let mut q = self.lock();
        let items: Vec<(Value, Option<PathBuf>)> = q.queue.drain(..).collect();
        let mut out = Vec::with_capacity(items.len());
        for (load, path) in items {
            if let Some(p) = path {
                let jid = jid_of(&load);
                q.sent.insert(jid, p);
            }
            out.push(load);
        }
        out
    }

    /// A master acknowledged `load`: forget its file (if it was kept).
    pub fn acked(&self, load: &Value) {
        if !is_return(load) {
            return;
        }
        let mut q = self.lock();
        if q.sent.is_empty() {
            return;
        }
        if let Some(p) = q.sent.remove(&jid_of(load)) {
            remove(&p);
        }
    }

    /// How many returns are kept.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ret(jid: &str) -> Value {
        Value::Map(vec![
            ("cmd".into(), "_return".into()),
            ("jid".into(), jid.into()),
        ])
    }

    #[test]
    fn keeps_returns_not_events_oldest_first_bounded() {
        let k = Kept::default();
        assert!(!k.keep(Value::Map(vec![("cmd".into(), "_minion_event".into())])));
        assert!(k.keep(ret("1")));
        assert!(k.clone().keep(ret("2")));
        assert_eq!(k.take(), vec![ret("1"), ret("2")]);
        assert!(k.is_empty());
        for i in 0..LIMIT + 5 {
            k.keep(ret(&i.to_string()));
        }
        let all = k.take();
        assert_eq!(all.len(), LIMIT);
        assert_eq!(all[0], ret("5"));
    }

    #[test]
    #[allow(clippy::unwrap_used)]
    fn persisted_until_acknowledged_and_reloaded_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let kdir = dir.path().join("kept_returns");
        let k = Kept::persistent(&kdir);
        assert!(k.keep(ret("10")));
        assert!(k.keep(ret("11")));
        assert_eq!(std::fs::read_dir(&kdir).unwrap().count(), 2);
        // A restart: both come back, oldest first.
        let again = Kept::persistent(&kdir);
        assert_eq!(again.take(), vec![ret("10"), ret("11")]);
        // Sent but not acknowledged: still on disk for the next restart.
        assert_eq!(Kept::persistent(&kdir).len(), 2);
        again.acked(&ret("10"));
        // Sent again after failing: the same file, not a second one.
        assert!(again.keep(ret("11")));
        assert_eq!(std::fs::read_dir(&kdir).unwrap().count(), 1);
        assert_eq!(Kept::persistent(&kdir).take(), vec![ret("11")]);
        again.take();
        again.acked(&ret("11"));
        assert_eq!(std::fs::read_dir(&kdir).unwrap().count(), 0);
        // A broken file is set aside, not fatal.
        std::fs::write(kdir.join("00-bad.mp"), b"\xc1").unwrap();
        assert!(Kept::persistent(&kdir).is_empty());
        assert!(kdir.join("00-bad.bad").exists());
    }
}
