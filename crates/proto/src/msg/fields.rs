//! Typed field access on a decoded map, producing [`InvalidMessage`] errors that
//! name the message and the field.

use rmpv::Value;

use crate::value::ValueExt;

/// Why a decoded [`Value`] is not a valid instance of a message type.
///
/// Every variant names the message (`msg`, e.g. `"AuthRequest"`) and, where it
/// applies, the offending field.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InvalidMessage {
    /// The body could not be decoded as msgpack at all.
    #[error("{msg}: undecodable msgpack: {source}")]
    Decode {
        /// The message type being read.
        msg: &'static str,
        /// The decoder's error.
        #[source]
        source: crate::DecodeError,
    },
    /// The message (or a nested part of it) should be a map and is not.
    #[error("{msg}: expected a map")]
    NotAMap {
        /// The message type being read.
        msg: &'static str,
    },
    /// A required field is absent.
    #[error("{msg}: missing field `{field}`")]
    MissingField {
        /// The message type being read.
        msg: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A field has the wrong msgpack type.
    #[error("{msg}: field `{field}` should be {expected}")]
    WrongType {
        /// The message type being read.
        msg: &'static str,
        /// The field.
        field: &'static str,
        /// What was expected, in words ("text", "bytes", "an integer", ...).
        expected: &'static str,
    },
    /// A field has the right type but a value this message cannot have (e.g. the
    /// wrong `cmd`, an unknown `enc`, a port out of range).
    #[error("{msg}: field `{field}` has an unexpected value ({reason})")]
    BadValue {
        /// The message type being read.
        msg: &'static str,
        /// The field.
        field: &'static str,
        /// What is wrong, in words.
        reason: &'static str,
    },
}

/// A map being read as message `msg`.
#[derive(Clone, Copy)]
pub(crate) struct Fields<'a> {
    pub(crate) msg: &'static str,
    pub(crate) entries: &'a [(Value, Value)],
}

impl<'a> Fields<'a> {
    pub(crate) fn new(msg: &'static str, v: &'a Value) -> Result<Self, InvalidMessage> {
        match v.as_entries() {
            Some(entries) => Ok(Self { msg, entries }),
            None => Err(InvalidMessage::NotAMap { msg }),
        }
    }

