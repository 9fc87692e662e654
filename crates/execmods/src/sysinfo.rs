//! `network.*`, `disk.*`, `status.*` basics, from `/proc`, `/sys` and `statvfs`.

use rmpv::Value;

use crate::{Args, Ret, map};

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

/// Interfaces: name -> (hwaddr, up, [(ipv4, prefix)], [(ipv6, prefix)]).
type Iface = (String, bool, Vec<(String, u32)>, Vec<(String, u32)>);

fn interfaces() -> Result<Vec<(String, Iface)>, String> {
    let mut out: Vec<(String, Iface)> = Vec::new();
    let addrs = nix::ifaddrs::getifaddrs().map_err(|e| e.to_string())?;
    for ifa in addrs {
        let name = ifa.interface_name.clone();
        if !out.iter().any(|(n, _)| *n == name) {
            let hw = read(&format!("/sys/class/net/{name}/address"))
                .map(|s| s.trim().to_owned())
                .unwrap_or_default();
            let up = ifa.flags.contains(nix::net::if_::InterfaceFlags::IFF_UP);
            out.push((name.clone(), (hw, up, Vec::new(), Vec::new())));
        }
        let Some(entry) = out.iter_mut().find(|(n, _)| *n == name) else {
            continue;
        };
        let prefix = |m: Option<&nix::sys::socket::SockaddrStorage>, v6: bool| -> u32 {
            m.and_then(|m| {
                if v6 {
                    m.as_sockaddr_in6().map(|s| u128::from(s.ip()).count_ones())
                } else {
                    m.as_sockaddr_in().map(|s| u32::from(s.ip()).count_ones())
                }
            })
            .unwrap_or(0)
        };
        if let Some(a) = ifa.address.as_ref() {
            if let Some(v4) = a.as_sockaddr_in() {
                let p = prefix(ifa.netmask.as_ref(), false);
                entry.1.2.push((v4.ip().to_string(), p));
            } else if let Some(v6) = a.as_sockaddr_in6() {
                let p = prefix(ifa.netmask.as_ref(), true);
                entry.1.3.push((v6.ip().to_string(), p));
            }
        }
    }
    Ok(out)
}

fn netmask4(p: u32) -> String {
    let m: u32 = if p == 0 { 0 } else { u32::MAX << (32 - p) };
    std::net::Ipv4Addr::from(m).to_string()
}

