//! The master event bus's local endpoints: Salt's `ipc_mode` and salt-rs's
//! `event_bus_framing` (which of Salt's two framings the pub socket's readers speak).

use crate::error::Problem;
use crate::types::invalid;

/// Salt's `ipc_mode`: the event bus on Unix sockets in `sock_dir` (`ipc`, the default) or on
/// loopback TCP ports (`tcp`: `tcp_master_pub_port`, `tcp_master_pull_port`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpcMode {
    /// `sock_dir/master_event_pub.ipc` and `master_event_pull.ipc`.
    Ipc,
    /// `127.0.0.1` (`::1` with `ipv6: True`) on `tcp_master_pub_port` / `tcp_master_pull_port`.
    Tcp,
}

/// How the master writes events to the readers of its pub socket (salt-rs only): Salt 3006's
/// `salt.transport.ipc` (length-prefixed frames) or 3007/3008's `salt.transport.tcp` over the
/// socket (bare msgpack frames). Readers send nothing to tell them apart; writers into the
/// pull socket are recognised either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventBusFraming {
    /// Salt 3007 and 3008 (the default).
    Tcp,
    /// Salt 3006.
    Ipc,
}

pub(crate) fn parse_ipc_mode(s: &str) -> Result<IpcMode, Problem> {
    match s {
        "ipc" => Ok(IpcMode::Ipc),
        "tcp" => Ok(IpcMode::Tcp),
        _ => Err(invalid(s, "expected ipc or tcp")),
    }
}

pub(crate) fn parse_framing(s: &str) -> Result<EventBusFraming, Problem> {
    match s {
        "tcp" => Ok(EventBusFraming::Tcp),
        "ipc" => Ok(EventBusFraming::Ipc),
        _ => Err(invalid(
            s,
            "expected tcp (Salt 3007/3008 tools) or ipc (Salt 3006 tools)",
        )),
    }
}
