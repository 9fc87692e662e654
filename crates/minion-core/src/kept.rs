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
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use rmpv::Value;
use salt_proto::msg::ReturnLoad;

/// Most returns kept at once.
pub const LIMIT: usize = 1000;
/// Largest return written to disk (its msgpack bytes).
pub const MAX_FILE: usize = 4 << 20;
/// Mode of the files (returns may hold secrets).
const FILE_MODE: u32 = 0o600;
/// Longest [`Kept::flush`] waits for the writer thread.
const FLUSH_WAIT: Duration = Duration::from_secs(30);

/// The returns waiting for an acknowledgement (cheap to clone: shared).
///
/// The files are written and removed by one writer thread, in the order the operations
/// were decided under the lock (a file's removal always follows its write), so the minion's
/// async runtime never waits on the disk.
#[derive(Clone, Debug, Default)]
pub struct Kept(Arc<Mutex<Inner>>);

/// A return sent and not acknowledged yet is found again by its jid and the digest of its
/// bytes: two unacknowledged returns of one jid (a job published again, the `req` jid of
/// jobs the minion starts itself) each keep their own file.
type SentKey = (String, u64);

/// A kept return's file.
#[derive(Debug)]
struct File {
    path: PathBuf,
    key: SentKey,
}

/// What the writer thread does, in order.
enum Op {
    Write { path: PathBuf, bytes: Vec<u8> },
    Remove(PathBuf),
    Flush(mpsc::SyncSender<()>),
}

#[derive(Debug, Default)]
struct Inner {
    /// Waiting to be sent, oldest first, with their files.
    queue: VecDeque<(Value, Option<File>)>,
    /// Sent, not acknowledged yet: (jid, digest) -> files (identical returns share a key).
    sent: HashMap<SentKey, Vec<PathBuf>>,
    dir: Option<PathBuf>,
    writer: Option<mpsc::Sender<Op>>,
    serial: u64,
}

/// The jid of a job return (`None` for anything else: events are not kept).
fn jid_of(load: &Value) -> Option<String> {
    ReturnLoad::ids(load).ok().map(|r| r.jid.to_owned())
}

/// The msgpack bytes of `load` and their digest (the key of a sent return).
fn encoded(load: &Value) -> Option<(Vec<u8>, u64)> {
    let mut bytes = Vec::new();
    rmpv::encode::write_value(&mut bytes, load).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    Some((bytes, h.finish()))
}

fn remove(path: &Path) {
    if let Err(e) = std::fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("Cannot remove kept return {}: {e}", path.display());
    }
}

