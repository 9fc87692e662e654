//! A swarm minion's side of a publish: decrypt, match, return `True` (Salt's minion order:
//! a stale key signs in again first, and the publishes held meanwhile are decoded after).

use std::cmp::Reverse;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use rmpv::Value;
use salt_compat::map_get;
use salt_minion_core::channel::Session;
use salt_minion_core::job::Job;
use salt_minion_core::matcher::fnmatch_to_regex;
use salt_proto::ValueExt;

use super::super::highstate::is_highstate;
use super::super::keys::CachedKey;
use super::super::signin::{self, SessionKey};
use super::highstate::HsRun;
use super::{Creds, MAX_HELD, Phase, Worker, new_nonce, now_unix};

impl Worker {
    pub(super) fn drain_sub(&mut self, j: usize) {
        while let Some(Ok(frames)) = self.subs.get(j).map(|s| s.recv_multipart(zmq::DONTWAIT)) {
            self.on_publish(j, &frames);
        }
    }

    pub(super) fn on_publish(&mut self, j: usize, frames: &[Vec<u8>]) {
        let stats = &self.hub.stats;
        let Some(m) = self.minions.get_mut(j) else {
            return;
        };
        let payload = match frames {
            [one] => one,
            [_topic, p] => p,
            _ => return,
        };
        let Ok(v) = salt_proto::decode(payload) else {
            return;
        };
        if map_get(&v, "enc").and_then(Value::as_str) != Some("aes") {
            return;
        }
        let Some(load) = map_get(&v, "load").and_then(ValueExt::as_bytes) else {
            return;
        };
        if !matches!(m.phase, Phase::Ready) {
            // Signing in again after a stale key: keep it for after (never signed in: drop).
            if m.signed_once && m.held.len() < MAX_HELD {
                m.held.push(frames.to_vec());
            }
            return;
        }
        let Some(creds) = m.creds.as_mut() else {
            return;
        };
        let body = match creds.aes.loads(load, None) {
            Ok(b) => b,
            Err(_) => {
                // Stale publish key (the master rotated): re-auth, then decode (as Salt).
                stats.pub_decrypt_failures.fetch_add(1, Ordering::Relaxed);
                m.held.push(frames.to_vec());
                m.phase = Phase::Queued;
                let now = Instant::now();
                match m.rekey.handle_stale_key(now) {
                    Some(d) if !d.is_zero() => self.delayed.push(Reverse((now + d, j))),
                    _ => {
                        m.rekey.cancel();
                        self.queue.push_front((now, j));
                    }
                }
                return;
            }
        };
        stats.pubs_decrypted.fetch_add(1, Ordering::Relaxed);
        let Ok(mut job) = salt_proto::decode(&body) else {
            return;
        };
        if let Value::Map(entries) = &mut job
            && let Some(pos) = entries
                .iter()
                .position(|(k, _)| k.as_str() == Some("serial"))
        {
            let (_, s) = entries.remove(pos);
            let s = s.as_u64().unwrap_or(0);
            if s <= m.serial {
                return;
            }
            m.serial = s;
        }
        let Some(job) = salt_proto::msg::JobLoad::from_value(&job)
            .ok()
            .and_then(|j| Job::from_load(j).ok())
        else {
            return;
        };
        if !m.jids.insert(&job.jid) {
            return;
        }
        // Globs (the common case) compile once per pattern per thread, not per minion.
        let hit = match (job.tgt_type.as_deref().unwrap_or("glob"), job.tgt.as_str()) {
            ("glob", Some(pat)) => {
                if self.glob.as_ref().is_none_or(|(p, _)| p != pat) {
                    self.glob = regex::Regex::new(&fnmatch_to_regex(pat))
                        .ok()
                        .map(|re| (pat.to_owned(), re));
                }
                self.glob.as_ref().is_some_and(|(_, re)| re.is_match(&m.id))
            }
            _ => job.targets(&m.id, &Value::Map(Vec::new()), None),
        };
        if !hit {
            return;
        }
        stats.jobs_matched.fetch_add(1, Ordering::Relaxed);
        if self
            .hub
            .jids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(job.jid.clone())
        {
            stats.jobs_seen.fetch_add(1, Ordering::Relaxed);
        }
        let Some(ck) = self.keys.get(m.key) else {
            return;
        };
        if creds.session.is_none() {
            let mut sk = creds.session_key.clone();
            creds.session = open_session(&m.id, ck, &mut sk, creds, &self.shared);
            creds.session_key = sk;
        }
        let Some(session) = &creds.session else {
            return;
        };
        if self.cfg.highstate.is_some() && is_highstate(&job.fun) {
            let run = HsRun::new(&job.jid, &job.fun, job.arg.clone());
            self.hs_start(j, run);
            return;
        }
        let ret = Value::Map(vec![
            ("cmd".into(), "_return".into()),
            ("id".into(), m.id.as_str().into()),
            ("success".into(), true.into()),
            ("return".into(), self.ret_value.clone()),
            ("retcode".into(), 0.into()),
            ("jid".into(), job.jid.as_str().into()),
            ("fun".into(), job.fun.as_str().into()),
            ("fun_args".into(), Value::Array(job.arg.clone())),
        ]);
        let req = session.aes_request(&ret, &new_nonce(), now_unix());
        let dealer = m.dealer;
        if let Some(d) = self.dealers.get(dealer)
            && d.send_multipart([&b""[..], &req[..]], zmq::DONTWAIT)
                .is_ok()
        {
            stats.returns_sent.fetch_add(1, Ordering::Relaxed);
        }
        self.mark_dirty(dealer);
    }
}

/// Build the request session (decrypting the session key if still encrypted).
pub(super) fn open_session(
    id: &str,
    ck: &CachedKey,
    sk: &mut SessionKey,
    creds: &Creds,
    shared: &signin::Shared,
) -> Option<Session> {
    let session = sk.open(&ck.key, shared.enc)?;
    Some(Session {
        id: id.to_owned(),
        aes: creds.aes.clone(),
        session,
        master_pub: creds.master_pub.clone(),
        tok: Arc::new(ck.tok.clone()),
        enc_algo: shared.enc,
        sig_algo: shared.sig,
        signer: None,
    })
}
