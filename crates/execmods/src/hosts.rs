//! `hosts.*` (`salt/modules/hosts.py`): the hosts file named by the `hosts.file` option
//! (default `/etc/hosts`), read and rewritten as Salt does.

use rmpv::Value;

use crate::{Args, Ctx, Ret, map, text};

/// One entry of the hosts file, in file order.
#[derive(Debug, Clone)]
enum Entry {
    Comment(String),
    Host {
        ip: String,
        aliases: Vec<String>,
        comment: Option<String>,
    },
}

/// The hosts file path.
pub fn hosts_file(ctx: &Ctx<'_>) -> String {
    ctx.opt("hosts.file")
        .map(text)
        .unwrap_or_else(|| "/etc/hosts".into())
}

fn parse(path: &str) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            out.push(Entry::Comment(line.to_owned()));
            continue;
        }
        let (body, comment) = match line.find('#') {
            Some(i) => (
                line[..i].trim(),
                Some(line[i + 1..].trim_start().to_owned()),
            ),
            None => (line, None),
        };
        let mut comps = body.split_whitespace().map(str::to_owned);
        let Some(ip) = comps.next() else { continue };
        let more: Vec<String> = comps.collect();
        let existing = out.iter_mut().find_map(|e| match e {
            Entry::Host {
                ip: i,
                aliases,
                comment: c,
            } if *i == ip => Some((aliases, c)),
            _ => None,
        });
        match existing {
            Some((aliases, c)) => {
                aliases.extend(more);
                if comment.is_some() {
                    *c = comment;
                }
            }
            None => out.push(Entry::Host {
                ip,
                aliases: more,
                comment,
            }),
        }
    }
    out
}

fn aliases_of<'a>(hosts: &'a [Entry], ip: &str) -> Option<&'a Vec<String>> {
    hosts.iter().find_map(|e| match e {
        Entry::Host { ip: i, aliases, .. } if i == ip => Some(aliases),
        _ => None,
    })
}

/// `hosts.list_hosts` as `(ip, aliases, comment)`, comment lines left out.
pub fn list(ctx: &Ctx<'_>) -> Vec<(String, Vec<String>, Option<String>)> {
    parse(&hosts_file(ctx))
        .into_iter()
        .filter_map(|e| match e {
            Entry::Host {
                ip,
                aliases,
                comment,
            } => Some((ip, aliases, comment)),
            Entry::Comment(_) => None,
        })
        .collect()
}

/// `hosts.has_pair`.
pub fn has_pair(ctx: &Ctx<'_>, ip: &str, alias: &str) -> bool {
    aliases_of(&parse(&hosts_file(ctx)), ip).is_some_and(|a| a.iter().any(|x| x == alias))
}