/// The writer thread: applies the operations in order until every sender is gone.
fn writer(rx: mpsc::Receiver<Op>) {
    for op in rx {
        match op {
            Op::Write { path, bytes } => {
                if let Err(e) = salt_pki::files::atomic_write(&path, &bytes, FILE_MODE) {
                    tracing::warn!(
                        "A kept return stays in memory only: {}: {e}",
                        path.display()
                    );
                }
            }
            Op::Remove(path) => remove(&path),
            Op::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

impl Inner {
    fn send(&self, op: Op) {
        if let Some(tx) = &self.writer
            && tx.send(op).is_err()
        {
            tracing::warn!("The kept-returns writer is gone: a kept return stays in memory only");
        }
    }

    /// A new file name for `load` of `jid` (written by the writer thread), if persistent
    /// and not too large.
    fn write(&mut self, jid: &str, bytes: Vec<u8>, digest: u64) -> Option<File> {
        let dir = self.dir.as_ref()?;
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
        self.send(Op::Write {
            path: path.clone(),
            bytes,
        });
        Some(File {
            path,
            key: (jid.to_owned(), digest),
        })
    }
}

impl Kept {
    /// Kept returns also written to `dir` (created), with the ones a previous run left
    /// there loaded first (oldest first; unreadable files are set aside with a warning).
    /// Blocking (reads the directory): call it off the async runtime.
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
                .and_then(|load| Some((jid_of(&load)?, encoded(&load)?.1, load)));
            match load {
                Some((jid, digest, load)) => {
                    let key = (jid, digest);
                    inner.queue.push_back((load, Some(File { path, key })));
                }
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
        if inner.dir.is_some() {
            let (tx, rx) = mpsc::channel();
            match std::thread::Builder::new()
                .name("kept-returns".into())
                .spawn(move || writer(rx))
            {
                Ok(_) => inner.writer = Some(tx),
                Err(e) => {
                    tracing::warn!("Kept returns stay in memory only: no writer thread: {e}");
                    inner.dir = None;
                }
            }
        }
        Self(Arc::new(Mutex::new(inner)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keep `load` if it is a job return (events are not kept). Returns whether it was.
    /// Its file is written by the writer thread (see [`flush`](Self::flush)).
    pub fn keep(&self, load: Value) -> bool {
        let Some(jid) = jid_of(&load) else {
            return false;
        };
        // Encoded before taking the lock, and only when it goes to disk.
        let persistent = self.lock().dir.is_some();
        let enc = if persistent { encoded(&load) } else { None };
        let mut q = self.lock();
        if q.queue.len() >= LIMIT
            && let Some((old, file)) = q.queue.pop_front()
        {
            if let Some(f) = file {
                q.send(Op::Remove(f.path));
            }
            tracing::warn!(
                "More than {LIMIT} returns wait for a master: dropping the oldest (job {})",
                jid_of(&old).unwrap_or_default()
            );
        }
        let file = enc.and_then(|(bytes, digest)| {
            let key = (jid.clone(), digest);
            // Sent before and failed again: its file is still there.
            match q.sent.get_mut(&key).and_then(Vec::pop) {
                Some(path) => {
                    if q.sent.get(&key).is_some_and(Vec::is_empty) {
                        q.sent.remove(&key);
                    }
                    Some(File { path, key })
                }
                None => q.write(&jid, bytes, digest),
            }
        });
        q.queue.push_back((load, file));
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
        let items: Vec<(Value, Option<File>)> = q.queue.drain(..).collect();
        let mut out = Vec::with_capacity(items.len());
        for (load, file) in items {
            if let Some(f) = file {
                q.sent.entry(f.key).or_default().push(f.path);
            }
            out.push(load);
        }
        out
    }

    /// A master acknowledged `load`: forget its file (if it was kept).
    pub fn acked(&self, load: &Value) {
        let Some(jid) = jid_of(load) else {
            return;
        };
        if !self.lock().sent.keys().any(|(j, _)| *j == jid) {
            return;
        }
        let Some((_, digest)) = encoded(load) else {
            return;
        };
        let key = (jid, digest);
        let mut q = self.lock();
        let Some(paths) = q.sent.get_mut(&key) else {
            return;
        };
        let path = paths.pop();
        if paths.is_empty() {
            q.sent.remove(&key);
        }
        if let Some(p) = path {
            q.send(Op::Remove(p));
        }
    }

    /// Waits (at most 30 s) until the writer thread has done every write and removal
    /// decided so far: at shutdown, and in tests. Blocking.
    pub fn flush(&self) {
        let (done, wait) = mpsc::sync_channel(1);
        self.lock().send(Op::Flush(done));
        if self.lock().writer.is_some() && wait.recv_timeout(FLUSH_WAIT).is_err() {
            tracing::warn!("Kept returns: the writer did not finish in {FLUSH_WAIT:?}");
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ret_of(jid: &str, value: Value) -> Value {
        Value::Map(vec![
            ("cmd".into(), "_return".into()),
            ("id".into(), "m1".into()),
            ("return".into(), value),
            ("jid".into(), jid.into()),
        ])
    }

    fn ret(jid: &str) -> Value {
        ret_of(jid, true.into())
    }

    fn files(dir: &Path) -> usize {
        std::fs::read_dir(dir).unwrap().count()
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
    fn persisted_until_acknowledged_and_reloaded_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let kdir = dir.path().join("kept_returns");
        let k = Kept::persistent(&kdir);
        assert!(k.keep(ret("10")));
        assert!(k.keep(ret("11")));
        k.flush();
        assert_eq!(files(&kdir), 2);
        // A restart: both come back, oldest first.
        let again = Kept::persistent(&kdir);
        assert_eq!(again.take(), vec![ret("10"), ret("11")]);
        // Sent but not acknowledged: still on disk for the next restart.
        assert_eq!(Kept::persistent(&kdir).len(), 2);
        again.acked(&ret("10"));
        // Sent again after failing: the same file, not a second one.
        assert!(again.keep(ret("11")));
        again.flush();
        assert_eq!(files(&kdir), 1);
        assert_eq!(Kept::persistent(&kdir).take(), vec![ret("11")]);
        again.take();
        again.acked(&ret("11"));
        again.flush();
        assert_eq!(files(&kdir), 0);
        // A broken file is set aside, not fatal.
        std::fs::write(kdir.join("00-bad.mp"), b"\xc1").unwrap();
        assert!(Kept::persistent(&kdir).is_empty());
        assert!(kdir.join("00-bad.bad").exists());
    }

    #[test]
    fn two_unacknowledged_returns_of_one_jid_keep_their_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let kdir = dir.path().join("kept_returns");
        let k = Kept::persistent(&kdir);
        // The `req` jid of jobs the minion starts itself, twice, and one return kept twice.
        let (a, b) = (
            ret_of("req", "first".into()),
            ret_of("req", "second".into()),
        );
        for load in [&a, &b, &b] {
            assert!(k.keep(load.clone()));
        }
        assert_eq!(k.take(), vec![a.clone(), b.clone(), b.clone()]);
        k.flush();
        assert_eq!(files(&kdir), 3);
        // The master acknowledged `b` once: one of its files goes, `a`'s stays.
        k.acked(&b);
        k.flush();
        assert_eq!(Kept::persistent(&kdir).take(), vec![a.clone(), b.clone()]);
        // `a` failed again: kept with its own file, not `b`'s.
        assert!(k.keep(a.clone()));
        k.acked(&b);
        k.flush();
        assert_eq!(files(&kdir), 1);
        assert_eq!(Kept::persistent(&kdir).take(), vec![a.clone()]);
        // Acknowledging what was never sent touches nothing.
        k.acked(&b);
        k.take();
        k.acked(&a);
        k.flush();
        assert_eq!(files(&kdir), 0);
    }
}
