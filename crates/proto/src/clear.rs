//! Salt's clear-text commands on the request port (4506): `ClearFuncs` in `salt/master.py`.
//!
//! A clear request's load is `{cmd: ..., ...}` sent unencrypted by Salt's `LocalClient`
//! (`publish`), `salt-api` and `salt.auth.Resolver` (`mk_token`, `get_token`, `runner`,
//! `wheel`), and by minions signing in (`_auth`, read by [`crate::auth_master`]). This is
//! unauthenticated input: [`ClearCommand::from_load`] reads it into one variant per command
//! Salt's master exposes (`ClearFuncs.expose_methods` plus `_auth`), keeps any other command
//! by name ([`ClearCommand::Unknown`]: Salt answers `{}`), bounds every field it keeps
//! ([`MAX_NAME`], [`MAX_SECRET`]) and never panics. Secrets (`password`, `token`, `key`) are
//! held in [`Secret`], zeroized on drop and never printed.
//!
//! Salt's `_prep_auth_info` decides how a load authenticates by which key is *present*:
//! `token`, else `eauth`, else the root/user key ([`AuthKind`]); the readers keep that rule.
//!
//! Errors, as Salt's master answers them: a load without `cmd` (or not a map) gets `{}` and
//! the log line "Received malformed clear command (missing 'cmd')"; a known command whose
//! load lacks what `ClearFuncs` reads (`publish` without `user`, `tgt`, `fun` or `arg`,
//! `runner` without `fun`) makes Salt's handler raise, and its request server answers the
//! string `"Some exception handling minion payload"` (`salt/channel/server.py`).

use std::fmt;

use rmpv::Value;
use zeroize::Zeroizing;

use crate::msg::InvalidMessage;
use crate::value::ValueExt;
use crate::{DecodeLimits, decode_with_limits};

/// Largest clear request accepted, in bytes (Salt sets none; a `LocalClient` publish of a
/// big `state.apply` with inline pillar stays well below).
pub const MAX_CLEAR_REQUEST: usize = 16 * 1024 * 1024;
/// Longest name kept (`eauth`, `username`, `user`, `fun`, `tgt_type`, `jid`, a command).
pub const MAX_NAME: usize = 1024;
/// Longest secret kept (`password`, `token`, `key`).
pub const MAX_SECRET: usize = 8 * 1024;

const MSG: &str = "ClearCommand";

/// A secret from a clear load: zeroized on drop, never shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// A secret holding `s`.
    pub fn new(s: impl Into<String>) -> Self {
        Self(Zeroizing::new(s.into()))
    }

    /// The secret text (to compare or hand to PAM; never to a log).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// How a load authenticates (`ClearFuncs._prep_auth_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthKind {
    /// A `token` key is present.
    Token,
    /// An `eauth` key is present (and no `token`).
    Eauth,
    /// Neither: the caller's root (or per-user) key in `key`.
    User,
}

impl AuthKind {
    /// Salt's name of it (`"token"`, `"eauth"`, `"user"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Token => "token",
            Self::Eauth => "eauth",
            Self::User => "user",
        }
    }
}

/// The external-auth fields of a load (`eauth`, `username`, `password`, `token`,
/// `token_expire`).
///
/// A field present with a value that is not text is kept as empty text: it cannot
/// authenticate, and its presence still decides the [`AuthKind`] as in Salt.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EauthFields {
    /// `eauth`: the backend name.
    pub eauth: Option<String>,
    /// `username`.
    pub username: Option<String>,
    /// `password`.
    pub password: Option<Secret>,
    /// `token`.
    pub token: Option<Secret>,
    /// `token_expire` (seconds; honoured only for users `token_expire_user_override` names).
    pub token_expire: Option<f64>,
}

