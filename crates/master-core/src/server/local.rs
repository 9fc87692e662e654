//! The master's side of the local client socket (see [`salt_client::local`]).
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

use salt_transport::Publisher;
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::jobs::run::{JobFiles, start_job};
use crate::shared::Shared;
use salt_client::local::{LocalAuth, LocalEvent, LocalRequest, read_frame, write_frame};
use salt_proto::clear::{EauthFields, MasterCall, Secret};

/// Bind the socket in `sock_dir` with the right permissions.
pub(crate) fn bind(
    sock_dir: &Path,
    open_to_acl_users: bool,
) -> std::io::Result<(UnixListener, PathBuf)> {
    std::fs::create_dir_all(sock_dir)?;
    let dir_mode = if open_to_acl_users { 0o755 } else { 0o700 };
    std::fs::set_permissions(sock_dir, std::fs::Permissions::from_mode(dir_mode))?;
    let path = sock_dir.join(salt_client::local::SOCKET_NAME);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    // Bound under a temporary name, given its mode, then renamed into place: a client (or a
    // test) never finds the socket with the umask's mode.
    let tmp = sock_dir.join(format!(
        ".{}.{}.tmp",
        salt_client::local::SOCKET_NAME,
        std::process::id()
    ));
    let _ = std::fs::remove_file(&tmp);
    let listener = UnixListener::bind(&tmp)?;
    let mode = if open_to_acl_users { 0o666 } else { 0o600 };
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
    std::fs::rename(&tmp, &path)?;
    Ok((listener, path))
}

/// Accept local clients until `stop` fires.
pub(crate) async fn serve(
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
) -> Result<(), salt_client::local::FrameError> {
    let uid = stream.peer_cred()?.uid();
    let user = user_name(uid);
    let privileged = uid == 0 || uid == nix::unistd::geteuid().as_raw();
    let Some(req) = read_frame::<_, LocalRequest>(&mut stream).await? else {
        return Ok(());
    };
    let err = |message: String| LocalEvent::Error { message };
    let req = match req {
        LocalRequest::Ping => return write_frame(&mut stream, &LocalEvent::Pong).await,
        LocalRequest::MkToken(auth) => {
            let ev = mk_token(&shared, auth).await;
            return write_frame(&mut stream, &ev).await;
        }
        LocalRequest::Fire { tag, data } => {
            let answer = if privileged {
                let halted = fire(&shared, tag, data).await;
                LocalEvent::RunnerReturn {
                    data: serde_json::json!({ "halted": halted }),
                }
            } else {
                err("Authorization error occurred.".into())
            };
            return write_frame(&mut stream, &answer).await;
        }
        LocalRequest::StartBatch { state } => {
            let answer = if privileged {
                match start_batch(&shared, state, &user).await {
                    Ok(()) => done(),
                    Err(message) => err(message),
                }
            } else {
                err(
                    "salt --async --batch-size: a batch run by the master is for root and the \
                     master's user only in salt-rs"
                        .into(),
                )
            };
            return write_frame(&mut stream, &answer).await;
        }
        LocalRequest::Publish(req) => req,
        LocalRequest::Runner(r) => {
            // `salt-run -a`: the eauth engine decides, as for Salt's clear `runner`.
            // A refusal is the runner's output, as Salt's `salt-run` prints the exception
            // `master_call` raised (exit status 0).
            let (user, privileged) = if r.auth.is_some() {
                match authorize_runner(&shared, &r).await {
                    Ok(user) => (user, true),
                    Err(message) => {
                        let data = serde_json::Value::String(message);
                        return write_frame(&mut stream, &LocalEvent::RunnerReturn { data }).await;
                    }
                }
            } else {
                (user, privileged)
            };
            if r.fun == "state.event" {
                if !privileged {
                    return write_frame(&mut stream, &err("Authorization error occurred.".into()))
                        .await;
                }
                return stream_events(&shared, &r, &mut stream, &stop).await;
            }
            // A runner may take longer than the client's first-answer patience
            // (orchestrate): say it started, so the client then waits while the master
            // answers pings.
            // The runner's job is stored under the jid announced.
            let jid = privileged.then(|| shared.jids.next());
            if let Some(jid) = &jid {
                let started = LocalEvent::Published {
                    jid: jid.clone(),
                    minions: None,
                };
                write_frame(&mut stream, &started).await?;
            }
            let (console, mut printed) = tokio::sync::mpsc::unbounded_channel();
            let ctx = crate::runners::ctx::Ctx {
                shared: shared.clone(),
                publisher,
                stop,
                console: Some(console),
            };
            let call = crate::runners::call(&ctx, &r, &user, privileged, jid.as_deref());
            tokio::pin!(call);
            // What the runner prints reaches `salt-run` as it runs, before its return. A
            // client gone away does not stop the runner (as before it printed anything).
            let mut open = true;
            let out = loop {
                tokio::select! {
                    biased;
                    Some(text) = printed.recv(), if open => {
                        open = write_frame(&mut stream, &LocalEvent::Print { text }).await.is_ok();
                    }
                    out = &mut call => break out,
                }
            };
            while open && let Ok(text) = printed.try_recv() {
                open = write_frame(&mut stream, &LocalEvent::Print { text })
                    .await
                    .is_ok();
            }
            let ev = match out {
                Ok(data) => LocalEvent::RunnerReturn { data },
                Err(message) => err(message),
            };
            return write_frame(&mut stream, &ev).await;
        }
    };
    let (job, expected, mut returns) = match start_job(
        &shared,
        &publisher,
        &req,
        &user,
        privileged,
        JobFiles::Before,
    )
    .await
    {
        Ok(started) => started,
        Err(message) => return write_frame(&mut stream, &err(message)).await,
    };
    write_frame(
        &mut stream,
        &LocalEvent::Published {
            jid: job.jid.clone(),
            minions: expected.clone(),
        },
    )
    .await?;
    if req.asynchronous {
        shared.jobs.unsubscribe_one(&job.jid, returns);
        return Ok(());
    }
    let gather_timeout = req
        .gather_job_timeout
        .map_or(shared.cfg.gather_job_timeout, Duration::from_secs);
    let gather = crate::jobs::gather::Gather::new(
        shared.clone(),
        publisher,
        &job.jid,
        expected,
        Duration::from_secs(req.timeout),
        gather_timeout,
    );
    let result = async {
        let missing = gather
            .run(
                &mut returns,
                &stop,
                &mut crate::jobs::gather::FrameSink::new(&mut stream),
            )
            .await?;
        write_frame(
            &mut stream,
            &LocalEvent::Done {
                missing: missing.no_response,
                not_connected: missing.not_connected,
            },
        )
        .await
    }
    .await;
    shared.jobs.unsubscribe_one(&job.jid, returns);
    result
}

