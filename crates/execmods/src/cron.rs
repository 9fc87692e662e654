//! `cron.*` (`salt/modules/cron.py`): the user's crontab through `crontab -l -u USER` and
//! `crontab -u USER FILE`, with Salt's managed-section layout (the "Lines below here are
//! managed by Salt" tag and `SALT_CRON_IDENTIFIER` comments). Special (`@daily`) and
//! environment lines are listed and kept; only standard jobs are set/removed.

use rmpv::Value;

use crate::run::run;
use crate::{Args, Ret, map, text};

const TAG: &str = "# Lines below here are managed by Salt, do not edit";
const IDENT: &str = "SALT_CRON_IDENTIFIER";

/// One standard job of the managed section.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The five time fields.
    pub when: [String; 5],
    /// The command.
    pub cmd: String,
    /// `SALT_CRON_IDENTIFIER`.
    pub identifier: Option<String>,
    /// Comment lines.
    pub comment: Option<String>,
    /// `#DISABLED#`.
    pub commented: bool,
}

/// A special (`@daily`) line: spec, cmd, identifier, comment, commented.
type Special = (String, String, Option<String>, Option<String>, bool);

/// A parsed crontab.
#[derive(Debug, Clone, Default)]
pub struct Tab {
    pre: Vec<String>,
    env: Vec<(String, String)>,
    crons: Vec<Job>,
    special: Vec<Special>,
}

/// `cron.raw_cron`.
pub fn raw_cron(user: &str) -> Result<String, String> {
    let out = run(&["crontab", "-l", "-u", user])?;
    if out.retcode != 0 && !out.stderr.contains("no crontab") {
        return Err(out.stderr);
    }
    Ok(if out.retcode == 0 {
        out.stdout
    } else {
        String::new()
    })
}

/// `cron.list_tab` parsing.
pub fn parse(data: &str) -> Tab {
    let mut t = Tab::default();
    let (mut flag, mut comment, mut ident): (bool, Option<String>, Option<String>) =
        (false, None, None);
    for line in data.lines() {
        if line == TAG {
            flag = true;
            continue;
        }
        if !flag {
            t.pre.push(line.to_owned());
            continue;
        }
        let (line, commented) = match line.strip_prefix("#DISABLED#") {
            Some(l) => (l, true),
            None => (line, false),
        };
        if line.starts_with('@') {
            let comps: Vec<&str> = line.split_whitespace().collect();
            if comps.len() >= 2 {
                t.special.push((
                    comps[0].to_owned(),
                    comps[1..].join(" "),
                    ident.take(),
                    comment.take(),
                    commented,
                ));
            }
        } else if line.starts_with('#') {
            let mut c = line.trim_start_matches(['#', ' ']).to_owned();
            if let Some((pre, post)) = c.clone().split_once(IDENT) {
                c = pre.trim_end().to_owned();
                if post.len() > 1 {
                    ident = Some(post[1..].to_owned());
                }
            }
            comment = Some(match comment {
                None => c,
                Some(p) => format!("{p}\n{c}"),
            });
        } else if line
            .find('=')
            .is_some_and(|i| i > 0 && line.find(' ').is_none_or(|s| i < s))
        {
            let (k, v) = line.split_once('=').unwrap_or((line, ""));
            t.env.push((k.to_owned(), v.to_owned()));
        } else if line.split(' ').count() > 5 {
            let c: Vec<&str> = line.split(' ').collect();
            t.crons.push(Job {
                when: [0, 1, 2, 3, 4].map(|i| c[i].to_owned()),
                cmd: c[5..].join(" "),
                identifier: ident.take(),
                comment: comment.take(),
                commented,
            });
        }
    }
    t
}

fn render(t: &Tab) -> String {
    let mut s = String::new();
    for p in &t.pre {
        s.push_str(p);
        s.push('\n');
    }
    s.push_str(TAG);
    s.push('\n');
    for (k, v) in &t.env {
        s.push_str(&format!("{k}={v}\n"));
    }
    let head = |s: &mut String, comment: &Option<String>, ident: &Option<String>| {
        if comment.is_some() || ident.is_some() {
            s.push('#');
            if let Some(c) = comment.as_deref().filter(|c| !c.is_empty()) {
                s.push_str(&format!(" {}", c.trim_end().replace('\n', "\n# ")));
            }
            if let Some(i) = ident.as_deref().filter(|i| !i.is_empty()) {
                s.push_str(&format!(" {IDENT}:{i}"));
            }
            s.push('\n');
        }
    };
    for j in &t.crons {
        head(&mut s, &j.comment, &j.identifier);
        let dis = if j.commented { "#DISABLED#" } else { "" };
        s.push_str(&format!("{dis}{} {}\n", j.when.join(" "), j.cmd));
    }
    for (spec, cmd, ident, comment, commented) in &t.special {
        head(&mut s, comment, ident);
        let dis = if *commented { "#DISABLED#" } else { "" };
        s.push_str(&format!("{dis}{spec} {cmd}\n"));
    }
    s
}