impl EauthFields {
    /// Read the fields of a load map (absent ones are `None`).
    pub fn from_map(load: &Value) -> Result<Self, InvalidMessage> {
        Ok(Self {
            eauth: name_field(load, "eauth")?,
            username: name_field(load, "username")?,
            password: secret_field(load, "password")?,
            token: secret_field(load, "token")?,
            token_expire: load.get("token_expire").and_then(ValueExt::as_number),
        })
    }

    /// How the load authenticates.
    pub fn kind(&self) -> AuthKind {
        if self.token.is_some() {
            AuthKind::Token
        } else if self.eauth.is_some() {
            AuthKind::Eauth
        } else {
            AuthKind::User
        }
    }
}

/// The function(s) of a publish: one, or the list of a compound command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Funs {
    /// `fun: "test.ping"`.
    One(String),
    /// `fun: ["test.ping", "cmd.run"]` (with `arg` a list of lists).
    Compound(Vec<String>),
}

impl Funs {
    /// The function names.
    pub fn names(&self) -> Vec<&str> {
        match self {
            Self::One(f) => vec![f.as_str()],
            Self::Compound(fs) => fs.iter().map(String::as_str).collect(),
        }
    }
}

/// `cmd: publish` (`LocalClient._prep_pub`).
#[derive(Clone, Debug, PartialEq)]
pub struct Publish {
    /// `tgt`: text, or a list for `tgt_type: list`.
    pub tgt: Value,
    /// `tgt_type` (`glob` when absent).
    pub tgt_type: String,
    /// `fun`.
    pub fun: Funs,
    /// `arg`: the arguments (a list of lists for a compound command).
    pub arg: Vec<Value>,
    /// `key`: the root or user key of a local caller.
    pub key: Option<Secret>,
    /// `user`: who publishes (`sudo_<name>` under sudo).
    pub user: String,
    /// `jid` (absent, empty or nil: the master makes one).
    pub jid: Option<String>,
    /// `ret`: returners (usually `""`).
    pub ret: Value,
    /// `kwargs`: the extra map (`delimiter`, `metadata`, ...), without `password` and
    /// `token` (those are in `auth`).
    pub kwargs: Value,
    /// The eauth fields of `kwargs` (Salt authenticates a publish with them).
    pub auth: EauthFields,
}

/// `cmd: runner` or `cmd: wheel`.
#[derive(Clone, Debug, PartialEq)]
pub struct MasterCall {
    /// `fun`: `module.function`.
    pub fun: String,
    /// `kwarg` (`{}` when absent): the call's keyword arguments; the ACL argument patterns
    /// read its `arg` and `kwarg` (`runner_check(auth_list, fun, clear_load.get("kwarg"))`).
    pub kwarg: Value,
    /// The eauth fields of the load.
    pub auth: EauthFields,
    /// `user` (for root-key calls).
    pub user: Option<String>,
    /// `key` (for root-key calls).
    pub key: Option<Secret>,
    /// The whole load (wheel passes every key on to the function) without `password`,
    /// `token` and `key` (those are in `auth` and `key`; Salt pops them before the call).
    pub load: Value,
}

/// One clear command.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ClearCommand {
    /// `_auth`: a minion signing in (read further by [`crate::msg::AuthRequest`]).
    Auth,
    /// `get_token`: `token` absent gives `None` (Salt answers `False`).
    GetToken(Option<Secret>),
    /// `mk_token`.
    MkToken(EauthFields),
    /// `ping`.
    Ping,
    /// `publish`.
    Publish(Box<Publish>),
    /// `runner`.
    Runner(MasterCall),
    /// A command Salt's master does not expose: answered `{}`, kept by name for the log.
    Unknown(String),
    /// `wheel`.
    Wheel(MasterCall),
}

impl ClearCommand {
    /// Decode a clear load's bytes (bounded by [`MAX_CLEAR_REQUEST`]) and read it.
    pub fn decode(bytes: &[u8]) -> Result<Self, InvalidMessage> {
        let limits = DecodeLimits {
            max_input: MAX_CLEAR_REQUEST,
            ..DecodeLimits::default()
        };
        let load = decode_with_limits(bytes, &limits)
            .map_err(|source| InvalidMessage::Decode { msg: MSG, source })?;
        Self::from_load(&load)
    }

