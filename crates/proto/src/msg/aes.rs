//! The AES requests the master's request server answers (salt-wire-protocol.md §2.4, §7.4,
//! §10): the channel fields read from every decrypted load before dispatch ([`AesMeta`]) and
//! one typed reader for the command after it ([`Command::read`]).
//!
//! The readers accept what Salt's master accepts: `AESFuncs.__verify_load` only asks for the
//! presence of a command's keys, so a command's required fields are the keys Salt checks, and
//! the reply to a load that lacks one is Salt's (see [`Command::read`]).

use rmpv::Value;

use super::fields::{Fields, InvalidMessage};
use super::{MineLoad, MinionEvent, PillarRequest};
use crate::value::{ValueExt, map_remove};

/// The channel fields of a decrypted AES load (§2.4 step 6), read and (`nonce`, `tok`)
/// removed before the command sees the load, as Salt's request server does.
#[derive(Clone, PartialEq)]
pub struct AesMeta {
    /// `id` (a msgpack str without NUL), when present.
    pub id: Option<String>,
    /// `nonce` the reply is bound to (protocol version > 1; a non-text nonce counts as none).
    pub nonce: Option<String>,
    /// `ts` as a number (`request_server_ttl`); anything else counts as none.
    pub ts: Option<f64>,
    /// `tok` (msgpack str or bin), popped from the load whatever the version.
    pub tok: Option<Vec<u8>>,
    /// `cmd` as text; `None` when absent or not text.
    pub cmd: Option<String>,
}

impl std::fmt::Debug for AesMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AesMeta")
            .field("id", &self.id)
            .field("nonce", &self.nonce)
            .field("ts", &self.ts)
            .field("tok", &self.tok.as_ref().map(Vec::len))
            .field("cmd", &self.cmd)
            .finish()
    }
}

impl AesMeta {
    const MSG: &'static str = "AesLoad";

    /// Reads the channel fields of `load`, decrypted from an envelope of protocol `version`,
    /// and removes `nonce` (version > 1) and `tok` from it. On error the load is unchanged.
    ///
    /// # Errors
    /// * [`InvalidMessage::NotAMap`]: the load is not a map (Salt: "payload and load must be
    ///   a dict");
    /// * `BadValue` on `id`: the id contains a NUL byte ("bad load: id contains a null byte");
    /// * `WrongType` on `id` (not a msgpack str) or `tok` (not str/bin).
    pub fn take(load: &mut Value, version: i64) -> Result<Self, InvalidMessage> {
        let meta = {
            let id = load_id(load)?.map(str::to_owned);
            let f = Fields::new(Self::MSG, load)?;
            let tok = match f.raw("tok") {
                None => None,
                Some(t) => Some(
                    t.as_bytes()
                        .ok_or_else(|| f.wrong("tok", "bytes"))?
                        .to_vec(),
                ),
            };
            Self {
                id,
                nonce: (version > 1)
                    .then(|| {
                        f.raw("nonce")
                            .and_then(ValueExt::as_text)
                            .map(str::to_owned)
                    })
                    .flatten(),
                ts: f.raw("ts").and_then(Value::as_f64),
                tok,
                cmd: f.raw("cmd").and_then(ValueExt::as_text).map(str::to_owned),
            }
        };
        if version > 1 {
            map_remove(load, "nonce");
        }
        map_remove(load, "tok");
        Ok(meta)
    }
}

/// The `id` of a load (clear or decrypted) as Salt's request server checks it on every
/// request: absent, or a msgpack str without NUL.
///
/// # Errors
/// `NotAMap` (not a map), `BadValue` on `id` (a NUL byte: Salt answers "bad load: id contains
/// a null byte"), `WrongType` on `id` (not a str).
pub fn load_id(load: &Value) -> Result<Option<&str>, InvalidMessage> {
    let f = Fields::new(AesMeta::MSG, load)?;
    match f.raw("id") {
        None => Ok(None),
        Some(Value::String(s)) => match s.as_str() {
            Some(id) if id.contains('\0') => Err(f.bad("id", "contains a null byte")),
            Some(id) => Ok(Some(id)),
            None => Err(f.wrong("id", "text")),
        },
        Some(_) => Err(f.wrong("id", "text")),
    }
}

