//! The reactor (Salt's `salt/utils/reactor.py`): events on the master's bus whose tag
//! matches a `reactor:` glob render that glob's sls files with `tag` and `data`, and the
//! reactions in them run (`local.`, `runner.`, `wheel.`; `caller.` refused by name).
//!
//! ```text
//!  EventBus::fire ──tap (in the firing thread)──▶ offer: skip the Reactor's own events,
//!     not leader → skip, fnmatch the tag against the map ──try_send──▶ queue (reactor_worker_hwm)
//!  queue ──▶ reactor_worker_threads workers: render (compile.rs) → each reaction (react.rs):
//!     local. published at once; runner./wheel. try_send ──▶ pool queue (reactor_worker_hwm)
//!     ──▶ reactor_worker_threads pool workers (Salt's ReactWrap thread pool)
//! ```
//!
//! The reactor sees every event: it is the bus's tap, not a subscriber that can fall behind
//! (a lagging subscriber lost 13% of a 10,000-event burst). It never waits: when the queue
//! is full the event's reactions are dropped with an error naming the tag; when the pool's
//! queue is full a runner or wheel reaction is dropped with Salt's "TaskPool queue is full!". A render error is logged with the sls and the tag and
//! the reactor goes on. `salt-run reactor.list/add/delete/is_leader/set_leader` act on
//! [`Reactors`] directly (Salt sends them to its reactor process as `salt/reactors/manage/*`
//! events; salt-rs's reactor lives in the master's process). docs/reactor.md.

pub(crate) mod compile;
mod react;
mod wheel;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use salt_config::{ReactorConfig, ReactorMap};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::events::bus::Event;
use crate::runners::ctx::Ctx;
use crate::shared::Shared;

/// Tag globs and their sls paths, in order.
type Map = Vec<(String, Vec<String>)>;

/// One glob of the map, compiled once (Python's `fnmatch`; a glob that cannot match, or
/// that Python would raise on, is `None`).
#[derive(Debug)]
struct Entry {
    glob: String,
    re: Option<regex::Regex>,
    sls: Vec<String>,
}

impl Entry {
    fn new(glob: String, sls: Vec<String>) -> Self {
        let re = salt_compat::fnmatch::translate(&glob)
            .ok()
            .flatten()
            .and_then(|re| salt_compat::fnmatch::compile(&[re], &glob).ok());
        Self { glob, re, sls }
    }
}

fn entries(map: Map) -> Vec<Entry> {
    map.into_iter().map(|(g, s)| Entry::new(g, s)).collect()
}

/// The reactor's state: its map (changed by `reactor.add`/`delete`) and whether it leads.
#[derive(Debug)]
pub(crate) struct Reactors {
    /// The `reactor` option's file, when it names one (re-read when it changes).
    file: Option<PathBuf>,
    map: Mutex<(Vec<Entry>, Option<SystemTime>)>,
    leader: AtomicBool,
    /// Set when the reactor starts in a group with a database: the group's election decides
    /// who leads (docs/group.md), `leader` is then unused; `None` inside: the election could
    /// not start, and this master never leads (never two leaders).
    group: std::sync::OnceLock<Option<Arc<salt_pgstore::Leader>>>,
    running: AtomicBool,
    /// Events whose reactions found the queue full.
    dropped: AtomicU64,
    threads: usize,
    hwm: usize,
}

impl Reactors {
    /// The reactor of `cfg` (not running until [`start`]).
    pub(crate) fn new(cfg: &ReactorConfig) -> Self {
        let (file, map) = match &cfg.reactor {
            ReactorMap::File(p) => (Some(p.clone()), Vec::new()),
            ReactorMap::List(l) => (None, l.clone()),
        };
        Self {
            file,
            map: Mutex::new((entries(map), None)),
            leader: AtomicBool::new(true),
            group: std::sync::OnceLock::new(),
            running: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            threads: cfg.reactor_worker_threads.max(1) as usize,
            hwm: cfg.reactor_worker_hwm.max(1) as usize,
        }
    }

