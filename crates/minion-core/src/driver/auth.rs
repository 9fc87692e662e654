//! Sign-ins: the request sent, the replies (accepted, pending, rejected), key refreshes, and
//! their log lines.

use super::*;

impl Driver {
    pub(super) fn spawn_auth(
        &self,
        idx: usize,
        epoch: u64,
        addr: MasterAddr,
        timeout: Duration,
        purpose: Purpose,
    ) {
        let (req, pending) = self.auth.build_request(&nonce());
        let body = salt_proto::encode(&req);
        let tx = self.ev_tx.clone();
        let mid = self.s.id.clone();
        let ka = self.s.keepalive;
        // In failover mode a master whose port is closed is skipped at once (the next one
        // may be up); with one master (`str`), a sign-in sent before the master is up waits
        // for it, as Salt's does, instead of failing into a backoff.
        let fail_fast = self.s.failover.master_type == salt_failover::MasterType::Failover;
        tokio::spawn(async move {
            let ip = match tokio::net::lookup_host((addr.host.as_str(), addr.port)).await {
                Ok(mut it) => match it.next() {
                    Some(sa) => sa.ip().to_string(),
                    None => {
                        let _ = tx.send(Ev::Dns { idx, epoch }).await;
                        return;
                    }
                },
                Err(_) => {
                    let _ = tx.send(Ev::Dns { idx, epoch }).await;
                    return;
                }
            };
            let uri = net::tcp_uri(&ip, addr.port);
            let result = net::request_once(&mid, &uri, body, timeout, fail_fast, ka).await;
            let _ = tx
                .send(Ev::Auth {
                    idx,
                    epoch,
                    purpose,
                    pending,
                    ip,
                    result,
                })
                .await;
        });
    }

    pub(super) fn auth_reply(
        &mut self,
        idx: usize,
        epoch: u64,
        purpose: Purpose,
        pending: &PendingAuth,
        ip: String,
        result: Result<Vec<u8>, NetError>,
    ) {
        let now = now_std();
        let current = match purpose {
            Purpose::SignIn => self.signing_in == Some((idx, epoch)),
            Purpose::Refresh => self
                .conn
                .as_ref()
                .is_some_and(|c| c.idx == idx && c.epoch == epoch),
        };
        if !current {
            return;
        }
        let outcome = match result {
            Ok(bytes) => match salt_proto::decode(&bytes) {
                Ok(v) => self.auth.handle_reply(pending, &v),
                Err(_) => Err(AuthError::Malformed),
            },
            Err(NetError::Unreachable) => {
                info!("Master {ip} refused the connection or dropped it");
                match purpose {
                    Purpose::SignIn => self.st.handle(Event::SignInFailed(idx), now),
                    Purpose::Refresh => self.refresh_failed(),
                }
                return;
            }
            Err(NetError::Timeout) => {
                warn!("SaltReqTimeoutError: Message timed out");
                if purpose == Purpose::Refresh {
                    self.refresh_failed();
                }
                return; // the state machine times the sign-in out itself
            }
            Err(e) => {
                error!("Sign-in attempt failed: {e}");
                match purpose {
                    Purpose::SignIn => self.st.handle(Event::SignInFailed(idx), now),
                    Purpose::Refresh => self.refresh_failed(),
                }
                return;
            }
        };
        let event = match outcome {
            Ok(AuthOutcome::Accepted(creds)) => {
                for note in &creds.notes {
                    match note {
                        AuthNote::PubSigVerified => debug!(
                            "Successfully verified signature of master public key with verification public key {}.pub",
                            self.s.auth.master_sign_key_name
                        ),
                        AuthNote::SignedPubkeyReceived => {
                            info!("Received signed and verified master pubkey from master {ip}");
                        }
                        AuthNote::DecryptingAes => debug!("Decrypting the current master AES key"),
                    }
                }
                for AuthAction::WriteMasterPub(text) in &creds.actions {
                    // Durable writes wait for the disk (seconds under I/O load): never on
                    // the loop that times alive checks.
                    let path = self.s.pki_dir.join("minion_master.pub");
                    let text = text.clone();
                    tokio::task::spawn_blocking(move || {
                        if let Err(e) = salt_pki::files::atomic_write(&path, text.as_bytes(), 0o644)
                        {
                            error!("Unable to write {}: {e}", path.display());
                        }
                    });
                }
                info!("Authentication with master at {ip} successful!");
                let session = Session {
                    id: self.s.id.clone(),
                    aes: creds.aes.clone(),
                    session: creds.session.clone(),
                    master_pub: creds.master_pub.clone(),
                    tok: self.tok.clone(),
                    enc_algo: self.s.auth.enc_algo,
                    sig_algo: self.s.auth.sig_algo,
                    signer: self.s.minion_sign_messages.then(|| self.key.clone()),
                };
                match purpose {
                    Purpose::SignIn => {
                        let port = self.addr(idx).map_or(4506, |a| a.port);
                        self.close();
                        let req = match net::req_client(
                            &self.s.id,
                            &net::tcp_uri(&ip, port),
                            self.s.keepalive,
                        ) {
                            Ok(r) => r,
                            Err(e) => {
                                error!("Unable to create the request channel: {e}");
                                self.st.handle(Event::SignInFailed(idx), now);
                                return;
                            }
                        };
                        self.serial.reset();
                        self.conn = Some(Conn {
                            idx,
                            epoch,
                            ip,
                            port,
                            session,
                            publish_port: creds.publish_port,
                            req,
                            sub: None,
                        });
                        self.signing_in = None;
                        Event::SignInAccepted(idx)
                    }
                    Purpose::Refresh => {
                        if let Some(c) = &mut self.conn {
                            if c.session.aes.key_string() != session.aes.key_string() {
                                debug!("The master's aes key has changed.");
                                self.serial.reset();
                            }
                            c.session = session;
                        }
                        self.refresh_done();
                        return;
                    }
                }
            }
            Ok(AuthOutcome::Retry) => {
                // The state machine logs Salt's "has cached the public key" line.
                if purpose == Purpose::Refresh {
                    self.refresh_failed();
                    return;
                }
                Event::SignInPending(idx)
            }
            Err(e) => {
                self.log_auth_error(&e);
                if purpose == Purpose::Refresh {
                    self.refresh_failed();
                    if e == AuthError::Rejected {
                        // The key was deleted or rejected while connected: treat as a lost
                        // master so the state machine signs in again (and exits if rejected).
                        if let Some(c) = &self.conn {
                            let idx = c.idx;
                            self.st.handle(Event::SubDisconnected(idx), now);
                        }
                    }
                    return;
                }
                match e {
                    AuthError::Rejected => Event::SignInRejected(idx),
                    AuthError::Full => Event::SignInFull(idx),
                    AuthError::FingerMismatch { .. } => {
                        self.exit = Some(EXIT_FINGER_MISMATCH);
                        return;
                    }
                    _ => Event::SignInFailed(idx),
                }
            }
        };
        self.st.handle(event, now);
    }

