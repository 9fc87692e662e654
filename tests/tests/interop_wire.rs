//! Interop 5: wire shapes. One session (sign-in, publish of `test.ping`, return) is recorded
//! through a ZeroMQ proxy ([`WireRecorder`]) between our minion and our master, every msgpack
//! frame is decoded (and opened with the session / AES keys, recovered from the auth reply with
//! the minion's private key), and the shape of each message kind (key names and order, value
//! types, str vs bin) is compared with the shapes recorded the same way between real Salt
//! peers, stored in `tests/data/wire-shapes.json` (regenerate with `scripts/gen-wire-shapes.sh`).
//!
//! Fatal: a message kind Salt peers need (auth request/reply, publish, `_return` request/reply)
//! missing from our session; a value of another type or family (str vs bin, int vs str...) on a
//! key both sides send; a key every Salt version sends that we omit; a key no Salt version
//! sends. Printed only: key order, kinds only one side uses (e.g. `_pillar`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use salt_integration_tests::interop_support::{
    Channel, Daemon, SaltCli, Side, WireFrame, WireRecorder, serial, versions,
};
use salt_integration_tests::{MasterConf, MinionConf, TempRoot, bins, free_port_pair};
use salt_pki::{Crypticle, EncAlgo, PrivateKey};
use salt_proto::Value;
use serde_json::{Value as J, json};

/// Differences accepted on purpose (docs/interop.md, "Known differences"): `_stamp` is the
/// event timestamp Salt's minion event bus adds to a return; Salt's master pops it before use
/// (master.py `_return`: `data.pop("_stamp", None)`).
const ACCEPTED: &[&str] = &["request aes _return inner._stamp: missing (Salt sends it)"];

/// Kinds a working session must contain.
const ESSENTIAL: &[&str] = &[
    "request clear _auth",
    "reply to request clear _auth",
    "publish test.ping",
    "request aes _return",
    "reply to request aes _return",
];

fn data_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/wire-shapes.json")
}

/// Decodes msgpack exactly as sent (str and bin kept apart), the whole input or nothing.
fn raw_decode(mut b: &[u8]) -> Result<Value, String> {
    let v = rmpv::decode::read_value(&mut b).map_err(|e| e.to_string())?;
    if b.is_empty() {
        Ok(v)
    } else {
        Err("trailing bytes".into())
    }
}

/// The type skeleton of a msgpack value; maps as `[[key, shape], ...]` in wire order.
fn shape(v: &Value) -> J {
    match v {
        Value::Nil => J::from("nil"),
        Value::Boolean(_) => J::from("bool"),
        Value::Integer(_) => J::from("int"),
        Value::F32(_) | Value::F64(_) => J::from("float"),
        Value::String(_) => J::from("str"),
        Value::Binary(_) => J::from("bin"),
        Value::Ext(..) => J::from("ext"),
        Value::Array(a) => json!({"array": a.first().map_or(J::from("empty"), shape)}),
        Value::Map(m) => J::Array(
            m.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Value::String(s) => s.as_str().unwrap_or("?").to_string(),
                        Value::Binary(b) => format!("bin:{}", String::from_utf8_lossy(b)),
                        other => format!("{other}"),
                    };
                    // Grains are the host's facts, not protocol: kept opaque.
                    let sv = if key == "grains" && matches!(v, Value::Map(_)) {
                        J::from("map(grains)")
                    } else {
                        shape(v)
                    };
                    json!([key, sv])
                })
                .collect(),
        ),
    }
}

fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Map(m) => m.iter().find_map(|(k, v)| {
            let name = match k {
                Value::String(s) => s.as_str(),
                Value::Binary(b) => std::str::from_utf8(b).ok(),
                _ => None,
            };
            (name == Some(key)).then_some(v)
        }),
        _ => None,
    }
}

fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::Binary(b) => Some(b),
        Value::String(s) => Some(s.as_bytes()),
        _ => None,
    }
}