    /// The map locked, a reactor file re-read first when its modification time changed.
    fn locked(&self) -> std::sync::MutexGuard<'_, (Vec<Entry>, Option<SystemTime>)> {
        let mut g = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(path) = &self.file {
            let mtime = std::fs::metadata(path).and_then(|m| m.modified()).ok();
            if mtime.is_none() || mtime != g.1 {
                g.0 = entries(read_map_file(path));
                g.1 = mtime;
            }
        }
        g
    }

    /// Whether this master reacts: it leads the group's election, or (no group) Salt's
    /// `is_leader` flag.
    fn leads(&self) -> bool {
        match self.group.get() {
            Some(Some(g)) => g.leads(),
            Some(None) => false,
            None => self.leader.load(Ordering::Acquire),
        }
    }

    /// The map now.
    fn map(&self) -> Map {
        self.locked()
            .0
            .iter()
            .map(|e| (e.glob.clone(), e.sls.clone()))
            .collect()
    }

    /// Salt's `list_reactors`: the sls paths of every glob `tag` matches, in map order.
    fn for_tag(&self, tag: &str) -> Vec<String> {
        self.locked()
            .0
            .iter()
            .filter(|e| e.re.as_ref().is_some_and(|re| re.is_match(tag)))
            .flat_map(|e| e.sls.iter().cloned())
            .collect()
    }
}

/// A reactor file's list (Salt logs a file it cannot read or parse and reacts to nothing).
fn read_map_file(path: &std::path::Path) -> Map {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(_) => {
            tracing::error!("Failed to read reactor map: \"{}\"", path.display());
            return Vec::new();
        }
    };
    let parsed = salt_render::yaml::load(&text)
        .ok()
        .flatten()
        .map(|v| salt_compat::json::msgpack_to_json(&v));
    let Some(Value::Array(items)) = parsed else {
        tracing::error!(
            "Failed to parse YAML in reactor map: \"{}\"",
            path.display()
        );
        return Vec::new();
    };
    items
        .into_iter()
        .filter_map(|item| match item {
            Value::Object(m) if m.len() == 1 => m.into_iter().next(),
            _ => None,
        })
        .map(|(glob, sls)| (glob, sls_list(&sls)))
        .collect()
}

