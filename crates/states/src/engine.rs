//! Runs low chunks with Salt's requisite rules (`State.call_chunks`/`call_chunk`/
//! `check_requisite`/`call`), building each return as Salt does, key order included.
//!
//! `prereq`: Salt marks a pre-required chunk (`__prereq__`) when the chunk that names it
//! finds it not yet run, runs it in test mode into `self.pre` (not into `running`), and
//! clears the mark after that test call; a chunk that some `prereq` names carries
//! `prerequired` (added by [`crate::prereq`]) and runs for real only when its
//! pre-requiring chunks did not fail. Salt keeps both marks on the chunk dicts themselves;
//! here they are sets of tags ([`Engine::prereq_mark`], [`Engine::prerequired_mark`]).

mod check;
mod unmet;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use rmpv::Value;

use crate::fileclient::FileClient;
use crate::parallel::{self, Pending};
pub use crate::requisite::requisite_in;
use crate::requisite::{chunk_matches, req_list};
use crate::{Opts, empty, get_str, map, set, truthy};
use check::Status;
use salt_compat::map_get;
use salt_compat::py_str;

/// Ordered `running` dict: tag -> return.
#[derive(Debug, Default, Clone)]
pub struct Running {
    order: Vec<String>,
    map: HashMap<String, Value>,
}

impl Running {
    fn insert(&mut self, tag: String, v: Value) {
        if !self.map.contains_key(&tag) {
            self.order.push(tag.clone());
        }
        self.map.insert(tag, v);
    }
    fn get(&self, tag: &str) -> Option<&Value> {
        self.map.get(tag)
    }
    fn contains(&self, tag: &str) -> bool {
        self.map.contains_key(tag)
    }
    /// Python's `running[tag].update(ret)`: present keys keep their place.
    pub(crate) fn update(&mut self, tag: &str, ret: Value) {
        match self.map.get_mut(tag) {
            Some(cur) => {
                if let Value::Map(entries) = ret {
                    for (k, v) in entries {
                        set(cur, k.as_str().unwrap_or(""), v);
                    }
                }
            }
            None => self.insert(tag.to_owned(), ret),
        }
    }
    /// The returns as one map, in insertion order.
    pub fn into_value(mut self) -> Value {
        Value::Map(
            self.order
                .iter()
                .filter_map(|t| self.map.remove(t).map(|v| (Value::from(t.as_str()), v)))
                .collect(),
        )
    }
}

/// What a state function sees besides its low chunk.
pub struct Ctx<'a> {
    /// Options (`test`, grains, pillar...).
    pub opts: &'a Opts,
    /// `salt://` sources.
    pub client: Arc<dyn FileClient>,
    /// The returns so far (for `mod_watch`).
    pub running: &'a Running,
}

/// `state_|-id_|-name_|-fun`.
pub fn gen_tag(low: &Value) -> String {
    format!(
        "{}_|-{}_|-{}_|-{}",
        get_str(low, "state").unwrap_or(""),
        py_str(map_get(low, "__id__").unwrap_or(&Value::Nil)),
        py_str(map_get(low, "name").unwrap_or(&Value::Nil)),
        get_str(low, "fun").unwrap_or("")
    )
}

/// Python `datetime.time().isoformat()` of now (local time).
pub fn now_iso() -> String {
    let now = chrono::Local::now();
    let micros = now.timestamp_subsec_micros() % 1_000_000;
    if micros == 0 {
        now.format("%H:%M:%S").to_string()
    } else {
        format!("{}.{micros:06}", now.format("%H:%M:%S"))
    }
}

/// Milliseconds with microsecond precision, as Salt's `duration`.
pub fn duration_ms(start: Instant) -> Value {
    let us = start.elapsed().as_micros() as f64;
    Value::F64(us / 1000.0)
}

fn fake_duration() -> (Value, Value) {
    let st = Instant::now();
    (Value::from(now_iso()), duration_ms(st))
}

