//! The session with the master in use: the SUB socket, publishes, AES requests, pillar,
//! and the clear ping used by alive checks and failback.

use salt_proto::msg::{EventBody, MinionEvent, Ping, ReturnLoad};

use super::*;

impl Driver {
    pub(super) fn subscribe(&mut self, idx: usize) {
        let heartbeat = self.st.sub_heartbeat();
        let Some(c) = self.conn.as_mut().filter(|c| c.idx == idx) else {
            return;
        };
        // Salt: a configured publish_port other than 4506 wins over the reply's.
        let port = match self.s.publish_port {
            Some(p) if p != 4506 => p,
            _ => c.publish_port,
        };
        let topics = if self.s.zmq_filtering {
            vec![b"broadcast".to_vec(), self.topic.as_bytes().to_vec()]
        } else {
            vec![Vec::new()]
        };
        let opts = SubOptions {
            uri: net::tcp_uri(&c.ip, port),
            topics,
            heartbeat,
            identity: self.s.id.as_bytes().to_vec(),
            keepalive: self.s.keepalive,
        };
        debug!(
            "Connecting the Minion to the Master publish port, using the URI: {}",
            opts.uri
        );
        match net::spawn_sub(opts, c.epoch, self.sub_tx.clone()) {
            Ok(h) => c.sub = Some(h),
            Err(e) => {
                error!("Unable to connect to the master publish port: {e}");
                self.st.handle(Event::SubDisconnected(idx), now_std());
            }
        }
    }

    pub(super) fn connected_resend(&mut self, idx: usize) {
        if self.conn.as_ref().is_some_and(|c| c.idx == idx) {
            for load in self.kept.take() {
                self.send_request(load, true);
            }
        }
    }

    pub(super) fn connected(&mut self, idx: usize) {
        self.connected_resend(idx);
        let Some(c) = self.conn.as_ref().filter(|c| c.idx == idx) else {
            return;
        };
        let session = c.session.clone();
        let req = c.req.clone();
        let s = self.s.clone();
        let key = self.key.clone();
        let tx = self.ev_tx.clone();
        tokio::spawn(async move {
            if s.request_pillar {
                fetch_pillar(&s, &key, &session, &req).await;
            }
            let data = format!(
                "Minion {} started at {}",
                s.id,
                salt_compat::time::asctime(unix_now())
            );
            let mut tags = Vec::new();
            if s.legacy_start_event {
                tags.push("minion_start".to_owned());
            }
            tags.push(format!("salt/minion/{}/start", s.id));
            for tag in tags {
                let load = MinionEvent {
                    id: s.id.clone(),
                    pretag: None,
                    tok: Some(session.tok.as_ref().clone()),
                    body: EventBody::Single {
                        tag,
                        data: data.as_str().into(),
                    },
                    grains: None,
                    extra: Vec::new(),
                }
                .to_value();
                if let Err(RequestError::Channel(
                    ChannelError::Decrypt | ChannelError::MasterError(_),
                )) = send_aes(&session, &req, &load, s.return_timeout, s.return_tries).await
                {
                    let _ = tx.send(Ev::NeedsReauth(load)).await;
                }
            }
            info!("Minion is ready to receive requests!");
            // Once per process: the start-up's code pages go back to the kernel.
            crate::pageout::after_first_sign_in();
        });
    }

    pub(super) fn handle_sub(&mut self, epoch: u64, note: SubNote) {
        let Some(idx) = self
            .conn
            .as_ref()
            .filter(|c| c.epoch == epoch)
            .map(|c| c.idx)
        else {
            return;
        };
        match note {
            SubNote::Message(frames) => self.handle_publish(&frames, true),
            SubNote::Connected => self.st.handle(Event::SubConnected(idx), now_std()),
            SubNote::Disconnected => self.st.handle(Event::SubDisconnected(idx), now_std()),
        }
    }

