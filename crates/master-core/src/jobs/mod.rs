//! The job cache behind a trait ([`JobStore`]) with two drivers, and the registry of the
//! `salt` commands waiting for returns.
//!
//! * [`FileJobs`] (`master_job_cache: local_cache`, the default): the files of
//!   `{cachedir}/jobs`, as before.
//! * [`PgJobs`] (`master_job_cache: pgjsonb`, docs/group.md): the tables of Salt's
//!   `pgjsonb` returner in the group's PostgreSQL; every return stored once per
//!   `(jid, id)`, and the returns other masters store are handed to the commands waiting
//!   here.
//!
//! A waiting command gets each minion's return once, however it arrives (directly, from
//! another master through the database, or both).

pub(crate) mod clean;
pub(crate) mod files;
pub(crate) mod flush;
pub(crate) mod gather;
pub(crate) mod jid;
pub mod local_cache;
mod pg;
pub(crate) mod pg_returner;
pub(crate) mod publish;
pub(crate) mod run;
mod sink;
pub(crate) mod store;
pub(crate) mod waiters;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmpv::Value;
use tokio::sync::mpsc;

pub(crate) use files::write_unsynced;
pub(crate) use files::{FileJobs, sweep_stale_dot_temps};
pub(crate) use pg::PgJobs;
pub(crate) use pg_returner::PostgresJobs;

use clean::CleanReport;
use jid::safe_jid;
use store::{JobError, JobStore};
use waiters::{ReturnEvent, Waiters};

/// Salt's `store_job` of a runner or wheel call (`SyncClientMixin.low`): a job of the master
/// (`id` and `tgt` its id) whose return is the call's event data (`fun` `runner.<fun>` or
/// `wheel.<fun>`, `jid`, `user`, `fun_args`, `return`, `success`), its load keeping `fun` and
/// `user` from that data as `salt.utils.job.store_job` does; `jobs.list_jobs` lists it as
/// Salt's. A failed write is logged, as Salt logs it.
pub(crate) fn store_master_job(
    shared: &crate::shared::Shared,
    jid: &str,
    data: &serde_json::Map<String, serde_json::Value>,
) {
    let id = shared.cfg.id.as_str();
    let load = serde_json::json!({"id": id, "tgt": id, "jid": jid, "return": data,
                                  "fun": data.get("fun"), "user": data.get("user")});
    let load = salt_compat::json::json_to_msgpack(&load);
    let stored = shared
        .jobs
        .prep_jid(jid, false)
        .and_then(|()| shared.jobs.store_job(jid, &load, None))
        .and_then(|()| shared.jobs.store_return(jid, id, &load));
    if let Err(e) = stored {
        tracing::error!(
            "Could not store job cache info. Job details for this run may be unavailable. \
             ({jid}: {e})"
        );
    }
}

/// Salt's `save_load` of `load`, and `save_minions` when it has a `tgt` and the minions are
/// known.
fn store_load(
    store: &dyn JobStore,
    jid: &str,
    load: &Value,
    minions: Option<&[String]>,
) -> Result<(), JobError> {
    store.save_load(jid, load)?;
    let tgt = salt_compat::map_get(load, "tgt");
    let has_tgt = tgt.is_some_and(|t| t.as_str() != Some(""));
    if has_tgt && let Some(minions) = minions {
        store.save_minions(jid, minions)?;
    }
    Ok(())
}

/// The job cache in use and the registry of waiting `salt` commands.
#[derive(Debug)]
pub struct Jobs {
    store: Arc<dyn JobStore>,
    waiters: Arc<Waiters>,
    sink: sink::ReturnSink,
    dir: std::path::PathBuf,
}

impl Jobs {
    /// The files driver on `dir` (`{cachedir}/jobs`); see [`FileJobs::new`].
    pub fn new(dir: std::path::PathBuf) -> Self {
        Self::with_store(Box::new(FileJobs::new(dir.clone())), dir)
    }

    /// The files driver on `dir` with the master's `hash_type` (see
    /// [`FileJobs::with_hash_type`]).
    pub fn files(dir: std::path::PathBuf, hash: salt_pki::HashType) -> Self {
        Self::with_store(Box::new(FileJobs::with_hash_type(dir.clone(), hash)), dir)
    }

