//! One request to the master over the local socket, with Salt's patience.
//!
//! A master that does not answer (stopped with SIGSTOP, or wedged) still accepts connections
//! on its Unix socket: the kernel queues them. So a client that only reads would wait
//! forever. Salt's CLI gives up instead: its publish is a request to the master that times out
//! after `-t` seconds, tried `request_channel_tries` (3) times, and then prints
//! [`TIMED_OUT`]; while it waits for returns, the `saltutil.find_job` it publishes each round
//! is such a request too.
//!
//! [`Session`] does the same over our stream:
//! * the master's first answer (`Published`, a runner's return, an error) must come within
//!   `timeout × REQUEST_TRIES`;
//! * afterwards silence is normal (a job still running, `state.event` with no events), but
//!   after `timeout` seconds of it the session asks the master on a second connection
//!   ([`LocalRequest::Ping`]) whether it is still there; no answer within
//!   `timeout × REQUEST_TRIES` ends the session with [`SessionError::TimedOut`].
//!
//! The stream is read by a task of its own feeding a channel, so giving up on a wait never
//! loses half a frame.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::UnixStream;
use tokio::sync::mpsc;

use crate::local::{FrameError, LocalEvent, LocalRequest, read_frame, write_frame};

/// What Salt's `LocalClient.pub` raises when the master does not answer its request
/// (salt/client/__init__.py, 3006-3008); `salt` prints it.
pub const TIMED_OUT: &str = "Salt request timed out. The master is not responding. You may need \
     to run your command with `--async` in order to bypass the congested event bus. With \
     `--async`, the CLI tool will print the job id (jid) and exit immediately without listening \
     for responses. You can then use `salt-run jobs.lookup_jid` to look up the results of the \
     job in the job cache later.";

/// How often Salt sends a request before giving up (`request_channel_tries`, default 3).
pub const REQUEST_TRIES: u32 = 3;

/// Why a session ended without the master's answer.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The socket could not be opened (no master, or not ours to open).
    #[error("{0}")]
    Connect(std::io::Error),
    /// The master did not answer in time ([`TIMED_OUT`]).
    #[error("{TIMED_OUT}")]
    TimedOut,
    /// The stream broke or carried something that is not a frame.
    #[error("{0}")]
    Frame(#[from] FrameError),
}

