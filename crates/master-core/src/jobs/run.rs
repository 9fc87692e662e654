//! Running a job for a caller of the local socket: validate, authorise, store and publish it
//! ([`start_job`]), and, for the master's own runners, wait for it as `salt` does
//! ([`run_job`]).

use std::sync::Arc;
use std::time::Duration;

use rmpv::Value;
use salt_client::local::PublishRequest;
use salt_compat::json::{json_to_msgpack, msgpack_to_json};
use salt_keystore::KeyState;
use salt_transport::Publisher;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use super::gather::{Gather, Missing};
use super::publish::{Job, publish};
use super::waiters::ReturnEvent;
use crate::minions::data::MinionCache;
use crate::shared::Shared;

/// A published job: what was published, the expected minions, its returns.
pub(crate) type Started = (Job, Option<Vec<String>>, UnboundedReceiver<ReturnEvent>);

/// When a job's load is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobFiles {
    /// Before it is published, as Salt's `ClearFuncs.publish` does; a failure fails the
    /// publish. What answers a client (`salt`, clear `publish`, runners).
    Before,
    /// By the job cache's writer thread, behind the publish (before any of its returns); a
    /// failure is logged. The reactor's `local.` reactions, whose caller reads no answer but
    /// the jid and whose next reaction should not wait for the disk (Salt's reactor thread
    /// waits for its master's answer; on a busy disk that was most of a runner reaction's
    /// start behind a `local.` one, docs/benchmarks.md).
    Behind,
}

/// Validate, authorise, store and publish `req` for `user`.
pub(crate) async fn start_job(
    shared: &Arc<Shared>,
    publisher: &Publisher,
    req: &PublishRequest,
    user: &str,
    privileged: bool,
    files: JobFiles,
) -> Result<Started, String> {
    // Blocking: an eauth check (PAM, the failure delay), the job files, the publisher.
    let shared = shared.clone();
    let publisher = publisher.clone();
    let req = req.clone();
    let user = user.to_owned();
    tokio::task::spawn_blocking(move || {
        let (job, expected) = prepare(&shared, &req, &user, privileged)?;
        let returns = shared.jobs.subscribe(&job.jid);
        let minions = expected.clone().unwrap_or_default();
        if let Err(e) = send(&shared, &publisher, &job, &minions, &req.arg, files) {
            shared.jobs.unsubscribe_one(&job.jid, returns);
            return Err(e);
        }
        Ok((job, expected, returns))
    })
    .await
    .unwrap_or_else(|e| Err(e.to_string()))
}

/// Fire `salt/job/<jid>/new`, store the job (as `files` says) and publish it (blocking:
/// files, the publisher): the one way out for a job, from our `salt`, Salt's clear
/// `publish` and the reactor.
pub(crate) fn send(
    shared: &Shared,
    publisher: &Publisher,
    job: &Job,
    minions: &[String],
    arg: &[serde_json::Value],
    files: JobFiles,
) -> Result<(), String> {
    // Before the publish: a listener sees `new` before any `ret`.
    if shared.events.wanted() {
        let data = serde_json::json!({
            "jid": job.jid,
            "tgt_type": job.tgt_type,
            "tgt": msgpack_to_json(&job.tgt),
            "user": job.user,
            "fun": job.fun,
            "arg": arg,
            "minions": minions,
            "missing": [],
        });
        shared
            .events
            .fire(format!("salt/job/{}/new", job.jid), data);
    }
    // Salt's `save_minions` when the target's minions are known.
    let known = (!minions.is_empty()).then_some(minions);
    match files {
        JobFiles::Before => shared.jobs.store_job(&job.jid, &job.load(), known),
        JobFiles::Behind => {
            shared
                .jobs
                .store_job_behind(&job.jid, job.load(), known.map(<[String]>::to_vec))
        }
    }
    .map_err(|e| format!("publish failed: {e}"))?;
    // Salt 3007+ (`ClearFuncs.publish`): the load as published, before it goes out.
    if shared.events.wanted() {
        shared.events.fire(
            format!("salt/job/{}/publish", job.jid),
            msgpack_to_json(&job.load()),
        );
    }
    publish(shared, publisher, job).map_err(|e| format!("publish failed: {e}"))
}

/// Publish `req` as the master itself and wait as `salt` would: the returns in arrival
/// order, the minions missing at the end, and the jid (runners such as `manage.status`).
pub(crate) async fn run_job(
    shared: &Arc<Shared>,
    publisher: &Publisher,
    stop: &CancellationToken,
    req: &PublishRequest,
) -> Result<(String, Vec<(String, Value)>, Missing), String> {
    let (job, expected, mut returns) =
        start_job(shared, publisher, req, "root", true, JobFiles::Before).await?;
    let gather_timeout = req
        .gather_job_timeout
        .map_or(shared.cfg.gather_job_timeout, Duration::from_secs);
    let gather = Gather::new(
        shared.clone(),
        publisher.clone(),
        &job.jid,
        expected,
        Duration::from_secs(req.timeout),
        gather_timeout,
    );
    let mut got = Vec::new();
    let missing = gather.run(&mut returns, stop, &mut got).await;
    shared.jobs.unsubscribe(&job.jid);
    Ok((job.jid, got, missing.map_err(|e| e.to_string())?))
}

