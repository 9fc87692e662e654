//! The sign-in flow: rounds over the master list, acceptance waits, rejections, backoff.

use super::*;

impl FailoverState {
    pub(super) fn start_round(&mut self, now: Instant) {
        self.pos = 0;
        self.tally = Tally::default();
        let idx = self.order[0];
        self.sign_in(idx, 1, now);
    }

    pub(super) fn sign_in(&mut self, idx: usize, attempt: u32, now: Instant) {
        if let Some(prev) = self.last_master
            && prev != idx
        {
            let msg = format!(
                "Master ip address changed from {} to {}",
                self.labels[prev], self.labels[idx]
            );
            self.log(Level::WARN, msg);
        }
        self.last_master = Some(idx);
        let msg = format!(
            "Attempting to authenticate with the Salt Master at {}",
            self.labels[idx]
        );
        self.log(Level::DEBUG, msg);
        self.actions.push_back(Action::SignIn {
            idx,
            addr: self.cfg.masters[idx].clone(),
            timeout: self.cfg.auth_timeout,
        });
        self.phase = Phase::Connecting(Connecting {
            idx,
            attempt,
            deadline: now + self.cfg.auth_timeout,
        });
    }

    pub(super) fn accepted(&mut self, idx: usize, now: Instant) {
        self.log(
            Level::INFO,
            "Authentication with master successful!".to_owned(),
        );
        if self.lost_single {
            self.lost_single = false;
            let msg = format!("Connection to master {} re-established", self.labels[idx]);
            self.log(Level::INFO, msg);
        }
        if std::mem::take(&mut self.failing_back) {
            if idx == 0 {
                self.failback_misses = 0;
            } else {
                self.failback_misses += 1;
                let msg = format!(
                    "Failback to master {} did not succeed; next failback ping in {} seconds",
                    self.labels[0],
                    secs(self.failback_delay())
                );
                self.log(Level::INFO, msg);
            }
        }
        self.failed_rounds = 0;
        self.pending_wait = self.cfg.acceptance_wait_time.max(MIN_RETRY_WAIT);
        let addr = self.cfg.masters[idx].clone();
        self.actions.push_back(Action::Subscribe {
            idx,
            addr: addr.clone(),
        });
        self.actions.push_back(Action::Connected { idx, addr });
        let failback = (self.cfg.failback && idx != 0).then(|| Failback {
            next_ping: Some(now + self.failback_delay()),
            in_flight: None,
        });
        self.phase = Phase::Connected(Connected {
            idx,
            since: now,
            live: Liveness {
                next_check: self.alive_timing().map(|(p, _)| now + p),
                in_flight: Vec::new(),
                first_unanswered: None,
                sent_since_heard: 0,
                sub_down_since: None,
            },
            failback,
        });
    }

    /// Key pending (or rejected with `rejected_retry` in `str` mode): keep the master, sign
    /// in again after the (doubling) acceptance wait.
    pub(super) fn pending(&mut self, idx: usize, now: Instant) {
        let wait = self.pending_wait;
        let msg = format!(
            "The Salt Master has cached the public key for this node, this salt minion will \
             wait for {} seconds before attempting to re-authenticate",
            secs(wait)
        );
        self.log(Level::ERROR, msg);
        self.wait_for_acceptance(idx, wait, now);
    }

    pub(super) fn wait_for_acceptance(&mut self, idx: usize, wait: Duration, now: Instant) {
        self.pending_wait = (wait * 2).min(self.wait_cap());
        self.phase = Phase::AwaitingAcceptance(AwaitingAcceptance {
            idx,
            retry_at: now + wait,
        });
    }

    pub(super) fn rejected(&mut self, idx: usize, now: Instant) {
        if !self.cfg.rejected_retry {
            // Salt logs this at CRITICAL; `tracing` stops at ERROR.
            self.log(
                Level::ERROR,
                "The Salt Master has rejected this minion's public key!\nTo repair this \
                 issue, delete the public key for this minion on the Salt Master and restart \
                 this minion.\nOr restart the Salt Master in open mode to clean out the keys. \
                 The Salt Minion will now exit."
                    .to_owned(),
            );
            self.actions.push_back(Action::Disconnect { idx });
            // Salt sleeps 10-20 s so that a service manager restarting it does not hammer
            // the master.
            let delay = Duration::from_secs(self.rng.gen_range(10..=20));
            self.phase = Phase::Exiting(Exiting {
                at: now + delay,
                code: EXIT_REJECTED,
                reason: format!("rejected by master {}", self.labels[idx]),
            });
            return;
        }
        self.log(
            Level::ERROR,
            "The Salt Master has rejected this minion's public key.\nTo repair this issue, \
             delete the public key for this minion on the Salt Master.\nThe Salt Minion will \
             attempt to re-authenicate."
                .to_owned(),
        );
        if self.cfg.master_type == MasterType::Failover {
            // Divergence from Salt (which retries the same master forever): another master
            // may well accept us, so a rejection moves on like "full".
            self.sign_in_failed(idx, Failure::Rejected, now);
        } else {
            let wait = self.pending_wait;
            self.wait_for_acceptance(idx, wait, now);
        }
    }

