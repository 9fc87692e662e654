//! Building ZeroMQ TCP endpoints the way Salt does (`salt.transport.zeromq._get_master_uri`).

use std::net::{IpAddr, Ipv6Addr};

/// `host` with brackets when it is an IPv6 literal (Salt's `ip_bracket`); hostnames, IPv4
/// and already-bracketed literals are returned unchanged.
pub fn ip_bracket(host: &str) -> String {
    if host.parse::<Ipv6Addr>().is_ok() {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// `tcp://host:port`, bracketing IPv6 literals: `tcp_endpoint("::1", 4506)` is
/// `tcp://[::1]:4506`.
pub fn tcp_endpoint(host: &str, port: u16) -> String {
    format!("tcp://{}:{port}", ip_bracket(host))
}

/// A connect endpoint with an optional source address, libzmq's `tcp://SRC:SPORT;DST:DPORT`
/// syntax, following Salt's `source_ip` / `source_ret_port` / `source_publish_port` rules:
/// a missing source port is 0 (any), a missing source IP is the wildcard of the
/// destination's family. Without either, this is [`tcp_endpoint`].
pub fn tcp_endpoint_from(
    source_ip: Option<&str>,
    source_port: Option<u16>,
    host: &str,
    port: u16,
) -> String {
    let dst = format!("{}:{port}", ip_bracket(host));
    match (source_ip, source_port) {
        (None, None) => format!("tcp://{dst}"),
        (Some(ip), sport) => format!("tcp://{}:{};{dst}", ip_bracket(ip), sport.unwrap_or(0)),
        (None, Some(sport)) => {
            let any = match host.parse::<IpAddr>() {
                Ok(IpAddr::V6(_)) => "[::]",
                _ => "0.0.0.0",
            };
            format!("tcp://{any}:{sport};{dst}")
        }
    }
}

/// True when the endpoint names a bracketed IPv6 address; Salt then sets `ZMQ_IPV6`.
pub(crate) fn wants_ipv6(endpoint: &str) -> bool {
    endpoint.contains('[')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn brackets_only_ipv6_literals() {
        assert_eq!(tcp_endpoint("127.0.0.1", 4506), "tcp://127.0.0.1:4506");
        assert_eq!(
            tcp_endpoint("salt.example", 4505),
            "tcp://salt.example:4505"
        );
        assert_eq!(tcp_endpoint("::1", 4506), "tcp://[::1]:4506");
        assert_eq!(tcp_endpoint("[::1]", 4506), "tcp://[::1]:4506");
        assert_eq!(tcp_endpoint("fe80::1", 1), "tcp://[fe80::1]:1");
    }

    #[test]
    fn source_binding_like_salt() {
        assert_eq!(
            tcp_endpoint_from(None, None, "10.0.0.1", 4506),
            "tcp://10.0.0.1:4506"
        );
        assert_eq!(
            tcp_endpoint_from(Some("10.0.0.9"), Some(4000), "10.0.0.1", 4506),
            "tcp://10.0.0.9:4000;10.0.0.1:4506"
        );
        assert_eq!(
            tcp_endpoint_from(Some("10.0.0.9"), None, "10.0.0.1", 4506),
            "tcp://10.0.0.9:0;10.0.0.1:4506"
        );
        assert_eq!(
            tcp_endpoint_from(None, Some(4000), "10.0.0.1", 4506),
            "tcp://0.0.0.0:4000;10.0.0.1:4506"
        );
        assert_eq!(
            tcp_endpoint_from(None, Some(4000), "::1", 4506),
            "tcp://[::]:4000;[::1]:4506"
        );
        assert!(wants_ipv6("tcp://[::1]:4506"));
        assert!(!wants_ipv6("tcp://127.0.0.1:4506"));
    }
}