    /// Read a decoded clear load. A load that is not a map or has no text `cmd` is
    /// malformed (Salt logs "Received malformed clear command" and answers `{}`).
    pub fn from_load(load: &Value) -> Result<Self, InvalidMessage> {
        if !load.is_map() {
            return Err(InvalidMessage::NotAMap { msg: MSG });
        }
        let cmd = match load.get("cmd") {
            None => return Err(missing("cmd")),
            Some(v) => v.as_text().ok_or_else(|| wrong("cmd", "text"))?,
        };
        Ok(match cmd {
            "_auth" => Self::Auth,
            "ping" => Self::Ping,
            "get_token" => Self::GetToken(secret_field(load, "token")?),
            "mk_token" => Self::MkToken(EauthFields::from_map(load)?),
            "publish" => Self::Publish(Box::new(read_publish(load)?)),
            "runner" => Self::Runner(read_master_call(load)?),
            "wheel" => Self::Wheel(read_master_call(load)?),
            other => Self::Unknown(bounded(other, "cmd", MAX_NAME)?.to_owned()),
        })
    }

    /// Salt's name of the command (`"publish"`, ...; the name itself for unknown ones).
    pub fn name(&self) -> &str {
        match self {
            Self::Auth => "_auth",
            Self::GetToken(_) => "get_token",
            Self::MkToken(_) => "mk_token",
            Self::Ping => "ping",
            Self::Publish(_) => "publish",
            Self::Runner(_) => "runner",
            Self::Unknown(name) => name,
            Self::Wheel(_) => "wheel",
        }
    }
}

fn read_publish(load: &Value) -> Result<Publish, InvalidMessage> {
    let tgt = load.get("tgt").ok_or_else(|| missing("tgt"))?;
    let tgt_ok = match tgt {
        Value::Array(items) => items.iter().all(|i| i.as_text().is_some()),
        v => v.as_text().is_some(),
    };
    if !tgt_ok {
        return Err(wrong("tgt", "text or a list of text"));
    }
    let fun = match load.get("fun").ok_or_else(|| missing("fun"))? {
        Value::Array(items) => Funs::Compound(
            items
                .iter()
                .map(|i| {
                    i.as_text()
                        .ok_or_else(|| wrong("fun", "text or a list of text"))
                        .and_then(|s| bounded(s, "fun", MAX_NAME))
                        .map(str::to_owned)
                })
                .collect::<Result<_, _>>()?,
        ),
        v => Funs::One(
            bounded(
                v.as_text()
                    .ok_or_else(|| wrong("fun", "text or a list of text"))?,
                "fun",
                MAX_NAME,
            )?
            .to_owned(),
        ),
    };
    let arg = match load.get("arg").ok_or_else(|| missing("arg"))? {
        Value::Array(items) => items.clone(),
        _ => return Err(wrong("arg", "a list")),
    };
    let user = name_field(load, "user")?.ok_or_else(|| missing("user"))?;
    let kwargs = match load.get("kwargs") {
        None | Some(Value::Nil) => Value::Map(Vec::new()),
        Some(v) if v.is_map() => v.clone(),
        Some(_) => return Err(wrong("kwargs", "a map")),
    };
    let auth = EauthFields::from_map(&kwargs)?;
    let kwargs = without_secrets(kwargs);
    let jid = match load.get("jid") {
        None | Some(Value::Nil) => None,
        Some(v) => {
            let s = v.as_text().ok_or_else(|| wrong("jid", "text"))?;
            (!s.is_empty())
                .then(|| bounded(s, "jid", MAX_NAME).map(str::to_owned))
                .transpose()?
        }
    };
    Ok(Publish {
        tgt: tgt.clone(),
        tgt_type: name_field(load, "tgt_type")?.unwrap_or_else(|| "glob".to_owned()),
        fun,
        arg,
        key: secret_field(load, "key")?,
        user,
        jid,
        ret: load.get("ret").cloned().unwrap_or(Value::from("")),
        kwargs,
        auth,
    })
}

