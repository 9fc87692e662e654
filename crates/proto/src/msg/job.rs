//! Publishing jobs: the payload on the PUB socket and the job load inside it
//! (salt-wire-protocol.md §7.1–§7.3).

use rmpv::Value;

use super::decode_as;
use super::fields::{Fields, InvalidMessage};
use crate::value::MapBuilder;

/// The publish payload: `{"enc": "aes", "load": <ciphertext>, "sig_algo", "sig"}` (§7.2).
#[derive(Clone, Debug, PartialEq)]
pub struct PublishPayload {
    /// Publish-key Crypticle ciphertext of the job load (no nonce).
    pub load: Vec<u8>,
    /// Algorithm of `sig` (present when the master has `sign_pub_messages`).
    pub sig_algo: Option<String>,
    /// PKCS#1 v1.5 signature (master key) over the `load` bytes.
    pub sig: Option<Vec<u8>>,
}

impl PublishPayload {
    const MSG: &'static str = "PublishPayload";

    /// The wire map, keys in Salt's order (`enc, load, sig_algo, sig`).
    pub fn to_value(&self) -> Value {
        MapBuilder::new()
            .str("enc", "aes")
            .bytes("load", &self.load)
            .opt("sig_algo", self.sig_algo.as_deref())
            .opt("sig", self.sig.as_ref().map(|s| Value::Binary(s.clone())))
            .build()
    }

    /// Reads a publish payload; `enc` must be `"aes"` (a Python minion ignores
    /// anything else) and `load` bytes.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        f.expect_text("enc", "aes", "expected \"aes\"")?;
        Ok(Self {
            load: f.bytes("load")?.to_vec(),
            sig_algo: f.opt_text("sig_algo")?.map(str::to_owned),
            sig: f.opt_bytes("sig")?.map(<[u8]>::to_vec),
        })
    }

    /// Decodes msgpack bytes and reads them with [`Self::from_value`].
    ///
    /// # Errors
    /// [`InvalidMessage::Decode`] for undecodable bytes, else as [`Self::from_value`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, InvalidMessage> {
        decode_as(Self::MSG, bytes, Self::from_value)
    }
}

/// A job load (§7.1), the clear content of a publish.
///
/// The minion requires `tgt`, `jid`, `fun` and `arg`; everything else is optional
/// here. Keys this type does not model are kept in [`JobLoad::extra`].
#[derive(Clone, Debug, PartialEq)]
pub struct JobLoad {
    /// Function name, or a list of names for multi-function jobs.
    pub fun: Value,
    /// Arguments; keyword arguments are a map element with `"__kwarg__": True`.
    pub arg: Vec<Value>,
    /// Target: text, or a list for `tgt_type: list`.
    pub tgt: Value,
    /// Job id.
    pub jid: String,
    /// Returner name(s), `""` when none.
    pub ret: Option<Value>,
    /// Target type (`glob` when absent).
    pub tgt_type: Option<String>,
    /// Publishing user.
    pub user: Option<String>,
    /// Publish serial added by the publisher (§6.1).
    pub serial: Option<i64>,
    /// Every other key, in order.
    pub extra: Vec<(Value, Value)>,
}

/// Salt's key order for job loads (`_prep_pub` then the publisher's `serial`).
/// Extra keys are written at their place in this list, unknown ones before `user`.
const JOB_ORDER: &[&str] = &[
    "fun",
    "arg",
    "tgt",
    "jid",
    "ret",
    "master_id",
    "delimiter",
    "id",
    "tgt_type",
    "to",
    "ret_config",
    "metadata",
    "module_executors",
    "executor_opts",
    "ret_kwargs",
    "user",
    "serial",
];

const JOB_TYPED: &[&str] = &[
    "fun", "arg", "tgt", "jid", "ret", "tgt_type", "user", "serial",
];

impl JobLoad {
    const MSG: &'static str = "JobLoad";

    /// A glob-targeted job with no extra keys and no serial yet.
    pub fn new(fun: &str, arg: Vec<Value>, tgt: &str, jid: &str, user: &str) -> Self {
        Self {
            fun: Value::from(fun),
            arg,
            tgt: Value::from(tgt),
            jid: jid.to_owned(),
            ret: Some(Value::from("")),
            tgt_type: Some("glob".to_owned()),
            user: Some(user.to_owned()),
            serial: None,
            extra: Vec::new(),
        }
    }

    /// The target type, `glob` when absent.
    pub fn tgt_type(&self) -> &str {
        self.tgt_type.as_deref().unwrap_or("glob")
    }

    /// The extra value stored under `key`, if any.
    pub fn extra_get(&self, key: &str) -> Option<&Value> {
        self.extra
            .iter()
            .rev()
            .find(|(k, _)| crate::ValueExt::as_bytes(k) == Some(key.as_bytes()))
            .map(|(_, v)| v)
    }

    fn typed(&self, key: &str) -> Option<Value> {
        match key {
            "fun" => Some(self.fun.clone()),
            "arg" => Some(Value::Array(self.arg.clone())),
            "tgt" => Some(self.tgt.clone()),
            "jid" => Some(Value::from(self.jid.as_str())),
            "ret" => self.ret.clone(),
            "tgt_type" => self.tgt_type.as_deref().map(Value::from),
            "user" => self.user.as_deref().map(Value::from),
            "serial" => self.serial.map(Value::from),
            _ => None,
        }
    }

    /// The load map in Salt's key order (see the source's `JOB_ORDER`).
    pub fn to_value(&self) -> Value {
        let mut b = MapBuilder::new();
        let is_known = |k: &Value| {
            crate::ValueExt::as_bytes(k)
                .is_some_and(|kb| JOB_ORDER.iter().any(|n| n.as_bytes() == kb))
        };
        for name in JOB_ORDER {
            if *name == "user" {
                // Unknown extra keys go just before `user`.
                b = b.extend(self.extra.iter().filter(|(k, _)| !is_known(k)).cloned());
            }
            if JOB_TYPED.contains(name) {
                if let Some(v) = self.typed(name) {
                    b.push(name, v);
                }
            } else if let Some(v) = self.extra_get(name) {
                b.push(name, v.clone());
            }
        }
        b.build()
    }

    /// Reads a job load: `fun` (text or list), `arg` (list), `tgt` (text or list) and
    /// `jid` (text) are required; `tgt_type`/`user` text and `serial` an integer when
    /// present.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        let fun = f.req("fun")?;
        if !(crate::ValueExt::as_text(fun).is_some() || fun.is_array()) {
            return Err(f.wrong("fun", "text or a list"));
        }
        let tgt = f.req("tgt")?;
        if !(crate::ValueExt::as_text(tgt).is_some() || tgt.is_array()) {
            return Err(f.wrong("tgt", "text or a list"));
        }
        Ok(Self {
            fun: fun.clone(),
            arg: f.array("arg")?.to_vec(),
            tgt: tgt.clone(),
            jid: f.text("jid")?.to_owned(),
            ret: f.raw("ret").cloned(),
            tgt_type: f.opt_text("tgt_type")?.map(str::to_owned),
            user: f.opt_text("user")?.map(str::to_owned),
            serial: f.opt_int("serial")?,
            extra: f.extra(JOB_TYPED),
        })
    }

    /// Decodes msgpack bytes and reads them with [`Self::from_value`].
    ///
    /// # Errors
    /// [`InvalidMessage::Decode`] for undecodable bytes, else as [`Self::from_value`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, InvalidMessage> {
        decode_as(Self::MSG, bytes, Self::from_value)
    }
}
