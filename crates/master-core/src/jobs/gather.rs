//! Waiting for a job's returns as Salt's `LocalClient.get_iter_returns` does: until every
//! expected minion returned, or `timeout` passed and no minion still runs the job.
//!
//! When `timeout` passes with minions missing, the master asks them `saltutil.find_job <jid>`
//! (a list-targeted job of its own). A minion whose answer is not empty still runs the job: the
//! wait goes on, its own deadline moves to now + `timeout`, and another `find_job` round goes
//! out every `gather_job_timeout` while any minion says it runs the job. When a round passes
//! with no minion running the job, the wait ends once the last moved deadline has passed. So a
//! highstate longer than `-t` is returned, and a minion that is gone costs `timeout` +
//! `gather_job_timeout`, as with Salt. Two differences: only minions that signed in since this
//! master started are asked (the others cannot hold the AES key the job was published with, so
//! their answer cannot come: Salt waits `gather_job_timeout` for them), and a round in which
//! every asked minion has answered and none runs the job ends at once.
//!
//! The missing minions are then split as Salt's CLI reports them: `[Not connected]` for those
//! the minion data cache knows (`cachedir/minions/<id>/data.p`) that did not answer any
//! `find_job` and have not signed in to this master since it started (Salt looks at TCP
//! connections to the publish port instead), `[No response]` for the others.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rmpv::Value;
use salt_transport::Publisher;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use super::waiters::ReturnEvent;
use crate::jobs::publish::{Job, publish};
use crate::shared::Shared;
use salt_client::local::{FrameError, LocalEvent, MAX_FRAME};
use salt_compat::json::msgpack_to_json;

/// Returns taken from the channel before they are sent on to the sink.
const BATCH: usize = 4096;

/// How a wait ended: the minions that did not return.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Missing {
    /// Missing minions that answered a `find_job` or are signed in (`[No response]`).
    pub no_response: Vec<String>,
    /// Missing minions that never answered and are not signed in (`[Not connected]`).
    pub not_connected: Vec<String>,
}

/// Where the returns of a waited-on job go.
pub(crate) trait ReturnSink {
    /// One minion's return load.
    fn returned(
        &mut self,
        id: String,
        data: Value,
    ) -> impl Future<Output = Result<(), FrameError>> + Send;

    /// The returns that arrived together have all been passed to
    /// [`returned`](Self::returned): send what is buffered.
    fn flush(&mut self) -> impl Future<Output = Result<(), FrameError>> + Send {
        std::future::ready(Ok(()))
    }
}

/// Returns streamed to a `salt` command as [`LocalEvent::Return`] frames, those that arrived
/// together in one write.
pub(crate) struct FrameSink<'a, W> {
    w: &'a mut W,
    buf: Vec<u8>,
}

impl<'a, W> FrameSink<'a, W> {
    /// Frames to `w`.
    pub(crate) fn new(w: &'a mut W) -> Self {
        Self { w, buf: Vec::new() }
    }
}

impl<W: tokio::io::AsyncWrite + Unpin + Send> ReturnSink for FrameSink<'_, W> {
    async fn returned(&mut self, id: String, data: Value) -> Result<(), FrameError> {
        let data = msgpack_to_json(&data);
        // The frame `write_frame` would write: a big-endian u32 length, then the JSON.
        let at = self.buf.len();
        self.buf.extend_from_slice(&[0; 4]);
        serde_json::to_writer(&mut self.buf, &LocalEvent::Return { id, data })?;
        let len = self.buf.len() - at - 4;
        let Some(len32) = u32::try_from(len).ok().filter(|_| len <= MAX_FRAME) else {
            self.buf.truncate(at);
            return Err(FrameError::TooLarge(len));
        };
        self.buf[at..at + 4].copy_from_slice(&len32.to_be_bytes());
        if self.buf.len() >= 1 << 20 {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), FrameError> {
        use tokio::io::AsyncWriteExt as _;
        if !self.buf.is_empty() {
            self.w.write_all(&self.buf).await?;
            self.buf.clear();
            self.w.flush().await?;
        }
        Ok(())
    }
}

/// Returns collected in arrival order (runners).
impl ReturnSink for Vec<(String, Value)> {
    async fn returned(&mut self, id: String, data: Value) -> Result<(), FrameError> {
        self.push((id, data));
        Ok(())
    }
}

/// One `find_job` round in flight.
struct Round {
    jid: String,
    rx: UnboundedReceiver<ReturnEvent>,
    until: Instant,
    asked: HashSet<String>,
    answered: HashSet<String>,
    running: bool,
}

/// What the wait is doing now.
enum Phase {
    /// Before `timeout`.
    First(Instant),
    /// A `find_job` round is out.
    Asking(Round),
    /// After the last round, until the last moved deadline.
    Linger(Instant),
}

