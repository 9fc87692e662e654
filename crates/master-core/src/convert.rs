//! Conversions between msgpack values (the wire) and JSON values (the local socket).

/// msgpack → JSON (lossy where JSON has no form): the one copy, `salt_compat::json`.
pub use salt_compat::json::msgpack_to_json as mp_to_json;

/// JSON → msgpack (strings stay strings, numbers keep their kind, key order kept); one copy,
/// shared with the renderer's `json` stage.
pub use salt_compat::json::json_to_msgpack as json_to_mp;
