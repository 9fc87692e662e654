//! `batch` of `salt.state`/`salt.function`: Salt's `saltutil.cmd(..., batch=...)`, which runs
//! `LocalClient.cmd_batch` (`salt/cli/batch.py`'s `Batch(quiet=True).run()`) and wraps each
//! minion's return as `{"out": ..., "ret": return}`.
//!
//! As Salt's: the target's `test.ping` picks the minions (those that do not answer are left
//! out of the return); at most the batch size (a count or a percentage of them) run at once;
//! a minion that does not return in its slice's wait answers `{}`; the returns carry no jid
//! (so the state return has no `__jid__`) and no retcode; with `failhard` a minion that
//! returns a non-zero retcode stops the batch, the returns so far being the answer. Salt
//! refills the window as each minion returns; here a slice frees its places when all its
//! minions have returned or were given up (the same returns, published in fewer jobs).

use std::collections::HashMap;

use salt_client::local::PublishRequest;
use salt_compat::json::msgpack_to_json;
use serde_json::{Map, Value, json};
use tokio::task::JoinSet;

use super::saltmod::{CmdRet, SaltMod, truthy};
use crate::jobs::run::run_job;

/// One slice's answers: minion, its return (`{}` for none), its retcode.
type Slice = Result<Vec<(String, Value, i64)>, String>;

impl SaltMod {
    /// `saltutil.cmd` with `batch=spec`: the minions' returns, no jid.
    pub(super) fn cmd_batch(
        &self,
        req: &PublishRequest,
        spec: &str,
        failhard: bool,
    ) -> Result<CmdRet, String> {
        self.rt.block_on(self.batch(req, spec, failhard))
    }

    async fn batch(
        &self,
        req: &PublishRequest,
        spec: &str,
        failhard: bool,
    ) -> Result<CmdRet, String> {
        let (shared, publisher, stop) = (&self.shared, &self.publisher, &self.stop);
        let ping = PublishRequest {
            fun: "test.ping".into(),
            arg: vec![],
            ret: String::new(),
            ..req.clone()
        };
        let mut to_run: Vec<String> = match run_job(shared, publisher, stop, &ping).await {
            Ok((_, got, _)) => got.into_iter().map(|(id, _)| id).collect(),
            // `gather_minions` finds nobody: the batch yields nothing.
            Err(e) if e.starts_with("No minions matched") => return Ok(vec![]),
            Err(e) => return Err(e),
        };
        if to_run.is_empty() {
            return Ok(vec![]);
        }
        let bnum = salt_client::batch::batch_size(spec, to_run.len()).map_err(|_| {
            format!("Invalid batch data sent: {spec}\nData must be in the form of %10, 10% or 3")
        })?;
        let bnum = usize::try_from(bnum).unwrap_or(usize::MAX);
        let mut out: CmdRet = Vec::new();
        let mut tasks: JoinSet<(usize, Slice)> = JoinSet::new();
        let mut sizes: HashMap<usize, usize> = HashMap::new();
        let mut active = 0usize;
        let mut next_id = 0usize;
        loop {
            let free = bnum.saturating_sub(active);
            if free > 0 && !to_run.is_empty() {
                let take = free.min(to_run.len());
                let slice = to_run.split_off(to_run.len() - take);
                active += slice.len();
                sizes.insert(next_id, slice.len());
                let slice_req = PublishRequest {
                    tgt: slice.join(","),
                    tgt_type: "list".into(),
                    ..req.clone()
                };
                let (sh, p, st) = (shared.clone(), publisher.clone(), stop.clone());
                let id = next_id;
                tasks.spawn(async move { (id, run_slice(&sh, &p, &st, &slice_req, slice).await) });
                next_id += 1;
                continue;
            }
            let Some(done) = tasks.join_next().await else {
                break;
            };
            let (id, answers) = done.map_err(|e| format!("batch: {e}"))?;
            active = active.saturating_sub(sizes.remove(&id).unwrap_or(0));
            for (minion, ret, retcode) in answers? {
                let mut m = Map::new();
                m.insert("ret".into(), ret);
                out.push((minion.clone(), m));
                if failhard && retcode > 0 {
                    tracing::error!(
                        "Minion {minion} returned with non-zero exit code. Batch run stopped due to failhard"
                    );
                    tasks.abort_all();
                    return Ok(out);
                }
            }
        }
        Ok(out)
    }
}

/// Publish one slice (`tgt_type: list`) and wait for it as `cmd_iter_no_block` does.
async fn run_slice(
    shared: &std::sync::Arc<crate::shared::Shared>,
    publisher: &salt_transport::Publisher,
    stop: &tokio_util::sync::CancellationToken,
    req: &PublishRequest,
    minions: Vec<String>,
) -> Slice {
    let got = match run_job(shared, publisher, stop, req).await {
        Ok((_, got, _)) => got,
        // The minions went away between the ping and the slice: they return nothing.
        Err(e) if e.starts_with("No minions matched") => vec![],
        Err(e) => return Err(e),
    };
    let mut answers: Vec<(String, Value, i64)> = got
        .into_iter()
        .map(|(id, load)| {
            let load = msgpack_to_json(&load);
            let ret = load.get("return").cloned().unwrap_or(Value::Null);
            (id, ret, retcode(load.get("retcode")))
        })
        .collect();
    for m in minions {
        if !answers.iter().any(|(id, _, _)| *id == m) {
            answers.push((m, json!({}), 0));
        }
    }
    Ok(answers)
}

/// A return's retcode (the highest of a dict of them, as Salt's batch takes it).
fn retcode(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::Object(m)) => m.values().filter_map(Value::as_i64).max().unwrap_or(0),
        Some(v) if truthy(Some(v)) => v.as_i64().unwrap_or(1),
        _ => 0,
    }
}