    /// Over `store` (`dir`: `{cachedir}/jobs`, shown in messages).
    pub fn with_store(store: Box<dyn JobStore>, dir: std::path::PathBuf) -> Self {
        let waiters = Arc::new(Waiters::default());
        store.start(waiters.clone());
        let store: Arc<dyn JobStore> = Arc::from(store);
        Self {
            sink: sink::ReturnSink::start(store.clone(), waiters.clone()),
            store,
            waiters,
            dir,
        }
    }

    /// The driver.
    pub fn store(&self) -> &dyn JobStore {
        self.store.as_ref()
    }

    /// `{cachedir}/jobs`.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Start listening for returns of `jid` (before publishing it, so none is missed).
    pub fn subscribe(&self, jid: &str) -> mpsc::UnboundedReceiver<ReturnEvent> {
        self.waiters.subscribe(jid)
    }

    /// The jids a `salt` command is waiting on now (never cleaned, whatever their age).
    pub fn waited(&self) -> HashSet<String> {
        self.waiters.jids()
    }

    /// Hand a return to a waiting `salt` command without storing it (`job_cache: False`),
    /// through the return sink.
    pub fn deliver(&self, jid: &str, id: &str, load: &Value) {
        if self.sink.push(jid, id, load.clone(), false).is_err() {
            self.waiters.deliver(jid, id, load);
        }
    }

    /// Wait until every return queued so far is delivered and written (see [`store_return`]),
    /// and every job load queued: the job cache's readers call it first.
    ///
    /// [`store_return`]: Jobs::store_return
    pub fn flush(&self) {
        self.sink.flush();
    }

    /// Write what is queued and stop the return sink (shutdown); later returns are written
    /// by the caller's thread.
    pub fn close(&self) {
        self.sink.close();
    }

    /// Stop every listener of `jid` (a jid of one command: its own job, a `find_job` round).
    pub fn unsubscribe(&self, jid: &str) {
        self.waiters.unsubscribe_all(jid);
    }

    /// Stop listening for `jid` on `rx` (from [`subscribe`](Self::subscribe)); the other
    /// listeners of `jid` (the slices of one batch) keep theirs.
    pub fn unsubscribe_one(&self, jid: &str, rx: mpsc::UnboundedReceiver<ReturnEvent>) {
        self.waiters.unsubscribe(jid, rx);
    }

    /// Salt's `prep_jid` (see [`JobStore::prep_jid`]).
    pub fn prep_jid(&self, jid: &str, nocache: bool) -> Result<(), JobError> {
        self.store.prep_jid(jid, nocache)
    }

    /// Save the job load, and (Salt's `save_load` with a `tgt`) the minions it targets.
    pub fn store_job(
        &self,
        jid: &str,
        load: &Value,
        minions: Option<&[String]>,
    ) -> Result<(), JobError> {
        store_load(self.store.as_ref(), jid, load, minions)
    }

    /// [`store_job`](Self::store_job) by the return sink's `job-cache` thread, behind the
    /// caller, before any return of `jid` (a failure is logged there). Without the sink's
    /// threads it is stored here.
    pub fn store_job_behind(
        &self,
        jid: &str,
        load: Value,
        minions: Option<Vec<String>>,
    ) -> Result<(), JobError> {
        let load = sink::Load {
            jid: jid.to_owned(),
            load,
            minions,
        };
        match self.sink.push_load(load) {
            Ok(()) => Ok(()),
            Err(l) => self.store_job(&l.jid, &l.load, l.minions.as_deref()),
        }
    }

    /// Wait until the job loads queued by [`store_job_behind`](Self::store_job_behind)
    /// before this call are written (readers of the job loads alone).
    pub fn flush_loads(&self) {
        self.sink.flush_loads();
    }

    /// Queue a minion's return (id already validated) for the return sink, which hands it to
    /// a waiting command and then stores it (a failed write is logged there); `Ok` once
    /// queued. [`flush`](Self::flush) waits for the write. Without the sink's threads the
    /// return is stored and delivered here.
    pub fn store_return(&self, jid: &str, id: &str, load: &Value) -> Result<(), JobError> {
        if !safe_jid(jid) {
            return Err(JobError::BadJid(jid.to_owned()));
        }
        let Err(load) = self.sink.push(jid, id, load.clone(), true) else {
            return Ok(());
        };
        let r = self.store.save_return(jid, id, &load);
        self.waiters.deliver(jid, id, &load);
        r
    }