    /// The value under `field`, last match wins (Python dict semantics).
    pub(crate) fn raw(&self, field: &str) -> Option<&'a Value> {
        self.entries
            .iter()
            .rev()
            .find(|(k, _)| k.as_bytes() == Some(field.as_bytes()))
            .map(|(_, v)| v)
    }

    /// The value under `field`, treating `None`/nil as absent.
    pub(crate) fn present(&self, field: &str) -> Option<&'a Value> {
        self.raw(field).filter(|v| !v.is_nil())
    }

    pub(crate) fn missing(&self, field: &'static str) -> InvalidMessage {
        InvalidMessage::MissingField {
            msg: self.msg,
            field,
        }
    }

    pub(crate) fn wrong(&self, field: &'static str, expected: &'static str) -> InvalidMessage {
        InvalidMessage::WrongType {
            msg: self.msg,
            field,
            expected,
        }
    }

    pub(crate) fn bad(&self, field: &'static str, reason: &'static str) -> InvalidMessage {
        InvalidMessage::BadValue {
            msg: self.msg,
            field,
            reason,
        }
    }

    pub(crate) fn req(&self, field: &'static str) -> Result<&'a Value, InvalidMessage> {
        self.raw(field).ok_or_else(|| self.missing(field))
    }

    pub(crate) fn text(&self, field: &'static str) -> Result<&'a str, InvalidMessage> {
        self.req(field)?
            .as_text()
            .ok_or_else(|| self.wrong(field, "text"))
    }

    pub(crate) fn opt_text(&self, field: &'static str) -> Result<Option<&'a str>, InvalidMessage> {
        self.present(field)
            .map(|v| v.as_text().ok_or_else(|| self.wrong(field, "text")))
            .transpose()
    }

    pub(crate) fn bytes(&self, field: &'static str) -> Result<&'a [u8], InvalidMessage> {
        self.req(field)?
            .as_bytes()
            .ok_or_else(|| self.wrong(field, "bytes"))
    }

    pub(crate) fn opt_bytes(
        &self,
        field: &'static str,
    ) -> Result<Option<&'a [u8]>, InvalidMessage> {
        self.present(field)
            .map(|v| v.as_bytes().ok_or_else(|| self.wrong(field, "bytes")))
            .transpose()
    }

    pub(crate) fn int(&self, field: &'static str) -> Result<i64, InvalidMessage> {
        self.req(field)?
            .as_i64()
            .ok_or_else(|| self.wrong(field, "an integer"))
    }

    pub(crate) fn opt_int(&self, field: &'static str) -> Result<Option<i64>, InvalidMessage> {
        self.present(field)
            .map(|v| v.as_i64().ok_or_else(|| self.wrong(field, "an integer")))
            .transpose()
    }

    pub(crate) fn opt_bool(&self, field: &'static str) -> Result<Option<bool>, InvalidMessage> {
        self.present(field)
            .map(|v| v.as_bool().ok_or_else(|| self.wrong(field, "a boolean")))
            .transpose()
    }

    pub(crate) fn array(&self, field: &'static str) -> Result<&'a [Value], InvalidMessage> {
        self.req(field)?
            .as_items()
            .ok_or_else(|| self.wrong(field, "a list"))
    }

    pub(crate) fn opt_array(
        &self,
        field: &'static str,
    ) -> Result<Option<&'a [Value]>, InvalidMessage> {
        self.present(field)
            .map(|v| v.as_items().ok_or_else(|| self.wrong(field, "a list")))
            .transpose()
    }

    pub(crate) fn map(&self, field: &'static str) -> Result<&'a Value, InvalidMessage> {
        let v = self.req(field)?;
        if v.is_map() {
            Ok(v)
        } else {
            Err(self.wrong(field, "a map"))
        }
    }

    pub(crate) fn opt_map(&self, field: &'static str) -> Result<Option<&'a Value>, InvalidMessage> {
        match self.present(field) {
            Some(v) if v.is_map() => Ok(Some(v)),
            Some(_) => Err(self.wrong(field, "a map")),
            None => Ok(None),
        }
    }

    /// Requires `field` to be the text `expected` (e.g. `cmd`, `enc`).
    pub(crate) fn expect_text(
        &self,
        field: &'static str,
        expected: &'static str,
        reason: &'static str,
    ) -> Result<(), InvalidMessage> {
        if self.text(field)? == expected {
            Ok(())
        } else {
            Err(self.bad(field, reason))
        }
    }

    /// The entries whose key is not one of `known`, in their original order (for
    /// duplicated keys only the last one, as Python would keep).
    pub(crate) fn extra(&self, known: &[&str]) -> Vec<(Value, Value)> {
        let mut out: Vec<(Value, Value)> = Vec::new();
        for (i, (k, v)) in self.entries.iter().enumerate() {
            let kb = k.as_bytes();
            if kb.is_some_and(|kb| known.iter().any(|n| n.as_bytes() == kb)) {
                continue;
            }
            // Skip this entry if the same key appears again later.
            let later = self
                .entries
                .iter()
                .skip(i + 1)
                .any(|(k2, _)| keys_equal(k, k2));
            if !later {
                out.push((k.clone(), v.clone()));
            }
        }
        out
    }
}

/// Key equality as Python sees it after decoding: str and bin with the same bytes
/// are the same key; other types compare as values.
fn keys_equal(a: &Value, b: &Value) -> bool {
    match (a.as_bytes(), b.as_bytes()) {
        (Some(x), Some(y)) => x == y,
        (None, None) => a == b,
        _ => false,
    }
}
