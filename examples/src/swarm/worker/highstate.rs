//! A swarm minion's highstate (`super::super::highstate`): one request at a time on its own
//! DEALER, each reply opened and checked before the next request is sent.

use std::sync::atomic::Ordering;
use std::time::Instant;

use rmpv::Value;
use salt_minion_core::channel::{ChannelError, open_pillar};
use salt_proto::msg::{FileHash, ServeChunk};

use super::{Worker, new_nonce, now_unix};

/// Where a minion's highstate is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Pillar,
    MasterOpts,
    FileList,
    Hash(usize),
    Serve(usize, u64),
    Return,
}

/// A highstate in progress.
pub(super) struct HsRun {
    jid: String,
    fun: String,
    fun_args: Vec<Value>,
    step: Step,
    nonce: String,
    pub(super) since: Instant,
}

impl HsRun {
    pub(super) fn new(jid: &str, fun: &str, fun_args: Vec<Value>) -> Self {
        Self {
            jid: jid.to_owned(),
            fun: fun.to_owned(),
            fun_args,
            step: Step::Pillar,
            nonce: String::new(),
            since: Instant::now(),
        }
    }
}

fn map(entries: Vec<(&str, Value)>) -> Value {
    Value::Map(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
}

impl Worker {
    /// Start minion `j`'s highstate for the job (its session is open).
    pub(super) fn hs_start(&mut self, j: usize, run: HsRun) {
        let Some(m) = self.minions.get_mut(j) else {
            return;
        };
        if m.hs.is_some() {
            return; // one highstate at a time, as Salt's state queue refuses a second
        }
        m.hs = Some(run);
        let stats = &self.hub.stats;
        let us = self.hub.micros();
        let _ = stats
            .hs_first_us
            .compare_exchange(0, us, Ordering::Relaxed, Ordering::Relaxed);
        stats.hs_started.fetch_add(1, Ordering::Relaxed);
        self.hs_send(j);
    }

    /// Send minion `j`'s current step.
    fn hs_send(&mut self, j: usize) {
        let Some(plan) = self.cfg.highstate.clone() else {
            return;
        };
        let Some(m) = self.minions.get_mut(j) else {
            return;
        };
        let Some(session) = m.creds.as_ref().and_then(|c| c.session.as_ref()) else {
            return;
        };
        let Some(run) = m.hs.as_mut() else { return };
        let file = |k: usize| Value::from(plan.files.get(k).map_or("", String::as_str));
        let load = match run.step {
            Step::Pillar => salt_minion_core::master_link::pillar_request(
                &m.id,
                &map(vec![
                    ("id", m.id.as_str().into()),
                    ("os", "Debian".into()),
                    ("os_family", "Debian".into()),
                    ("kernel", "Linux".into()),
                    ("num_cpus", 2.into()),
                ]),
                Some("base"),
                None,
                Value::Map(Vec::new()),
            ),
            Step::MasterOpts => map(vec![("cmd", "_master_opts".into())]),
            Step::FileList => map(vec![
                ("saltenv", "base".into()),
                ("prefix", "".into()),
                ("cmd", "_file_list".into()),
            ]),
            Step::Hash(k) => map(vec![
                ("path", file(k)),
                ("saltenv", "base".into()),
                ("cmd", "_file_hash".into()),
            ]),
            Step::Serve(k, loc) => map(vec![
                ("path", file(k)),
                ("saltenv", "base".into()),
                ("cmd", "_serve_file".into()),
                ("loc", loc.into()),
            ]),
            Step::Return => map(vec![
                ("cmd", "_return".into()),
                ("id", m.id.as_str().into()),
                ("success", true.into()),
                ("return", plan.ret.clone()),
                ("retcode", 0.into()),
                ("jid", run.jid.as_str().into()),
                ("fun", run.fun.as_str().into()),
                ("fun_args", Value::Array(run.fun_args.clone())),
                ("out", "highstate".into()),
            ]),
        };
        run.nonce = new_nonce();
        run.since = Instant::now();
        let req = session.aes_request(&load, &run.nonce, now_unix());
        let dealer = m.dealer;
        let sent = self.dealers.get(dealer).is_some_and(|d| {
            d.send_multipart([&b""[..], &req[..]], zmq::DONTWAIT)
                .is_ok()
        });
        let stats = &self.hub.stats;
        if sent {
            stats.hs_requests.fetch_add(1, Ordering::Relaxed);
            if run.step == Step::Return {
                stats.returns_sent.fetch_add(1, Ordering::Relaxed);
            }
            self.mark_dirty(dealer);
        } else {
            self.hs_fail(j, "the request could not be queued");
        }
    }

    /// Minion `j`'s highstate gave up (an error reply, a reply that does not open, a
    /// timeout).
    pub(super) fn hs_fail(&mut self, j: usize, why: &str) {
        let Some(m) = self.minions.get_mut(j) else {
            return;
        };
        let Some(run) = m.hs.take() else { return };
        self.hub.stats.hs_failed.fetch_add(1, Ordering::Relaxed);
        if self.failures_logged < 5 {
            self.failures_logged += 1;
            eprintln!(
                "swarm: highstate of {} failed at {:?}: {why}",
                m.id, run.step
            );
        }
    }

    /// A reply on minion `j`'s dealer while its highstate runs; false if it has none.
    pub(super) fn hs_reply(&mut self, j: usize, body: &mut [u8]) -> bool {
        let Some(plan) = self.cfg.highstate.clone() else {
            return false;
        };
        let Some(m) = self.minions.get(j) else {
            return false;
        };
        let Some(run) = m.hs.as_ref() else {
            return false;
        };
        let (Some(creds), Some(ck)) = (m.creds.as_ref(), self.keys.get(m.key)) else {
            return false;
        };
        let Some(session) = creds.session.as_ref() else {
            return false;
        };
        let opened = if run.step == Step::Pillar {
            open_pillar(
                body,
                &run.nonce,
                &ck.key,
                &session.master_pub,
                session.enc_algo,
                session.sig_algo,
            )
        } else {
            session.open_reply(body, &run.nonce)
        };
        let v = match opened {
            Ok(v) => v,
            // A late reply to an earlier request: not this step's.
            Err(ChannelError::Nonce) => return true,
            Err(e) => {
                let why = format!("{e}");
                self.hub
                    .stats
                    .returns_refused
                    .fetch_add(1, Ordering::Relaxed);
                self.hs_fail(j, &why);
                return true;
            }
        };
        let n_files = plan.files.len();
        let next = match run.step {
            Step::Pillar if !v.is_map() => return self.fail_true(j, "pillar is not a map"),
            Step::Pillar => Step::MasterOpts,
            Step::MasterOpts if !v.is_map() => {
                return self.fail_true(j, "_master_opts is not a map");
            }
            Step::MasterOpts => Step::FileList,
            Step::FileList => match v.as_array() {
                Some(l) if !l.is_empty() => Step::Hash(0),
                _ => return self.fail_true(j, "_file_list is empty"),
            },
            Step::Hash(k) => match FileHash::from_value(&v) {
                Some(_) => Step::Serve(k, 0),
                None => {
                    let f = plan.files.get(k).cloned().unwrap_or_default();
                    return self.fail_true(j, &format!("_file_hash: no such file {f}"));
                }
            },
            Step::Serve(k, loc) => match ServeChunk::from_value(&v) {
                Some(c) if !c.data.is_empty() => Step::Serve(k, loc + c.data.len() as u64),
                Some(_) if k + 1 < n_files => Step::Hash(k + 1),
                Some(_) => Step::Return,
                None => return self.fail_true(j, "_serve_file: no data"),
            },
            Step::Return => {
                if let Some(m) = self.minions.get_mut(j) {
                    m.hs = None;
                }
                let stats = &self.hub.stats;
                stats.returns_acked.fetch_add(1, Ordering::Relaxed);
                stats
                    .hs_last_us
                    .fetch_max(self.hub.micros(), Ordering::Relaxed);
                stats.hs_done.fetch_add(1, Ordering::Relaxed);
                return true;
            }
        };
        if let Some(run) = self.minions.get_mut(j).and_then(|m| m.hs.as_mut()) {
            run.step = next;
        }
        self.hs_send(j);
        true
    }

    fn fail_true(&mut self, j: usize, why: &str) -> bool {
        self.hs_fail(j, why);
        true
    }

    /// Fail the highstates whose request went unanswered for the plan's timeout.
    pub(super) fn hs_expire(&mut self, now: Instant) {
        let Some(plan) = self.cfg.highstate.clone() else {
            return;
        };
        let late: Vec<usize> = self
            .minions
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                m.hs.as_ref()
                    .is_some_and(|r| now.duration_since(r.since) >= plan.timeout)
            })
            .map(|(j, _)| j)
            .collect();
        for j in late {
            self.hub.stats.hs_timeouts.fetch_add(1, Ordering::Relaxed);
            self.hs_fail(j, "no reply within the timeout");
        }
    }
}
