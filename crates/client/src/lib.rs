//! salt-client: what the command-line clients of the master share, without the master.
//!
//! * [`local`]: the protocol between `salt`/`salt-run` and the master's Unix socket
//!   `{sock_dir}/local_client.sock` (`salt_master_core::local_server` is the other end);
//! * [`output`]: Salt's outputters (`salt_output`);
//! * [`py_json`]: an event payload as `state.event` prints it.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod local;
pub use salt_output as output;

/// Python's `json.dumps(data)` (`", "`, `": "`, ASCII-escaped), as `salt-run state.event`
/// prints payloads: the renderer's one implementation.
pub fn py_json(v: &serde_json::Value) -> String {
    salt_render::py_json(&salt_compat::json::json_to_msgpack(v), false)
}