/// Validate, authorise and build the job; the expected minion set (None = unknown).
fn prepare(
    shared: &Shared,
    req: &PublishRequest,
    user: &str,
    privileged: bool,
) -> Result<(Job, Option<Vec<String>>), String> {
    let (target, expected) = target_minions(shared, &req.tgt, &req.tgt_type, Some(&req.fun))?;
    // Root under sudo publishes as `sudo_<name>` (Salt's `get_specific_user`).
    let user = match &req.sudo_user {
        Some(name) if privileged && user == "root" => format!("sudo_{name}"),
        _ => user.to_owned(),
    };
    let load = salt_proto::clear::Publish {
        tgt: Value::from(req.tgt.as_str()),
        tgt_type: req.tgt_type.clone(),
        fun: salt_proto::clear::Funs::One(req.fun.clone()),
        arg: req.arg.iter().map(json_to_msgpack).collect(),
        key: None,
        user,
        jid: None,
        ret: Value::from(req.ret.as_str()),
        kwargs: Value::Map(vec![]),
        auth: salt_proto::clear::EauthFields::default(),
    };
    // `salt -a`: the credentials decide (Salt's `_prep_auth_info`: eauth fields before the
    // key), else the socket's peer.
    let user = match &req.auth {
        Some(auth) => {
            let load = salt_proto::clear::Publish {
                auth: crate::server::local::eauth_fields(auth),
                ..load
            };
            shared
                .eauth
                .authorize_publish(&load, &expected, &shared.access_keys, &Resolver(shared))
        }
        None => {
            shared
                .eauth
                .authorize_local_publish(&load, privileged, &expected, &Resolver(shared))
        }
    }
    .map_err(|refusal| refusal.name_and_message().1)?;
    let expected = Some(expected);
    if expected.as_ref().is_some_and(Vec::is_empty) {
        return Err(
            "No minions matched the target. No command was sent, no jid was assigned.".into(),
        );
    }
    let job = Job {
        fun: req.fun.clone(),
        arg: req.arg.iter().map(json_to_msgpack).collect(),
        tgt: target.tgt,
        jid: match &req.jid {
            Some(jid) if crate::jobs::jid::safe_jid(jid) => jid.clone(),
            Some(jid) => return Err(format!("Invalid jid: {jid:?}")),
            None => shared.jids.next(),
        },
        ret: req.ret.clone(),
        tgt_type: target.tgt_type,
        user,
        start_event: req.start_event,
    };
    Ok((job, expected))
}

/// `CkMinions.check_minions` for the ACL checks of `salt_eauth`.
pub(crate) struct Resolver<'a>(pub(crate) &'a Shared);

impl salt_eauth::MinionResolver for Resolver<'_> {
    fn check_minions(&self, expr: &str, tgt_type: &str) -> Vec<String> {
        target_minions(self.0, expr, tgt_type, None)
            .map(|(_, m)| m)
            .unwrap_or_default()
    }
}

/// The target of `tgt`/`tgt_type` and the accepted minions and registered resources it
/// addresses (Salt 3008's `CkMinions.check_minions`, greedy; `fun`: the function published).
pub(crate) fn target_minions(
    shared: &Shared,
    tgt: &str,
    tgt_type: &str,
    fun: Option<&str>,
) -> Result<(crate::minions::target::Target, Vec<String>), String> {
    let groups = crate::minions::target::nodegroups(&shared.cfg);
    let target =
        crate::minions::target::resolve(tgt, tgt_type, &groups).map_err(|e| e.to_string())?;
    // salt-key runs in another process: re-read the key directories when they changed.
    if let Err(e) = shared.key_dirs.refresh(&shared.store) {
        tracing::warn!("cannot read the key directories: {e}");
    }
    let accepted = shared.store.list(KeyState::Accepted);
    let cache = MinionCache::new(&shared.cfg.cachedir);
    let mut expected = target
        .expected(accepted.iter().map(String::as_str), &cache, &groups, true)
        .map_err(|e| e.to_string())?;
    let registry = shared.resources.all();
    if !registry.is_empty() {
        let resources = target
            .expected_resources(&expected, &registry, &groups, fun)
            .map_err(|e| e.to_string())?;
        expected.extend(resources);
        expected.sort();
        expected.dedup();
    }
    Ok((target, expected))
}
