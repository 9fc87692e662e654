//! Answers to the AES commands salt-rs does not implement, as Salt's `AESFuncs` answers when
//! the feature behind them is not configured (`salt/master.py`), each logged once by name.
//!
//! * Not one of Salt's exposed methods: Salt's `get_method` logs "Requested method not
//!   exposed" and replies `{}`; so do we.
//! * `minion_pub`, `minion_publish`, `minion_runner`, `pub_ret` (`peer`, `peer_run` unset):
//!   `{}`.
//! * `revoke_auth` (`allow_minion_key_revoke: False`): the load back, key kept.
//! * `_syndic_return`: `None`; `verify_minion` (not callable with a load): `""`.

use std::collections::HashSet;
use std::sync::Mutex;

use rmpv::Value;

/// Names already logged (bounded: a peer can invent names).
static LOGGED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
const MAX_LOGGED: usize = 1024;

/// The reply to `cmd` from minion `id`.
pub fn reply(cmd: &str, id: &str, load: &Value) -> Value {
    let (why, ret) = match cmd {
        "minion_pub" | "minion_publish" => ("peer publishing (`peer`)", Value::Map(vec![])),
        "minion_runner" => ("peer runners (`peer_run`)", Value::Map(vec![])),
        "pub_ret" => ("peer job returns (`peer`)", Value::Map(vec![])),
        "revoke_auth" => ("minion key revocation", load.clone()),
        "_syndic_return" => ("syndics", Value::Nil),
        "verify_minion" => ("verify_minion", Value::from("")),
        _ => {
            if first_time(cmd) {
                let shown: String = cmd.chars().take(80).collect();
                tracing::error!("Requested method not exposed: {shown} (from {id})");
            }
            return Value::Map(vec![]);
        }
    };
    if first_time(cmd) {
        tracing::warn!(
            "{cmd} from {id}: {why} is not implemented by salt-rs; answered as Salt does when \
             it is not configured"
        );
    }
    ret
}

fn first_time(cmd: &str) -> bool {
    let mut guard = LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    let set = guard.get_or_insert_with(HashSet::new);
    if set.contains(cmd) || set.len() >= MAX_LOGGED {
        return false;
    }
    set.insert(cmd.to_owned())
}
