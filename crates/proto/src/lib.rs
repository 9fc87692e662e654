//! salt-proto: the sans-IO wire layer of a Rust SaltStack master/minion, compatible
//! with Salt 3006.x / 3007.x / 3008.x over the ZeroMQ transport.
//!
//! What it does:
//! * [`decode`] / [`encode`]: msgpack exactly as Salt writes it (`salt.payload.dumps`,
//!   `use_bin_type=False`) — byte-identical output, tolerant input (every msgpack
//!   form; invalid UTF-8 "str" kept as bytes), with size/depth/count limits and no
//!   panics on hostile input ([`codec`]).
//! * Helpers to build and read Salt's string-keyed maps ([`MapBuilder`], [`ValueExt`],
//!   [`salt_compat::map_get`], [`map_set`], [`map_remove`]) with Python dict semantics.
//! * Typed messages ([`msg`]): request envelopes, the `_auth` request and its replies,
//!   publish payloads and job loads, `_return`, `_minion_event`, `_pillar` (request
//!   and `send_private` reply), `_mine`, clear `ping`, the master's error strings.
//! * Salt's clear-text commands on the request port ([`clear`]): `publish`, `mk_token`,
//!   `get_token`, `runner`, `wheel`, ... read into one typed enum, unknown ones kept by name.
//! * Job ids and nonces ([`ids`]) from a time and randomness the caller supplies.
//! * Replay protection ([`replay`]): Salt's publish `serial` check and a bounded
//!   nonce memory for the master.
//!
//! What it does not do: no I/O of any kind — no sockets, no files, no clock reads,
//! no global randomness (time and RNGs are parameters; the one exception is
//! [`auth_minion::AuthClient::new`], which draws the minion's token from `salt-pki`).
//! No cryptography either: RSA and the Crypticle AES layer live in `salt-pki`. Both
//! halves of the `_auth` handshake ([`auth_master`], [`auth_minion`]) take a
//! [`salt_pki::KeyPairOps`] and call it for every RSA operation; the other messages
//! carry ciphertexts and signatures as bytes and leave the crypto to the caller.
//!
//! The reference for every format is `docs/salt-wire-protocol.md` (section numbers
//! in the docs here refer to it) and, ultimately, Salt's own source.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// The Salt release whose behaviour we report as ours (`test.version`, the `saltversion`
/// grain, `manage.versions` on the master).
pub const SALT_VERSION: &str = "3007.17";

pub mod auth_master;
pub mod auth_minion;
pub mod clear;
pub mod codec;
pub mod fuzzing;
pub mod ids;
pub mod ipc;
pub mod msg;
pub mod replay;
pub mod value;

pub use codec::{
    DecodeError, DecodeLimits, decode, decode_with_limits, encode, encode_bin_type, encode_into,
    raw_span, str_from_bytes,
};
pub use ids::{JidGenerator, format_jid, gen_nonce, is_jid, is_nonce, nonce_from_bytes};
pub use msg::InvalidMessage;
pub use replay::{ReplayGuard, ReplayVerdict, SerialGuard, SerialVerdict};
pub use rmpv::{Utf8String, Value};
pub use value::{MapBuilder, ValueExt, map_remove, map_set};