/// A reactor's sls value as a list (Salt: a string or a list).
fn sls_list(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// One event to react to.
struct Work {
    tag: String,
    data: Value,
    reactors: Vec<String>,
}

/// Start the reactor when `reactor` is configured (Salt starts none otherwise): the bus's
/// tap queues, the workers run until `stop`.
pub(crate) fn start(
    shared: &Arc<Shared>,
    publisher: &salt_transport::Publisher,
    stop: &CancellationToken,
) {
    let r = &shared.reactor;
    if r.file.is_none() && r.map().is_empty() {
        return;
    }
    // Before the runners see it running: a group member never answers Salt's flag.
    elect(shared);
    r.running.store(true, Ordering::Release);
    let (tx, rx) = mpsc::channel::<Work>(r.hwm);
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let pool = react::Pool::start(r.threads, r.hwm, stop);
    for _ in 0..r.threads {
        let ctx = Ctx {
            shared: shared.clone(),
            publisher: publisher.clone(),
            stop: stop.clone(),
            console: None,
        };
        tokio::spawn(worker(ctx, rx.clone(), pool.clone()));
    }
    let reactors = r.clone();
    if !shared
        .events
        .set_tap(Box::new(move |ev| offer(&reactors, &tx, ev)))
    {
        tracing::error!("Reactor not started: the event bus already has a tap");
        return;
    }
    tracing::info!(
        "Reactor started: {} worker(s), queue of {}",
        r.threads,
        r.hwm
    );
}

/// In a group whose masters share a database (`keys.cache_driver: postgres` or
/// `master_job_cache: pgjsonb`), take part in the election of the group's reactor leader:
/// only the leader reacts, so an event every member sees reacts once.
fn elect(shared: &Shared) {
    let Some(c) = shared
        .cfg
        .cluster_id
        .as_ref()
        .filter(|c| c.keys_in_postgres() || c.job_driver == salt_config::JobDriver::Pgjsonb)
    else {
        return;
    };
    let settings =
        salt_pgstore::Settings::from_config(c, &shared.cfg.id, shared.cfg.rotate_aes_key);
    match salt_pgstore::Leader::start(settings) {
        Ok(l) => {
            let _ = shared.reactor.group.set(Some(Arc::new(l)));
            tracing::info!(
                "group {}: the reactor reacts while this master leads the group's election",
                c.cluster_id
            );
        }
        // Never two leaders: without the election this master does not react.
        Err(e) => {
            let _ = shared.reactor.group.set(None);
            tracing::error!(
                "group {}: reactor leader election not started ({e}): this master's reactor \
                 will not react",
                c.cluster_id
            );
        }
    }
}

/// Look at one event on the bus (in the firing thread, never waiting): skip the reactor's own
/// events and everything when not leader; queue the sls paths of the matching globs.
fn offer(r: &Reactors, tx: &mpsc::Sender<Work>, ev: &Event) {
    // Its own runner and wheel events (Salt: no reaction loops).
    if ev.data.get("user").and_then(Value::as_str) == Some(react::EVENT_USER) {
        return;
    }
    if !r.leads() {
        return;
    }
    let reactors = r.for_tag(&ev.tag);
    if reactors.is_empty() {
        return;
    }
    let work = Work {
        tag: ev.tag.clone(),
        data: ev.data.clone(),
        reactors,
    };
    if let Err(mpsc::error::TrySendError::Full(w)) = tx.try_send(work) {
        r.dropped.fetch_add(1, Ordering::Relaxed);
        tracing::error!(
            "Reactor failed to queue the reactions of {}: the queue is full \
             (reactor_worker_hwm: {}). Consider tuning reactor_worker_threads and/or \
             reactor_worker_hwm",
            w.tag,
            r.hwm
        );
    }
}

async fn worker(
    ctx: Ctx,
    rx: Arc<tokio::sync::Mutex<mpsc::Receiver<Work>>>,
    pool: Arc<react::Pool>,
) {
    loop {
        let work = {
            let mut rx = rx.lock().await;
            tokio::select! {
                () = ctx.stop.cancelled() => return,
                w = rx.recv() => w,
            }
        };
        let Some(w) = work else { return };
        tracing::debug!("Compiling reactions for tag {}", w.tag);
        // Started in Salt's order, but not one behind another's publish: a `local.`
        // reaction's publish (the target, the job, the signature) would otherwise hold up
        // the start of every reaction after it. The worker takes its next event once this
        // one's reactions have all started (published, or handed to the pool), as Salt's
        // reactor loop does.
        let started: Vec<_> = compile::reactions(&ctx.shared, &w.tag, &w.data, &w.reactors)
            .into_iter()
            .map(|low| {
                let (ctx, pool) = (ctx.clone(), pool.clone());
                tokio::spawn(async move { react::react(&ctx, &pool, low).await })
            })
            .collect();
        for s in started {
            // A reaction's failure is logged by `react`; a panic ends only its task.
            let _ = s.await;
        }
    }
}

/// Salt's `reactor` runner: `list`, `add`, `delete`, `is_leader`, `set_leader`.
pub(crate) async fn runner(
    shared: &Shared,
    fun: &str,
    args: &crate::runners::ctx::Args,
) -> Result<Value, String> {
    let r = &shared.reactor;
    if !r.running.load(Ordering::Acquire) {
        return Err("Reactor system is not running.".into());
    }
    let listed =
        |map: &Map| Value::Array(map.iter().map(|(glob, sls)| json!({ glob: sls })).collect());
    match fun {
        "reactor.list" => Ok(listed(&r.map())),
        "reactor.add" | "reactor.delete" if r.file.is_some() => Err(format!(
            "{fun}: the reactor map comes from a file (reactor: {}); edit the file",
            r.file
                .as_deref()
                .unwrap_or_else(|| std::path::Path::new(""))
                .display()
        )),
        "reactor.add" => {
            let event = args.text("event").unwrap_or_default();
            let sls = args.get("reactors").map(sls_list).unwrap_or_default();
            let mut g = r.map.lock().unwrap_or_else(|e| e.into_inner());
            if g.0.iter().any(|e| e.glob == event) {
                return Ok(json!({"status": false, "comment": "Reactor already exists."}));
            }
            g.0.push(Entry::new(event, sls));
            Ok(json!({"status": true, "comment": "Reactor added."}))
        }
        "reactor.delete" => {
            let event = args.text("event").unwrap_or_default();
            let mut g = r.map.lock().unwrap_or_else(|e| e.into_inner());
            match g.0.iter().position(|e| e.glob == event) {
                Some(i) => {
                    g.0.remove(i);
                    Ok(json!({"status": true, "comment": "Reactor deleted."}))
                }
                None => Ok(json!({"status": false, "comment": "Reactor does not exists."})),
            }
        }
        "reactor.is_leader" => Ok(Value::Bool(r.leads())),
        "reactor.set_leader" => {
            let value = args.flag("value", true);
            let group = match r.group.get() {
                None => {
                    r.leader.store(value, Ordering::Release);
                    return Ok(Value::Bool(value));
                }
                Some(None) => {
                    return Err(
                        "reactor.set_leader: the group's reactor leader election is \
                                not running (see the master's log)"
                            .into(),
                    );
                }
                Some(Some(g)) => g.clone(),
            };
            // In a group: take part or step down; the answer is whether it leads now.
            tokio::task::spawn_blocking(move || group.set_willing(value))
                .await
                .map_err(|e| format!("reactor.set_leader: {e}"))?
                .map(Value::Bool)
                .map_err(|e| format!("reactor.set_leader: the group's election: {e}"))
        }
        _ => Ok(json!(format!("'{fun}' is not available."))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::bus::EventBus;

    fn reactors(hwm: u32) -> Arc<Reactors> {
        let cfg = salt_config::MasterConfig::from_yaml_str(
            &format!(
                "reactor:\n  - 'myco/*': [/r/a.sls]\n  - 'myco/x': /r/b.sls\n\
                 reactor_worker_hwm: {hwm}\n"
            ),
            &salt_config::LoadOptions::new("/nonexistent"),
        )
        .unwrap()
        .config;
        Arc::new(Reactors::new(&cfg.reactor))
    }

    /// Tags match the map's globs in order; the reactor's own events, a non-leader and a full
    /// queue queue nothing (the last counted).
    #[test]
    fn offer_matches_skips_and_bounds() {
        let r = reactors(2);
        assert_eq!(r.for_tag("myco/x"), ["/r/a.sls", "/r/b.sls"]);
        assert!(r.for_tag("other/x").is_empty());
        let (tx, mut rx) = mpsc::channel(r.hwm);
        let ev = |tag: &str, data: Value| Event {
            tag: tag.into(),
            data,
        };
        offer(&r, &tx, &ev("other/tag", json!({})));
        offer(&r, &tx, &ev("myco/own", json!({"user": "Reactor"})));
        offer(&r, &tx, &ev("myco/1", json!({"n": 1})));
        r.leader.store(false, Ordering::Release);
        offer(&r, &tx, &ev("myco/not-leader", json!({})));
        r.leader.store(true, Ordering::Release);
        for n in 2..=4 {
            offer(&r, &tx, &ev(&format!("myco/{n}"), json!({"n": n})));
        }
        assert_eq!(r.dropped.load(Ordering::Relaxed), 2);
        let first = rx.try_recv().unwrap();
        assert_eq!((first.tag.as_str(), first.reactors.len()), ("myco/1", 1));
        assert_eq!(first.data["n"], 1);
        assert_eq!(rx.try_recv().unwrap().tag, "myco/2");
        assert!(rx.try_recv().is_err());
    }

    /// The bus hands every fired event to the tap, however many come at once.
    #[tokio::test]
    async fn the_tap_loses_nothing() {
        let r = reactors(20_000);
        let bus = EventBus::default();
        let (tx, mut rx) = mpsc::channel(r.hwm);
        let r2 = r.clone();
        assert!(bus.set_tap(Box::new(move |ev| offer(&r2, &tx, ev))));
        for n in 0..10_000 {
            bus.fire(format!("myco/{n}"), json!({"n": n}));
        }
        let mut got = 0;
        while rx.try_recv().is_ok() {
            got += 1;
        }
        assert_eq!(got, 10_000);
        assert_eq!(r.dropped.load(Ordering::Relaxed), 0);
    }
}