    pub(super) fn handle_publish(&mut self, frames: &[Vec<u8>], may_retry: bool) {
        let Some(c) = &self.conn else { return };
        let load = match c.session.open_publish(
            frames,
            &self.topic,
            self.s.sign_pub_messages,
            &mut self.serial,
        ) {
            Ok(Some(load)) => load,
            Ok(None) => return,
            Err(ChannelError::Decrypt) if may_retry => {
                if self.retry_publishes.len() < MAX_HELD_PUBLISHES {
                    self.retry_publishes.push(frames.to_vec());
                }
                if !self.refreshing
                    && let Some(delay) = self.rekey.handle_stale_key(now_std())
                {
                    debug!(
                        "Publish did not decrypt: the master AES key may have rotated; \
                         re-authenticating in {:.3}s",
                        delay.as_secs_f64()
                    );
                }
                return;
            }
            Err(ChannelError::Replay(s)) => {
                error!(
                    critical = true,
                    "A message with an invalid serial was received.\nthis serial: {s}\nlast serial: {}\nThe minion will not honor this request.",
                    self.serial.last()
                );
                return;
            }
            Err(e) => {
                debug!("Dropping publish: {e}");
                return;
            }
        };
        let job = match Job::from_load(load) {
            Ok(j) => j,
            Err(e) => {
                debug!("Ignoring publish: {e}");
                return;
            }
        };
        let pillar = self
            .s
            .pillar
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if !job.targets(&self.s.id, &self.s.grains, pillar.as_ref()) {
            debug!("Publish target does not match this minion");
            return;
        }
        if !self.jids.insert(&job.jid) {
            debug!("jid {} already executed, ignoring", job.jid);
            return;
        }
        info!(
            "User {} Executing command {} with jid {}",
            job.user
                .as_ref()
                .map_or_else(|| "UNKNOWN".to_owned(), salt_compat::py_str),
            job.fun,
            job.jid
        );
        // Salt's minion with a returner it cannot load (`salt --return`): the return goes to
        // the master only, and the minion says so. salt-rs minions have no returners.
        for r in job.returners() {
            error!("Returner {r}.returner could not be loaded: '{r}.returner' is not available.");
        }
        let tok = self.tok.clone();
        if let Some(ev) = crate::job::start_event(&job, &self.s.id, &tok) {
            self.send_request(ev, true);
        }
        let mut ctx = ExecContext::new(&self.s.id, self.s.grains.clone());
        ctx.pillar = self.s.pillar.clone();
        ctx.cachedir = self.s.cachedir.clone();
        ctx.opts = self.s.opts.clone();
        ctx.master = self.conn.as_ref().map(|c| crate::master_link::MasterLink {
            session: c.session.clone(),
            req: c.req.clone(),
            key: Arc::new(self.key.clone()),
            enc_algo: self.s.auth.enc_algo,
            sig_algo: self.s.auth.sig_algo,
            timeout: self.s.return_timeout.max(Duration::from_secs(30)),
            tries: self.s.return_tries,
        });
        let tx = self.ev_tx.clone();
        let token = self.job_tokens.clone();
        self.trim_at = None;
        tokio::spawn(async move {
            let ret = crate::job::run(&job, &ctx).await;
            drop(token);
            let _ = tx.send(Ev::JobDone(ret)).await;
        });
    }