    pub(super) fn log_auth_error(&self, e: &AuthError) {
        let mpub = self.s.pki_dir.join("minion_master.pub");
        match e {
            _ if e.is_master_key_failure() => {
                match e {
                    AuthError::PubSigInvalid => debug!("Failed to verify signature of public key"),
                    AuthError::SignKeyMissing(name) => error!(
                        "Verification public key {name}.pub does not exist. You need to copy it from the master to the minions pki directory"
                    ),
                    AuthError::AuthDeps {
                        master_signs: true, ..
                    } => error!(
                        "The masters sent its public-key signature, but signature verification is not enabled on the minion. Either enable signature verification on the minion or disable signing the public key on the master!"
                    ),
                    AuthError::AuthDeps { .. } => error!(
                        "The master did not send its public-key signature, but signature verification is enabled on the minion. Either disable signature verification on the minion or enable signing the public on the master!"
                    ),
                    AuthError::MasterKeyChanged => error!(
                        "The master key has changed, the salt master could have been subverted, verify salt master's public key"
                    ),
                    AuthError::TokenMismatch => {
                        error!("The master failed to decrypt the random minion token");
                    }
                    other => debug!("{other}"),
                }
                error!(
                    critical = true,
                    "The Salt Master server's public key did not authenticate!\nThe master may need to be updated if it is a version of Salt lower than {}, or\nIf you are confident that you are connecting to a valid Salt Master, then remove the master public key and restart the Salt Minion.\nThe master public key can be found at:\n{}",
                    crate::grains::SALT_VERSION,
                    mpub.display()
                );
            }
            AuthError::Signature => {
                error!(critical = true, "The payload signature did not validate.")
            }
            AuthError::Nonce => error!(critical = true, "The payload nonce did not validate."),
            // The state machine logs Salt's rejection lines (it knows about rejected_retry).
            AuthError::Rejected => {}
            AuthError::BadEncAlgo => error!(
                "This minion is using a encryption algorithm that is not supported by it's Master. Please check your minion configutation."
            ),
            AuthError::BadSigAlgo => error!(
                "This minion is using a signing algorithm that is not supported by it's Master. Please check your minion configutation."
            ),
            AuthError::FingerMismatch { expected, actual } => error!(
                critical = true,
                "The specified fingerprint in the master configuration file:\n{expected}\nDoes not match the authenticating master's key:\n{actual}\nVerify that the configured fingerprint matches the fingerprint of the correct master and that this minion is not subject to a man-in-the-middle attack."
            ),
            other => error!("Sign-in attempt failed: {other}"),
        }
    }

    pub(super) fn start_refresh(&mut self) {
        if self.refreshing {
            return;
        }
        let Some(c) = &self.conn else {
            self.retry_publishes.clear();
            self.retry_requests.clear();
            return;
        };
        self.refreshing = true;
        debug!("Re-authenticating with the master to refresh the AES keys");
        let addr = MasterAddr::new(c.ip.clone(), c.port);
        self.spawn_auth(
            c.idx,
            c.epoch,
            addr,
            self.s.failover.auth_timeout,
            Purpose::Refresh,
        );
    }

    pub(super) fn refresh_done(&mut self) {
        self.refreshing = false;
        for frames in std::mem::take(&mut self.retry_publishes) {
            self.handle_publish(&frames, false);
        }
        for load in std::mem::take(&mut self.retry_requests) {
            self.send_request(load, false);
        }
    }

    pub(super) fn refresh_failed(&mut self) {
        self.refreshing = false;
        if !self.retry_publishes.is_empty() || !self.retry_requests.is_empty() {
            warn!("Re-authentication failed: dropping messages that need the new keys");
        }
        self.retry_publishes.clear();
        for load in std::mem::take(&mut self.retry_requests) {
            self.kept.keep(load);
        }
    }
}