fn text(v: Option<&Value>) -> String {
    v.and_then(bytes)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

/// Keys recovered from auth replies.
#[derive(Default)]
struct Keys {
    crypticles: Vec<Crypticle>,
}

impl Keys {
    /// Opens `data` with any known key: `(value, nonce-prefixed)`.
    fn open(&self, data: &[u8]) -> Option<(Value, bool)> {
        for c in &self.crypticles {
            let Ok(plain) = c.decrypt(data) else { continue };
            let body = plain.strip_prefix(b"pickle::".as_slice()).unwrap_or(&plain);
            if let Ok(v) = raw_decode(body) {
                return Some((v, false));
            }
            if let Some(rest) = body.get(32..)
                && let Ok(v) = raw_decode(rest)
            {
                return Some((v, true));
            }
        }
        None
    }

    fn learn(&mut self, minion: &PrivateKey, inner: &Value) {
        for field in ["aes", "session"] {
            let Some(ct) = get(inner, field).and_then(bytes) else {
                continue;
            };
            for alg in [EncAlgo::OaepSha1, EncAlgo::OaepSha224] {
                if let Ok(k) = minion.decrypt_oaep(alg, ct)
                    && let Ok(s) = std::str::from_utf8(&k)
                    && let Ok(c) = Crypticle::from_key_string(s.trim())
                {
                    self.crypticles.push(c);
                    break;
                }
            }
        }
    }
}

/// The message kinds of a session in order of first appearance, each with its outer shape and
/// the shape of its opened `load` (or of the whole opened reply).
fn analyze(frames: &[WireFrame], minion: &PrivateKey) -> Vec<(String, J)> {
    let mut keys = Keys::default();
    let mut pending: std::collections::VecDeque<String> = Default::default();
    let mut out: Vec<(String, J)> = Vec::new();
    for f in frames {
        let Ok(outer) = raw_decode(&f.payload) else {
            continue;
        };
        let (kind, inner) = match f.channel {
            Channel::Request => {
                let enc = text(get(&outer, "enc"));
                let load = get(&outer, "load");
                let inner = match (enc.as_str(), load) {
                    ("clear", Some(l)) => Some(l.clone()),
                    (_, Some(l)) => bytes(l).and_then(|b| keys.open(b)).map(|(v, _)| v),
                    _ => None,
                };
                let cmd = inner
                    .as_ref()
                    .map(|i| text(get(i, "cmd")))
                    .unwrap_or_else(|| "?".into());
                let kind = format!("request {enc} {cmd}");
                pending.push_back(kind.clone());
                (kind, inner)
            }
            Channel::Reply => {
                let to = pending.pop_front().unwrap_or_else(|| "?".into());
                let inner = if to == "request clear _auth" {
                    let load = get(&outer, "load").cloned();
                    let inner = match load {
                        Some(Value::Binary(b)) => raw_decode(&b).ok(),
                        Some(Value::String(s)) => raw_decode(s.as_bytes()).ok(),
                        other => other,
                    };
                    if let Some(i) = &inner {
                        keys.learn(minion, i);
                    }
                    inner
                } else {
                    bytes(&outer)
                        .and_then(|b| keys.open(b))
                        .or_else(|| {
                            get(&outer, "load")
                                .and_then(bytes)
                                .and_then(|b| keys.open(b))
                        })
                        .map(|(v, _)| v)
                };
                (format!("reply to {to}"), inner)
            }
            Channel::Publish => {
                let inner = get(&outer, "load")
                    .and_then(bytes)
                    .and_then(|b| keys.open(b))
                    .map(|(v, _)| v);
                let fun = inner
                    .as_ref()
                    .map(|i| text(get(i, "fun")))
                    .unwrap_or_else(|| "?".into());
                (format!("publish {fun}"), inner)
            }
        };
        if out.iter().all(|(k, _)| *k != kind) {
            out.push((
                kind,
                json!({"outer": shape(&outer), "inner": inner.as_ref().map(shape), "parts": f.parts}),
            ));
        }
    }
    out
}

/// Records one session between `master_side` and `minion_side` (minion id `wmin`).
fn record_session(master_side: &Side, minion_side: &Side) -> Vec<(String, J)> {
    let root = TempRoot::new().unwrap();
    let ports = free_port_pair().unwrap();
    let mconf = MasterConf::new(root.path().join("m"))
        .id("wmaster")
        .ports(ports.0, ports.1)
        .auto_accept(true)
        .set("worker_threads", 2u32);
    let mut master = Daemon::start_master(master_side, &mconf).unwrap();
    master
        .wait_master_ready("127.0.0.1", ports.0, ports.1)
        .unwrap();
    let rec = WireRecorder::start("127.0.0.3", "127.0.0.1", ports.0, ports.1).unwrap();
    let nconf = MinionConf::new(root.path().join("n"), "wmin")
        .master("127.0.0.3")
        .ports(ports.0, ports.1);
    let minion = Daemon::start_minion(minion_side, &nconf).unwrap();
    minion
        .wait_minion_ready()
        .unwrap_or_else(|e| panic!("{e}\n{}", master.proc.tail(20)));
    let cli = SaltCli::new(master_side, &master.conf_dir);
    let v = cli
        .until_answer("wmin", &["wmin", "test.ping"], Duration::from_secs(60))
        .unwrap();
    assert_eq!(v, json!(true));
    let frames = rec.finish();
    let pem = salt_pki::files::read_private_key(&nconf.pki_dir().join("minion.pem"), None).unwrap();
    drop(minion);
    drop(master);
    analyze(&frames, &pem)
}

fn as_map(shape: &J) -> Option<Vec<(String, J)>> {
    shape.as_array().map(|a| {
        a.iter()
            .filter_map(|kv| {
                let k = kv.get(0)?.as_str()?.to_string();
                Some((k, kv.get(1)?.clone()))
            })
            .collect()
    })
}

/// Compares `got` with `want` (the reference of one version); `known_keys(path)` are the keys
/// any Salt version sends at `path`, `common_keys(path)` those every version sends.
fn compare(
    path: &str,
    want: &J,
    got: &J,
    refs: &[&J],
    fatal: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    match (as_map(want), as_map(got)) {
        (Some(w), Some(g)) if want.is_array() && got.is_array() => {
            let ref_maps: Vec<Vec<(String, J)>> = refs.iter().filter_map(|r| as_map(r)).collect();
            let wk: Vec<&String> = w.iter().map(|(k, _)| k).collect();
            let gk: Vec<&String> = g.iter().map(|(k, _)| k).collect();
            for (k, wv) in &w {
                match g.iter().find(|(gk, _)| gk == k) {
                    Some((_, gv)) => {
                        let subrefs: Vec<&J> = ref_maps
                            .iter()
                            .filter_map(|m| m.iter().find(|(rk, _)| rk == k).map(|(_, v)| v))
                            .collect();
                        compare(&format!("{path}.{k}"), wv, gv, &subrefs, fatal, notes);
                    }
                    None => {
                        let everywhere = ref_maps.iter().all(|m| m.iter().any(|(rk, _)| rk == k));
                        let line = format!("{path}.{k}: missing (Salt sends it)");
                        if everywhere {
                            fatal.push(line);
                        } else {
                            notes.push(format!("{line}; not every Salt version does"));
                        }
                    }
                }
            }
            for (k, _) in g.iter().filter(|(k, _)| !w.iter().any(|(wk, _)| wk == k)) {
                let somewhere = ref_maps.iter().any(|m| m.iter().any(|(rk, _)| rk == k));
                let line = format!("{path}.{k}: extra (this Salt version does not send it)");
                if somewhere {
                    notes.push(format!("{line}; another version does"));
                } else {
                    fatal.push(format!("{path}.{k}: extra (no Salt version sends it)"));
                }
            }
            let common_w: Vec<&&String> = wk.iter().filter(|k| gk.contains(k)).collect();
            let common_g: Vec<&&String> = gk.iter().filter(|k| wk.contains(k)).collect();
            if common_w != common_g {
                notes.push(format!("{path}: key order {common_g:?}, Salt {common_w:?}"));
            }
        }
        _ => match (want.get("array"), got.get("array")) {
            (Some(wa), Some(ga)) => {
                if wa != "empty" && ga != "empty" {
                    let subrefs: Vec<&J> = refs.iter().filter_map(|r| r.get("array")).collect();
                    compare(&format!("{path}[]"), wa, ga, &subrefs, fatal, notes);
                }
            }
            _ if want == got => {}
            _ => fatal.push(format!("{path}: Salt sends {want}, we send {got}")),
        },
    }
}

fn ours_session() -> &'static Vec<(String, J)> {
    static OURS: OnceLock<Vec<(String, J)>> = OnceLock::new();
    OURS.get_or_init(|| {
        let ours = Side::Ours(bins().unwrap());
        record_session(&ours, &ours)
    })
}