fn ensure_file(path: &str) -> Result<(), String> {
    if !std::path::Path::new(path).exists() {
        std::fs::write(path, "").map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

fn write(path: &str, hosts: &[Entry]) -> Result<(), String> {
    let mut s = String::new();
    for e in hosts {
        let line = match e {
            Entry::Comment(c) => c.clone(),
            Entry::Host {
                ip,
                aliases,
                comment: Some(c),
            } => format!("{ip}\t\t{}\t\t# {c}", aliases.join(" ")),
            Entry::Host { ip, aliases, .. } => format!("{ip}\t\t{}", aliases.join(" ")),
        };
        if !line.trim().is_empty() {
            s.push_str(line.trim());
            s.push('\n');
        }
    }
    std::fs::write(path, s).map_err(|e| format!("{path}: {e}"))
}

/// `hosts.add_host`.
pub fn add_host(ctx: &Ctx<'_>, ip: &str, alias: &str) -> Result<bool, String> {
    let path = hosts_file(ctx);
    ensure_file(&path)?;
    if has_pair(ctx, ip, alias) {
        return Ok(true);
    }
    let mut hosts = parse(&path);
    match hosts.iter_mut().find_map(|e| match e {
        Entry::Host { ip: i, aliases, .. } if i == ip => Some(aliases),
        _ => None,
    }) {
        Some(a) => a.push(alias.to_owned()),
        None => hosts.push(Entry::Host {
            ip: ip.to_owned(),
            aliases: vec![alias.to_owned()],
            comment: None,
        }),
    }
    write(&path, &hosts)?;
    Ok(true)
}

/// `hosts.rm_host`: drop `alias` from the line(s) of `ip` (lines are rewritten in place).
pub fn rm_host(ctx: &Ctx<'_>, ip: &str, alias: &str) -> Result<bool, String> {
    if !has_pair(ctx, ip, alias) {
        return Ok(true);
    }
    let path = hosts_file(ctx);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = String::new();
    for raw in text.split_inclusive('\n') {
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            out.push_str(raw);
            continue;
        }
        let (info, comment) = match t.split_once('#') {
            Some((i, c)) => (i, Some(c.trim_start())),
            None => (t, None),
        };
        let comps: Vec<&str> = info.split_whitespace().collect();
        if comps.first() != Some(&ip) {
            out.push_str(raw);
            continue;
        }
        let mut nl = format!("{ip}\t\t");
        for e in &comps[1..] {
            if *e != alias {
                nl.push_str(e);
                nl.push(' ');
            }
        }
        if nl.trim() == ip {
            continue;
        }
        if let Some(c) = comment {
            nl.push_str("# ");
            nl.push_str(c);
        }
        nl.push('\n');
        out.push_str(&nl);
    }
    std::fs::write(&path, out).map_err(|e| format!("{path}: {e}"))?;
    Ok(true)
}

/// `hosts.set_host`: replace the line(s) of `ip` with one line.
pub fn set_host(
    ctx: &Ctx<'_>,
    ip: &str,
    alias: &str,
    comment: Option<&str>,
) -> Result<bool, String> {
    let path = hosts_file(ctx);
    ensure_file(&path)?;
    let line = match comment {
        _ if alias.trim().is_empty() => String::new(),
        Some(c) if !c.is_empty() => format!("{ip}\t\t{alias}\t\t# {c}\n"),
        _ => format!("{ip}\t\t{alias}\n"),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    let mut done = false;
    for l in lines.iter_mut() {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if t.split_whitespace().next() == Some(ip) {
            *l = if done { String::new() } else { line.clone() };
            done = true;
        }
    }
    if !done {
        if let Some(last) = lines.last_mut()
            && !last.ends_with('\n')
        {
            last.push('\n');
        }
        lines.push(line);
    }
    std::fs::write(&path, lines.concat()).map_err(|e| format!("{path}: {e}"))?;
    Ok(true)
}

/// `hosts.set_comment`: false when `ip` has no line.
pub fn set_comment(ctx: &Ctx<'_>, ip: &str, comment: &str) -> Result<bool, String> {
    let path = hosts_file(ctx);
    ensure_file(&path)?;
    let mut hosts = parse(&path);
    let Some(c) = hosts.iter_mut().find_map(|e| match e {
        Entry::Host { ip: i, comment, .. } if i == ip => Some(comment),
        _ => None,
    }) else {
        return Ok(false);
    };
    if c.as_deref() == Some(comment) {
        return Ok(true);
    }
    *c = Some(comment.to_owned());
    write(&path, &hosts)?;
    Ok(true)
}

/// Dispatch `hosts.<f>`.
pub fn call(f: &str, a: &Args<'_>, ctx: &Ctx<'_>) -> Ret {
    let hosts = parse(&hosts_file(ctx));
    match f {
        "list_hosts" => {
            let mut n = 0;
            let mut out: Vec<(String, Value)> = Vec::new();
            for e in hosts {
                match e {
                    Entry::Comment(c) => {
                        out.push((format!("comment-{n}"), Value::Array(vec![Value::from(c)])));
                        n += 1;
                    }
                    Entry::Host {
                        ip,
                        aliases,
                        comment,
                    } => {
                        let mut m = vec![(
                            "aliases",
                            Value::Array(aliases.into_iter().map(Value::from).collect()),
                        )];
                        if let Some(c) = comment {
                            m.push(("comment", Value::from(c)));
                        }
                        out.push((ip, map(m)));
                    }
                }
            }
            Ok(map(out))
        }
        "get_ip" => {
            let host = a.req(0, "host")?;
            Ok(Value::from(
                hosts
                    .iter()
                    .find_map(|e| match e {
                        Entry::Host { ip, aliases, .. } if aliases.contains(&host) => {
                            Some(ip.clone())
                        }
                        _ => None,
                    })
                    .unwrap_or_default(),
            ))
        }
        "get_alias" => {
            let ip = a.req(0, "ip")?;
            Ok(Value::Array(
                aliases_of(&hosts, &ip)
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(Value::from)
                    .collect(),
            ))
        }
        "has_pair" => Ok(Value::Boolean(has_pair(
            ctx,
            &a.req(0, "ip")?,
            &a.req(1, "alias")?,
        ))),
        "add_host" => add_host(ctx, &a.req(0, "ip")?, &a.req(1, "alias")?).map(Value::Boolean),
        "rm_host" => rm_host(ctx, &a.req(0, "ip")?, &a.req(1, "alias")?).map(Value::Boolean),
        "set_host" => set_host(
            ctx,
            &a.req(0, "ip")?,
            &a.req(1, "alias")?,
            a.str(2, "comment").as_deref(),
        )
        .map(Value::Boolean),
        "set_comment" => {
            set_comment(ctx, &a.req(0, "ip")?, &a.req(1, "comment")?).map(Value::Boolean)
        }
        _ => Err(format!("'hosts.{f}' is not available.")),
    }
}