/// The wait of one job; [`Gather::run`] forwards every return to `on_return`.
pub(crate) struct Gather {
    shared: Arc<Shared>,
    publisher: Publisher,
    jid: String,
    timeout: Duration,
    gather_timeout: Duration,
    waiting: Option<HashSet<String>>,
    expected: Option<Vec<String>>,
    moved: HashMap<String, Instant>,
    ever_answered: HashSet<String>,
}

impl Gather {
    /// Wait for `jid`'s returns from `expected` (`None`: unknown, the wait ends at `timeout`).
    pub(crate) fn new(
        shared: Arc<Shared>,
        publisher: Publisher,
        jid: &str,
        expected: Option<Vec<String>>,
        timeout: Duration,
        gather_timeout: Duration,
    ) -> Self {
        Self {
            shared,
            publisher,
            jid: jid.to_owned(),
            timeout,
            gather_timeout,
            waiting: expected.as_ref().map(|e| e.iter().cloned().collect()),
            expected,
            moved: HashMap::new(),
            ever_answered: HashSet::new(),
        }
    }

    /// Run until done or `stop`; every return of the job goes to `sink` (an error from it ends
    /// the wait and is returned).
    pub(crate) async fn run<S: ReturnSink>(
        mut self,
        returns: &mut UnboundedReceiver<ReturnEvent>,
        stop: &tokio_util::sync::CancellationToken,
        sink: &mut S,
    ) -> Result<Missing, FrameError> {
        let mut phase = Phase::First(Instant::now() + self.timeout);
        loop {
            if self.waiting.as_ref().is_some_and(HashSet::is_empty) {
                break;
            }
            let until = match &phase {
                Phase::First(t) | Phase::Linger(t) => *t,
                Phase::Asking(r) => r.until,
            };
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep_until(until) => {
                    let ended = std::mem::replace(&mut phase, Phase::Linger(until));
                    match self.next_phase(ended).await {
                        Some(p) => phase = p,
                        None => break,
                    }
                }
                got = returns.recv() => match got {
                    Some(first) => {
                        // Everything that arrived with it, in one go (the return sink
                        // delivers in batches).
                        let mut next = Some(first);
                        let mut n = 0;
                        while let Some((id, data)) = next {
                            if let Some(w) = self.waiting.as_mut() {
                                w.remove(&id);
                            }
                            sink.returned(id, data).await?;
                            n += 1;
                            next = if n < BATCH { returns.try_recv().ok() } else { None };
                        }
                        sink.flush().await?;
                    }
                    None => break,
                },
                got = recv_round(&mut phase) => {
                    if let (Some((id, data)), Phase::Asking(r)) = (got, &mut phase) {
                        self.ever_answered.insert(id.clone());
                        r.answered.insert(id.clone());
                        if still_running(&data) {
                            r.running = true;
                            self.moved.insert(id, Instant::now() + self.timeout);
                        } else if !r.running && r.asked.is_subset(&r.answered) {
                            r.until = Instant::now();
                        }
                    }
                }
            }
        }
        if let Phase::Asking(r) = phase {
            self.shared.jobs.unsubscribe(&r.jid);
        }
        // The job cache is written behind the returns (as Salt fires a return's event before
        // writing it): the wait does not end on the disk; this master's `jobs.*` runners
        // flush first. Other masters of a group cannot, so there the wait ends once the
        // returns it handed over are written.
        if self.shared.jobs.store().read_by_other_masters() {
            let shared = self.shared.clone();
            let _ = tokio::task::spawn_blocking(move || shared.jobs.flush()).await;
        }
        Ok(self.missing())
    }

    /// The phase after `phase` ended; `None` when the wait is over.
    async fn next_phase(&mut self, phase: Phase) -> Option<Phase> {
        // Only a minion that signed in since this master started holds its AES key and can
        // have received the job; asking the others would only wait `gather_job_timeout`.
        let connected = self.connected();
        let waiting: Vec<String> = self
            .waiting
            .as_ref()?
            .iter()
            .filter(|id| connected.contains(*id))
            .cloned()
            .collect();
        let running = match phase {
            Phase::First(_) => true,         // `timeout` passed: ask
            Phase::Linger(_) => return None, // the last moved deadline passed
            Phase::Asking(r) => {
                self.shared.jobs.unsubscribe(&r.jid);
                r.running
            }
        };
        if running && !waiting.is_empty() {
            return self.ask(waiting).await.map(Phase::Asking);
        }
        let now = Instant::now();
        let last = waiting
            .iter()
            .filter_map(|id| self.moved.get(id))
            .max()
            .copied()
            .filter(|t| *t > now)?;
        Some(Phase::Linger(last))
    }

    /// Send `saltutil.find_job <jid>` to `ids`.
    async fn ask(&self, mut ids: Vec<String>) -> Option<Round> {
        ids.sort();
        let job = Job {
            fun: "saltutil.find_job".into(),
            arg: vec![Value::from(self.jid.as_str())],
            tgt: Value::Array(ids.iter().map(|i| Value::from(i.as_str())).collect()),
            jid: self.shared.jids.next(),
            ret: String::new(),
            tgt_type: "list".into(),
            user: "root".into(),
            start_event: false,
        };
        let rx = self.shared.jobs.subscribe(&job.jid);
        let (shared, publisher, j) = (self.shared.clone(), self.publisher.clone(), job.clone());
        let targeted = ids.clone();
        let sent = tokio::task::spawn_blocking(move || {
            let _ = shared.jobs.store_job(&j.jid, &j.load(), Some(&targeted));
            publish(&shared, &publisher, &j).map_err(|e| e.to_string())
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        if let Err(e) = sent {
            tracing::warn!("Cannot ask minions about job {}: {e}", self.jid);
            self.shared.jobs.unsubscribe(&job.jid);
            return None;
        }
        tracing::debug!(
            "Job {} not returned by {} minion(s) after the timeout: asked with find_job {}",
            self.jid,
            ids.len(),
            job.jid
        );
        Some(Round {
            jid: job.jid,
            rx,
            until: Instant::now() + self.gather_timeout,
            asked: ids.into_iter().collect(),
            answered: HashSet::new(),
            running: false,
        })
    }

    fn connected(&self) -> HashSet<String> {
        self.shared
            .connected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn missing(&self) -> Missing {
        let connected = self.connected();
        let cache = self.shared.cfg.cachedir.join("minions");
        let mut m = Missing::default();
        for id in self.expected.iter().flatten() {
            if !self.waiting.as_ref().is_some_and(|w| w.contains(id)) {
                continue;
            }
            // Salt's rule (`get_cli_event_returns`): only a minion the data cache knows, when
            // the master knows of connected minions at all.
            let not_connected = !connected.is_empty()
                && !connected.contains(id)
                && !self.ever_answered.contains(id)
                && cache.join(id).join("data.p").is_file();
            if not_connected {
                m.not_connected.push(id.clone());
            } else {
                m.no_response.push(id.clone());
            }
        }
        m
    }
}

async fn recv_round(phase: &mut Phase) -> Option<ReturnEvent> {
    match phase {
        Phase::Asking(r) => r.rx.recv().await,
        Phase::First(_) | Phase::Linger(_) => std::future::pending().await,
    }
}

/// A `find_job` answer that says the job still runs: a non-empty map (Salt skips `{}`, strings
/// and errors).
fn still_running(ret: &Value) -> bool {
    let Some(inner) = salt_compat::map_get(ret, "return") else {
        return false;
    };
    let retcode_ok = salt_compat::map_get(ret, "retcode")
        .and_then(Value::as_i64)
        .is_none_or(|c| c == 0);
    retcode_ok && matches!(inner, Value::Map(m) if !m.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ret(v: Value) -> Value {
        Value::Map(vec![(Value::from("return"), v)])
    }

    /// Returns buffered by the frame sink come out as the frames `write_frame` writes, in
    /// order, only once flushed.
    #[tokio::test]
    async fn frame_sink_batches_whole_frames() {
        let (mut a, mut b) = tokio::io::duplex(1 << 20);
        let mut sink = FrameSink::new(&mut a);
        for i in 0..100 {
            sink.returned(format!("m{i}"), ret(Value::from(i)))
                .await
                .unwrap();
        }
        assert!(!sink.buf.is_empty(), "nothing written before the flush");
        sink.flush().await.unwrap();
        assert!(sink.buf.is_empty());
        drop(a);
        for i in 0..100 {
            let ev: LocalEvent = salt_client::local::read_frame(&mut b)
                .await
                .unwrap()
                .unwrap();
            match ev {
                LocalEvent::Return { id, data } => {
                    assert_eq!(id, format!("m{i}"));
                    assert_eq!(data, serde_json::json!({ "return": i }));
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        let end: Option<LocalEvent> = salt_client::local::read_frame(&mut b).await.unwrap();
        assert!(end.is_none());
    }

    #[test]
    fn running_means_a_non_empty_map() {
        let data = Value::Map(vec![(Value::from("jid"), Value::from("1"))]);
        assert!(still_running(&ret(data)));
        assert!(!still_running(&ret(Value::Map(vec![]))));
        assert!(!still_running(&ret(Value::from(
            "'saltutil.find_job' is not available."
        ))));
        assert!(!still_running(&Value::Map(vec![])));
    }
}
