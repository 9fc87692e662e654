//! Failover configuration: the subset of Salt's minion options that decide which master a
//! minion talks to, and how it notices that master is gone.
//!
//! This is a plain struct on purpose. It does not depend on `salt-config`; the minion binary
//! copies the relevant keys across, so the state machine can be built and tested alone.

use std::fmt;
use std::time::Duration;

/// Salt's default request port (`master_port`).
pub const DEFAULT_MASTER_PORT: u16 = 4506;

/// One entry of Salt's `master` option: a host name or address plus the request port (the
/// text is parsed once, by `salt_config::MasterAddr::parse`; the minion copies it here).
#[derive(Clone, Debug, Eq, Hash, PartialEq)]
pub struct MasterAddr {
    /// Host name, IPv4 address, or IPv6 address without brackets.
    pub host: String,
    /// Request (`ret`) port of this master.
    pub port: u16,
}

impl MasterAddr {
    /// Builds an address from its parts.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            host: host.into(),
            port,
        }
    }
}

impl fmt::Display for MasterAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Salt's `master_type`.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub enum MasterType {
    /// No master at all (masterless minion): the state machine stops at once.
    Disable,
    /// One master at a time from a list; move on when it fails.
    Failover,
    /// A single master (Salt's default). A list under `str` is Salt's "multi-master" mode:
    /// one connection per master, which is one [`FailoverState`](super::FailoverState) per
    /// master (see [`FailoverConfig::split_multi_master`]).
    #[default]
    Str,
}

/// The options that drive [`FailoverState`](super::FailoverState). Field names follow Salt's
/// option names; defaults (from [`Default`]) are Salt's.
#[derive(Clone, Debug, PartialEq)]
pub struct FailoverConfig {
    /// `master`: the masters, in configured order. Index 0 is the preferred master for
    /// failback.
    pub masters: Vec<MasterAddr>,
    /// `master_type`.
    pub master_type: MasterType,
    /// `random_master` (`master_shuffle` is the deprecated alias): shuffle the list before the
    /// first attempt and after each loss. With failback on, only entries after the first are
    /// shuffled, as in Salt.
    pub random_master: bool,
    /// `master_alive_interval` (0 / `None` = off). Loss of the master is detected within this
    /// interval plus one second; see `docs/failover.md`.
    pub alive_interval: Option<Duration>,
    /// `master_failback`: go back to the first master of the list once it answers again.
    pub failback: bool,
    /// `master_failback_interval` (`None` = use `alive_interval`, as Salt does).
    pub failback_interval: Option<Duration>,
    /// `master_tries`: rounds over the list before logging Salt's "No master could be reached"
    /// error; -1 = never log it. The minion never gives up either way (Salt's daemon restarts
    /// the connection loop too); the backoff keeps growing instead.
    pub master_tries: i32,
    /// `auth_tries`: sign-in attempts per master in `str` mode (forced to 1 in failover mode,
    /// as Salt forces 0).
    pub auth_tries: u32,
    /// `auth_timeout`: how long one sign-in attempt (and one failback ping) may take.
    pub auth_timeout: Duration,
    /// `acceptance_wait_time`: wait between sign-ins while the key is pending, and the first
    /// backoff after a failed round.
    pub acceptance_wait_time: Duration,
    /// `acceptance_wait_time_max` (zero = same as `acceptance_wait_time`): the waits double up
    /// to this.
    pub acceptance_wait_time_max: Duration,
    /// `rejected_retry`: when a master rejects our key, keep trying instead of exiting 77.
    pub rejected_retry: bool,
    /// `retry_dns` (`None` = 0): in `str` mode, wait this long and retry when the master name
    /// does not resolve; with `None` the minion exits 42 like Salt. Forced off in failover mode
    /// (an unresolvable master is skipped).
    pub retry_dns: Option<Duration>,
    /// How long the publish (SUB) channel may stay disconnected while the master still answers
    /// alive checks before the master is treated as lost anyway. Not a Salt option: Salt has no
    /// such case, because it fails over on the first SUB disconnect. Default 15 s (above
    /// libzmq's reconnect interval ceiling of Salt's `recon_max`, 10 s).
    pub sub_reconnect_grace: Duration,
}

impl Default for FailoverConfig {
    fn default() -> Self {
        Self {
            masters: vec![MasterAddr::new("salt", DEFAULT_MASTER_PORT)],
            master_type: MasterType::Str,
            random_master: false,
            alive_interval: None,
            failback: false,
            failback_interval: None,
            master_tries: -1,
            auth_tries: 7,
            auth_timeout: Duration::from_secs(5),
            acceptance_wait_time: Duration::from_secs(10),
            acceptance_wait_time_max: Duration::ZERO,
            rejected_retry: false,
            retry_dns: Some(Duration::from_secs(30)),
            sub_reconnect_grace: Duration::from_secs(15),
        }
    }
}

impl FailoverConfig {
    /// A failover configuration over `masters` with Salt's other defaults.
    pub fn failover(masters: Vec<MasterAddr>) -> Self {
        Self {
            masters,
            master_type: MasterType::Failover,
            ..Self::default()
        }
    }

    /// Checks the configuration. Called by [`FailoverState::new`](super::FailoverState::new).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.master_type == MasterType::Disable {
            return Ok(());
        }
        if self.masters.is_empty() {
            return Err(ConfigError::NoMasters);
        }
        if self.master_type == MasterType::Str && self.masters.len() > 1 {
            return Err(ConfigError::MultiMaster(self.masters.len()));
        }
        if self.auth_timeout.is_zero() {
            return Err(ConfigError::ZeroDuration("auth_timeout"));
        }
        Ok(())
    }

    /// Salt's multi-master mode (`master_type: str` with a list): one single-master
    /// configuration per master, each to be driven by its own `FailoverState`. Any other
    /// configuration is returned unchanged as the only element.
    pub fn split_multi_master(&self) -> Vec<Self> {
        if self.master_type != MasterType::Str || self.masters.len() <= 1 {
            return vec![self.clone()];
        }
        self.masters
            .iter()
            .map(|m| Self {
                masters: vec![m.clone()],
                ..self.clone()
            })
            .collect()
    }
}

/// A configuration that [`FailoverState`](super::FailoverState) cannot run with.
#[derive(Clone, Debug, Eq, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// `master` is empty while `master_type` needs one.
    #[error("no master configured")]
    NoMasters,
    /// `master_type: str` with several masters is multi-master mode: build one state machine
    /// per master with [`FailoverConfig::split_multi_master`].
    #[error("master_type str with {0} masters is multi-master mode; split it per master")]
    MultiMaster(usize),
    /// A duration that must be positive is zero.
    #[error("{0} must be greater than zero")]
    ZeroDuration(&'static str),
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn validate_and_split() {
        let two = vec![MasterAddr::new("a", 1), MasterAddr::new("b", 2)];
        let str_cfg = FailoverConfig {
            masters: two.clone(),
            ..FailoverConfig::default()
        };
        assert_eq!(str_cfg.validate(), Err(ConfigError::MultiMaster(2)));
        let split = str_cfg.split_multi_master();
        assert_eq!(split.len(), 2);
        assert!(split.iter().all(|c| c.validate().is_ok()));
        assert!(FailoverConfig::failover(two).validate().is_ok());
        assert_eq!(
            FailoverConfig::failover(vec![]).validate(),
            Err(ConfigError::NoMasters)
        );
    }
}
