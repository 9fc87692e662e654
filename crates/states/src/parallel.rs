//! `parallel: True` (Salt's `State.call_parallel`, `_call_parallel_target` and
//! `reconcile_procs` in `salt/state.py`). Salt runs the state function in its own process
//! and puts a placeholder (`result: None`, "Started in a separate process") in `running`;
//! the child's return is merged into it (`running[tag].update(ret)`) before a requisite on
//! that state is checked and at the end of the run. salt-rs runs it on its own thread, with
//! a copy of the options and of `running` as the forked child sees them.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use rmpv::Value;

use crate::engine::{Ctx, Running, duration_ms, now_iso};
use crate::fileclient::FileClient;
use crate::mods::retry;
use crate::{Opts, empty, map, set, truthy};
use salt_compat::map_get;
use salt_compat::py_str;

/// Whether `low` runs in parallel (`parallel` true and not a `prereq` test run).
pub(crate) fn wanted(low: &Value) -> bool {
    map_get(low, "parallel").is_some_and(truthy)
}

/// The states started and not yet merged, in start order.
#[derive(Default)]
pub(crate) struct Pending {
    jobs: Vec<(String, JoinHandle<Value>)>,
}

impl Pending {
    /// Whether nothing runs.
    pub(crate) fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Start state function `full` of `low` (tag `tag`) on its own thread; the placeholder
    /// return (`call_parallel`).
    pub(crate) fn start(
        &mut self,
        tag: String,
        full: &str,
        low: &Value,
        watch: Option<&[Value]>,
        ctx: &Ctx<'_>,
    ) -> Value {
        let name = crate::mods::name_of(low);
        let name_v = map_get(low, "name").cloned().unwrap_or(Value::Nil);
        let (opts, client): (Opts, Arc<dyn FileClient>) = (ctx.opts.clone(), ctx.client.clone());
        let running = ctx.running.clone();
        let (full_t, low_t) = (full.to_owned(), low.clone());
        let watch = watch.map(<[Value]>::to_vec);
        let spawned = std::thread::Builder::new()
            .name(format!("ParallelState({name})"))
            .spawn(move || {
                let ctx = Ctx {
                    opts: &opts,
                    client,
                    running: &running,
                };
                target(&ctx, &full_t, &low_t, watch.as_deref())
            });
        let comment = match spawned {
            Ok(handle) => {
                self.jobs.push((tag, handle));
                "Started in a separate process".to_owned()
            }
            Err(e) => format!("Parallel process failed to start: {e}"),
        };
        map(vec![
            ("name", name_v),
            ("result", Value::Nil),
            ("changes", empty()),
            ("comment", Value::from(comment)),
        ])
    }

    /// Merge the returns of the states `wait_for` accepts (waiting for them) and of those
    /// already finished (`reconcile_procs`).
    pub(crate) fn reconcile(&mut self, running: &mut Running, wait_for: impl Fn(&str) -> bool) {
        let jobs = std::mem::take(&mut self.jobs);
        for (tag, handle) in jobs {
            if !handle.is_finished() && !wait_for(&tag) {
                self.jobs.push((tag, handle));
                continue;
            }
            let ret = handle.join().unwrap_or_else(|_| {
                map(vec![
                    ("result", Value::Boolean(false)),
                    ("comment", Value::from("Parallel process failed to return")),
                    ("changes", empty()),
                ])
            });
            running.update(&tag, ret);
        }
    }
}

/// The thread's work (`_call_parallel_target`): the state function, its own `start_time`
/// and `duration`, `__parallel__`, and `retry` as Salt's child process does it.
fn target(ctx: &Ctx<'_>, full: &str, low: &Value, watch: Option<&[Value]>) -> Value {
    let start = Instant::now();
    let start_time = now_iso();
    let mut ret = crate::mods::call(ctx, full, low, watch);
    set(&mut ret, "start_time", Value::from(start_time));
    set(&mut ret, "duration", duration_ms(start));
    set(&mut ret, "__parallel__", Value::Boolean(true));
    let Some(r) = retry::verify(low) else {
        return ret;
    };
    if ctx.opts.test {
        retry::test_comment(&mut ret, &r);
        return ret;
    }
    let mut retries = 1;
    while r.attempts >= retries {
        if !retry::wants_retry(&r, &ret) {
            break;
        }
        let interval = retry::interval(&r);
        std::thread::sleep(std::time::Duration::from_secs(interval.max(0) as u64));
        let mut new = crate::mods::call(ctx, full, low, watch);
        // Salt times the retry after it ran, so its own duration is (about) nothing.
        set(&mut new, "duration", duration_ms(Instant::now()));
        let comment = if map_get(&new, "comment").is_some_and(truthy) {
            format!(
                "Attempt {retries}: Returned a result of \"{}\", with the following comment: \"{}\"",
                py_str(map_get(&new, "result").unwrap_or(&Value::Nil)),
                py_str(map_get(&new, "comment").unwrap_or(&Value::Nil)),
            )
        } else {
            String::new()
        };
        let orig = std::mem::replace(&mut ret, new);
        let orig_comment = map_get(&orig, "comment").map(py_str).unwrap_or_default();
        set(
            &mut ret,
            "comment",
            Value::from(format!("{orig_comment}\n{comment}")),
        );
        let d = f64_of(map_get(&ret, "duration"))
            + f64_of(map_get(&orig, "duration"))
            + (interval * 1000) as f64;
        set(&mut ret, "duration", Value::F64(d));
        if retries == 1
            && let Some(st) = map_get(&orig, "start_time")
        {
            set(&mut ret, "start_time", st.clone());
        }
        retries += 1;
    }
    ret
}

fn f64_of(v: Option<&Value>) -> f64 {
    match v {
        Some(Value::F64(f)) => *f,
        Some(Value::Integer(i)) => i.as_f64().unwrap_or(0.0),
        _ => 0.0,
    }
}