/// Dispatch `network.*`, `disk.*`, `status.*`.
pub fn call(fun: &str, a: &Args<'_>) -> Ret {
    match fun {
        "network.interfaces" => Ok(map(interfaces()?
            .into_iter()
            .map(|(n, (hw, up, v4, v6))| {
                let mut m = vec![("hwaddr", Value::from(hw))];
                m.push(("up", Value::Boolean(up)));
                if !v4.is_empty() {
                    m.push((
                        "inet",
                        Value::Array(
                            v4.iter()
                                .map(|(ip, p)| {
                                    map(vec![
                                        ("address", Value::from(ip.clone())),
                                        ("netmask", Value::from(netmask4(*p))),
                                        ("label", Value::from(n.clone())),
                                    ])
                                })
                                .collect(),
                        ),
                    ));
                }
                if !v6.is_empty() {
                    m.push((
                        "inet6",
                        Value::Array(
                            v6.iter()
                                .map(|(ip, p)| {
                                    map(vec![
                                        ("address", Value::from(ip.clone())),
                                        ("prefixlen", Value::from(p.to_string())),
                                    ])
                                })
                                .collect(),
                        ),
                    ));
                }
                (n, map(m))
            })
            .collect())),
        "network.ip_addrs" | "network.ip_addrs6" => {
            let v6 = fun.ends_with('6');
            let include_lo = a.flag("include_loopback", false);
            let mut ips: Vec<String> = Vec::new();
            for (_, (_, _, v4s, v6s)) in interfaces()? {
                let list = if v6 { v6s } else { v4s };
                for (ip, _) in list {
                    let lo = ip.starts_with("127.") || ip == "::1";
                    let ll = ip.starts_with("fe80");
                    if (include_lo || !lo) && !ll && !ips.contains(&ip) {
                        ips.push(ip);
                    }
                }
            }
            ips.sort();
            Ok(Value::Array(ips.into_iter().map(Value::from).collect()))
        }
        "network.hw_addr" => {
            let iface = a.req(0, "iface")?;
            Ok(Value::from(
                read(&format!("/sys/class/net/{iface}/address"))
                    .map(|s| s.trim().to_owned())
                    .unwrap_or_else(|_| {
                        format!("Interface \"{iface}\" not in available interfaces")
                    }),
            ))
        }
        "disk.usage" => {
            let mut out = Vec::new();
            for line in read("/proc/self/mounts")?.lines() {
                let c: Vec<&str> = line.split_whitespace().collect();
                if c.len() < 3 {
                    continue;
                }
                let Ok(st) = nix::sys::statvfs::statvfs(c[1]) else {
                    continue;
                };
                let bs = st.fragment_size();
                let blocks = st.blocks() * bs / 1024;
                let avail = st.blocks_available() * bs / 1024;
                let used = (st.blocks() - st.blocks_free()) * bs / 1024;
                let cap = if used + avail == 0 {
                    "0%".into()
                } else {
                    format!("{}%", (used * 100).div_ceil(used + avail))
                };
                out.push((
                    c[1].to_owned(),
                    map(vec![
                        ("filesystem", Value::from(c[0])),
                        ("1K-blocks", Value::from(blocks)),
                        ("used", Value::from(used)),
                        ("available", Value::from(avail)),
                        ("capacity", Value::from(cap)),
                    ]),
                ));
            }
            Ok(map(out))
        }
        "status.loadavg" => {
            let s = read("/proc/loadavg")?;
            let f: Vec<f64> = s
                .split_whitespace()
                .take(3)
                .filter_map(|x| x.parse().ok())
                .collect();
            if f.len() < 3 {
                return Err("/proc/loadavg: unexpected format".into());
            }
            Ok(map(vec![
                ("1-min", Value::F64(f[0])),
                ("5-min", Value::F64(f[1])),
                ("15-min", Value::F64(f[2])),
            ]))
        }
        // `status.time(format="%A, %d. %B %Y %I:%M%p")`: the local time, `strftime`.
        "status.time" => {
            let fmt = a
                .str(0, "format")
                .unwrap_or_else(|| "%A, %d. %B %Y %I:%M%p".to_owned());
            let items: Vec<_> = chrono::format::StrftimeItems::new(&fmt).collect();
            if items
                .iter()
                .any(|i| matches!(i, chrono::format::Item::Error))
            {
                return Err(format!(
                    "status.time: format {fmt:?} is not supported by salt-rs"
                ));
            }
            Ok(Value::from(
                chrono::Local::now()
                    .format_with_items(items.into_iter())
                    .to_string(),
            ))
        }
        "status.uptime" => {
            let s = read("/proc/uptime")?;
            let secs: f64 = s
                .split_whitespace()
                .next()
                .and_then(|x| x.parse().ok())
                .ok_or("/proc/uptime: unexpected format")?;
            let secs = secs as u64;
            let users = std::fs::read("/var/run/utmp")
                .map(|b| b.len() / 384)
                .unwrap_or(0);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let (days, rem) = (secs / 86400, secs % 86400);
            Ok(map(vec![
                ("seconds", Value::from(secs)),
                ("since_t", Value::from(now - secs)),
                ("days", Value::from(days)),
                (
                    "time",
                    Value::from(format!("{}:{:02}", rem / 3600, rem % 3600 / 60)),
                ),
                ("users", Value::from(users as u64)),
            ]))
        }
        other => Err(format!("'{other}' is not available.")),
    }
}
