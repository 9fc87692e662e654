//! The local client protocol between the `salt` command and the master.
//!
//! `salt` never talks to minions and never touches keys: it connects to the master's Unix
//! socket `{sock_dir}/local_client.sock`, sends one [`LocalRequest`] and reads a stream of
//! [`LocalEvent`]s until [`LocalEvent::Done`] or [`LocalEvent::Error`]. Clients use it through
//! [`crate::session::Session`], which gives up on a master that does not answer. The master learns
//! who is calling from the socket's peer credentials (`SO_PEERCRED`), so no secret is needed.
//!
//! Framing: a 4-byte big-endian length, then that many bytes of JSON. Frames over
//! [`MAX_FRAME`] are refused.

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// File name of the socket inside `sock_dir`.
pub const SOCKET_NAME: &str = "local_client.sock";

/// Largest frame accepted either way (64 MiB).
pub const MAX_FRAME: usize = 64 << 20;

/// What `salt` asks the master to do.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(tag = "cmd", rename_all = "snake_case")]
pub enum LocalRequest {
    /// Publish a job and stream its returns.
    Publish(PublishRequest),
    /// Run a runner function on the master (`salt-run`).
    Runner(RunnerRequest),
    /// Make an eauth token (`salt -T`, Salt's clear `mk_token`): answered with
    /// [`LocalEvent::Token`], or [`LocalEvent::Error`] when the credentials do not
    /// authenticate.
    MkToken(LocalAuth),
    /// Fire an event on the master's bus (Salt's `MasterEvent.fire_event`, as Salt 3008's
    /// batch fires `salt/batch/<jid>/...`): root and the master's user only; answered with
    /// [`LocalEvent::Done`].
    Fire {
        /// Salt's tag.
        tag: String,
        /// The payload.
        data: serde_json::Value,
    },
    /// Hand a batch to the master (`salt --async -b`, Salt 3008's `_run_batch_async`): the
    /// batch's state (Salt's `BatchState`, `driver: master`) after its first slice was
    /// published under its jid. Root and the master's user only; answered with
    /// [`LocalEvent::Done`].
    StartBatch {
        /// Salt's `BatchState` dict.
        state: serde_json::Value,
    },
    /// Are you there? Answered at once with [`LocalEvent::Pong`]: how a client waiting on a
    /// quiet stream tells a busy master from one that does not answer
    /// ([`crate::session::Session`]).
    Ping,
}

/// A runner call (`salt-run FUN [ARG...]`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct RunnerRequest {
    /// Function, e.g. `jobs.lookup_jid`.
    pub fun: String,
    /// Arguments (kwargs as a trailing map with `"__kwarg__": true`).
    #[serde(default)]
    pub arg: Vec<serde_json::Value>,
    /// `-t`: seconds runners that publish (`manage.*`) wait for returns.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// `salt-run -a`: who the caller says they are (checked by the master's eauth engine
    /// instead of the socket's peer credentials).
    #[serde(default)]
    pub auth: Option<LocalAuth>,
}

/// External-auth credentials sent by `salt -a` / `salt-run -a` (the `eauth`, `username`,
/// `password` and `token` keys Salt's `LocalClient` puts in a clear load). With them the
/// master authenticates and authorises the request through its eauth engine (Salt's
/// `external_auth` ACL), whoever the socket's peer is. `password` and `token` are wiped when
/// dropped and never shown by `Debug`.
#[derive(Clone, Default, Deserialize, PartialEq, Serialize)]
pub struct LocalAuth {
    /// The backend (`pam`, `file`, ...); empty with a token only.
    #[serde(default)]
    pub eauth: String,
    /// `username`.
    #[serde(default)]
    pub username: Option<String>,
    /// `password`.
    #[serde(default)]
    pub password: Option<String>,
    /// `token` (from `token_file`, or just made with `-T`): Salt checks it before the
    /// password.
    #[serde(default)]
    pub token: Option<String>,
}

impl std::fmt::Debug for LocalAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalAuth")
            .field("eauth", &self.eauth)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Drop for LocalAuth {
    fn drop(&mut self) {
        use zeroize::Zeroize as _;
        if let Some(p) = &mut self.password {
            p.zeroize();
        }
        if let Some(t) = &mut self.token {
            t.zeroize();
        }
    }
}

/// A job to publish.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
pub struct PublishRequest {
    /// Target expression (string; for `list` a comma-separated string).
    pub tgt: String,
    /// `glob`, `pcre`, `list`, `grain`.
    pub tgt_type: String,
    /// Function, e.g. `test.ping`.
    pub fun: String,
    /// Arguments (kwargs as a trailing map with `"__kwarg__": true`).
    #[serde(default)]
    pub arg: Vec<serde_json::Value>,
    /// Seconds to wait for returns.
    pub timeout: u64,
    /// Returner, `""` for none.
    #[serde(default)]
    pub ret: String,
    /// Seconds each `saltutil.find_job` round waits after `timeout` (`--gather-job-timeout`;
    /// `None`: the master's `gather_job_timeout`).
    #[serde(default)]
    pub gather_job_timeout: Option<u64>,
    /// Publish only (`--async`): the stream ends after [`LocalEvent::Published`].
    #[serde(default)]
    pub asynchronous: bool,
    /// `--start-event` (Salt 3008): each minion fires `salt/job/<jid>/start/<id>` when it
    /// takes the job.
    #[serde(default)]
    pub start_event: bool,
    /// `SUDO_USER` when root runs `salt` under sudo (Salt's `get_specific_user`: the job's
    /// user is then `sudo_<name>`, and `sudo_acl` applies `publisher_acl` to it). The master
    /// reads it from root callers only.
    #[serde(default)]
    pub sudo_user: Option<String>,
    /// `salt -a`: external-auth credentials (see [`LocalAuth`]).
    #[serde(default)]
    pub auth: Option<LocalAuth>,
    /// The jid to publish under (Salt's `LocalClient.run_job(jid=...)`: Salt 3008 publishes
    /// every slice of a batch under the batch's jid); `None`: a new one.
    #[serde(default)]
    pub jid: Option<String>,
}

