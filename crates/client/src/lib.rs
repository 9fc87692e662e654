//! salt-client: what the command-line clients of the master share, without the master.
//!
//! * [`local`]: the protocol between `salt`/`salt-run` and the master's Unix socket
//!   `{sock_dir}/local_client.sock` (`salt_master_core::server::local` is the other end);
//! * [`session`]: one request over it, given up with Salt's "Salt request timed out" when the
//!   master does not answer;
//! * [`args`]: a runner call's arguments bound to the function's Python signature;
//! * [`event_line`]: an event as `state.event` prints it.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod args;
pub mod batch;
pub mod local;
pub mod session;

/// `tag\tdata` as `salt-run state.event` prints an event: `salt.utils.json.dumps(data)`, one
/// line (non-ASCII kept), or with `pretty=True` sorted keys and an indent of 4.
pub fn event_line(tag: &str, data: &serde_json::Value, pretty: bool) -> String {
    let opts = salt_render::JsonOpts {
        sort_keys: pretty,
        indent: pretty.then_some(4),
        ..salt_render::JsonOpts::SALT
    };
    let json = salt_render::py_json(&salt_compat::json::json_to_msgpack(data), opts);
    format!("{tag}\t{json}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_print_as_salt_prints_them() {
        let data = serde_json::json!({"b": {"c": null}, "a": [1, "é"]});
        // One line in the payload's own order; `pretty` sorts.
        assert_eq!(
            event_line("t", &data, false),
            "t\t{\"b\": {\"c\": null}, \"a\": [1, \"é\"]}"
        );
        assert_eq!(
            event_line("t", &data, true),
            "t\t{\n    \"a\": [\n        1,\n        \"é\"\n    ],\n    \"b\": {\n        \"c\": null\n    }\n}"
        );
    }
}
