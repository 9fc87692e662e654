//! Loads of the requests a minion sends on the request port (salt-wire-protocol.md
//! §2.3, §7.4, §10.1, §10.2) and the channel fields added to every AES load.

use rmpv::Value;

use super::decode_as;
use super::fields::{Fields, InvalidMessage};
use crate::value::{MapBuilder, ValueExt, map_remove, map_set};

/// The fields the request channel appends to every AES load (§2.3):
/// `nonce`, `ts`, `tok`, `id`, in that order.
#[derive(Clone, PartialEq, Eq)]
pub struct RequestMeta {
    /// uuid4 hex nonce the encrypted reply is bound to.
    pub nonce: String,
    /// `int(time.time())` of the minion; optional on read since masters only look at
    /// it with `request_server_ttl`.
    pub ts: Option<i64>,
    /// The minion token (X9.31 signature of `b"salt"` with the minion key).
    pub tok: Vec<u8>,
    /// Minion id.
    pub id: String,
}

impl std::fmt::Debug for RequestMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestMeta")
            .field("nonce", &self.nonce)
            .field("ts", &self.ts)
            .field("tok", &format_args!("<{} bytes>", self.tok.len()))
            .field("id", &self.id)
            .finish()
    }
}

impl RequestMeta {
    const MSG: &'static str = "RequestMeta";

    /// Minion side: sets `nonce`, `ts`, `tok` and `id` on `load` like Python dict
    /// assignment (existing keys keep their place, new ones are appended in that
    /// order). Returns `false` if `load` is not a map.
    pub fn apply(&self, load: &mut Value) -> bool {
        if !load.is_map() {
            return false;
        }
        map_set(load, "nonce", Value::from(self.nonce.as_str()));
        if let Some(ts) = self.ts {
            map_set(load, "ts", Value::from(ts));
        }
        map_set(load, "tok", Value::Binary(self.tok.clone()));
        map_set(load, "id", Value::from(self.id.as_str()));
        true
    }

    /// Master side (§2.4 step 6): reads `nonce` (text), `ts` (integer, optional),
    /// `tok` (bytes) and `id` (text), then removes `nonce` and `tok` from the load as
    /// the Python master does before dispatch. On error the load is left unchanged.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first missing or mistyped field.
    pub fn take(load: &mut Value) -> Result<Self, InvalidMessage> {
        let meta = {
            let f = Fields::new(Self::MSG, load)?;
            Self {
                nonce: f.text("nonce")?.to_owned(),
                ts: f.opt_int("ts")?,
                tok: f.bytes("tok")?.to_vec(),
                id: f.text("id")?.to_owned(),
            }
        };
        map_remove(load, "nonce");
        map_remove(load, "tok");
        Ok(meta)
    }
}

/// Reads `cmd` and checks it.
fn expect_cmd(
    f: &Fields<'_>,
    cmd: &'static str,
    reason: &'static str,
) -> Result<(), InvalidMessage> {
    f.expect_text("cmd", cmd, reason)
}

/// The events carried by a [`MinionEvent`].
#[derive(Clone, Debug, PartialEq)]
pub enum EventBody {
    /// `events: [{tag, data}, ...]`.
    Batch(Vec<(String, Value)>),
    /// `tag` + `data`.
    Single {
        /// Event tag.
        tag: String,
        /// Event data.
        data: Value,
    },
}

/// An event fired on the master bus, `cmd: "_minion_event"`.
#[derive(Clone, Debug, PartialEq)]
pub struct MinionEvent {
    /// Minion id.
    pub id: String,
    /// Tag prefix (may be `None`).
    pub pretag: Option<String>,
    /// The minion token as `_fire_master` puts it in the load.
    pub tok: Option<Vec<u8>>,
    /// The event(s).
    pub body: EventBody,
    /// Start-event grains (`start_event_grains`).
    pub grains: Option<Value>,
    /// Every other key, in order (`nonce`, `ts` once the channel added them).
    pub extra: Vec<(Value, Value)>,
}

const EVENT_TYPED: &[&str] = &[
    "id", "cmd", "pretag", "tok", "events", "data", "tag", "grains",
];