/// The state runner.
pub struct Engine<'a> {
    opts: &'a Opts,
    client: Arc<dyn FileClient>,
    run_num: i64,
    active: HashSet<String>,
    processed: Vec<String>,
    /// States running on their own thread (`parallel: True`).
    pending: Pending,
    /// `self.pre`: the test runs of pre-required chunks (and what Salt also files there).
    pre: HashMap<String, Value>,
    /// Tags of the chunks marked `__prereq__` (their next call is a test run into `pre`).
    prereq_mark: HashSet<String>,
    /// Tags of the chunks marked `__prerequired__` (never cleared, as in Salt).
    prerequired_mark: HashSet<String>,
}

impl<'a> Engine<'a> {
    /// An engine; `processed` are the SLS names rendered (for `sls` requisites).
    pub fn new(opts: &'a Opts, client: Arc<dyn FileClient>, processed: Vec<String>) -> Self {
        Engine {
            opts,
            client,
            run_num: 0,
            active: HashSet::new(),
            processed,
            pending: Pending::default(),
            pre: HashMap::new(),
            prereq_mark: HashSet::new(),
            prerequired_mark: HashSet::new(),
        }
    }

    /// Run every chunk (`call_chunks`).
    pub fn call_chunks(&mut self, chunks: &[Value]) -> Running {
        crate::mods::pkg::new_run();
        let mut running = Running::default();
        for low in chunks {
            let tag = gen_tag(low);
            if !running.contains(&tag) {
                let failhard = self.call_chunk(low, &mut running, chunks, 0);
                if failhard || self.check_failhard(low, &running) {
                    break;
                }
            }
            self.active.clear();
        }
        self.pending.reconcile(&mut running, |_| true);
        running
    }

    /// Merge the parallel states `low`'s requisites name (waiting for them) and those
    /// finished, before its requisites are checked (`check_requisite`'s `reconcile_procs`).
    fn reconcile_required(&mut self, low: &Value, running: &mut Running, chunks: &[Value]) {
        if self.pending.is_empty() {
            return;
        }
        let mut required = Vec::new();
        for kind in check::kinds(true) {
            for (rk, rv) in req_list(low, kind) {
                self.find_required(chunks, &rk, &rv, &mut required);
            }
        }
        let tags: HashSet<String> = required.iter().map(gen_tag).collect();
        self.pending.reconcile(running, |t| tags.contains(t));
    }

    /// Whether state module `state` has `mod_watch` (ours or the host's).
    fn has_mod_watch(&self, state: &str) -> bool {
        crate::mods::has_mod_watch(state) || self.opts.extra.has(&format!("{state}.mod_watch"))
    }

    fn check_failhard(&self, low: &Value, running: &Running) -> bool {
        if self.opts.test {
            return false;
        }
        let fh = map_get(low, "failhard").map_or(self.opts.failhard, truthy);
        match running.get(&gen_tag(low)) {
            Some(r) if fh => map_get(r, "result") == Some(&Value::Boolean(false)),
            _ => false,
        }
    }

    /// Pushes onto `found` every chunk the requisite `rk: rv` names; whether it names
    /// anything (a chunk, or for `sls` an SLS rendered in this run).
    fn find_required(&self, chunks: &[Value], rk: &str, rv: &str, found: &mut Vec<Value>) -> bool {
        let before = found.len();
        found.extend(chunks.iter().filter(|c| chunk_matches(c, rk, rv)).cloned());
        found.len() > before
            || (rk == "sls" && self.processed.iter().any(|p| salt_matcher::fnmatch(p, rv)))
    }

    /// The return of a chunk its requisites kept from running: `changes`, `result`,
    /// `duration`, `start_time`, `comment`, `__state_ran__` (when given), `__run_num__`.
    fn not_run(&self, result: bool, comment: impl Into<String>, ran: Option<bool>) -> Value {
        let (st, du) = fake_duration();
        let mut v = vec![
            ("changes", empty()),
            ("result", Value::Boolean(result)),
            ("duration", du),
            ("start_time", st),
            ("comment", Value::from(comment.into())),
        ];
        v.extend(ran.map(|r| ("__state_ran__", Value::Boolean(r))));
        v.push(("__run_num__", Value::from(self.run_num)));
        map(v)
    }

