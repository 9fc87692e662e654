//! salt-daemon: what `salt-master` and `salt-minion` share as Unix services.
//!
//! [`Notifier`] speaks systemd's notification protocol (`sd_notify(3)`, through the
//! `sd-notify` crate: one datagram to `$NOTIFY_SOCKET`, no libsystemd) for units with
//! `Type=notify`: `READY=1` once the daemon can serve, `STATUS=` lines systemd shows in
//! `systemctl status`, `STOPPING=1` on shutdown and `WATCHDOG=1` keep-alives when the unit
//! sets `WatchdogSec=`. Without `$NOTIFY_SOCKET` (not under systemd) every call is a no-op.
//!
//! [`process`]: `-d` (daemonize), `--pid-file` and `--versions-report`.
//! [`logging`]: Salt's console and log-file layouts, one scheme for both daemons.
//! [`metrics_http`]: the `GET /metrics` responder of the opt-in Prometheus endpoints.
//! [`start`]: the start-up block of both daemons (flags, config, log levels, pid-file lock,
//! `-d`, logging); [`exit`]: the one exit-code table.
#![forbid(unsafe_code)]

pub mod exit;
pub mod logging;
pub mod metrics_http;
mod pidfile;
pub mod process;
pub mod start;

use std::time::Duration;

use sd_notify::NotifyState;

/// Installs the SIGTERM and SIGINT handlers at once (call it before telling systemd
/// READY=1: a signal before that point would otherwise kill the process uncleanly) and
/// returns a future that completes on either. Call it inside the tokio runtime.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    async move {
        match (term, int) {
            (Ok(mut t), Ok(mut i)) => {
                tokio::select! {
                    _ = t.recv() => {}
                    _ = i.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

/// Sends service-state notifications to systemd, if it is listening.
#[derive(Debug, Clone, Copy)]
pub struct Notifier {
    enabled: bool,
}

impl Notifier {
    /// A notifier for this process: enabled when `$NOTIFY_SOCKET` is set.
    pub fn from_env() -> Self {
        Notifier {
            enabled: std::env::var_os("NOTIFY_SOCKET").is_some_and(|s| !s.is_empty()),
        }
    }

    /// Whether notifications are sent at all.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    fn send(&self, states: &[NotifyState<'_>]) {
        if !self.enabled {
            return;
        }
        if let Err(e) = sd_notify::notify(states) {
            tracing::debug!("systemd notification failed: {e}");
        }
    }

    /// `READY=1` with a status line: startup is over (sockets bound, keys loaded).
    pub fn ready(&self, status: &str) {
        self.send(&[NotifyState::Ready, NotifyState::Status(status)]);
    }

    /// A `STATUS=` line (one line: newlines are replaced by spaces).
    pub fn status(&self, status: &str) {
        let line = status.replace('\n', " ");
        self.send(&[NotifyState::Status(&line)]);
    }

    /// `STOPPING=1`: shutdown has begun.
    pub fn stopping(&self) {
        self.send(&[NotifyState::Stopping, NotifyState::Status("Shutting down")]);
    }

    /// How often to send `WATCHDOG=1`: half of `$WATCHDOG_USEC` (as `sd_watchdog_enabled(3)`
    /// advises), when the unit has `WatchdogSec=` and the watchdog is meant for this
    /// process (`$WATCHDOG_PID`, if set, is ours).
    pub fn watchdog_interval(&self) -> Option<Duration> {
        if !self.enabled {
            return None;
        }
        watchdog_interval_from(
            std::env::var("WATCHDOG_USEC").ok().as_deref(),
            std::env::var("WATCHDOG_PID").ok().as_deref(),
            std::process::id(),
        )
    }

    /// Send `WATCHDOG=1` every [`watchdog_interval`](Self::watchdog_interval) until the
    /// future is dropped; returns at once when no watchdog is configured. Run it on the
    /// daemon's runtime: a stalled runtime stops the pings and systemd restarts the unit.
    pub async fn watchdog(self) {
        let Some(every) = self.watchdog_interval() else {
            return;
        };
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            self.send(&[NotifyState::Watchdog]);
        }
    }
}

/// Half of `usec` microseconds, if `pid` (when given) is `me`.
fn watchdog_interval_from(usec: Option<&str>, pid: Option<&str>, me: u32) -> Option<Duration> {
    let usec: u64 = usec?.trim().parse().ok().filter(|u| *u > 0)?;
    if let Some(pid) = pid
        && pid.trim().parse::<u32>().ok() != Some(me)
    {
        return None;
    }
    Some(Duration::from_micros(usec / 2).max(Duration::from_millis(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchdog_interval_is_half_of_watchdog_usec_for_this_pid_only() {
        assert_eq!(
            watchdog_interval_from(Some("2000000"), None, 7),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            watchdog_interval_from(Some("2000000"), Some("7"), 7),
            Some(Duration::from_secs(1))
        );
        assert_eq!(watchdog_interval_from(Some("2000000"), Some("8"), 7), None);
        assert_eq!(watchdog_interval_from(Some("0"), None, 7), None);
        assert_eq!(watchdog_interval_from(Some("x"), None, 7), None);
        assert_eq!(watchdog_interval_from(None, None, 7), None);
    }
}

/// The man pages in `packaging/man/`, generated from the binaries' clap definitions.
#[cfg(feature = "man")]
pub mod man {
    use std::path::Path;

    /// Renders `cmd` with clap_mangen and compares it with the committed `path`; with
    /// `UPDATE_MAN=1` in the environment writes it instead. Panics (a test failure) naming
    /// the regeneration command when they differ.
    pub fn check(cmd: clap::Command, path: &Path) {
        let mut page = Vec::new();
        if let Err(e) = clap_mangen::Man::new(cmd).render(&mut page) {
            panic!("rendering {}: {e}", path.display());
        }
        if std::env::var_os("UPDATE_MAN").is_some() {
            if let Err(e) = std::fs::write(path, &page) {
                panic!("writing {}: {e}", path.display());
            }
            return;
        }
        let committed = std::fs::read(path).unwrap_or_default();
        assert!(
            committed == page,
            "{} is stale: regenerate the man pages with \
             UPDATE_MAN=1 cargo test -p salt-master -p salt-cli -p salt-minion -p salt-key man_page",
            path.display()
        );
    }
}