/// A request sent to the master and the stream of its answers.
#[derive(Debug)]
pub struct Session {
    sock: PathBuf,
    timeout: Duration,
    answered: bool,
    events: mpsc::Receiver<Result<Option<LocalEvent>, FrameError>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Session {
    /// Connects to `sock` and sends `req`; `timeout` is the command's `-t` (at least one
    /// second is used). Must run inside a tokio runtime.
    pub async fn open(
        sock: &Path,
        req: &LocalRequest,
        timeout: Duration,
    ) -> Result<Self, SessionError> {
        let timeout = timeout.max(Duration::from_secs(1));
        let patience = timeout * REQUEST_TRIES;
        // A stopped master's full accept queue blocks a connect, a full socket buffer a write.
        let stream = tokio::time::timeout(patience, async {
            let mut stream = UnixStream::connect(sock)
                .await
                .map_err(SessionError::Connect)?;
            write_frame(&mut stream, req).await?;
            Ok::<_, SessionError>(stream)
        })
        .await
        .map_err(|_| SessionError::TimedOut)??;
        let (tx, events) = mpsc::channel(256);
        let reader = tokio::spawn(async move {
            // Frames are read through a buffer: a fan-out's returns arrive in batches.
            let mut stream = tokio::io::BufReader::with_capacity(1 << 16, stream);
            loop {
                let frame = read_frame::<_, LocalEvent>(&mut stream).await;
                let last = !matches!(frame, Ok(Some(_)));
                if tx.send(frame).await.is_err() || last {
                    return;
                }
            }
        });
        Ok(Self {
            sock: sock.to_path_buf(),
            timeout,
            answered: false,
            events,
            reader,
        })
    }

    /// The next answer; `Ok(None)` when the master ended the stream.
    pub async fn next(&mut self) -> Result<Option<LocalEvent>, SessionError> {
        let patience = self.timeout * REQUEST_TRIES;
        if !self.answered {
            let got = tokio::time::timeout(patience, self.events.recv())
                .await
                .map_err(|_| SessionError::TimedOut)?;
            self.answered = true;
            return flatten(got);
        }
        loop {
            if let Ok(got) = tokio::time::timeout(self.timeout, self.events.recv()).await {
                return flatten(got);
            }
            // Quiet for `timeout`: still there? Answers on the stream meanwhile count too.
            tokio::select! {
                got = self.events.recv() => return flatten(got),
                alive = answers_ping(&self.sock, patience) => {
                    if !alive {
                        return Err(SessionError::TimedOut);
                    }
                }
            }
        }
    }

    /// An answer is already waiting (the caller may hold its output back until there is none).
    pub fn has_more(&self) -> bool {
        !self.events.is_empty()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

fn flatten(
    got: Option<Result<Option<LocalEvent>, FrameError>>,
) -> Result<Option<LocalEvent>, SessionError> {
    Ok(got.transpose()?.flatten())
}

/// The master behind `sock` answers a [`LocalRequest::Ping`] within `patience` (any answer,
/// even a closed connection from a master that does not know the request, shows it is
/// running).
async fn answers_ping(sock: &Path, patience: Duration) -> bool {
    tokio::time::timeout(patience, async {
        let Ok(mut stream) = UnixStream::connect(sock).await else {
            return false;
        };
        if write_frame(&mut stream, &LocalRequest::Ping).await.is_err() {
            return false;
        }
        let _ = read_frame::<_, LocalEvent>(&mut stream).await;
        true
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::UnixListener;

    fn sock(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("salt-client-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("local_client.sock")
    }

    fn ping() -> LocalRequest {
        LocalRequest::Runner(crate::local::RunnerRequest {
            fun: "test.ping".into(),
            ..Default::default()
        })
    }

    /// A listener that accepts nothing (a stopped master): the first answer times out after
    /// `timeout × REQUEST_TRIES`.
    #[tokio::test]
    async fn a_master_that_never_answers_times_out() {
        let path = sock("silent");
        let _listener = UnixListener::bind(&path).unwrap();
        let mut s = Session::open(&path, &ping(), Duration::from_secs(1))
            .await
            .unwrap();
        let t0 = std::time::Instant::now();
        let err = s.next().await.unwrap_err();
        let took = t0.elapsed();
        assert!(matches!(err, SessionError::TimedOut), "{err}");
        assert!(
            took >= Duration::from_secs(3) && took < Duration::from_secs(5),
            "{took:?}"
        );
        assert!(err.to_string().starts_with("Salt request timed out."));
    }

    /// After the first answer, a master that answers pings may stay quiet as long as it
    /// likes; once it stops answering pings too, the session ends.
    #[tokio::test]
    async fn quiet_is_fine_while_the_master_answers_pings() {
        let path = sock("quiet");
        let listener = UnixListener::bind(&path).unwrap();
        let (alive_tx, alive_rx) = tokio::sync::watch::channel(true);
        let server = tokio::spawn(async move {
            let (mut first, _) = listener.accept().await.unwrap();
            let _: Option<LocalRequest> = read_frame(&mut first).await.unwrap();
            write_frame(&mut first, &LocalEvent::Pong).await.unwrap();
            loop {
                let (mut c, _) = listener.accept().await.unwrap();
                let req: Option<LocalRequest> = read_frame(&mut c).await.unwrap();
                assert_eq!(req, Some(LocalRequest::Ping));
                if *alive_rx.borrow() {
                    write_frame(&mut c, &LocalEvent::Pong).await.unwrap();
                } else {
                    // Frozen: hold the connection, never answer.
                    let _held = c;
                    std::future::pending::<()>().await;
                }
            }
        });
        let mut s = Session::open(&path, &ping(), Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(s.next().await.unwrap(), Some(LocalEvent::Pong));
        let waiting = tokio::spawn(async move { s.next().await });
        // Quiet for 3.5 timeouts, three pings answered.
        tokio::time::sleep(Duration::from_millis(3500)).await;
        assert!(!waiting.is_finished(), "quiet but alive: still waiting");
        alive_tx.send(false).unwrap();
        let t0 = std::time::Instant::now();
        let err = waiting.await.unwrap().unwrap_err();
        assert!(matches!(err, SessionError::TimedOut), "{err}");
        // The freeze is noticed at the next ping (within 1 s) and given 3 × 1 s.
        let took = t0.elapsed();
        assert!(took <= Duration::from_millis(4500), "{took:?}");
        server.abort();
    }

    #[tokio::test]
    async fn no_socket_is_a_connect_error() {
        let err = Session::open(&sock("none"), &ping(), Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(matches!(err, SessionError::Connect(_)), "{err}");
    }
}
