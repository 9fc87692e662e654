//! `ipcidr` (`S@`): an address in the minion's `ipv4`/`ipv6` grains, or any of them inside a
//! network (`salt/matchers/ipcidr_match.py`).

use std::net::IpAddr;

use rmpv::Value;

use crate::tree::{Shape, Tree};

/// Does `tgt` (an address or `addr/prefix`) match one of the minion's addresses?
/// An invalid target matches nothing.
pub fn ipcidr_match(grains: &Value, tgt: &str) -> bool {
    parse_cidr(tgt).is_some_and(|c| cidr_match(grains, c))
}

/// A target address and its prefix length (none: the address itself).
pub(crate) type Cidr = (IpAddr, Option<u8>);

/// `addr` or `addr/prefix`; `None` for an invalid target.
pub(crate) fn parse_cidr(tgt: &str) -> Option<Cidr> {
    match tgt.split_once('/') {
        Some((a, p)) => Some((a.parse().ok()?, Some(p.parse().ok()?))),
        None => Some((tgt.parse().ok()?, None)),
    }
}

/// Does one of the `ipv4`/`ipv6` grains (by the target's family) match?
pub(crate) fn cidr_match<'a, T: Tree<'a>>(grains: T, (addr, prefix): Cidr) -> bool {
    let grain = if addr.is_ipv4() { "ipv4" } else { "ipv6" };
    let Some(ips) = grains.map_get(grain).filter(|v| v.shape() == Shape::Array) else {
        return false;
    };
    ips.items()
        .filter_map(|v| v.as_str()?.parse::<IpAddr>().ok())
        .any(|ip| match prefix {
            None => ip == addr,
            Some(p) => in_network(ip, addr, p),
        })
}

fn in_network(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) if prefix <= 32 => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) if prefix <= 128 => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_networks() {
        let g = Value::Map(vec![(
            Value::from("ipv4"),
            Value::Array(vec![Value::from("127.0.0.1"), Value::from("192.168.3.7")]),
        )]);
        assert!(ipcidr_match(&g, "192.168.3.7"));
        assert!(!ipcidr_match(&g, "192.168.3.8"));
        assert!(ipcidr_match(&g, "192.168.0.0/16"));
        assert!(ipcidr_match(&g, "0.0.0.0/0"));
        assert!(!ipcidr_match(&g, "10.0.0.0/8"));
        assert!(!ipcidr_match(&g, "::1"));
        assert!(!ipcidr_match(&g, "garbage"));
        assert!(!ipcidr_match(&g, "10.0.0.0/99"));
    }
}
