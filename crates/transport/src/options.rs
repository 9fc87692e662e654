//! Socket options, with Salt's defaults.
//!
//! Plain structs with public fields and a `Default` carrying Salt's values, so callers write
//! `ServerOptions { backlog: 10, ..Default::default() }`. Durations are converted to libzmq's
//! milliseconds (saturating at `i32::MAX`).

use std::time::Duration;

use crate::TransportError;

/// ZMTP 3.1 heartbeats (`ZMQ_HEARTBEAT_IVL` / `_TIMEOUT` / `_TTL`).
///
/// TCP keepalive ([`Keepalive`]) notices a vanished peer only after minutes of silence (Salt's
/// 300 s idle); heartbeats notice a peer that froze or whose packets are black-holed within
/// their `timeout`: every `interval` a PING is sent, and if nothing at all arrives for
/// `timeout` the connection is dropped (a monitor then reports
/// `DISCONNECTED` and connect-side sockets reconnect). libzmq answers the peer's PINGs
/// itself, which is what Salt 3006.30 / 3008 masters (heartbeats on) require.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct Heartbeat {
    /// Time between PINGs we send. Zero disables heartbeats.
    pub interval: Duration,
    /// How long without any traffic from the peer before the connection is dropped.
    pub timeout: Duration,
    /// TTL advertised in our PINGs: the peer drops us after this long without traffic from
    /// us. Zero leaves it unset (what Salt does). libzmq rounds it to 100 ms.
    pub ttl: Duration,
}

impl Heartbeat {
    /// Salt's `zmq_heartbeat_ivl` 10 s / `zmq_heartbeat_timeout` 30 s, no TTL.
    pub const SALT_DEFAULT: Self = Self::new(Duration::from_secs(10), Duration::from_secs(30));

    /// Heartbeats every `interval`, dropping the peer after `timeout` of silence; no TTL.
    pub const fn new(interval: Duration, timeout: Duration) -> Self {
        Self {
            interval,
            timeout,
            ttl: Duration::ZERO,
        }
    }

    pub(crate) fn apply(&self, sock: &zmq::Socket) -> Result<(), TransportError> {
        sock.set_heartbeat_ivl(ms(self.interval))
            .map_err(TransportError::zmq("setsockopt HEARTBEAT_IVL"))?;
        sock.set_heartbeat_timeout(ms(self.timeout))
            .map_err(TransportError::zmq("setsockopt HEARTBEAT_TIMEOUT"))?;
        if !self.ttl.is_zero() {
            sock.set_heartbeat_ttl(ms(self.ttl))
                .map_err(TransportError::zmq("setsockopt HEARTBEAT_TTL"))?;
        }
        Ok(())
    }
}

/// TCP keepalive on a socket's connections (`ZMQ_TCP_KEEPALIVE`, `_IDLE`, `_CNT`, `_INTVL`):
/// Salt's `tcp_keepalive`, `tcp_keepalive_idle`, `tcp_keepalive_cnt` and
/// `tcp_keepalive_intvl`, which Salt sets on the minion's SUB and REQ sockets and the
/// master's PUB socket. `None` leaves the system's value (Salt's `-1`).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct Keepalive {
    /// `SO_KEEPALIVE` on (`true`) or off.
    pub enabled: bool,
    /// `TCP_KEEPIDLE`: silence before the first probe (whole seconds).
    pub idle: Option<Duration>,
    /// `TCP_KEEPCNT`: unanswered probes before the connection is dropped.
    pub cnt: Option<u32>,
    /// `TCP_KEEPINTVL`: time between probes (whole seconds).
    pub intvl: Option<Duration>,
}

impl Keepalive {
    /// Salt's defaults: on, 300 s idle, the system's probe count and interval.
    pub const SALT_DEFAULT: Self = Self {
        enabled: true,
        idle: Some(Duration::from_secs(300)),
        cnt: None,
        intvl: None,
    };
    /// What Salt 3007.17's request server sets on its ROUTER, whatever the configuration:
    /// on, 60 s idle, 15 s between probes, 3 probes (a minion gone without a FIN is reaped
    /// after ~2 minutes instead of the system's 2 hours).
    pub const REQUEST_SERVER: Self = Self {
        enabled: true,
        idle: Some(Duration::from_secs(60)),
        cnt: Some(3),
        intvl: Some(Duration::from_secs(15)),
    };