impl MinionEvent {
    const MSG: &'static str = "MinionEvent";

    /// The load map in Salt's order:
    /// `id, cmd, pretag, tok, (events | data, tag), [grains]`, then extras.
    pub fn to_value(&self) -> Value {
        let mut b = MapBuilder::new()
            .str("id", &self.id)
            .str("cmd", "_minion_event")
            .insert(
                "pretag",
                self.pretag.as_deref().map_or(Value::Nil, Value::from),
            );
        if let Some(tok) = &self.tok {
            b = b.bytes("tok", tok);
        }
        b = match &self.body {
            EventBody::Batch(events) => b.insert(
                "events",
                Value::Array(
                    events
                        .iter()
                        .map(|(tag, data)| {
                            MapBuilder::new()
                                .str("tag", tag)
                                .insert("data", data.clone())
                                .build()
                        })
                        .collect(),
                ),
            ),
            EventBody::Single { tag, data } => b.insert("data", data.clone()).str("tag", tag),
        };
        b.opt("grains", self.grains.clone())
            .extend(self.extra.iter().cloned())
            .build()
    }

    /// Reads a `_minion_event` load as Salt's master does (`masterapi._minion_event`):
    /// `events`, a list of maps with a text `tag` (an event without `data` carries the
    /// event map itself, as Salt fires it), or `tag` (text) with `data` (any, required).
    /// `grains` may be anything (the master does not read it).
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        expect_cmd(&f, "_minion_event", "expected \"_minion_event\"")?;
        let body = if let Some(events) = f.opt_array("events")? {
            let mut out = Vec::with_capacity(events.len());
            for ev in events {
                let ef =
                    Fields::new(Self::MSG, ev).map_err(|_| f.wrong("events", "a list of maps"))?;
                let tag = ef
                    .text("tag")
                    .map_err(|_| f.wrong("events", "maps with a text tag"))?;
                let data = ef.raw("data").unwrap_or(ev).clone();
                out.push((tag.to_owned(), data));
            }
            EventBody::Batch(out)
        } else {
            EventBody::Single {
                tag: f.text("tag")?.to_owned(),
                data: f.req("data")?.clone(),
            }
        };
        Ok(Self {
            id: f.text("id")?.to_owned(),
            pretag: f.opt_text("pretag")?.map(str::to_owned),
            tok: f.opt_bytes("tok")?.map(<[u8]>::to_vec),
            body,
            grains: f.present("grains").cloned(),
            extra: f.extra(EVENT_TYPED),
        })
    }
}

/// A pillar request, `cmd: "_pillar"` (§10.1); answered with [`PillarReply`] when
/// `ver` is `"2"`.
#[derive(Clone, Debug, PartialEq)]
pub struct PillarRequest {
    /// Minion id.
    pub id: String,
    /// The minion's grains (a map).
    pub grains: Value,
    /// `saltenv` (None or text).
    pub saltenv: Option<String>,
    /// `pillarenv` (None or text).
    pub pillarenv: Option<String>,
    /// `pillar_override` (usually a map).
    pub pillar_override: Value,
    /// `extra_minion_data` (usually a map).
    pub extra_minion_data: Value,
    /// Protocol of the reply: `"2"` = signed `send_private`.
    pub ver: Option<String>,
    /// `clean_cache`, when set.
    pub clean_cache: Option<bool>,
    /// `ext` (external pillar), when set.
    pub ext: Option<Value>,
    /// Every other key, in order.
    pub extra: Vec<(Value, Value)>,
}

const PILLAR_TYPED: &[&str] = &[
    "id",
    "grains",
    "saltenv",
    "pillarenv",
    "pillar_override",
    "extra_minion_data",
    "ver",
    "cmd",
    "clean_cache",
    "ext",
];

impl PillarRequest {
    const MSG: &'static str = "PillarRequest";

