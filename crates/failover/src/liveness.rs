//! Liveness of the master in use (alive checks, SUB events) and failback pings.

use super::*;

impl FailoverState {
    pub(super) fn connected_timeout(&mut self, now: Instant) {
        let Phase::Connected(c) = &mut self.phase else {
            return;
        };
        let idx = c.idx;
        if c.live
            .sub_down_since
            .is_some_and(|t| t + self.cfg.sub_reconnect_grace <= now)
        {
            let reason = format!(
                "publish channel down for more than {} seconds",
                secs(self.cfg.sub_reconnect_grace)
            );
            self.lost(idx, &reason, LeaveCause::PublishChannelDown, now);
            return;
        }
        let expired: Vec<CheckId> = c
            .live
            .in_flight
            .iter()
            .filter(|p| p.deadline <= now)
            .map(|p| p.id)
            .collect();
        for id in expired {
            self.alive_failed(idx, id, Failed::TimedOut, now);
            if self.current_master() != Some(idx) {
                return;
            }
        }
        if let Phase::Connected(c) = &mut self.phase
            && c.live.next_check.is_some_and(|t| t <= now)
        {
            self.send_alive_check(now);
        }
        if self.silent_too_long(now) {
            return;
        }
        if let Phase::Connected(c) = &self.phase
            && let Some(f) = &c.failback
            && let Some(p) = f.in_flight
            && p.deadline <= now
        {
            self.failback_answer(0, p.id, false, now);
        }
        if let Phase::Connected(c) = &mut self.phase
            && let Some(f) = &mut c.failback
            && f.in_flight.is_none()
            && f.next_ping.is_some_and(|t| t <= now)
        {
            self.next_check += 1;
            let id = CheckId(self.next_check);
            let timeout = self.cfg.auth_timeout;
            f.next_ping = None;
            f.in_flight = Some(Probe {
                id,
                sent: now,
                deadline: now + timeout,
            });
            self.actions.push_back(Action::SendFailbackPing {
                idx: 0,
                addr: self.cfg.masters[0].clone(),
                id,
                timeout,
            });
        }
    }

    /// Sends an alive check now (periodic, or to confirm a suspicion), and schedules the next
    /// periodic one a period from now.
    pub(super) fn send_alive_check(&mut self, now: Instant) {
        let timing = self.alive_timing();
        let timeout = timing.map_or(self.cfg.auth_timeout, |(_, l)| l);
        let Phase::Connected(c) = &mut self.phase else {
            return;
        };
        c.live.next_check = timing.map(|(p, _)| now + p);
        if c.live.in_flight.len() >= MAX_CHECKS_IN_FLIGHT {
            return;
        }
        self.next_check += 1;
        let id = CheckId(self.next_check);
        c.live.sent_since_heard += 1;
        c.live.first_unanswered.get_or_insert(now);
        c.live.in_flight.push(Probe {
            id,
            sent: now,
            deadline: now + timeout,
        });
        let idx = c.idx;
        self.actions
            .push_back(Action::SendAliveCheck { idx, id, timeout });
    }

    pub(super) fn alive_answer(&mut self, idx: usize, id: CheckId, ok: bool, now: Instant) {
        if !ok {
            self.alive_failed(idx, id, Failed::Refused, now);
            return;
        }
        let Phase::Connected(c) = &mut self.phase else {
            return;
        };
        let Some(probe) = c.live.in_flight.iter().find(|p| p.id == id).copied() else {
            return;
        };
        if c.idx != idx {
            return;
        }
        // Checks sent before this one are moot: the master answered after them. Those sent
        // after it are still to be answered.
        c.live.in_flight.retain(|p| p.sent > probe.sent);
        let was_suspect =
            c.live.sent_since_heard >= CHECKS_TO_LOSE || c.live.sub_down_since.is_some();
        c.live.first_unanswered = c.live.in_flight.iter().map(|p| p.sent).min();
        c.live.sent_since_heard = u32::try_from(c.live.in_flight.len()).unwrap_or(u32::MAX);
        if was_suspect {
            let msg = format!(
                "Master {} answered the alive check; keeping the connection",
                self.labels[idx]
            );
            self.log(Level::DEBUG, msg);
        }
    }

