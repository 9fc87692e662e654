//! What the failover state machine asks for (sign-ins, alive checks, failback pings, exits)
//! and what the spawned I/O reports back ([`Ev`]), fed to the state machine.

use super::*;

impl Driver {
    pub(super) fn do_action(&mut self, a: Action) {
        match a {
            Action::SignIn { idx, addr, timeout } => {
                self.epoch += 1;
                self.signing_in = Some((idx, self.epoch));
                self.spawn_auth(idx, self.epoch, addr, timeout, Purpose::SignIn);
            }
            Action::Subscribe { idx, .. } => self.subscribe(idx),
            Action::Connected { idx, .. } => {
                if let Some(m) = &self.s.metrics {
                    let all: Vec<String> = self
                        .st
                        .masters()
                        .iter()
                        .map(|a| format!("{}:{}", a.host, a.port))
                        .collect();
                    if let Some(cur) = all.get(idx) {
                        m.set_master(cur, &all);
                    }
                    m.sync_failovers(&self.st.leave_counts());
                }
                self.connected(idx)
            }
            Action::Disconnect { idx } => {
                if let Some(m) = &self.s.metrics {
                    m.sync_failovers(&self.st.leave_counts());
                }
                if self.signing_in.is_some_and(|(i, _)| i == idx) {
                    self.signing_in = None;
                }
                if self.conn.as_ref().is_some_and(|c| c.idx == idx) {
                    self.close();
                }
                self.epoch += 1;
                self.refreshing = false;
                self.rekey.cancel();
            }
            Action::SendAliveCheck { idx, id, timeout } => {
                let Some(addr) = self.addr(idx) else { return };
                let uri = match &self.conn {
                    Some(c) if c.idx == idx => net::tcp_uri(&c.ip, c.port),
                    _ => net::tcp_uri(&addr.host, addr.port),
                };
                let tx = self.ev_tx.clone();
                let mid = self.s.id.clone();
                let ka = self.s.keepalive;
                tokio::spawn(async move {
                    let t0 = tokio::time::Instant::now();
                    let Some(ok) = ping(&mid, &uri, timeout, ka).await else {
                        return; // timed out: the state machine times checks out itself
                    };
                    let rtt = t0.elapsed();
                    let _ = tx.send(Ev::Alive { idx, id, ok, rtt }).await;
                });
            }
            Action::SendFailbackPing {
                idx,
                addr,
                id,
                timeout,
            } => {
                let tx = self.ev_tx.clone();
                let mid = self.s.id.clone();
                let ka = self.s.keepalive;
                tokio::spawn(async move {
                    let uri = net::tcp_uri(&addr.host, addr.port);
                    let ok = ping(&mid, &uri, timeout, ka).await.unwrap_or(false);
                    let _ = tx.send(Ev::Failback { idx, id, ok }).await;
                });
            }
            Action::Log { level, message } => log_at(level, &message),
            Action::Exit { code, reason } => {
                error!("{reason}");
                self.exit = Some(code);
            }
        }
    }

    pub(super) fn handle_ev(&mut self, ev: Ev) {
        let now = now_std();
        match ev {
            Ev::Dns { idx, epoch } => {
                if self.signing_in == Some((idx, epoch)) {
                    self.st.handle(Event::DnsFailed(idx), now);
                }
            }
            Ev::Auth {
                idx,
                epoch,
                purpose,
                pending,
                ip,
                result,
            } => self.auth_reply(idx, epoch, purpose, &pending, ip, result),
            Ev::Alive { idx, id, ok, rtt } => {
                if ok && let Some(m) = &self.s.metrics {
                    m.alive(rtt);
                }
                let e = if ok {
                    Event::AliveCheckOk { idx, id }
                } else {
                    Event::AliveCheckFailed { idx, id }
                };
                self.st.handle(e, now);
            }
            Ev::Failback { idx, id, ok } => {
                let e = if ok {
                    Event::FailbackPingOk { idx, id }
                } else {
                    Event::FailbackPingFailed { idx, id }
                };
                self.st.handle(e, now);
            }
            Ev::JobDone(load) => {
                if self.idle() {
                    self.trim_at = Some(now_std() + crate::pageout::IDLE_TRIM_AFTER);
                }
                if let Some(load) = load {
                    self.send_request(load, true);
                }
            }
            Ev::NeedsReauth(load) => {
                self.retry_requests.push(load);
                self.start_refresh();
            }
            // Signed in elsewhere since that return failed: send what is kept now.
            Ev::Kept(epoch) => {
                if let Some(idx) = self
                    .conn
                    .as_ref()
                    .filter(|c| c.epoch != epoch)
                    .map(|c| c.idx)
                {
                    self.connected_resend(idx);
                }
            }
        }
    }
}