fn check(version: &str) {
    let _guard = serial();
    let data: J = serde_json::from_str(&std::fs::read_to_string(data_file()).unwrap()).unwrap();
    let Some(reference) = data.get(version).and_then(|r| r.get("kinds")) else {
        panic!(
            "{} has no shapes for Salt {version}: run scripts/gen-wire-shapes.sh",
            data_file().display()
        );
    };
    let all_refs: Vec<&J> = data
        .as_object()
        .map(|m| m.values().filter_map(|v| v.get("kinds")).collect())
        .unwrap_or_default();
    let kinds = |r: &J| -> Vec<(String, J)> {
        r.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|kv| Some((kv.get(0)?.as_str()?.to_string(), kv.get(1)?.clone())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let want = kinds(reference);
    let others: Vec<Vec<(String, J)>> = all_refs.iter().map(|r| kinds(r)).collect();
    let got = ours_session();
    let (mut fatal, mut notes) = (Vec::new(), Vec::new());
    for (kind, wshape) in &want {
        let Some((_, gshape)) = got.iter().find(|(k, _)| k == kind) else {
            let line = format!("{kind}: Salt sends it, we do not");
            if ESSENTIAL.contains(&kind.as_str()) {
                fatal.push(line);
            } else {
                notes.push(line);
            }
            continue;
        };
        for part in ["outer", "inner"] {
            let refs: Vec<&J> = others
                .iter()
                .filter_map(|o| o.iter().find(|(k, _)| k == kind).map(|(_, s)| &s[part]))
                .collect();
            compare(
                &format!("{kind} {part}"),
                &wshape[part],
                &gshape[part],
                &refs,
                &mut fatal,
                &mut notes,
            );
        }
    }
    let want_kinds: BTreeSet<&String> = want.iter().map(|(k, _)| k).collect();
    for (kind, _) in got.iter().filter(|(k, _)| !want_kinds.contains(k)) {
        notes.push(format!("{kind}: we send it, Salt {version} does not"));
    }
    let (accepted, fatal): (Vec<String>, Vec<String>) = fatal
        .into_iter()
        .partition(|f| ACCEPTED.contains(&f.as_str()));
    notes.extend(
        accepted
            .into_iter()
            .map(|a| format!("{a} [accepted difference]")),
    );
    println!("wire shapes vs Salt {version}: {} notes", notes.len());
    for n in &notes {
        println!("  note: {n}");
    }
    assert!(
        fatal.is_empty(),
        "wire shapes differ from Salt {version}:\n  {}",
        fatal.join("\n  ")
    );
}

#[test]
fn wire_shapes_match_3006() {
    check("3006.30");
}

#[test]
fn wire_shapes_match_3007() {
    check("3007.17");
}

#[test]
fn wire_shapes_match_3008() {
    check("3008.5");
}

/// Records Python minion ↔ Python master sessions for every available version into
/// `tests/data/wire-shapes.json` (run by `scripts/gen-wire-shapes.sh`).
#[test]
#[ignore = "regenerates tests/data/wire-shapes.json (scripts/gen-wire-shapes.sh)"]
fn record_reference() {
    let _guard = serial();
    let path = data_file();
    let mut data: serde_json::Map<String, J> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    for (version, venv) in versions() {
        let py = Side::Salt(venv);
        let kinds = record_session(&py, &py);
        let list: Vec<J> = kinds.into_iter().map(|(k, s)| json!([k, s])).collect();
        println!("Salt {version}: {} message kinds", list.len());
        data.insert(version, json!({"kinds": list}));
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&J::Object(data)).unwrap() + "\n",
    )
    .unwrap();
    println!("wrote {}", path.display());
}