    /// Alive check `id` failed: refused or dropped by the peer (early), or no answer by its
    /// deadline. With the publish channel down, a check sent after it went down that fails
    /// confirms the loss at once; otherwise the silence rule decides.
    pub(super) fn alive_failed(&mut self, idx: usize, id: CheckId, how: Failed, now: Instant) {
        let Phase::Connected(c) = &mut self.phase else {
            return;
        };
        let Some(probe) = c.live.in_flight.iter().find(|p| p.id == id).copied() else {
            return;
        };
        if c.idx != idx {
            return;
        }
        c.live.in_flight.retain(|p| p.id != id);
        if let Some(down) = c.live.sub_down_since
            && probe.sent >= down
        {
            let reason = match how {
                Failed::Refused => "publish channel down and the alive check was refused",
                Failed::TimedOut => "publish channel down and the alive check timed out",
            };
            self.lost(idx, reason, LeaveCause::AliveCheckFailed, now);
            return;
        }
        // With the publish channel up, one failed check is only a suspicion (the periodic
        // checks go on; a refused one is not retried at once, so a refusing port cannot make
        // the minion spin).
        let msg = format!(
            "Master {} did not answer alive check {} ({how:?})",
            self.labels[idx], id.0
        );
        self.log(Level::DEBUG, msg);
        self.silent_too_long(now);
    }

    /// The silence rule: a check unanswered for `silence`, with at least [`CHECKS_TO_LOSE`]
    /// unanswered. Declares the master lost and returns true when it applies.
    pub(super) fn silent_too_long(&mut self, now: Instant) -> bool {
        let Some((_, silence)) = self.alive_timing() else {
            return false;
        };
        let Phase::Connected(c) = &self.phase else {
            return false;
        };
        let Some(first) = c.live.first_unanswered else {
            return false;
        };
        if c.live.sent_since_heard < CHECKS_TO_LOSE || now < first + silence {
            return false;
        }
        let (idx, n) = (c.idx, c.live.sent_since_heard);
        let reason = format!(
            "no answer to {n} alive checks in {} seconds",
            secs(now.saturating_duration_since(first))
        );
        self.lost(idx, &reason, LeaveCause::AliveCheckFailed, now);
        true
    }

    pub(super) fn sub_disconnected(&mut self, idx: usize, now: Instant) {
        let Phase::Connected(c) = &mut self.phase else {
            return;
        };
        if c.idx != idx {
            return;
        }
        c.live.sub_down_since.get_or_insert(now);
        let msg = format!(
            "Publish channel to master {} disconnected; confirming with an alive check",
            self.labels[idx]
        );
        self.log(Level::DEBUG, msg);
        self.send_alive_check(now);
    }

    pub(super) fn failback_answer(&mut self, idx: usize, id: CheckId, ok: bool, now: Instant) {
        let interval = self.failback_delay();
        let Phase::Connected(c) = &mut self.phase else {
            return;
        };
        let cur = c.idx;
        let Some(f) = &mut c.failback else {
            return;
        };
        let Some(probe) = f.in_flight else {
            return;
        };
        if idx != 0 || probe.id != id {
            return;
        }
        f.in_flight = None;
        if !ok {
            f.next_ping = Some((probe.sent + interval).max(now));
            return;
        }
        let msg = format!(
            "Preferred master {} answered the failback ping; failing back from master {}",
            self.labels[0], self.labels[cur]
        );
        self.log(Level::INFO, msg);
        self.actions.push_back(Action::Disconnect { idx: cur });
        self.count_leave(LeaveCause::Failback);
        self.failing_back = true;
        self.order = (0..self.cfg.masters.len()).collect();
        if self.cfg.random_master {
            self.shuffle_order(None);
        }
        self.start_round(now);
    }
}