fn read_master_call(load: &Value) -> Result<MasterCall, InvalidMessage> {
    let fun = load
        .get("fun")
        .ok_or_else(|| missing("fun"))?
        .as_text()
        .ok_or_else(|| wrong("fun", "text"))?;
    let kwarg = match load.get("kwarg") {
        None => Value::Map(Vec::new()),
        Some(v) if v.is_map() => v.clone(),
        Some(_) => return Err(wrong("kwarg", "a map")),
    };
    Ok(MasterCall {
        fun: bounded(fun, "fun", MAX_NAME)?.to_owned(),
        kwarg,
        auth: EauthFields::from_map(load)?,
        user: name_field(load, "user")?,
        key: secret_field(load, "key")?,
        load: without_secrets(load.clone()),
    })
}

/// `load` without the keys that hold secrets (they live in [`Secret`]s only).
fn without_secrets(mut load: Value) -> Value {
    for k in ["password", "token", "key"] {
        crate::value::map_remove(&mut load, k);
    }
    load
}

/// A name field: absent is `None`; present but not text is empty text (see [`EauthFields`]).
fn name_field(load: &Value, field: &'static str) -> Result<Option<String>, InvalidMessage> {
    match load.get(field) {
        None => Ok(None),
        Some(v) => Ok(Some(
            bounded(v.as_text().unwrap_or_default(), field, MAX_NAME)?.to_owned(),
        )),
    }
}

fn secret_field(load: &Value, field: &'static str) -> Result<Option<Secret>, InvalidMessage> {
    match load.get(field) {
        None => Ok(None),
        Some(v) => Ok(Some(Secret::new(bounded(
            v.as_text().unwrap_or_default(),
            field,
            MAX_SECRET,
        )?))),
    }
}

fn bounded<'a>(s: &'a str, field: &'static str, max: usize) -> Result<&'a str, InvalidMessage> {
    if s.len() > max {
        Err(InvalidMessage::BadValue {
            msg: MSG,
            field,
            reason: "too long",
        })
    } else {
        Ok(s)
    }
}

fn missing(field: &'static str) -> InvalidMessage {
    InvalidMessage::MissingField { msg: MSG, field }
}

fn wrong(field: &'static str, expected: &'static str) -> InvalidMessage {
    InvalidMessage::WrongType {
        msg: MSG,
        field,
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::map;

    #[test]
    fn unknown_and_malformed() {
        let v = map([("cmd", Value::from("_prep_auth_info"))]);
        assert_eq!(
            ClearCommand::from_load(&v),
            Ok(ClearCommand::Unknown("_prep_auth_info".into()))
        );
        assert!(ClearCommand::from_load(&map([("x", Value::from(1))])).is_err());
        assert!(ClearCommand::from_load(&Value::from(1)).is_err());
        let long = "x".repeat(MAX_NAME + 1);
        assert!(ClearCommand::from_load(&map([("cmd", Value::from(long.as_str()))])).is_err());
    }

    #[test]
    fn auth_kind_by_presence() {
        let v = map([
            ("cmd", Value::from("runner")),
            ("fun", Value::from("jobs.list_jobs")),
            ("eauth", Value::from("pam")),
            ("token", Value::Nil),
        ]);
        let ClearCommand::Runner(call) = ClearCommand::from_load(&v).unwrap_or(ClearCommand::Ping)
        else {
            panic!("not a runner call")
        };
        assert_eq!(call.auth.kind(), AuthKind::Token);
        assert_eq!(format!("{:?}", call.auth.token), "Some(Secret(<redacted>))");
    }
}
