//! Free TCP ports on loopback.
//!
//! A port is drawn at random from just below the kernel's ephemeral range
//! (`net.ipv4.ip_local_port_range`) and checked by binding it. Below that range no outgoing
//! connection (a minion's, a Python master worker's, PostgreSQL's) can take it as its source
//! port between the check and the daemon's bind, which is what made a port from `bind(:0)`
//! race: a daemon then died at start with "address in use". A process-wide set remembers every
//! port handed out, so two tests in one process never get the same one even if the daemon of the
//! first has not bound it yet. (Tests in a network namespace do not need this: the namespace has
//! its own ports, and the lab uses Salt's 4505/4506 there.)

use std::collections::HashSet;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::{Mutex, PoisonError};

use crate::error::HarnessError;

static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

fn bindable(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

fn claim(ports: &[u16]) -> bool {
    let mut g = HANDED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
    let set = g.get_or_insert_with(HashSet::new);
    if ports.iter().any(|p| set.contains(p)) {
        return false;
    }
    set.extend(ports.iter().copied());
    true
}

/// Ports are drawn from `[low - SPAN, low)` where `low` starts the ephemeral range.
const SPAN: u16 = 12_000;

fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .filter(|low| *low > SPAN + 1024)
        .unwrap_or(32_768)
}

/// A bindable port below the ephemeral range.
fn candidate() -> Result<u16, HarnessError> {
    use rand::Rng;
    let low = ephemeral_low();
    let mut rng = rand::thread_rng();
    for _ in 0..200 {
        let p = rng.gen_range(low - SPAN..low - 1);
        if bindable(p) {
            return Ok(p);
        }
    }
    Err(HarnessError::Timeout {
        what: "a bindable port below the ephemeral range".into(),
        after: std::time::Duration::ZERO,
    })
}

/// A free port on 127.0.0.1, not handed out before in this process.
pub fn free_port() -> Result<u16, HarnessError> {
    for _ in 0..200 {
        let p = candidate()?;
        if claim(&[p]) {
            return Ok(p);
        }
    }
    Err(HarnessError::Timeout {
        what: "a free port".into(),
        after: std::time::Duration::ZERO,
    })
}

/// Two consecutive free ports `(p, p + 1)` (Salt's publish/ret pair layout, as `4505`/`4506`).
pub fn free_port_pair() -> Result<(u16, u16), HarnessError> {
    for _ in 0..500 {
        let p = candidate()?;
        let Some(q) = p.checked_add(1) else { continue };
        if bindable(q) && claim(&[p, q]) {
            return Ok((p, q));
        }
    }
    Err(HarnessError::Timeout {
        what: "two consecutive free ports".into(),
        after: std::time::Duration::ZERO,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_and_bindable() {
        let a = free_port().unwrap();
        let (b, c) = free_port_pair().unwrap();
        assert_eq!(c, b + 1);
        assert!(a != b && a != c);
        assert!(bindable(b) && bindable(c));
    }
}