    /// The load map in Salt's order: `id, grains, saltenv, pillarenv,
    /// pillar_override, extra_minion_data, ver, cmd, [clean_cache], [ext]`, extras.
    pub fn to_value(&self) -> Value {
        let opt_text = |s: &Option<String>| s.as_deref().map_or(Value::Nil, Value::from);
        MapBuilder::new()
            .str("id", &self.id)
            .insert("grains", self.grains.clone())
            .insert("saltenv", opt_text(&self.saltenv))
            .insert("pillarenv", opt_text(&self.pillarenv))
            .insert("pillar_override", self.pillar_override.clone())
            .insert("extra_minion_data", self.extra_minion_data.clone())
            .opt("ver", self.ver.as_deref())
            .str("cmd", "_pillar")
            .opt("clean_cache", self.clean_cache)
            .opt("ext", self.ext.clone())
            .extend(self.extra.iter().cloned())
            .build()
    }

    /// Reads a `_pillar` load as Salt's `AESFuncs._pillar` needs it: `id` text, `grains` a
    /// map (both required); `saltenv`/`pillarenv` text when present; `ver` as Salt
    /// compares it (non-text is none); `clean_cache` a bool when present.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        expect_cmd(&f, "_pillar", "expected \"_pillar\"")?;
        Ok(Self {
            id: f.text("id")?.to_owned(),
            grains: f.map("grains")?.clone(),
            saltenv: f.opt_text("saltenv")?.map(str::to_owned),
            pillarenv: f.opt_text("pillarenv")?.map(str::to_owned),
            pillar_override: f
                .raw("pillar_override")
                .cloned()
                .unwrap_or(Value::Map(Vec::new())),
            extra_minion_data: f
                .raw("extra_minion_data")
                .cloned()
                .unwrap_or(Value::Map(Vec::new())),
            ver: f.raw("ver").and_then(ValueExt::as_text).map(str::to_owned),
            clean_cache: f.opt_bool("clean_cache")?,
            ext: f.present("ext").cloned(),
            extra: f.extra(PILLAR_TYPED),
        })
    }
}

impl PillarRequest {
    /// `saltenv`, or the older `env` when `saltenv` is absent (Salt's
    /// `load.get("saltenv", load.get("env"))`).
    pub fn saltenv_or_env(&self) -> Option<&str> {
        self.saltenv.as_deref().or_else(|| {
            self.extra
                .iter()
                .rev()
                .find(|(k, _)| k.as_text() == Some("env"))
                .and_then(|(_, v)| v.as_text())
        })
    }
}

/// The `send_private` pillar reply `{"key": <OAEP bytes>, "pillar": <ciphertext>}` (§10.2).
#[derive(Clone, Debug, PartialEq)]
pub struct PillarReply {
    /// One-off key string, OAEP-encrypted to the minion key.
    pub key: Vec<u8>,
    /// Crypticle(one-off key) ciphertext of [`PillarSignedData`].
    pub pillar: Vec<u8>,
}

impl PillarReply {
    const MSG: &'static str = "PillarReply";

    /// The reply map (`key, pillar`).
    pub fn to_value(&self) -> Value {
        MapBuilder::new()
            .bytes("key", &self.key)
            .bytes("pillar", &self.pillar)
            .build()
    }

    /// Reads the reply; both fields are required bytes (a reply without `key` makes
    /// a Python minion re-authenticate and retry).
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        Ok(Self {
            key: f.bytes("key")?.to_vec(),
            pillar: f.bytes("pillar")?.to_vec(),
        })
    }

    /// Decodes msgpack bytes and reads them with [`Self::from_value`].
    ///
    /// # Errors
    /// [`InvalidMessage::Decode`] for undecodable bytes, else as [`Self::from_value`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, InvalidMessage> {
        decode_as(Self::MSG, bytes, Self::from_value)
    }

    /// The `{"error": ...}` a master answers in place of the pillar, as text (Python's
    /// `str()` of it); `None` for any other reply.
    pub fn master_error(v: &Value) -> Option<String> {
        v.as_entries()?;
        v.get("error").map(salt_compat::py_str)
    }
}