/// A job return as the master takes it (`cmd: "_return"`, §7.4): Salt's `store_job` needs
/// `return`, `jid` and `id`; the load is kept as the minion sent it (without `cmd`, `nonce`,
/// `tok`), which is what the job cache stores and the event bus fires.
#[derive(Clone, Debug, PartialEq)]
pub struct Return {
    /// Minion id.
    pub id: String,
    /// Job id (`"req"` for a job the minion started itself).
    pub jid: String,
    /// The return load, `cmd` removed, keys in the minion's order.
    pub load: Value,
}

/// The fields Salt's `store_job` requires of a return: `return` present, `jid` and `id` text.
pub(crate) fn return_ids<'a>(f: &Fields<'a>) -> Result<(&'a str, &'a str), InvalidMessage> {
    f.req("return")?;
    Ok((f.text("jid")?, f.text("id")?))
}

impl Return {
    const MSG: &'static str = "Return";

    /// Reads a `_return` load and removes its `cmd`.
    ///
    /// # Errors
    /// [`InvalidMessage`] naming the first missing (`return`, `jid`, `id`) or mistyped
    /// (`jid`, `id` not text) field.
    pub fn read(mut load: Value) -> Result<Self, InvalidMessage> {
        let (id, jid) = {
            let f = Fields::new(Self::MSG, &load)?;
            let (jid, id) = return_ids(&f)?;
            (id.to_owned(), jid.to_owned())
        };
        map_remove(&mut load, "cmd");
        Ok(Self { id, jid, load })
    }
}

/// `_mine_get`: another minions' mine data (`mine.get`).
#[derive(Clone, Debug, PartialEq)]
pub struct MineGet {
    /// Target: text, or a list (joined with `,`).
    pub tgt: Value,
    /// Function(s): text (comma-separated) or a list.
    pub fun: Value,
    /// `tgt_type` (or the older `expr_form`), `glob` when absent.
    pub tgt_type: Option<Value>,
}

/// `_mine_delete`: one function's entry of the sender's mine.
#[derive(Clone, Debug, PartialEq)]
pub struct MineDelete {
    /// The mine function (compared with the stored keys as a value).
    pub fun: Value,
}

/// A request to the file server (`_file_*`, `_serve_file`, `_master_opts`, `_master_tops`,
/// `_file_recv`, `_dir_list`, `_symlink_list`): the command and its load, read by the file
/// server's own field rules.
#[derive(Clone, Debug, PartialEq)]
pub struct FileRequest {
    /// The command.
    pub cmd: String,
    /// The load.
    pub load: Value,
}

impl FileRequest {
    /// The load read as the file server reads it.
    pub fn typed(&self) -> Option<super::FileLoad<'_>> {
        super::FileLoad::read(&self.cmd, &self.load)
    }
}

/// The commands of the file server (`AESFuncs` exposes them; `salt-rs` answers them from the
/// `roots` file server).
pub const FILE_COMMANDS: &[&str] = &[
    "_file_envs",
    "_file_list",
    "_file_list_emptydirs",
    "_dir_list",
    "_symlink_list",
    "_file_find",
    "_file_hash",
    "_file_hash_and_stat",
    "_serve_file",
    "_master_opts",
    "_master_tops",
    "_file_recv",
];

/// One AES command, typed.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per request, moved once
pub enum Command {
    /// `_return`.
    Return(Return),
    /// `_minion_event`, with the load as sent (a single event is fired as the whole load).
    MinionEvent(MinionEvent, Value),
    /// `_mine`.
    Mine(MineLoad),
    /// `_mine_get`.
    MineGet(MineGet),
    /// `_mine_delete`.
    MineDelete(MineDelete),
    /// `_mine_flush`.
    MineFlush,
    /// `_pillar`.
    Pillar(PillarRequest),
    /// A file-server command.
    File(FileRequest),
    /// Any other command (answered as Salt does when the feature is not configured, or as a
    /// method Salt does not expose), with its load.
    Other {
        /// The command.
        cmd: String,
        /// The load.
        load: Value,
    },
}