/// The eauth fields of a clear load from `salt -a`'s credentials.
pub(crate) fn eauth_fields(auth: &LocalAuth) -> EauthFields {
    EauthFields {
        eauth: Some(auth.eauth.clone()).filter(|e| !e.is_empty()),
        username: auth.username.clone(),
        password: auth.password.as_deref().map(Secret::new),
        token: auth.token.as_deref().map(Secret::new),
        token_expire: None,
    }
}

/// `salt -T`: Salt's `mk_token` through the eauth engine (on a blocking thread: PAM and the
/// failure delay).
async fn mk_token(shared: &Arc<Shared>, auth: LocalAuth) -> LocalEvent {
    let shared = shared.clone();
    let made = tokio::task::spawn_blocking(move || {
        let mut fields = eauth_fields(&auth);
        // A token is made from a password, never from another token (Salt's `mk_token`).
        fields.token = None;
        shared.eauth.mk_token(&fields)
    })
    .await
    .ok()
    .flatten();
    match made {
        Some(t) => LocalEvent::Token {
            token: t.token.clone(),
        },
        None => LocalEvent::Error {
            message: "Authentication failure of type \"eauth\" occurred.".into(),
        },
    }
}

/// `salt-run -a`: Salt's clear `runner` checks (authentication, then `runner_check` of the
/// user's auth list over the call's keyword arguments). The user the runner runs as, or
/// Salt's message.
async fn authorize_runner(
    shared: &Arc<Shared>,
    r: &salt_client::local::RunnerRequest,
) -> Result<String, String> {
    let Some(auth) = &r.auth else {
        return Err("Authentication error occurred.".into());
    };
    // Salt's `low["kwarg"]`: the keyword arguments (the trailing map of `parse_input`).
    let kwarg = r
        .arg
        .iter()
        .rev()
        .find_map(|a| match a {
            serde_json::Value::Object(m) if m.contains_key("__kwarg__") => {
                let mut m = m.clone();
                m.remove("__kwarg__");
                Some(serde_json::Value::Object(m))
            }
            _ => None,
        })
        .unwrap_or_else(|| serde_json::json!({}));
    let call = MasterCall {
        fun: r.fun.clone(),
        kwarg: salt_compat::json::json_to_msgpack(&kwarg),
        auth: eauth_fields(auth),
        user: None,
        key: None,
        load: rmpv::Value::Map(vec![]),
    };
    let shared = shared.clone();
    tokio::task::spawn_blocking(move || {
        shared
            .eauth
            .authorize_call(&call, "runner", &shared.access_keys)
            .map_err(|refusal| refusal.name_and_message().1)
    })
    .await
    .unwrap_or_else(|e| Err(e.to_string()))
}