/// The signed content of [`PillarReply::pillar`] once decrypted:
/// `{"data": <msgpack of PillarData>, "sig": <PKCS#1 v1.5 over data>}`.
#[derive(Clone, Debug, PartialEq)]
pub struct PillarSignedData {
    /// msgpack of [`PillarData`], exactly as signed.
    pub data: Vec<u8>,
    /// Master signature over `data`.
    pub sig: Vec<u8>,
}

impl PillarSignedData {
    const MSG: &'static str = "PillarSignedData";

    /// The map (`data, sig`).
    pub fn to_value(&self) -> Value {
        MapBuilder::new()
            .bytes("data", &self.data)
            .bytes("sig", &self.sig)
            .build()
    }

    /// Reads the map; both fields required bytes.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        Ok(Self {
            data: f.bytes("data")?.to_vec(),
            sig: f.bytes("sig")?.to_vec(),
        })
    }
}

/// The signed pillar data `{"key": <same bytes as the reply key>, "pillar": {...}, "nonce": N}`.
#[derive(Clone, Debug, PartialEq)]
pub struct PillarData {
    /// Must equal [`PillarReply::key`].
    pub key: Vec<u8>,
    /// The pillar (a map).
    pub pillar: Value,
    /// Must equal the request nonce.
    pub nonce: String,
}

impl PillarData {
    const MSG: &'static str = "PillarData";

    /// The map (`key, pillar, nonce`).
    pub fn to_value(&self) -> Value {
        MapBuilder::new()
            .bytes("key", &self.key)
            .insert("pillar", self.pillar.clone())
            .str("nonce", &self.nonce)
            .build()
    }

    /// Reads the map: `key` bytes, `pillar` a map, `nonce` text.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        Ok(Self {
            key: f.bytes("key")?.to_vec(),
            pillar: f.map("pillar")?.clone(),
            nonce: f.text("nonce")?.to_owned(),
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

/// The clear `ping` load `{"cmd": "ping"}` (failback check, §8.4). The Python
/// master answers with the load itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ping {
    /// Any other keys, in order.
    pub extra: Vec<(Value, Value)>,
}

impl Ping {
    const MSG: &'static str = "Ping";

    /// The load map.
    pub fn to_value(&self) -> Value {
        MapBuilder::new()
            .str("cmd", "ping")
            .extend(self.extra.iter().cloned())
            .build()
    }

    /// Reads a ping load (`cmd` must be `"ping"`).
    ///
    /// # Errors
    /// [`InvalidMessage`] if not a map or `cmd` is not `"ping"`.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        expect_cmd(&f, "ping", "expected \"ping\"")?;
        Ok(Self {
            extra: f.extra(&["cmd"]),
        })
    }
}

/// A mine update, `cmd: "_mine"`; the Python master replies `True`.
#[derive(Clone, Debug, PartialEq)]
pub struct MineLoad {
    /// Mine data (function name → result).
    pub data: Value,
    /// Minion id.
    pub id: String,
    /// Replace (`true`) rather than merge the stored mine data.
    pub clear: Option<bool>,
    /// Every other key, in order.
    pub extra: Vec<(Value, Value)>,
}

impl MineLoad {
    const MSG: &'static str = "MineLoad";

    /// The load map (`cmd, data, id, clear`, extras).
    pub fn to_value(&self) -> Value {
        MapBuilder::new()
            .str("cmd", "_mine")
            .insert("data", self.data.clone())
            .str("id", &self.id)
            .opt("clear", self.clear)
            .extend(self.extra.iter().cloned())
            .build()
    }

    /// Reads a `_mine` load: `data` present (Salt's `__verify_load`; a non-map `data`
    /// changes nothing), `id` text, `clear` a bool when present.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first bad field.
    pub fn from_value(v: &Value) -> Result<Self, InvalidMessage> {
        let f = Fields::new(Self::MSG, v)?;
        expect_cmd(&f, "_mine", "expected \"_mine\"")?;
        Ok(Self {
            data: f.req("data")?.clone(),
            id: f.text("id")?.to_owned(),
            clear: f.opt_bool("clear")?,
            extra: f.extra(&["cmd", "data", "id", "clear"]),
        })
    }
}