    pub(crate) fn apply(&self, sock: &zmq::Socket) -> Result<(), TransportError> {
        let secs = |d: Option<Duration>| {
            d.map_or(-1, |d| {
                i32::try_from(d.as_secs().max(1)).unwrap_or(i32::MAX)
            })
        };
        sock.set_tcp_keepalive(i32::from(self.enabled))
            .map_err(TransportError::zmq("setsockopt TCP_KEEPALIVE"))?;
        sock.set_tcp_keepalive_idle(secs(self.idle))
            .map_err(TransportError::zmq("setsockopt TCP_KEEPALIVE_IDLE"))?;
        sock.set_tcp_keepalive_cnt(
            self.cnt
                .map_or(-1, |n| i32::try_from(n).unwrap_or(i32::MAX)),
        )
        .map_err(TransportError::zmq("setsockopt TCP_KEEPALIVE_CNT"))?;
        sock.set_tcp_keepalive_intvl(secs(self.intvl))
            .map_err(TransportError::zmq("setsockopt TCP_KEEPALIVE_INTVL"))?;
        Ok(())
    }
}

/// Per-connection I/O buffer sizes of libzmq (`ZMQ_IN_BATCH_SIZE` / `ZMQ_OUT_BATCH_SIZE`,
/// draft options; libzmq's default is 8 KiB each).
///
/// Every connection's ZMTP engine allocates an encoder buffer of `out_bytes` and a decoder
/// buffer of `in_bytes` (plus one 40-byte reference counter per 33 bytes of it, for
/// zero-copy receives) for as long as the peer is connected. A master holding 10,000 minions
/// keeps 10,000 of each on the publish port and one set per request connection. The sizes bound
/// how much is copied per `write`/`read` call, not message sizes: a message at least as big
/// as the buffer is written from, or read into, the message itself (zero-copy), so big
/// replies and file-server chunks do not get slower; small messages still share a `write`
/// up to `out_bytes`. With libzmq's 8 KiB the buffers were ~7 KiB of a master's RSS per
/// connection at 10,000 minions (docs/benchmarks.md "Master footprint").
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct IoBatch {
    /// Bytes read from the TCP socket per call (`ZMQ_IN_BATCH_SIZE`); at least 1.
    pub in_bytes: i32,
    /// Bytes of queued messages encoded per `write` (`ZMQ_OUT_BATCH_SIZE`); at least 1.
    pub out_bytes: i32,
}

impl IoBatch {
    /// The master's request server (`ret_port`): 1 KiB each way. Requests and replies of
    /// 1 KiB or more are read and written zero-copy; smaller ones are one `read`/`write`.
    pub const REQUESTS: Self = Self {
        in_bytes: 1024,
        out_bytes: 1024,
    };
    /// The master's publisher (`publish_port`): 1 KiB out (a `test.ping` publish, ~600 B,
    /// stays one `write` per subscriber; a smaller buffer made it two), 256 B in (a
    /// subscriber only ever sends its subscription and ZMTP PINGs).
    pub const PUBLISH: Self = Self {
        in_bytes: 256,
        out_bytes: 1024,
    };

    /// Sets both sizes. A libzmq built without the draft API cannot take them: the sockets
    /// then keep libzmq's 8 KiB buffers (more memory per connection, same behaviour), which
    /// is logged once as a warning naming the options, not an error that stops the master.
    pub(crate) fn apply(&self, sock: &mut zmq::Socket) -> Result<(), TransportError> {
        for (op, option, value) in [
            (
                "setsockopt ZMQ_IN_BATCH_SIZE",
                crate::draft::ZMQ_IN_BATCH_SIZE,
                self.in_bytes,
            ),
            (
                "setsockopt ZMQ_OUT_BATCH_SIZE",
                crate::draft::ZMQ_OUT_BATCH_SIZE,
                self.out_bytes,
            ),
        ] {
            match crate::draft::set_int(sock, option, value) {
                Ok(()) => {}
                Err(zmq::Error::EINVAL) if zmq::has("draft") != Some(true) => {
                    warn_no_draft();
                    return Ok(());
                }
                Err(e) => return Err(TransportError::zmq(op)(e)),
            }
        }
        Ok(())
    }
}

/// Once per process: this libzmq lacks the draft API, so the batch sizes are not set.
fn warn_no_draft() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        tracing::warn!(
            "this libzmq was built without ZMQ_BUILD_DRAFT_API: ZMQ_IN_BATCH_SIZE and \
             ZMQ_OUT_BATCH_SIZE are not set, each connection keeps libzmq's 8 KiB buffers \
             (.cargo/config.toml sets the define through CXXFLAGS; a CXXFLAGS in the \
             environment replaces it)"
        );
    });
}