fn done() -> LocalEvent {
    LocalEvent::Done {
        missing: vec![],
        not_connected: vec![],
    }
}

/// Salt's `MasterEvent.fire_event` for a local caller; a `salt/batch/` event also goes to the
/// batches (`crate::batch::on_event`), whose answer is the reason a `batch.stop` halted the
/// caller's batch, if it did.
async fn fire(shared: &Arc<Shared>, tag: String, data: serde_json::Value) -> Option<String> {
    shared.events.fire(tag.clone(), data.clone());
    if !tag.starts_with("salt/batch/") {
        return None;
    }
    let shared = shared.clone();
    tokio::task::spawn_blocking(move || crate::batch::on_event(&shared, &tag, &data))
        .await
        .ok()
        .flatten()
}

/// Salt 3008's `_run_batch_async` after the first slice went out: keep the batch's state
/// (its user: the caller), index it, fire `salt/batch/<jid>/new`; the master drives the rest.
async fn start_batch(
    shared: &Arc<Shared>,
    state: serde_json::Value,
    user: &str,
) -> Result<(), String> {
    let mut s =
        salt_client::batch::BatchState::from_json(&state).ok_or("StartBatch: not a batch state")?;
    if s.driver != "master" || !crate::jobs::jid::safe_jid(&s.jid) {
        return Err(format!("StartBatch: bad batch state for jid {:?}", s.jid));
    }
    s.user = user.to_owned();
    let files = crate::batch::files(shared);
    let s2 = s.clone();
    tokio::task::spawn_blocking(move || files.write(&s2).and_then(|()| files.add_active(&s2.jid)))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot write the batch's state: {e}"))?;
    let _ = fire(shared, format!("salt/batch/{}/new", s.jid), s.new_payload()).await;
    Ok(())
}

/// Salt's `state.event(tagmatch='*', count=-1, quiet=False, sock_dir=None, pretty=False,
/// node='master')`: every event whose tag matches (`expr_match`: a glob or a regular
/// expression), as it fires, until `count` events were sent, the client goes away, or the
/// master stops. `salt-run` prints them (`quiet`, `pretty`); the master's own bus only.
async fn stream_events(
    shared: &Shared,
    r: &salt_client::local::RunnerRequest,
    stream: &mut UnixStream,
    stop: &CancellationToken,
) -> Result<(), salt_client::local::FrameError> {
    let args = match event_args(shared, &r.arg) {
        Ok(a) => a,
        Err(message) => return write_frame(stream, &LocalEvent::Error { message }).await,
    };
    let (tagmatch, mut count) = args;
    let tagmatch = salt_eauth::pyre::ExprMatch::new(&tagmatch);
    let mut rx = shared.events.subscribe();
    loop {
        let ev = tokio::select! {
            _ = stop.cancelled() => break,
            ev = rx.recv() => ev,
        };
        let ev = match ev {
            Ok(ev) => ev,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!("state.event listener fell behind: {n} event(s) dropped");
                continue;
            }
            Err(_) => break,
        };
        if !tagmatch.is_match(&ev.tag) {
            continue;
        }
        write_frame(
            stream,
            &LocalEvent::Event {
                tag: ev.tag.clone(),
                data: ev.data.clone(),
            },
        )
        .await?;
        // Salt: a positive count counts down; 0 stops at the first match, negative never.
        if count > 0 {
            count -= 1;
        }
        if count == 0 {
            break;
        }
    }
    write_frame(
        stream,
        &LocalEvent::Done {
            missing: vec![],
            not_connected: vec![],
        },
    )
    .await
}

/// `state.event`'s `(tagmatch, count)`, or what is wrong with the call.
fn event_args(shared: &Shared, raw: &[serde_json::Value]) -> Result<(String, i64), String> {
    let a = salt_client::args::bind(&salt_client::args::STATE_EVENT, raw)?;
    if let Some(node) = a.text("node").filter(|n| n != "master") {
        return Err(format!(
            "state.event: node={node} is not supported by salt-rs (salt-run watches the master's event bus)"
        ));
    }
    if let Some(dir) = a.text("sock_dir")
        && Path::new(&dir) != shared.cfg.sock_dir
    {
        return Err(format!(
            "state.event: sock_dir={dir} is not supported by salt-rs (the events are those of the master at {})",
            shared.cfg.sock_dir.display()
        ));
    }
    let count = match a.get("count") {
        None => -1,
        Some(_) => a.int("count").ok_or_else(|| {
            format!(
                "state.event: count must be a whole number, not {}",
                a.get("count").map_or_else(String::new, ToString::to_string)
            )
        })?,
    };
    Ok((a.text("tagmatch").unwrap_or_else(|| "*".into()), count))
}
