//! A Python reader of the master's event bus (`salt.utils.event.get_master_event`, as Salt's
//! engines and `state.event` read it), shared by the event and reactor tests: it prints
//! `READY` once connected, then `EV {"tag":..., "data":...}` per event.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::{Proc, ProcSpec, SaltVenv, wait_until};

/// The reader's script: `python listener.py <master config file> <seconds>`.
const LISTENER: &str = r#"
import json, sys, time
import salt.config, salt.utils.event
opts = salt.config.master_config(sys.argv[1])
ev = salt.utils.event.get_master_event(opts, opts["sock_dir"], listen=True)
while not ev.cpub:
    ev.connect_pub(timeout=1)
print("READY", flush=True)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    e = ev.get_event(wait=1, full=True)
    if e:
        print("EV " + json.dumps({"tag": e["tag"], "data": e["data"]}, default=repr), flush=True)
"#;

/// Start a reader on the master of `conf_file` for `secs` seconds (its script in `work`) and
/// wait until it is connected; `label` names the scenario in a failure.
pub fn start(venv: &SaltVenv, work: &Path, conf_file: &Path, secs: u32, label: &str) -> Proc {
    let script = work.join("listener.py");
    std::fs::write(&script, LISTENER).expect("write the listener script");
    let listener = ProcSpec::new("listener", venv.bin("python"), work)
        .args([script.as_os_str(), conf_file.as_os_str()])
        .args([secs.to_string()])
        .spawn()
        .unwrap_or_else(|e| panic!("{label}: the listener did not start: {e}"));
    wait_until(
        "the Python reader connected",
        Duration::from_secs(60),
        || listener.output().contains("READY"),
    )
    .unwrap_or_else(|e| panic!("{label}: {e}\n{}", listener.tail(30)));
    listener
}

/// Every event the reader printed so far.
pub fn events(listener: &Proc) -> Vec<Value> {
    listener
        .output()
        .lines()
        .filter_map(|l| l.strip_prefix("EV "))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The data of the first event `f(tag, data)` accepts, waiting up to 90 s for it.
pub fn seen(listener: &Proc, what: &str, f: impl Fn(&str, &Value) -> bool) -> Value {
    let mut found = None;
    wait_until(
        &format!("the bus shows {what}"),
        Duration::from_secs(90),
        || {
            found = events(listener)
                .into_iter()
                .find(|e| f(e["tag"].as_str().unwrap_or(""), &e["data"]));
            found.is_some()
        },
    )
    .unwrap_or_else(|e| panic!("{e}\nevents:\n{}", listener.tail(80)));
    found.map(|e| e["data"].clone()).unwrap_or_default()
}