    /// Salt's `clean_old_jobs` over the driver in use.
    pub fn clean(&self, keep: Duration, now: SystemTime) -> Result<CleanReport, JobError> {
        if keep.is_zero() {
            return Ok(CleanReport::default());
        }
        self.store.clean(keep, now, &self.waited())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// `{cachedir}/jobs` under `dir`, the directory of `jid` there, joined with `rest`.
    fn at(dir: &std::path::Path, jid: &str, rest: &str) -> std::path::PathBuf {
        local_cache::jid_dir(&dir.join("jobs"), jid, salt_pki::HashType::Sha256).join(rest)
    }

    /// A load stored behind the caller (the reactor's `local.` reactions) is written by the
    /// sink's thread with its minions; `flush_loads` waits for it, `flush` for it and the
    /// returns.
    #[test]
    fn loads_stored_behind_are_written_and_flushed() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = Jobs::new(dir.path().join("jobs"));
        let jid = "20250101000000000001";
        let load = Value::Map(vec![
            (Value::from("tgt"), Value::from("m*")),
            (Value::from("fun"), Value::from("test.ping")),
        ]);
        jobs.store_job_behind(jid, load, Some(vec!["m1".into()]))
            .unwrap();
        let ret = Value::Map(vec![(Value::from("return"), Value::Boolean(true))]);
        jobs.store_return(jid, "m1", &ret).unwrap();
        jobs.flush_loads();
        for f in [
            local_cache::JID,
            local_cache::LOAD_P,
            local_cache::MINIONS_P,
        ] {
            assert!(at(dir.path(), jid, f).is_file(), "{f} not written");
        }
        jobs.flush();
        assert!(at(dir.path(), jid, "m1/return.p").is_file());
        assert_eq!(
            jobs.store()
                .load(jid)
                .unwrap()
                .and_then(|l| salt_compat::map_get(&l, "fun").cloned()),
            Some(Value::from("test.ping"))
        );
    }

