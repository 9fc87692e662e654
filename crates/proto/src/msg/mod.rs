//! Typed Salt messages.
//!
//! Each type converts to and from a [`Value`] with `to_value()` /
//! `from_value(&Value) -> Result<Self, InvalidMessage>`. Readers are tolerant of
//! extra keys (kept in an `extra` list where Salt allows arbitrary keys) and strict
//! on the types of the fields they need. Writers emit keys in the order Python Salt
//! does, so `encode(&msg.to_value())` matches `salt.payload.dumps` of the same
//! message byte for byte.
//!
//! Conventions: a field documented as optional may be absent or `None` (nil) on the
//! wire; when present it must have the documented type. "Text" accepts msgpack str
//! or bin holding valid UTF-8; "bytes" accepts any str or bin.

mod aes;
mod auth;
mod envelope;
pub(crate) mod fields;
pub(crate) mod files;
mod job;
mod requests;
mod returns;
mod signed;

pub use aes::{AesMeta, Command, FILE_COMMANDS, FileRequest, MineDelete, MineGet, Return, load_id};
pub use auth::{
    AuthFailure, AuthReply, AuthRequest, AuthResponse, AuthRet, AuthSuccess, SignedClearReply,
};
pub use envelope::{AesRequest, ClearRequest, Enc, ErrorReply, RequestEnvelope, salt_version};
pub use fields::InvalidMessage;
pub use files::{
    FileHash, FileLoad, FileRecv, FileRef, ListKind, ServeChunk, ServeFile, find_stat,
};
pub use job::{JobLoad, PublishPayload};
pub use requests::{
    EventBody, MineLoad, MinionEvent, PillarData, PillarReply, PillarRequest, PillarSignedData,
    Ping, RequestMeta,
};
pub use returns::{OutAt, ReturnIds, ReturnLoad};
pub use signed::{LoadSignature, check_load, sign_load, signed_bytes};

use rmpv::Value;

/// Protocol version every current (3006.12+/3007.4+) minion sends and this crate writes.
pub const PROTOCOL_VERSION: i64 = 3;
/// Default `enc_algo` (Salt `encryption_algorithm`).
pub const DEFAULT_ENC_ALGO: &str = "OAEP-SHA1";
/// Default `sig_algo` (Salt `signing_algorithm` / `publish_signing_algorithm`).
pub const DEFAULT_SIG_ALGO: &str = "PKCS1v15-SHA1";

/// Decodes bytes then reads them as message `T`, mapping decode errors to
/// [`InvalidMessage::Decode`].
pub(crate) fn decode_as<T>(
    msg: &'static str,
    bytes: &[u8],
    read: impl FnOnce(&Value) -> Result<T, InvalidMessage>,
) -> Result<T, InvalidMessage> {
    let v = crate::decode(bytes).map_err(|source| InvalidMessage::Decode { msg, source })?;
    read(&v)
}
