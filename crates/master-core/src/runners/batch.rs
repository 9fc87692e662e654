//! Salt 3008's `batch` runner (`salt/runners/batch.py`) over the batches' state
//! (`crate::batch`): `status`, `list_active`, `stop`.

use salt_client::local::PublishRequest;
use serde_json::{Value, json};

use super::ctx::{Args, Ctx};
use crate::batch::{files, now};

/// Run `batch.status`, `batch.list_active` or `batch.stop`.
pub(crate) async fn call(ctx: &Ctx, fun: &str, a: &Args) -> Result<Value, String> {
    let f = files(&ctx.shared);
    let jid = a
        .get("jid")
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        .unwrap_or_default();
    let t = now();
    match fun {
        // The summary of the batch's `.batch.p`, or None.
        "batch.status" => Ok(f.read(&jid).map_or(Value::Null, |s| s.summary(t))),
        // A summary per batch of the active index, in jid order (unreadable ones left out).
        "batch.list_active" => Ok(Value::Array(
            f.active()
                .iter()
                .filter_map(|j| f.read(j))
                .map(|s| s.summary(t))
                .collect(),
        )),
        // Ask the manager to halt it (with kill=True, `saltutil.kill_job` to the minions it
        // is running on first); False for an unknown or halted batch.
        _ => {
            let Some(state) = f.read(&jid) else {
                tracing::warn!("batch.stop: no batch state found for jid {jid}");
                return Ok(Value::Bool(false));
            };
            if state.halted {
                tracing::info!("batch.stop: batch {jid} is already halted");
                return Ok(Value::Bool(false));
            }
            if a.flag("kill", false) && !state.active.is_empty() {
                let ids: Vec<String> = state.active.keys().cloned().collect();
                tracing::info!(
                    "batch.stop kill=True: publishing saltutil.kill_job on {} minion(s) for batch {jid}",
                    ids.len()
                );
                let req = PublishRequest {
                    tgt: ids.join(","),
                    tgt_type: "list".into(),
                    fun: "saltutil.kill_job".into(),
                    arg: vec![Value::from(jid.as_str())],
                    timeout: 5,
                    asynchronous: true,
                    ..Default::default()
                };
                let user = ctx.shared.cfg.user.clone();
                match crate::jobs::run::start_job(
                    &ctx.shared,
                    &ctx.publisher,
                    &req,
                    &user,
                    true,
                    crate::jobs::run::JobFiles::Before,
                )
                .await
                {
                    Ok((job, _, rx)) => ctx.shared.jobs.unsubscribe_one(&job.jid, rx),
                    Err(e) => tracing::error!(
                        "batch.stop kill=True failed to publish saltutil.kill_job for {jid}: {e}"
                    ),
                }
            }
            let tag = format!("salt/batch/{jid}/stop");
            let data = json!({"jid": jid, "reason": "stop"});
            ctx.shared.events.fire(tag.clone(), data.clone());
            let shared = ctx.shared.clone();
            tokio::task::spawn_blocking(move || crate::batch::on_event(&shared, &tag, &data))
                .await
                .map_err(|e| format!("batch.stop: {e}"))?;
            Ok(Value::Bool(true))
        }
    }
}