    #[test]
    fn returns_are_stored_and_streamed_once() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = Jobs::new(dir.path().join("jobs"));
        let mut rx = jobs.subscribe("20250101000000000000");
        let load = Value::Map(vec![(Value::from("return"), Value::Boolean(true))]);
        jobs.store_return("20250101000000000000", "m1", &load)
            .unwrap();
        jobs.flush();
        let (id, got) = rx.try_recv().unwrap();
        assert_eq!(id, "m1");
        assert_eq!(got, load);
        // The same return again (another master, a minion resending): not delivered twice.
        jobs.deliver("20250101000000000000", "m1", &load);
        jobs.flush();
        assert!(rx.try_recv().is_err());
        let bytes = std::fs::read(at(dir.path(), "20250101000000000000", "m1/return.p")).unwrap();
        assert_eq!(salt_proto::decode(&bytes).unwrap(), load);
        assert_eq!(
            jobs.store().returns("20250101000000000000").unwrap(),
            vec![("m1".to_owned(), load.clone())]
        );
        jobs.unsubscribe("20250101000000000000");
        jobs.store_return("20250101000000000000", "m2", &load)
            .unwrap();
        jobs.flush();
        assert!(rx.try_recv().is_err());
        assert!(matches!(
            jobs.store_return("../x", "m1", &load),
            Err(JobError::BadJid(_))
        ));
    }

    /// Returns pushed from several threads at once (the request workers) reach the waiting
    /// command each exactly once and are all on disk after `flush`; `close` writes what is
    /// still queued, and a return after `close` is stored by the caller's thread.
    #[test]
    fn batched_returns_from_many_threads() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = Arc::new(Jobs::new(dir.path().join("jobs")));
        let jid = "20250101000000000001";
        let mut rx = jobs.subscribe(jid);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let jobs = jobs.clone();
                std::thread::spawn(move || {
                    for i in 0..250 {
                        let load = Value::Map(vec![(Value::from("return"), Value::from(i))]);
                        jobs.store_return(jid, &format!("m{t}-{i}"), &load).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        jobs.flush();
        let mut got = HashSet::new();
        while let Ok((id, _)) = rx.try_recv() {
            assert!(got.insert(id), "delivered twice");
        }
        assert_eq!(got.len(), 1000);
        assert_eq!(jobs.store().returns(jid).unwrap().len(), 1000);
        for t in 0..4 {
            assert!(at(dir.path(), jid, &format!("m{t}-7/return.p")).is_file());
        }
        jobs.store_return(jid, "late", &Value::Nil).unwrap();
        jobs.close();
        assert!(at(dir.path(), jid, "late/return.p").is_file());
        jobs.store_return(jid, "after-close", &Value::Nil).unwrap();
        assert!(at(dir.path(), jid, "after-close/return.p").is_file());
        assert_eq!(rx.try_recv().unwrap().0, "late");
        assert_eq!(rx.try_recv().unwrap().0, "after-close");
    }

    /// The files driver behind a gate: `save_return` blocks until the gate opens.
    #[derive(Debug)]
    struct GatedStore {
        files: FileJobs,
        open: Arc<(Mutex<bool>, std::sync::Condvar)>,
    }

    impl JobStore for GatedStore {
        fn driver(&self) -> &'static str {
            "gated"
        }
        fn save_load(&self, jid: &str, load: &Value) -> Result<(), JobError> {
            self.files.save_load(jid, load)
        }
        fn save_return(&self, jid: &str, id: &str, load: &Value) -> Result<(), JobError> {
            let (lock, cv) = &*self.open;
            let mut open = lock.lock().unwrap();
            while !*open {
                open = cv.wait(open).unwrap();
            }
            drop(open);
            self.files.save_return(jid, id, load)
        }
        fn load(&self, jid: &str) -> Result<Option<Value>, JobError> {
            self.files.load(jid)
        }
        fn returns(&self, jid: &str) -> Result<Vec<(String, Value)>, JobError> {
            self.files.returns(jid)
        }
        fn jobs(&self) -> Result<Vec<(String, Value)>, JobError> {
            self.files.jobs()
        }
        fn clean(
            &self,
            keep: Duration,
            now: SystemTime,
            waited: &HashSet<String>,
        ) -> Result<CleanReport, JobError> {
            self.files.clean(keep, now, waited)
        }
    }

    /// A waiting command gets its returns while the job-cache write is held up (Salt fires a
    /// return's event before writing it); `flush` waits for the write, which then holds every
    /// return.
    #[test]
    fn delivery_does_not_wait_for_the_job_cache() {
        let dir = tempfile::tempdir().unwrap();
        let open = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let store = GatedStore {
            files: FileJobs::new(dir.path().join("jobs")),
            open: open.clone(),
        };
        let jobs = Arc::new(Jobs::with_store(Box::new(store), dir.path().join("jobs")));
        let jid = "20250101000000000002";
        let mut rx = jobs.subscribe(jid);
        for i in 0..3000 {
            let load = Value::Map(vec![(Value::from("return"), Value::from(i))]);
            jobs.store_return(jid, &format!("m{i}"), &load).unwrap();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut got = HashSet::new();
        while got.len() < 3000 && std::time::Instant::now() < deadline {
            match rx.try_recv() {
                Ok((id, _)) => assert!(got.insert(id), "delivered twice"),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        assert_eq!(
            got.len(),
            3000,
            "every return delivered with the writer held"
        );
        assert!(
            jobs.store().returns(jid).unwrap().is_empty(),
            "nothing written yet"
        );
        let flusher = {
            let jobs = jobs.clone();
            std::thread::spawn(move || jobs.flush())
        };
        *open.0.lock().unwrap() = true;
        open.1.notify_all();
        flusher.join().unwrap();
        assert_eq!(jobs.store().returns(jid).unwrap().len(), 3000);
    }

    /// The writer waits for a burst to pause, but a steady trickle (a return every 5 ms, never
    /// 20 ms of quiet) is still written without a reader asking, within ~2 s.
    #[test]
    fn a_steady_trickle_is_written_without_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = Jobs::new(dir.path().join("jobs"));
        let jid = "20250101000000000003";
        let t0 = std::time::Instant::now();
        let mut i = 0;
        while t0.elapsed() < Duration::from_millis(3500) {
            jobs.store_return(jid, &format!("m{i}"), &Value::from(i))
                .unwrap();
            i += 1;
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            at(dir.path(), jid, "m0/return.p").is_file(),
            "the first return of a trickle is on disk within ~2 s"
        );
        jobs.flush();
        assert_eq!(jobs.store().returns(jid).unwrap().len(), i);
    }
}
