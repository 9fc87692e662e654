//! The master's side of the local client socket (see [`crate::local`]).
//!
//! The caller is identified by `SO_PEERCRED`: uid 0 publishes as `root`, the master's own
//! uid as its user name; anyone else is a `publisher_acl` user, checked against the ACL
//! and the blacklist before anything is published. The socket is mode 0600 in a 0700
//! `sock_dir` unless `publisher_acl` is configured, in which case other local users must
//! be able to connect (0666 socket in a 0755 dir): SO_PEERCRED and the ACL are then the
//! access control.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use salt_keystore::KeyState;
use salt_transport::Publisher;
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::convert::{json_to_mp, mp_to_json};
use crate::local::{LocalEvent, LocalRequest, PublishRequest, read_frame, write_frame};
use crate::minion_data::MinionCache;
use crate::publish::{Job, publish};
use crate::state::Shared;

/// Bind the socket in `sock_dir` with the right permissions.
pub fn bind(sock_dir: &Path, open_to_acl_users: bool) -> std::io::Result<(UnixListener, PathBuf)> {
    std::fs::create_dir_all(sock_dir)?;
    let dir_mode = if open_to_acl_users { 0o755 } else { 0o700 };
    std::fs::set_permissions(sock_dir, std::fs::Permissions::from_mode(dir_mode))?;
    let path = sock_dir.join(crate::local::SOCKET_NAME);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(&path)?;
    let mode = if open_to_acl_users { 0o666 } else { 0o600 };
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))?;
    Ok((listener, path))
}

/// Accept local clients until `stop` fires.
pub async fn serve(
    listener: UnixListener,
    shared: Arc<Shared>,
    publisher: Publisher,
    stop: CancellationToken,
    tracker: TaskTracker,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let shared = shared.clone();
                    let publisher = publisher.clone();
                    let stop = stop.clone();
                    tracker.spawn(async move {
                        if let Err(e) = client(stream, shared, publisher, stop).await {
                            tracing::debug!("local client: {e}");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!("local socket accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

fn user_name(uid: u32) -> String {
    if uid == 0 {
        return "root".into();
    }
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => u.name,
        _ => uid.to_string(),
    }
}

async fn client(
    mut stream: UnixStream,
    shared: Arc<Shared>,
    publisher: Publisher,
    stop: CancellationToken,
) -> Result<(), crate::local::FrameError> {
    let uid = stream.peer_cred()?.uid();
    let user = user_name(uid);
    let privileged = uid == 0 || uid == nix::unistd::geteuid().as_raw();
    let Some(req) = read_frame::<_, LocalRequest>(&mut stream).await? else {
        return Ok(());
    };
    let LocalRequest::Publish(req) = req;
    let err = |message: String| LocalEvent::Error { message };
    let prepared = prepare(&shared, &req, &user, privileged);
    let (job, expected) = match prepared {
        Ok(p) => p,
        Err(message) => return write_frame(&mut stream, &err(message)).await,
    };
    let mut returns = shared.jobs.subscribe(&job.jid);
    let published = {
        let shared = shared.clone();
        let job = job.clone();
        tokio::task::spawn_blocking(move || {
            shared
                .jobs
                .store_job(&job.jid, &job.load())
                .map_err(|e| e.to_string())?;
            publish(&shared, &publisher, &job).map_err(|e| e.to_string())
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()))
    };
    if let Err(e) = published {
        shared.jobs.unsubscribe(&job.jid);
        return write_frame(&mut stream, &err(format!("publish failed: {e}"))).await;
    }
    write_frame(
        &mut stream,
        &LocalEvent::Published {
            jid: job.jid.clone(),
            minions: expected.clone(),
        },
    )
    .await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(req.timeout);
    // Expected minions still to answer: a set, so each return costs O(1) (a Vec scanned on
    // every return made 10,000 returns cost 10^8+ string compares).
    let mut waiting: Option<std::collections::HashSet<String>> =
        expected.as_ref().map(|e| e.iter().cloned().collect());
    let result = async {
        loop {
            if waiting.as_ref().is_some_and(|w| w.is_empty()) {
                break;
            }
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep_until(deadline) => break,
                got = returns.recv() => match got {
                    Some((id, data)) => {
                        if let Some(w) = waiting.as_mut() {
                            w.remove(&id);
                        }
                        write_frame(&mut stream, &LocalEvent::Return { id, data: mp_to_json(&data) }).await?;
                    }
                    None => break,
                }
            }
        }
        let missing: Vec<String> = expected
            .iter()
            .flatten()
            .filter(|m| waiting.as_ref().is_some_and(|w| w.contains(*m)))
            .cloned()
            .collect();
        write_frame(&mut stream, &LocalEvent::Done { missing }).await
    }
    .await;
    shared.jobs.unsubscribe(&job.jid);
    result
}

/// Validate, authorise and build the job; the expected minion set (None = unknown).
fn prepare(
    shared: &Shared,
    req: &PublishRequest,
    user: &str,
    privileged: bool,
) -> Result<(Job, Option<Vec<String>>), String> {
    let groups = crate::target::nodegroups(&shared.cfg);
    let target =
        crate::target::resolve(&req.tgt, &req.tgt_type, &groups).map_err(|e| e.to_string())?;
    // salt-key runs in another process: re-read the key directories.
    if let Err(e) = shared.store.refresh() {
        tracing::warn!("cannot read the key directories: {e}");
    }
    let accepted = shared.store.list(KeyState::Accepted);
    let cache = MinionCache::new(&shared.cfg.cachedir);
    let expected = Some(
        target
            .expected(accepted.iter().map(String::as_str), &cache, &groups, true)
            .map_err(|e| e.to_string())?,
    );
    if !privileged {
        crate::acl::check(
            &shared.acl,
            &shared.acl_blacklist,
            user,
            &req.fun,
            expected.as_deref(),
        )
        .map_err(|denied| {
            tracing::error!(
                "{user} does not have permissions to run {}. Please contact your local \
                     administrator if you believe this is in error. ({denied})",
                req.fun
            );
            format!("Authorization error occurred: {denied}")
        })?;
    }
    if expected.as_ref().is_some_and(Vec::is_empty) {
        return Err(
            "No minions matched the target. No command was sent, no jid was assigned.".into(),
        );
    }
    let job = Job {
        fun: req.fun.clone(),
        arg: req.arg.iter().map(json_to_mp).collect(),
        tgt: target.tgt,
        jid: shared.jids.next(),
        ret: req.ret.clone(),
        tgt_type: target.tgt_type,
        user: user.to_owned(),
    };
    Ok((job, expected))
}