    pub(super) fn sign_in_failed(&mut self, idx: usize, failure: Failure, now: Instant) {
        let attempt = match &self.phase {
            Phase::Connecting(c) => c.attempt,
            _ => 1,
        };
        self.actions.push_back(Action::Disconnect { idx });
        let label = self.labels[idx].clone();
        if self.cfg.master_type != MasterType::Failover {
            self.single_master_failed(idx, attempt, failure, now);
            return;
        }
        let msg = match failure {
            Failure::Timeout | Failure::Error => {
                self.tally.unreachable += 1;
                format!("Master {label} could not be reached, trying next master (if any)")
            }
            Failure::Full => {
                self.tally.full += 1;
                format!("Master {label} is full (max_minions reached), trying next master (if any)")
            }
            Failure::Rejected => {
                self.tally.rejected += 1;
                format!("Master {label} rejected this minion, trying next master (if any)")
            }
            Failure::Dns => {
                self.tally.unresolvable += 1;
                format!("Master {label} could not be resolved, trying next master (if any)")
            }
        };
        self.log(Level::INFO, msg);
        self.pos += 1;
        if let Some(&next) = self.order.get(self.pos) {
            self.sign_in(next, 1, now);
        } else {
            self.round_failed(now);
        }
    }

    pub(super) fn single_master_failed(
        &mut self,
        idx: usize,
        attempt: u32,
        failure: Failure,
        now: Instant,
    ) {
        let label = self.labels[idx].clone();
        match failure {
            Failure::Timeout | Failure::Error if attempt < self.cfg.auth_tries => {
                // Salt's line, with the port and why: ZeroMQ retries a refused connection
                // quietly, so "refused" and "down" show as no answer in time.
                let why = match failure {
                    Failure::Timeout => format!(
                        "no answer within {}s: is the master running and port {} reachable?",
                        secs(self.cfg.auth_timeout),
                        self.cfg.masters[idx].port
                    ),
                    _ => "the request failed (the error is logged above)".to_owned(),
                };
                let msg = format!(
                    "Attempt to authenticate with the salt master {} failed (try {attempt} \
                     of {}): {why}; retrying",
                    self.cfg.masters[idx], self.cfg.auth_tries
                );
                self.log(Level::WARN, msg);
                self.sign_in(idx, attempt + 1, now);
            }
            Failure::Dns => match self.cfg.retry_dns {
                Some(wait) if !wait.is_zero() => {
                    let wait = wait.max(MIN_RETRY_WAIT);
                    let msg = format!(
                        "Master hostname: '{label}' not found or not responsive. Retrying in \
                         {} seconds",
                        secs(wait)
                    );
                    self.log(Level::ERROR, msg);
                    self.phase = Phase::BackingOff(BackingOff {
                        until: now + wait,
                        resume: Resume::Retry(idx),
                    });
                }
                _ => {
                    let msg = format!(
                        "Master address: '{label}' could not be resolved. Invalid or \
                         unresolveable address. Set 'master' value in minion config."
                    );
                    self.log(Level::ERROR, msg.clone());
                    self.actions.push_back(Action::Exit {
                        code: EXIT_UNRESOLVABLE,
                        reason: msg,
                    });
                    self.phase = Phase::Stopped;
                }
            },
            _ => {
                let what = match failure {
                    Failure::Full => "is full (max_minions reached)",
                    _ => "could not be reached",
                };
                self.failed_rounds += 1;
                let wait = self.round_backoff();
                let msg = format!("Master {label} {what}; retrying in {} seconds", secs(wait));
                self.log(Level::WARN, msg);
                self.master_tries_exhausted();
                self.phase = Phase::BackingOff(BackingOff {
                    until: now + wait,
                    resume: Resume::Retry(idx),
                });
            }
        }
    }

    /// Every master of the round failed: say so clearly and back off.
    pub(super) fn round_failed(&mut self, now: Instant) {
        self.failed_rounds += 1;
        let wait = self.round_backoff();
        let t = self.tally;
        let msg = format!(
            "No master could be reached or all masters are full or rejected us \
             (unreachable: {}, full: {}, rejected: {}, unresolvable: {}); retrying in {} seconds",
            t.unreachable,
            t.full,
            t.rejected,
            t.unresolvable,
            secs(wait)
        );
        self.log(Level::WARN, msg);
        self.master_tries_exhausted();
        self.phase = Phase::BackingOff(BackingOff {
            until: now + wait,
            resume: Resume::NewRound,
        });
    }

    /// Logs Salt's error each time `master_tries` rounds have failed in a row.
    pub(super) fn master_tries_exhausted(&mut self) {
        if let Ok(tries) = u32::try_from(self.cfg.master_tries)
            && tries > 0
            && self.failed_rounds.is_multiple_of(tries)
        {
            self.log(
                Level::ERROR,
                "No master could be reached or all masters denied the minion's connection \
                 attempt."
                    .to_owned(),
            );
        }
    }

    /// `acceptance_wait_time * 2^(failed_rounds - 1)`, capped, at least [`MIN_RETRY_WAIT`].
    pub(super) fn round_backoff(&self) -> Duration {
        let base = self.cfg.acceptance_wait_time.max(MIN_RETRY_WAIT);
        let exp = self.failed_rounds.saturating_sub(1).min(16);
        base.saturating_mul(1 << exp).min(self.wait_cap())
    }

    pub(super) fn wait_cap(&self) -> Duration {
        self.cfg
            .acceptance_wait_time_max
            .max(self.cfg.acceptance_wait_time)
            .max(MIN_RETRY_WAIT)
    }

    /// `master_failback_interval`, doubled for each failback in a row that did not stick.
    pub(super) fn failback_delay(&self) -> Duration {
        let base = self
            .cfg
            .failback_interval
            .unwrap_or(DEFAULT_FAILBACK_INTERVAL)
            .max(MIN_RETRY_WAIT);
        base.saturating_mul(1 << self.failback_misses.min(4))
    }

    // === Connected: liveness and failback ===
}
