//! The job return a minion sends, `cmd: "_return"` (salt-wire-protocol.md §7.4), in the
//! key order Salt's minion writes it.

use rmpv::Value;

use super::fields::{Fields, InvalidMessage};
use crate::value::{MapBuilder, ValueExt};

/// Reads `cmd` and checks it.
fn expect_cmd(f: &Fields<'_>) -> Result<(), InvalidMessage> {
    f.expect_text("cmd", "_return", "expected \"_return\"")
}

/// A job return, `cmd: "_return"` (§7.4).
///
/// The minion copies every key of its result into the load; the usual ones are
/// typed here and the rest kept in order in [`ReturnLoad::extra`] (which also holds
/// `nonce`/`ts`/`tok` when present).
///
/// Salt's minion (`_thread_return`, then `_prepare_return_pub`) writes
/// `cmd, id, success, return, retcode, jid, fun, fun_args`, then `user`, `master_id`,
/// `metadata` when the publish had them. `out` lands where the outcome put it: after
/// `retcode` for a function that is not available, before it for a function that raised
/// ([`OutAt`]); an `__outputter__` hint is appended after every other key, so it belongs in
/// `extra`.
#[derive(Clone, Debug, PartialEq)]
pub struct ReturnLoad {
    /// Minion id.
    pub id: String,
    /// Job id (`"req"` for jobs the minion started itself).
    pub jid: String,
    /// Function name (a list for multi-function jobs).
    pub fun: Value,
    /// The function's return value (wire key `return`).
    pub ret: Value,
    /// `success` (a bool, or a map for multi-function jobs).
    pub success: Option<Value>,
    /// `retcode` (0 = success; a map for multi-function jobs).
    pub retcode: Option<Value>,
    /// `out` (outputter name) when next to `return`/`retcode`; elsewhere it is in `extra`.
    pub out: Option<(String, OutAt)>,
    /// The publish's arguments.
    pub fun_args: Option<Vec<Value>>,
    /// Every other key, in order.
    pub extra: Vec<(Value, Value)>,
}

/// Where `out` sits in a [`ReturnLoad`], as Salt's minion fills its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutAt {
    /// `return, out, retcode`: the function raised (`CommandExecutionError`, ...).
    BeforeRetcode,
    /// `return, retcode, out`: the function is not available.
    AfterRetcode,
}

const RETURN_TYPED: &[&str] = &[
    "cmd", "id", "success", "return", "retcode", "jid", "fun", "fun_args",
];
const RETURN_TYPED_OUT: &[&str] = &[
    "cmd", "id", "success", "return", "retcode", "out", "jid", "fun", "fun_args",
];

/// The identity of a `_return` load, read without copying it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReturnIds<'a> {
    /// Job id.
    pub jid: &'a str,
    /// Minion id.
    pub id: &'a str,
}

impl ReturnLoad {
    const MSG: &'static str = "ReturnLoad";

    /// The load map: `cmd, id, success, return, [out], retcode, [out], jid, fun,
    /// fun_args`, then the extra keys in order (the order a Python minion produces).
    pub fn to_value(&self) -> Value {
        let out = |at: OutAt| {
            self.out
                .as_ref()
                .filter(|(_, a)| *a == at)
                .map(|(name, _)| name.as_str())
        };
        MapBuilder::new()
            .str("cmd", "_return")
            .str("id", &self.id)
            .opt("success", self.success.clone())
            .insert("return", self.ret.clone())
            .opt("out", out(OutAt::BeforeRetcode))
            .opt("retcode", self.retcode.clone())
            .opt("out", out(OutAt::AfterRetcode))
            .str("jid", &self.jid)
            .insert("fun", self.fun.clone())
            .opt("fun_args", self.fun_args.clone().map(Value::Array))
            .extend(self.extra.iter().cloned())
            .build()
    }

    /// Reads a `_return` load as a minion writes it: `cmd` must be `"_return"`; what the
    /// master requires (`return` present, `id` and `jid` text: [`super::Return::read`]),
    /// and `fun` text or list, `fun_args` a list when present.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        expect_cmd(&f)?;
        let (jid, id) = super::aes::return_ids(&f)?;
        let fun = f.req("fun")?;
        if !(fun.as_text().is_some() || fun.is_array()) {
            return Err(f.wrong("fun", "text or a list"));
        }
        let out = out_slot(f.entries).and_then(|at| {
            f.raw("out")
                .and_then(Value::as_str)
                .map(|o| (o.to_owned(), at))
        });
        Ok(Self {
            id: id.to_owned(),
            jid: jid.to_owned(),
            fun: fun.clone(),
            ret: f.req("return")?.clone(),
            success: f.raw("success").cloned(),
            retcode: f.raw("retcode").cloned(),
            fun_args: f.opt_array("fun_args")?.map(<[Value]>::to_vec),
            extra: f.extra(if out.is_some() {
                RETURN_TYPED_OUT
            } else {
                RETURN_TYPED
            }),
            out,
        })
    }

    /// The job and minion ids of a `_return` load (what [`Self::from_value`] requires of
    /// `cmd`, `return`, `jid` and `id`), borrowed: for code that routes returns without
    /// reading them (the minion's kept returns).
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn ids(v: &Value) -> Result<ReturnIds<'_>, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        expect_cmd(&f)?;
        let (jid, id) = super::aes::return_ids(&f)?;
        Ok(ReturnIds { jid, id })
    }

    /// The outputter hint, wherever it is in the load.
    pub fn out(&self) -> Option<&str> {
        match &self.out {
            Some((name, _)) => Some(name),
            None => self
                .extra
                .iter()
                .rev()
                .find(|(k, _)| k.as_text() == Some("out"))
                .and_then(|(_, v)| v.as_text()),
        }
    }

    /// Whether the job succeeded: `success` truthy, or when absent `retcode` 0/absent.
    pub fn is_success(&self) -> bool {
        match &self.success {
            Some(s) => s.is_truthy(),
            None => self.retcode.as_ref().is_none_or(|r| r.as_i64() == Some(0)),
        }
    }
}

/// Where a single text `out` key sits: right after `return` with `retcode` next, or right
/// after `retcode`; `None` anywhere else (or duplicated), so that it stays in `extra`.
fn out_slot(entries: &[(Value, Value)]) -> Option<OutAt> {
    let pos = |name: &str| {
        let mut found = entries
            .iter()
            .enumerate()
            .filter(|(_, (k, _))| k.as_bytes() == Some(name.as_bytes()));
        match (found.next(), found.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    };
    let out = pos("out")?;
    // Typed only when it writes back the same bytes: a str key holding a str.
    if !(entries[out].0.is_str() && entries[out].1.is_str()) {
        return None;
    }
    let ret = pos("return")?;
    match pos("retcode") {
        Some(rc) if out == ret + 1 && rc == out + 1 => Some(OutAt::BeforeRetcode),
        Some(rc) if out == rc + 1 && rc == ret + 1 => Some(OutAt::AfterRetcode),
        _ => None,
    }
}