/// What the master streams back.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LocalEvent {
    /// The job went out. `minions` is the expected set, `None` when the master cannot know
    /// (grain targets).
    Published {
        /// The job id.
        jid: String,
        /// Expected minions.
        minions: Option<Vec<String>>,
    },
    /// One minion's return load (`return`, `retcode`, `success`, `fun`, ...).
    Return {
        /// Minion id.
        id: String,
        /// The return load as the minion sent it (without `tok`/`nonce`).
        data: serde_json::Value,
    },
    /// No more returns will be streamed; `missing` = expected minions that did not return.
    Done {
        /// Expected minions without a return (`[No response]`).
        missing: Vec<String>,
        /// Expected minions without a return that are not connected (`[Not connected]`).
        #[serde(default)]
        not_connected: Vec<String>,
    },
    /// One event of the master's bus (`salt-run state.event`).
    Event {
        /// Salt's tag.
        tag: String,
        /// The payload (with `_stamp`).
        data: serde_json::Value,
    },
    /// A line the runner printed for its caller: Salt's runners run in `salt-run`'s own
    /// process, where `LocalClient` `print()`s e.g. "No minions matched the target. ..." to
    /// its stdout; `salt-run` writes it to its stdout as it comes.
    Print {
        /// The line, without its newline.
        text: String,
    },
    /// A runner's return value.
    RunnerReturn {
        /// What the runner returned.
        data: serde_json::Value,
    },
    /// The answer to [`LocalRequest::Ping`].
    Pong,
    /// A token made for [`LocalRequest::MkToken`].
    Token {
        /// The token.
        token: String,
    },
    /// The request failed (bad target, not authorised, no minions matched...).
    Error {
        /// Human-readable reason.
        message: String,
    },
}

/// Framing or JSON errors on the local socket.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Socket I/O failed.
    #[error("local socket i/o: {0}")]
    Io(#[from] std::io::Error),
    /// Frame larger than [`MAX_FRAME`].
    #[error("frame of {0} bytes is too large")]
    TooLarge(usize),
    /// Body is not the expected JSON.
    #[error("bad frame: {0}")]
    Json(#[from] serde_json::Error),
}

/// Write one frame.
pub async fn write_frame<W, T>(w: &mut W, msg: &T) -> Result<(), FrameError>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let body = serde_json::to_vec(msg)?;
    if body.len() > MAX_FRAME {
        return Err(FrameError::TooLarge(body.len()));
    }
    let len = u32::try_from(body.len()).map_err(|_| FrameError::TooLarge(body.len()))?;
    w.write_all(&len.to_be_bytes()).await?;
    w.write_all(&body).await?;
    w.flush().await?;
    Ok(())
}

/// Read one frame; `Ok(None)` on a clean end of stream before a frame starts.
pub async fn read_frame<R, T>(r: &mut R) -> Result<Option<T>, FrameError>
where
    R: AsyncRead + Unpin,
    T: for<'de> Deserialize<'de>,
{
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).await?;
    Ok(Some(serde_json::from_slice(&body)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip() {
        let (mut a, mut b) = tokio::io::duplex(1024);
        let req = LocalRequest::Publish(PublishRequest {
            tgt: "*".into(),
            tgt_type: "glob".into(),
            fun: "test.ping".into(),
            arg: vec![],
            timeout: 5,
            ret: String::new(),
            ..Default::default()
        });
        write_frame(&mut a, &req).await.unwrap();
        let ev = LocalEvent::Done {
            not_connected: vec![],
            missing: vec!["m1".into()],
        };
        write_frame(&mut a, &ev).await.unwrap();
        drop(a);
        let got: LocalRequest = read_frame(&mut b).await.unwrap().unwrap();
        assert_eq!(got, req);
        let got: LocalEvent = read_frame(&mut b).await.unwrap().unwrap();
        assert_eq!(got, ev);
        let end: Option<LocalEvent> = read_frame(&mut b).await.unwrap();
        assert!(end.is_none());
    }

    #[tokio::test]
    async fn oversized_frame_refused() {
        let (mut a, mut b) = tokio::io::duplex(64);
        a.write_all(&(u32::MAX).to_be_bytes()).await.unwrap();
        let r: Result<Option<LocalEvent>, _> = read_frame(&mut b).await;
        assert!(matches!(r, Err(FrameError::TooLarge(_))));
    }
}