/// Options of the ROUTER request server ([`RouterServer`](crate::RouterServer)).
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// `ZMQ_LINGER`: how long unsent replies are kept at shutdown. Salt: 1 s.
    pub linger: Duration,
    /// `ZMQ_BACKLOG`: pending TCP connections. Salt `zmq_backlog`: 1000.
    pub backlog: i32,
    /// ZMTP heartbeats; Salt 3008: 10 s / 30 s.
    pub heartbeat: Option<Heartbeat>,
    /// `ZMQ_MAXMSGSIZE`: a peer sending a bigger message is disconnected. `None`: no limit
    /// (Salt sets none; job returns can be large).
    pub max_msg_size: Option<u64>,
    /// `ZMQ_SNDHWM`/`ZMQ_RCVHWM` per peer. libzmq default 1000.
    pub hwm: i32,
    /// Capacity of the channel toward the application. When it is full the socket thread
    /// stops reading, so libzmq's queues (and then TCP) push back on the peers.
    pub queue_capacity: usize,
    /// Accept IPv6 as well (`ZMQ_IPV6`), Salt's `ipv6: True`.
    pub ipv6: bool,
    /// libzmq's per-connection buffers; `None` keeps libzmq's 8 KiB.
    pub io_batch: Option<IoBatch>,
    /// TCP keepalive on accepted connections; Salt 3007.17: [`Keepalive::REQUEST_SERVER`].
    pub keepalive: Keepalive,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            linger: Duration::from_secs(1),
            backlog: 1000,
            heartbeat: Some(Heartbeat::SALT_DEFAULT),
            max_msg_size: None,
            hwm: 1000,
            queue_capacity: 1024,
            ipv6: false,
            io_batch: Some(IoBatch::REQUESTS),
            keepalive: Keepalive::REQUEST_SERVER,
        }
    }
}

/// Options of the PUB socket ([`Publisher`](crate::Publisher)).
#[derive(Clone, Debug)]
pub struct PublisherOptions {
    /// `ZMQ_SNDHWM`/`ZMQ_RCVHWM`, Salt's `pub_hwm` (1000): messages per subscriber queued
    /// before PUB starts dropping for that subscriber.
    pub hwm: i32,
    /// `ZMQ_LINGER`. Salt uses -1 (forever); we default to 1 s so that dropping a publisher
    /// with a stuck subscriber cannot hang shutdown.
    pub linger: Duration,
    /// `ZMQ_BACKLOG`, Salt `zmq_backlog`: 1000.
    pub backlog: i32,
    /// ZMTP heartbeats (Salt 3006.30 / 3008: 10 s / 30 s). libzmq cancels a connection's
    /// heartbeat timeout with a linear scan of its I/O thread's timers on every PONG, so the
    /// cost is O(connections²) per interval: 13% of a core idle at 5,000 subscribers, 25–54% at
    /// 10,000, against ~1% without (docs/benchmarks.md); a starved I/O thread then also drops
    /// live subscribers whose PONG it handles late. The master leaves them off unless
    /// `zmq_heartbeat_ivl` is set. Peers' PINGs are answered either way.
    pub heartbeat: Option<Heartbeat>,
    /// Accept IPv6 as well (`ZMQ_IPV6`).
    pub ipv6: bool,
    /// libzmq's per-connection buffers, one set per subscriber; `None` keeps libzmq's 8 KiB.
    pub io_batch: Option<IoBatch>,
    /// TCP keepalive on subscribers' connections (Salt's `tcp_keepalive*` options).
    pub keepalive: Keepalive,
}

impl Default for PublisherOptions {
    fn default() -> Self {
        Self {
            hwm: 1000,
            linger: Duration::from_secs(1),
            backlog: 1000,
            heartbeat: Some(Heartbeat::SALT_DEFAULT),
            ipv6: false,
            io_batch: Some(IoBatch::PUBLISH),
            keepalive: Keepalive::SALT_DEFAULT,
        }
    }
}

/// Options of the REQ client ([`ReqClient`](crate::ReqClient)).
#[derive(Clone, Debug)]
pub struct ReqOptions {
    /// `ZMQ_RECONNECT_IVL` (libzmq default 100 ms; Salt leaves it).
    pub reconnect_ivl: Duration,
    /// `ZMQ_RECONNECT_IVL_MAX`, Salt: 5 s.
    pub reconnect_ivl_max: Duration,
    /// `ZMQ_LINGER`, Salt: 0 (a timed-out request is abandoned, not flushed).
    pub linger: Duration,
    /// ZMTP heartbeats, so a frozen or black-holed master is noticed and reconnected.
    pub heartbeat: Option<Heartbeat>,
    /// `ZMQ_MAXMSGSIZE` for replies. `None`: no limit.
    pub max_msg_size: Option<u64>,
    /// Prefix of `ZMQ_IDENTITY` (e.g. Salt 3007's `salt-req/minion/<id>`). The transport
    /// never uses it verbatim: every REQ socket it opens, including the fresh one after a
    /// reset, gets `<prefix>/<pid>/<slot>` with a process-wide slot that is never reused, so
    /// two clients (or a reset socket and its predecessor) can never present the same identity
    /// to a `ROUTER_HANDOVER` master, which would hand one's reply to the other. `None`: no
    /// identity (the ROUTER assigns one per connection).
    pub identity: Option<Vec<u8>>,
    /// Fail the request in flight with [`Unreachable`](crate::TransportError::Unreachable) as
    /// soon as a TCP connect to the peer fails (refused, reset, closed before the reply),
    /// instead of letting libzmq retry until the deadline. For one-shot probes (sign-in,
    /// alive checks): a master whose port is closed is gone, and waiting tells nothing new.
    pub fail_fast: bool,
    /// TCP keepalive (Salt's `tcp_keepalive*` options).
    pub keepalive: Keepalive,
}