fn write(user: &str, t: &Tab) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("salt-rs-cron-{}", std::process::id()));
    std::fs::write(&dir, render(t)).map_err(|e| e.to_string())?;
    let path = dir.display().to_string();
    let out = run(&["crontab", "-u", user, &path]);
    let _ = std::fs::remove_file(&dir);
    let out = out?;
    if out.retcode != 0 {
        return Err(out.stderr);
    }
    Ok(())
}

fn opt(v: &Option<String>) -> Value {
    v.clone().map(Value::from).unwrap_or(Value::Nil)
}

fn to_value(t: &Tab) -> Value {
    let crons = t
        .crons
        .iter()
        .map(|j| {
            map(vec![
                ("minute", Value::from(j.when[0].clone())),
                ("hour", Value::from(j.when[1].clone())),
                ("daymonth", Value::from(j.when[2].clone())),
                ("month", Value::from(j.when[3].clone())),
                ("dayweek", Value::from(j.when[4].clone())),
                ("identifier", opt(&j.identifier)),
                ("cmd", Value::from(j.cmd.clone())),
                ("comment", opt(&j.comment)),
                ("commented", Value::Boolean(j.commented)),
            ])
        })
        .collect();
    let special = t
        .special
        .iter()
        .map(|(spec, cmd, ident, comment, commented)| {
            map(vec![
                ("spec", Value::from(spec.clone())),
                ("cmd", Value::from(cmd.clone())),
                ("identifier", opt(ident)),
                ("comment", opt(comment)),
                ("commented", Value::Boolean(*commented)),
            ])
        })
        .collect();
    let env = t
        .env
        .iter()
        .map(|(k, v)| {
            map(vec![
                ("name", Value::from(k.clone())),
                ("value", Value::from(v.clone())),
            ])
        })
        .collect();
    map(vec![
        (
            "pre",
            Value::Array(t.pre.iter().cloned().map(Value::from).collect()),
        ),
        ("crons", Value::Array(crons)),
        ("special", Value::Array(special)),
        ("env", Value::Array(env)),
    ])
}

fn matches(j: &Job, cmd: &str, ident: Option<&str>) -> bool {
    match ident {
        Some(i) => j.identifier.as_deref() == Some(i) || (j.identifier.is_none() && j.cmd == cmd),
        None => j.cmd == cmd,
    }
}

/// `cron.set_job`: "present", "updated" or "new".
pub fn set_job(user: &str, job: Job) -> Result<&'static str, String> {
    let mut t = parse(&raw_cron(user)?);
    let pos = t
        .crons
        .iter()
        .position(|j| matches(j, &job.cmd, job.identifier.as_deref()));
    let status = match pos {
        Some(i) if t.crons[i] == job => return Ok("present"),
        Some(i) => {
            t.crons.remove(i);
            "updated"
        }
        None => "new",
    };
    t.crons.push(job);
    write(user, &t)?;
    Ok(status)
}

/// `cron.rm_job`: "removed" or "absent".
pub fn rm_job(user: &str, cmd: &str, ident: Option<&str>) -> Result<&'static str, String> {
    let mut t = parse(&raw_cron(user)?);
    let before = t.crons.len();
    t.crons.retain(|j| !matches(j, cmd, ident));
    if t.crons.len() == before {
        return Ok("absent");
    }
    write(user, &t)?;
    Ok("removed")
}

/// Dispatch `cron.<f>`.
pub fn call(f: &str, a: &Args<'_>) -> Ret {
    let user = a.req(0, "user")?;
    match f {
        "raw_cron" => raw_cron(&user).map(Value::from),
        "list_tab" | "ls" => Ok(to_value(&parse(&raw_cron(&user)?))),
        "set_job" => {
            let f = |i, n| a.req(i, n).map(|s| s.to_lowercase());
            let job = Job {
                when: [
                    f(1, "minute")?,
                    f(2, "hour")?,
                    f(3, "daymonth")?,
                    f(4, "month")?,
                    f(5, "dayweek")?,
                ],
                cmd: a.req(6, "cmd")?,
                commented: a.flag("commented", false),
                comment: a.str(8, "comment"),
                identifier: a.str(9, "identifier"),
            };
            set_job(&user, job).map(Value::from)
        }
        "rm_job" | "rm" => {
            a.refuse(&["minute", "hour", "daymonth", "month", "dayweek"])?;
            let cmd = a.req(1, "cmd")?;
            rm_job(&user, &cmd, a.kwarg("identifier").map(text).as_deref()).map(Value::from)
        }
        _ => Err(format!("'cron.{f}' is not available.")),
    }
}
