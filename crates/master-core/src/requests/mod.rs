//! The request server's message handling (§2.4, §3, §10): bytes in, reply bytes out.
//!
//! [`handle`] is synchronous and CPU-bound (RSA, AES): the server runs it on the worker pool.
//! On the socket thread [`handle_quick`] answers only quick file-server requests, within a
//! `salt_fileserver::inline::Budget`; anything more is declined and goes to a worker. Neither
//! panics on peer input. Every message is read by the
//! typed readers of `salt_proto::msg` (the envelope, the channel fields of the load, then the
//! command's load); every failure is a [`RequestError`], turned into Salt's reply and one
//! rate-limited log line in one place ([`error::reply`]).
//!
//! * [`auth`]: `_auth` (sign-in);
//! * [`clear`]: Salt's other clear commands (`publish`, `mk_token`, `get_token`, `runner`,
//!   `wheel`) through `salt_eauth`;
//! * [`aes`]: AES requests, from the envelope to the command's reply;
//! * [`dispatch`]: what each command does;
//! * [`mine`]: `_mine`, `_mine_get`, `_mine_delete`, `_mine_flush`;
//! * [`resources`]: `_register_resources` and resource returns (Salt 3008);
//! * [`unsupported`]: Salt's answers for the commands salt-rs does not implement;
//! * [`error`]: every way a request fails, and its reply.

use rmpv::Value;
use salt_proto::msg::{RequestEnvelope, salt_version};
use salt_proto::{InvalidMessage, ValueExt, decode, encode};

use salt_fileserver::inline::Budget;

use crate::shared::Shared;

mod aes;
mod auth;
pub(crate) mod clear;
mod dispatch;
pub mod error;
pub mod mine;
mod resources;
mod signed;
pub mod unsupported;

use auth::handle_auth;
pub use error::{Fault, Malformed, Refused, RequestError};

/// Handles one request body on a worker thread. Salt always answers, so this always returns
/// a reply.
pub fn handle(shared: &Shared, body: &[u8]) -> Vec<u8> {
    handle_within(shared, body, &Budget::unlimited())
}

/// Handles one request body on the socket thread: `None` when it needs more than quick work
/// (a sign-in, a return, an index to build, a big chunk: `salt_fileserver::inline`), which
/// a worker then does with [`handle`].
pub fn handle_quick(shared: &Shared, body: &[u8]) -> Option<Vec<u8>> {
    let budget = Budget::quick();
    let reply = handle_within(shared, body, &budget);
    (!budget.declined()).then_some(reply)
}

fn handle_within(shared: &Shared, body: &[u8], budget: &Budget) -> Vec<u8> {
    match envelope(shared, body) {
        // A sign-in is RSA work: declined on the socket thread, done by a worker.
        Ok(RequestEnvelope::Clear(_)) if budget.decline() => Vec::new(),
        Ok(RequestEnvelope::Clear(c)) => handle_clear(shared, &c.load, c.version),
        Ok(RequestEnvelope::Aes(a)) => aes::handle(shared, a, budget),
        Err(e) => error::reply(shared, None, &e, None),
    }
}

/// Reads the envelope with Salt's checks in Salt's order: a map with `enc` and `load`, then
/// `minimum_auth_version`, then the shape of `load` for its `enc`.
fn envelope(shared: &Shared, body: &[u8]) -> Result<RequestEnvelope, RequestError> {
    let value = decode(body).map_err(|source| {
        Malformed::Envelope(InvalidMessage::Decode {
            msg: "RequestEnvelope",
            source,
        })
    })?;
    let parsed = RequestEnvelope::from_value(&value);
    if let Err(e @ (InvalidMessage::NotAMap { .. } | InvalidMessage::MissingField { .. })) = &parsed
    {
        return Err(Malformed::Envelope(e.clone()).into());
    }
    let version = salt_version(&value);
    let min = i64::from(shared.cfg.minimum_auth_version);
    if min > 0 && version < min {
        return Err(Refused::VersionTooLow { version, min }.into());
    }
    parsed.map_err(|e| {
        match e {
            InvalidMessage::WrongType {
                field: "load",
                expected: "bytes",
                ..
            } => Malformed::AesLoadNotBytes,
            InvalidMessage::WrongType { field: "load", .. } => Malformed::LoadNotADict,
            InvalidMessage::WrongType { field: "enc", .. }
            | InvalidMessage::BadValue { field: "enc", .. } => Malformed::UnknownEnc,
            other => Malformed::Envelope(other),
        }
        .into()
    })
}

/// The id check Salt's request server makes on every load, clear or decrypted.
fn check_id(load: &Value) -> Result<(), RequestError> {
    match salt_proto::msg::load_id(load) {
        Ok(_) => Ok(()),
        Err(InvalidMessage::BadValue { field: "id", .. }) => Err(Malformed::IdNullByte.into()),
        Err(InvalidMessage::NotAMap { .. }) => Err(Malformed::LoadNotADict.into()),
        Err(_) => Err(Malformed::IdNotAString.into()),
    }
}

fn handle_clear(shared: &Shared, load: &Value, version: i64) -> Vec<u8> {
    if let Err(e) = check_id(load) {
        return error::reply(shared, load.cmd(), &e, None);
    }
    match load.cmd() {
        Some("_auth") => handle_auth(shared, load, version),
        // Salt's `ping` answers with the load itself.
        Some("ping") => encode(load),
        _ => clear::handle(shared, load),
    }
}