    /// The return of a chunk whose requisites loop.
    fn recursive(&self) -> Value {
        map(vec![
            ("changes", empty()),
            ("result", Value::Boolean(false)),
            ("comment", Value::from("Recursive requisite found")),
            ("__run_num__", Value::from(self.run_num)),
        ])
    }

    fn tail(&self, mut v: Value, low: &Value) -> Value {
        for key in ["__sls__", "__id__", "name"] {
            set(
                &mut v,
                key,
                map_get(low, key).cloned().unwrap_or(Value::Nil),
            );
        }
        v
    }

    /// Returns true when failhard stops the run.
    fn call_chunk(
        &mut self,
        low: &Value,
        running: &mut Running,
        chunks: &[Value],
        depth: usize,
    ) -> bool {
        let tag = gen_tag(low);
        if !map_get(low, "prerequired").is_some_and(truthy) {
            self.active.insert(tag.clone());
        }
        let is_pre = self.prereq_mark.contains(&tag);
        self.reconcile_required(low, running, chunks);
        let checked = self.check_requisite(low, running, chunks, !is_pre);
        let (status, reqs) = checked.unwrap_or((Status::Unmet, Vec::new()));
        match status {
            Status::Unmet => return self.unmet(low, running, chunks, depth),
            Status::Met => {
                let r = self.call(low, running, None);
                self.file(&tag, is_pre, r, running);
            }
            Status::Fail => self.failed(low, &reqs, running),
            Status::Change if !is_pre => {
                let ret = self.call(low, running, None);
                let skip = map_get(&ret, "skip_watch").is_some_and(truthy);
                if !map_get(&ret, "changes").is_some_and(truthy) && !skip {
                    let mut l = low.clone();
                    set(
                        &mut l,
                        "sfun",
                        map_get(low, "fun").cloned().unwrap_or(Value::Nil),
                    );
                    set(&mut l, "fun", Value::from("mod_watch"));
                    let watch: Vec<Value> = reqs
                        .into_iter()
                        .filter(|(k, _)| k == "watch")
                        .flat_map(|(_, v)| v)
                        .collect();
                    let r = self.call(&l, running, Some(&watch));
                    running.insert(tag, r);
                } else {
                    running.insert(tag, ret);
                }
            }
            Status::Change => {
                // A pre-required chunk's test run (Salt's final `else`).
                let r = self.call(low, running, None);
                self.file(&tag, is_pre, r, running);
            }
            Status::Pre => {
                let v = self.not_run(true, "No changes detected", None);
                let v = self.tail(v, low);
                self.pre.insert(tag.clone(), v.clone());
                running.insert(tag, v);
                self.run_num += 1;
            }
            Status::OnFail | Status::OnChanges => {
                let comment = if status == Status::OnFail {
                    "State was not run because onfail req did not change"
                } else {
                    "State was not run because none of the onchanges reqs changed"
                };
                let v = self.not_run(true, comment, Some(false));
                running.insert(tag, self.tail(v, low));
                self.run_num += 1;
            }
        }
        false
    }

    /// Put the return of a call of the chunk tagged `tag` where Salt does: into `self.pre`
    /// when the chunk was marked `__prereq__` before the call (`is_pre`), else into `running`.
    fn file(&mut self, tag: &str, is_pre: bool, ret: Value, running: &mut Running) {
        if is_pre {
            self.pre.insert(tag.to_owned(), ret);
        } else {
            running.insert(tag.to_owned(), ret);
        }
    }

    /// `state.single`: one low chunk, no requisites.
    pub fn call_single(&mut self, low: &Value) -> Value {
        let mut running = Running::default();
        let tag = gen_tag(low);
        let ret = self.call(low, &running, None);
        running.insert(tag.clone(), ret);
        self.pending.reconcile(&mut running, |_| true);
        running.map.remove(&tag).unwrap_or(Value::Nil)
    }

    /// Call one state function (`State.call`).
    fn call(&mut self, low: &Value, running: &Running, watch: Option<&[Value]>) -> Value {
        self.call_n(low, running, watch, 1)
    }