    /// Send an AES request (a return or an event) to the current master.
    pub(super) fn send_request(&mut self, load: Value, may_retry: bool) {
        let Some(c) = &self.conn else {
            if !self.kept.keep(load) {
                warn!("Not connected to a master: dropping an event");
            }
            return;
        };
        let session = c.session.clone();
        let req = c.req.clone();
        let (timeout, tries) = (self.s.return_timeout, self.s.return_tries);
        let tx = self.ev_tx.clone();
        let (kept, epoch) = (self.kept.clone(), c.epoch);
        tokio::spawn(async move {
            let jid = ReturnLoad::ids(&load).ok().map(|r| r.jid.to_owned());
            if let Some(j) = &jid {
                info!("Returning information for job: {j}");
            }
            match send_aes(&session, &req, &load, timeout, tries).await {
                Ok(_) => kept.acked(&load),
                Err(RequestError::Channel(
                    ChannelError::Decrypt | ChannelError::MasterError(_),
                )) if may_retry => {
                    let _ = tx.send(Ev::NeedsReauth(load)).await;
                }
                Err(RequestError::Timeout) => {
                    warn!(
                        "The minion failed to return the job information for job {}. This is often due to the master being shut down or overloaded. If the master is running, consider increasing the worker_threads value.",
                        jid.unwrap_or_default()
                    );
                    if kept.keep(load) {
                        let _ = tx.send(Ev::Kept(epoch)).await;
                    }
                }
                Err(e) => {
                    error!("Request to the master failed: {e}");
                    if kept.keep(load) {
                        let _ = tx.send(Ev::Kept(epoch)).await;
                    }
                }
            }
        });
    }
}

/// Failure of an AES request.
#[derive(Debug, thiserror::Error)]
pub(super) enum RequestError {
    #[error("request timed out")]
    Timeout,
    #[error("{0}")]
    Net(NetError),
    #[error("{0}")]
    Channel(ChannelError),
}

/// Send one AES request with `tries` attempts (new nonce each), return the opened reply.
pub(super) async fn send_aes(
    session: &Session,
    req: &salt_transport::ReqClient,
    load: &Value,
    timeout: Duration,
    tries: u32,
) -> Result<Value, RequestError> {
    let mut last = RequestError::Timeout;
    for _ in 0..tries.max(1) {
        let n = nonce();
        let body = session.aes_request(load, &n, unix_now());
        match net::request(req, body, timeout).await {
            Ok(mut reply) => {
                return session
                    .open_reply(&mut reply, &n)
                    .map_err(RequestError::Channel);
            }
            Err(NetError::Timeout) => last = RequestError::Timeout,
            Err(e) => last = RequestError::Net(e),
        }
    }
    Err(last)
}

pub(super) async fn fetch_pillar(
    s: &MinionSettings,
    key: &PrivateKey,
    session: &Session,
    req: &salt_transport::ReqClient,
) {
    let load = crate::master_link::pillar_request(&s.id, &s.grains, None, None, Value::Map(vec![]));
    let n = nonce();
    let body = session.aes_request(&load, &n, unix_now());
    match net::request(req, body, s.return_timeout).await {
        Ok(reply) => match open_pillar(
            &reply,
            &n,
            key,
            &session.master_pub,
            s.auth.enc_algo,
            s.auth.sig_algo,
        ) {
            Ok(p) => {
                debug!(
                    "Received pillar with {} top-level keys",
                    p.as_map().map_or(0, Vec::len)
                );
                crate::matcher::refuse_resources(&p);
                *s.pillar.write().unwrap_or_else(|e| e.into_inner()) = Some(p);
            }
            Err(e) => warn!("Pillar request failed: {e}"),
        },
        Err(e) => warn!("Pillar request failed: {e}"),
    }
}

/// Salt's clear `ping` (alive check / `status.ping_master`): any reply counts. `None` when
/// it timed out, `Some(false)` when it failed early (refused, dropped, socket error).
pub(super) async fn ping(
    id: &str,
    uri: &str,
    timeout: Duration,
    keepalive: salt_transport::Keepalive,
) -> Option<bool> {
    let body = clear_request(Ping::default().to_value());
    match net::request_once(id, uri, body, timeout, true, keepalive).await {
        Ok(_) => Some(true),
        Err(NetError::Timeout) => None,
        Err(_) => Some(false),
    }
}

pub(super) fn log_at(level: tracing::Level, message: &str) {
    match level {
        tracing::Level::ERROR => error!("{message}"),
        tracing::Level::WARN => warn!("{message}"),
        tracing::Level::INFO => info!("{message}"),
        _ => debug!("{message}"),
    }
}