impl Default for ReqOptions {
    fn default() -> Self {
        Self {
            reconnect_ivl: Duration::from_millis(100),
            reconnect_ivl_max: Duration::from_secs(5),
            linger: Duration::ZERO,
            heartbeat: Some(Heartbeat::SALT_DEFAULT),
            max_msg_size: None,
            identity: None,
            fail_fast: false,
            keepalive: Keepalive::SALT_DEFAULT,
        }
    }
}

/// Options of the SUB client ([`SubClient`](crate::SubClient)).
#[derive(Clone, Debug)]
pub struct SubOptions {
    /// Topics to subscribe to (prefix match). Salt: `[b""]` (everything), or with
    /// `zmq_filtering` `[b"broadcast", sha1_hex(minion_id)]`.
    pub topics: Vec<Vec<u8>>,
    /// `ZMQ_RECONNECT_IVL`. Salt randomizes it in `[recon_default, recon_default+recon_max]`;
    /// that choice belongs to the caller.
    pub reconnect_ivl: Duration,
    /// `ZMQ_RECONNECT_IVL_MAX`, Salt `recon_max`: 10 s.
    pub reconnect_ivl_max: Duration,
    /// ZMTP heartbeats (e.g. 1 s / 3 s for fast dead-master detection).
    pub heartbeat: Option<Heartbeat>,
    /// `ZMQ_IDENTITY` (Salt sets the minion id; meaningless on SUB, harmless).
    pub identity: Option<Vec<u8>>,
    /// `ZMQ_LINGER` (Salt 3007: 1 ms).
    pub linger: Duration,
    /// `ZMQ_RCVHWM`: messages queued in libzmq before it drops publishes.
    pub rcvhwm: i32,
    /// `ZMQ_MAXMSGSIZE`. `None`: no limit.
    pub max_msg_size: Option<u64>,
    /// Capacity of the event channel toward the application; when full, the socket thread
    /// stops reading and libzmq drops at `rcvhwm` (PUB/SUB semantics).
    pub queue_capacity: usize,
    /// TCP keepalive (Salt's `tcp_keepalive*` options).
    pub keepalive: Keepalive,
}

impl Default for SubOptions {
    fn default() -> Self {
        Self {
            topics: vec![Vec::new()],
            reconnect_ivl: Duration::from_secs(1),
            reconnect_ivl_max: Duration::from_secs(10),
            heartbeat: Some(Heartbeat::SALT_DEFAULT),
            identity: None,
            linger: Duration::from_millis(1),
            rcvhwm: 1000,
            max_msg_size: None,
            queue_capacity: 1024,
            keepalive: Keepalive::SALT_DEFAULT,
        }
    }
}

/// A duration as libzmq milliseconds, saturating.
pub(crate) fn ms(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

/// `ZMQ_MAXMSGSIZE` value: -1 is "no limit".
pub(crate) fn max_msg_size(limit: Option<u64>) -> i64 {
    limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn io_batch_sizes_reach_libzmq() {
        assert_eq!(
            zmq::has("draft"),
            Some(true),
            "libzmq built without the draft API"
        );
        let ctx = zmq::Context::new();
        for (kind, batch) in [
            (zmq::ROUTER, IoBatch::REQUESTS),
            (zmq::PUB, IoBatch::PUBLISH),
        ] {
            let mut sock = ctx.socket(kind).unwrap();
            let get = |s: &mut zmq::Socket, o| crate::draft::get_int(s, o).unwrap();
            assert_eq!(get(&mut sock, crate::draft::ZMQ_IN_BATCH_SIZE), 8192);
            batch.apply(&mut sock).unwrap();
            assert_eq!(
                get(&mut sock, crate::draft::ZMQ_IN_BATCH_SIZE),
                batch.in_bytes
            );
            assert_eq!(
                get(&mut sock, crate::draft::ZMQ_OUT_BATCH_SIZE),
                batch.out_bytes
            );
        }
    }

    #[test]
    fn a_bad_io_batch_is_an_error_naming_the_option() {
        let ctx = zmq::Context::new();
        let mut sock = ctx.socket(zmq::PUB).unwrap();
        let bad = IoBatch {
            in_bytes: 0,
            out_bytes: 1024,
        };
        let err = bad.apply(&mut sock).unwrap_err().to_string();
        assert!(err.contains("ZMQ_IN_BATCH_SIZE"), "{err}");
    }
}
