//! What the orchestration tests share (`orchestrate*.rs`): running `salt-run` on either side,
//! reading its JSON, taking out what differs per run, and a master with its minions up.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::cli::CmdOutput;
use crate::interop_support::{Daemon, SaltCli, Side};
use crate::{MasterConf, MinionConf};

/// A return without what differs per run: times, jids, pids.
pub fn drop_run_keys(v: &Value) -> Value {
    drop_run_keys_and(v, &|s| s.to_owned())
}

/// [`drop_run_keys`], each string also passed through `fix` (e.g. minion lists Salt prints
/// in arrival order).
pub fn drop_run_keys_and(v: &Value, fix: &dyn Fn(&str) -> String) -> Value {
    match v {
        Value::String(s) => Value::String(fix(s)),
        Value::Array(a) => Value::Array(a.iter().map(|x| drop_run_keys_and(x, fix)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "duration" | "start_time" | "__jid__" | "jid" | "pid"
                    )
                })
                .map(|(k, x)| (k.clone(), drop_run_keys_and(x, fix)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Every file under `dir` (recursively): relative path -> content.
pub fn files_under(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for p in rd.flatten().map(|e| e.path()) {
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(dir) {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                out.insert(rel.display().to_string(), text);
            }
        }
    }
    out
}

/// `--out highstate` text without times.
pub fn strip_times(text: &str) -> String {
    text.lines()
        .map(|l| {
            let t = l.trim_start();
            match ["Started:", "Duration:", "Total run time:"]
                .iter()
                .find(|k| t.starts_with(**k))
            {
                Some(k) => format!("{k} X"),
                None => l.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `salt-run <args>` of `side` on the master of `conf_dir` (Salt's Python side gets more time
/// on a loaded box).
pub fn salt_run(side: &Side, conf_dir: &Path, args: &[&str]) -> CmdOutput {
    let bin = side.salt_bin().with_file_name("salt-run");
    let limit = match side {
        Side::Ours(_) => Duration::from_secs(240),
        Side::Salt(_) => Duration::from_secs(480),
    };
    crate::cli::salt(&bin, None, conf_dir, args, limit)
        .unwrap_or_else(|e| panic!("salt-run {args:?}: {e}"))
}

/// The last JSON document of `salt-run --out json`: Salt prints the progress events of
/// `orchestrate_single`/`orchestrate_high` before the return, and its LocalClient prints
/// "No minions matched the target. ..." before it when a step targets nobody (the text before
/// the first line opening a document is skipped).
pub fn json_of(out: &CmdOutput) -> Value {
    let text = out.stdout.trim();
    let start = if text.starts_with('{') {
        0
    } else {
        text.find("\n{").map_or(0, |i| i + 1)
    };
    serde_json::Deserializer::from_str(&text[start..])
        .into_iter::<Value>()
        .filter_map(Result::ok)
        .last()
        .unwrap_or_else(|| panic!("{}: not JSON:\n{}\n{}", out.cmd, out.stdout, out.stderr))
}

/// One Python minion's config per id in `ids` (its directory `root/<name>-<id>`), for the
/// master on `ports`, with Salt's `auth_timeout` at 10 s.
pub fn minion_confs<'a>(
    root: &Path,
    name: &str,
    ids: &[&'a str],
    ports: (u16, u16),
) -> Vec<(&'a str, MinionConf)> {
    ids.iter()
        .map(|id| {
            let conf = MinionConf::new(root.join(format!("{name}-{id}")), id)
                .ports(ports.0, ports.1)
                .set("auth_timeout", 10u32);
            (*id, conf)
        })
        .collect()
}

/// `master_side`'s master started from `conf` (listening on `ports`) and one `py` minion per
/// `(id, config)` in `minions`: both ready, and every minion answering `test.ping` through the
/// master (90 s each) before the orchestration under test runs.
pub fn master_with_minions(
    master_side: &Side,
    conf: &MasterConf,
    ports: (u16, u16),
    py: &Side,
    minions: Vec<(&str, MinionConf)>,
) -> (Daemon, Vec<Daemon>) {
    let mut master = Daemon::start_master(master_side, conf).expect("start the master");
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .expect("the master is ready");
    let started: Vec<(&str, Daemon)> = minions
        .into_iter()
        .map(|(id, c)| (id, Daemon::start_minion(py, &c).expect("start a minion")))
        .collect();
    for (_, m) in &started {
        m.wait_minion_ready().expect("the minion is ready");
    }
    let cli = SaltCli::new(master_side, &master.conf_dir);
    for (id, _) in &started {
        cli.until_answer(id, &[id, "test.ping"], Duration::from_secs(90))
            .unwrap_or_else(|e| panic!("{id} answers test.ping: {e}"));
    }
    (master, started.into_iter().map(|(_, m)| m).collect())
}