    /// Attempt `retries` of one state function, with `check_cmd` and `retry`.
    fn call_n(
        &mut self,
        low: &Value,
        running: &Running,
        watch: Option<&[Value]>,
        retries: i64,
    ) -> Value {
        use crate::mods::retry;
        let start = Instant::now();
        let start_time = now_iso();
        let state = get_str(low, "state").unwrap_or("");
        let fun = get_str(low, "fun").unwrap_or("");
        let name = map_get(low, "name").cloned().unwrap_or(Value::Nil);
        let full = format!("{state}.{fun}");
        if !crate::mods::available(&full) && !self.opts.extra.has(&full) {
            let v = map(vec![
                ("result", Value::Boolean(false)),
                ("name", name),
                ("changes", empty()),
                (
                    "comment",
                    Value::from(format!(
                        "State '{full}' was not found in SLS '{}'\nReason: '{full}' is not available.\n",
                        get_str(low, "__sls__").unwrap_or("")
                    )),
                ),
                ("__run_num__", Value::from(self.run_num)),
            ]);
            self.run_num += 1;
            return v;
        }
        let mut ret = map(vec![
            ("result", Value::Boolean(false)),
            ("name", name),
            ("changes", empty()),
        ]);
        if ["unless", "onlyif", "creates"]
            .iter()
            .any(|k| map_get(low, k).is_some())
        {
            let chk = crate::mods::checks::run_check(low);
            if let Value::Map(entries) = chk {
                for (k, v) in entries {
                    set(&mut ret, k.as_str().unwrap_or(""), v);
                }
            }
        }
        // A pre-required chunk's test run: `test=True` for the state function, never
        // parallel, and its bare return (no `__run_num__`, times or `__sls__`).
        let pre_tag = gen_tag(low);
        let is_pre = self.prereq_mark.contains(&pre_tag);
        let test_opts;
        let opts = if is_pre {
            test_opts = Opts {
                test: true,
                ..self.opts.clone()
            };
            &test_opts
        } else {
            self.opts
        };
        if map_get(&ret, "result") == Some(&Value::Boolean(false)) {
            let ctx = Ctx {
                opts,
                client: self.client.clone(),
                running,
            };
            ret = if parallel::wanted(low) && !is_pre {
                let mut r = self.pending.start(gen_tag(low), &full, low, watch, &ctx);
                if !retry::own_check_cmd(&full)
                    && map_get(low, "check_cmd").is_some_and(|v| !matches!(v, Value::Nil))
                {
                    // Salt checks the placeholder at once; the thread's return replaces it.
                    retry::check_cmd(low, &mut r);
                }
                r
            } else {
                retry::call_checked(&ctx, &full, low, watch)
            };
        }
        if is_pre {
            self.prereq_mark.remove(&pre_tag);
            return ret;
        }
        set(
            &mut ret,
            "__sls__",
            map_get(low, "__sls__").cloned().unwrap_or(Value::Nil),
        );
        set(&mut ret, "__run_num__", Value::from(self.run_num));
        self.run_num += 1;
        set(&mut ret, "start_time", Value::from(start_time));
        set(&mut ret, "duration", duration_ms(start));
        set(
            &mut ret,
            "__id__",
            map_get(low, "__id__").cloned().unwrap_or(Value::Nil),
        );
        // Salt leaves `retry` to the parallel process whenever `parallel` is given at all.
        if let Some(r) = retry::verify(low).filter(|_| map_get(low, "parallel").is_none()) {
            if self.opts.test {
                retry::test_comment(&mut ret, &r);
            } else if retry::wants_retry(&r, &ret) && r.attempts > retries {
                let interval = retry::interval(&r);
                std::thread::sleep(std::time::Duration::from_secs(interval.max(0) as u64));
                let new = self.call_n(low, running, watch, retries + 1);
                ret = retry::merge(&ret, new, retries, interval);
            }
        }
        ret
    }
}

impl Ctx<'_> {
    /// Whether the return at `tag` has changes.
    pub fn running_changes(&self, tag: &str) -> bool {
        self.running
            .get(tag)
            .and_then(|r| map_get(r, "changes"))
            .is_some_and(truthy)
    }
}