impl Command {
    /// Reads the load of `cmd` (its channel fields already taken by [`AesMeta::take`]).
    ///
    /// # Errors
    /// [`InvalidMessage::MissingField`] when a key Salt's `__verify_load` asks for is absent
    /// (Salt then answers the command's "refused" value: `None` for `_return`, `{}` for
    /// `_mine*`, `False` for `_pillar`); any other [`InvalidMessage`] for a value Salt's
    /// handler would raise on (Salt answers `""`).
    pub fn read(cmd: &str, load: Value) -> Result<Self, InvalidMessage> {
        Ok(match cmd {
            "_return" => Self::Return(Return::read(load)?),
            "_minion_event" => Self::MinionEvent(MinionEvent::from_value(&load)?, load),
            "_mine" => Self::Mine(MineLoad::from_value(&load)?),
            "_mine_get" => {
                let f = Fields::new("MineGet", &load)?;
                Self::MineGet(MineGet {
                    tgt: f.req("tgt")?.clone(),
                    fun: f.req("fun")?.clone(),
                    tgt_type: f.raw("tgt_type").or_else(|| f.raw("expr_form")).cloned(),
                })
            }
            "_mine_delete" => {
                let f = Fields::new("MineDelete", &load)?;
                Self::MineDelete(MineDelete {
                    fun: f.req("fun")?.clone(),
                })
            }
            "_mine_flush" => {
                Fields::new("MineFlush", &load)?;
                Self::MineFlush
            }
            "_pillar" => Self::Pillar(PillarRequest::from_value(&load)?),
            c if FILE_COMMANDS.contains(&c) => Self::File(FileRequest {
                cmd: c.to_owned(),
                load,
            }),
            other => Self::Other {
                cmd: other.to_owned(),
                load,
            },
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::value::MapBuilder;

    fn meta_of(load: &Value, version: i64) -> Result<AesMeta, InvalidMessage> {
        AesMeta::take(&mut load.clone(), version)
    }

    #[test]
    fn meta_takes_nonce_and_tok_and_reads_the_rest() {
        let mut load = MapBuilder::new()
            .str("cmd", "_return")
            .str("nonce", "n1")
            .insert("ts", 1.5)
            .bytes("tok", b"tk")
            .str("id", "m1")
            .build();
        let m = AesMeta::take(&mut load, 3).unwrap();
        assert_eq!(m.id.as_deref(), Some("m1"));
        assert_eq!(m.nonce.as_deref(), Some("n1"));
        assert_eq!(m.ts, Some(1.5));
        assert_eq!(m.tok.as_deref(), Some(&b"tk"[..]));
        assert_eq!(m.cmd.as_deref(), Some("_return"));
        assert!(load.get("nonce").is_none() && load.get("tok").is_none());
        // Version 1: the nonce stays in the load and is not used.
        let mut v1 = MapBuilder::new().str("nonce", "n1").build();
        assert_eq!(AesMeta::take(&mut v1, 1).unwrap().nonce, None);
        assert!(v1.get("nonce").is_some());
    }

    #[test]
    fn meta_hostile_loads_get_the_exact_error() {
        assert_eq!(
            meta_of(&Value::from(5), 3),
            Err(InvalidMessage::NotAMap { msg: "AesLoad" })
        );
        let nul = MapBuilder::new().str("id", "a\0b").build();
        assert_eq!(
            meta_of(&nul, 3),
            Err(InvalidMessage::BadValue {
                msg: "AesLoad",
                field: "id",
                reason: "contains a null byte"
            })
        );
        for id in [Value::from(5), Value::Binary(b"m1".to_vec())] {
            let load = Value::Map(vec![(Value::from("id"), id)]);
            assert_eq!(
                meta_of(&load, 3),
                Err(InvalidMessage::WrongType {
                    msg: "AesLoad",
                    field: "id",
                    expected: "text"
                })
            );
        }
        let tok = MapBuilder::new().insert("tok", 7).build();
        assert_eq!(
            meta_of(&tok, 3),
            Err(InvalidMessage::WrongType {
                msg: "AesLoad",
                field: "tok",
                expected: "bytes"
            })
        );
        // Odd but harmless types count as absent: Salt only compares them.
        let odd = MapBuilder::new()
            .insert("ts", "soon")
            .insert("nonce", 3)
            .insert("cmd", 4)
            .build();
        let m = meta_of(&odd, 3).unwrap();
        assert_eq!((m.ts, m.nonce, m.cmd), (None, None, None));
    }

    #[test]
    fn commands_read_what_salt_requires() {
        let ret = MapBuilder::new()
            .str("cmd", "_return")
            .str("id", "m1")
            .insert("return", true)
            .str("jid", "20250101000000000000")
            .str("out", "nested")
            .build();
        let Command::Return(r) = Command::read("_return", ret).unwrap() else {
            panic!("not a return")
        };
        assert_eq!(
            (r.id.as_str(), r.jid.as_str()),
            ("m1", "20250101000000000000")
        );
        let keys: Vec<_> = r
            .load
            .as_entries()
            .unwrap()
            .iter()
            .map(|(k, _)| k.as_text().unwrap())
            .collect();
        assert_eq!(keys, ["id", "return", "jid", "out"]);

        let no_return = MapBuilder::new().str("id", "m1").str("jid", "req").build();
        assert_eq!(
            Command::read("_return", no_return),
            Err(InvalidMessage::MissingField {
                msg: "Return",
                field: "return"
            })
        );
        let int_jid = MapBuilder::new()
            .insert("return", 1)
            .insert("jid", 5)
            .str("id", "m1")
            .build();
        assert_eq!(
            Command::read("_return", int_jid),
            Err(InvalidMessage::WrongType {
                msg: "Return",
                field: "jid",
                expected: "text"
            })
        );
        let get = MapBuilder::new()
            .str("cmd", "_mine_get")
            .str("tgt", "*")
            .build();
        assert_eq!(
            Command::read("_mine_get", get),
            Err(InvalidMessage::MissingField {
                msg: "MineGet",
                field: "fun"
            })
        );
        let del = MapBuilder::new().str("cmd", "_mine_delete").build();
        assert_eq!(
            Command::read("_mine_delete", del),
            Err(InvalidMessage::MissingField {
                msg: "MineDelete",
                field: "fun"
            })
        );
        let mine = MapBuilder::new()
            .str("cmd", "_mine")
            .str("id", "m1")
            .build();
        assert_eq!(
            Command::read("_mine", mine),
            Err(InvalidMessage::MissingField {
                msg: "MineLoad",
                field: "data"
            })
        );
        let pillar = MapBuilder::new()
            .str("cmd", "_pillar")
            .str("id", "m1")
            .build();
        assert_eq!(
            Command::read("_pillar", pillar),
            Err(InvalidMessage::MissingField {
                msg: "PillarRequest",
                field: "grains"
            })
        );
        let pillar_list = MapBuilder::new()
            .str("cmd", "_pillar")
            .str("id", "m1")
            .insert("grains", Value::Array(vec![]))
            .build();
        assert_eq!(
            Command::read("_pillar", pillar_list),
            Err(InvalidMessage::WrongType {
                msg: "PillarRequest",
                field: "grains",
                expected: "a map"
            })
        );
        let untagged = MapBuilder::new()
            .str("cmd", "_minion_event")
            .str("id", "m1")
            .insert("data", 1)
            .build();
        assert_eq!(
            Command::read("_minion_event", untagged),
            Err(InvalidMessage::MissingField {
                msg: "MinionEvent",
                field: "tag"
            })
        );
        assert!(matches!(
            Command::read("_file_list", Value::Map(vec![])),
            Ok(Command::File(FileRequest { cmd, .. })) if cmd == "_file_list"
        ));
        assert!(matches!(
            Command::read("minion_pub", Value::Map(vec![])),
            Ok(Command::Other { cmd, .. }) if cmd == "minion_pub"
        ));
    }

    #[test]
    fn events_and_pillar_read_as_salts_master_reads_them() {
        // A batch event without `data` carries the event map itself (Salt fires it so).
        let ev = MapBuilder::new()
            .str("cmd", "_minion_event")
            .str("id", "m1")
            .insert(
                "events",
                Value::Array(vec![
                    MapBuilder::new().str("tag", "a/b").insert("x", 1).build(),
                ]),
            )
            .build();
        let Command::MinionEvent(ev, _) = Command::read("_minion_event", ev).unwrap() else {
            panic!("not an event")
        };
        let super::super::EventBody::Batch(evs) = ev.body else {
            panic!("not a batch")
        };
        assert_eq!(evs[0].1.get("x"), Some(&Value::from(1)));
        // `saltenv`, else the older `env`; a non-text `ver` counts as none.
        let p = MapBuilder::new()
            .str("id", "m1")
            .insert("grains", Value::Map(vec![]))
            .str("env", "dev")
            .insert("ver", 2)
            .str("cmd", "_pillar")
            .build();
        let Command::Pillar(p) = Command::read("_pillar", p).unwrap() else {
            panic!("not a pillar request")
        };
        assert_eq!(p.saltenv_or_env(), Some("dev"));
        assert_eq!(p.ver, None);
    }
}
