//! Salt's wheel `key` module (`salt/wheel/key.py` over `salt.key.Key`), on the master's own
//! key store: reads from [`Shared::store`], changes through [`Shared::key_changes`] (the
//! files, or a group's database), each change fired as Salt's `salt/key` event; a reject or
//! delete clears the minion data cache of ids left without a key and asks for the AES key
//! rotation (`rotate_aes_key`) as `salt-key` does.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use salt_keystore::{AcceptFrom, FingerprintHash, KeyState, RejectFrom};

use super::{Answer, Args, Fail};
use crate::shared::Shared;

/// `(status directory, ids)` in Salt's order.
type Listing = Vec<(String, Vec<String>)>;

/// Run `key.<f>`.
pub(crate) fn call(shared: &Shared, f: &str, a: &Args) -> Answer {
    let _ = shared.store.refresh();
    match f {
        "list" => list_status(shared, &text(a, "match")?),
        "list_all" => Ok(to_json(&all_keys(shared)?)),
        "name_match" => Ok(to_json(&name_match(shared, a.get("match"), false)?)),
        "accept" | "accept_dict" | "reject" | "reject_dict" | "delete" | "delete_dict" => {
            change(shared, f, a)
        }
        "print" => key_str(shared, a.get("match")),
        "master_key_str" => {
            let path = shared.store.pki_dir().join("master.pub");
            let text = std::fs::read_to_string(&path).map_err(|e| os_error(&path, &e))?;
            Ok(json!({"local": {"master.pub": text}}))
        }
        "finger" => finger(shared, a.get("match"), hash(shared, a)?),
        "finger_master" => {
            let f = local_finger(shared, "master.pub", hash(shared, a)?)?;
            Ok(json!({"local": {"master.pub": f}}))
        }
        "gen" => gen_pair(a.get("keysize")).map(|(p, s)| pair(p, s)),
        _ => gen_accept(shared, a),
    }
}

fn text(a: &Args, name: &str) -> Result<String, Fail> {
    match a.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(Fail::Raise(
            "AttributeError".into(),
            format!("'{}' object has no attribute 'startswith'", py_type(other)),
        )),
        None => Err(Fail::Raise(
            "AttributeError".into(),
            "'NoneType' object has no attribute 'startswith'".into(),
        )),
    }
}

fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

fn os_error(path: &std::path::Path, e: &std::io::Error) -> Fail {
    Fail::Raise(
        "OSError".into(),
        format!(
            "[Errno {}] {e}: '{}'",
            e.raw_os_error().unwrap_or(0),
            path.display()
        ),
    )
}

fn store_error(e: &salt_keystore::KeyStoreError) -> Fail {
    Fail::Raise("OSError".into(), e.to_string())
}

fn to_json(l: &Listing) -> Value {
    Value::Object(l.iter().map(|(s, ids)| (s.clone(), json!(ids))).collect())
}

/// Salt's `list_keys`: the four key directories (ids sorted as Salt sorts them).
fn list_keys(shared: &Shared) -> Listing {
    KeyState::ALL
        .iter()
        .map(|s| (s.dir_name().to_owned(), shared.store.list(*s)))
        .collect()
}

/// Salt's `all_keys`: [`list_keys`] and the master's own `.pem`/`.pub` files (`local`).
fn all_keys(shared: &Shared) -> Result<Listing, Fail> {
    let mut l = list_keys(shared);
    l.push((
        "local".into(),
        shared.store.local_keys().map_err(|e| store_error(&e))?,
    ));
    Ok(l)
}

/// `key.list(match)`: Salt's `list_status` (by prefix; `all` is `list_all`).
fn list_status(shared: &Shared, m: &str) -> Answer {
    if m.starts_with("all") {
        return Ok(to_json(&all_keys(shared)?));
    }
    match KeyState::parse_status(m) {
        Some(s) => Ok(json!({s.dir_name(): shared.store.list(s)})),
        None => Ok(json!({})),
    }
}

/// A `match` as Salt's `name_match` reads it: a glob, globs joined by commas, or a list.
fn patterns(m: Option<&Value>) -> Result<Vec<String>, Fail> {
    match m {
        Some(Value::String(s)) if s.contains(',') => Ok(s.split(',').map(str::to_owned).collect()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => Ok(items.iter().map(salt_compat::py_json_str).collect()),
        Some(other) => Err(Fail::Raise(
            "TypeError".into(),
            format!("argument of type '{}' is not iterable", py_type(other)),
        )),
        None => Err(Fail::Raise(
            "TypeError".into(),
            "argument of type 'NoneType' is not iterable".into(),
        )),
    }
}

/// Salt's `name_match(match, full)`: per status, the ids matching a glob (an id matching
/// two globs of a list is listed twice, as Salt lists it).
fn name_match(shared: &Shared, m: Option<&Value>, full: bool) -> Result<Listing, Fail> {
    let pats = patterns(m)?;
    let keys = if full {
        all_keys(shared)?
    } else {
        list_keys(shared)
    };
    let mut out: Listing = Vec::new();
    for (status, ids) in keys {
        let mut hits = Vec::new();
        for id in ids {
            for p in &pats {
                if salt_keystore::fnmatch(&id, p).unwrap_or(false) {
                    hits.push(id.clone());
                }
            }
        }
        if !hits.is_empty() {
            out.push((status, hits));
        }
    }
    Ok(out)
}

/// Salt's `dict_match`: the given ids (read as globs) where they are now.
fn dict_match(shared: &Shared, given: &Listing) -> Listing {
    let cur = list_keys(shared);
    let mut out: Listing = Vec::new();
    for (_, ids) in given {
        let mut ids = ids.clone();
        sort_ignorecase(&mut ids);
        for id in ids {
            for (dir, have) in &cur {
                if have
                    .iter()
                    .any(|k| salt_keystore::fnmatch(k, &id).unwrap_or(false))
                {
                    match out.iter_mut().find(|(d, _)| d == dir) {
                        Some((_, v)) => v.push(id.clone()),
                        None => out.push((dir.clone(), vec![id.clone()])),
                    }
                }
            }
        }
    }
    out
}

/// Python's `sorted(keys, key=lambda x: str(x).lower())`.
fn sort_ignorecase(v: &mut [String]) {
    v.sort_by_cached_key(|s| s.to_lowercase());
}

/// A `match_dict` (`*_dict` functions): a dict of status to ids; anything else is `{}`.
fn given_dict(m: Option<&Value>) -> Listing {
    match m {
        Some(Value::Object(o)) => o
            .iter()
            .map(|(s, ids)| {
                let ids = match ids {
                    Value::Array(a) => a.iter().map(salt_compat::py_json_str).collect(),
                    Value::String(s) => vec![s.clone()],
                    _ => Vec::new(),
                };
                (s.clone(), ids)
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `accept`, `reject`, `delete` and their `_dict` forms.
fn change(shared: &Shared, f: &str, a: &Args) -> Answer {
    let by_dict = f.ends_with("_dict");
    let mut matches = if by_dict {
        given_dict(a.get("match"))
    } else {
        name_match(shared, a.get("match"), false)?
    };
    let op = f.trim_end_matches("_dict");
    // The (status, id) pairs the operation moves: only from the statuses it takes, and only
    // where the id is now (Salt moves `pki_dir/<status>/<id>`; a missing file is skipped).
    let from: Vec<KeyState> = match op {
        "accept" => std::iter::once(KeyState::Pending)
            .chain(
                a.flag("include_rejected", false)
                    .then_some(KeyState::Rejected),
            )
            .chain(a.flag("include_denied", false).then_some(KeyState::Denied))
            .collect(),
        "reject" => std::iter::once(KeyState::Pending)
            .chain(
                a.flag("include_accepted", false)
                    .then_some(KeyState::Accepted),
            )
            .chain(a.flag("include_denied", false).then_some(KeyState::Denied))
            .collect(),
        _ => KeyState::ALL.to_vec(),
    };
    let mut ids: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    let mut invalid: Vec<(String, String)> = Vec::new();
    for (status, list) in &matches {
        let Some(state) = KeyState::from_dir_name(status).filter(|s| from.contains(s)) else {
            continue;
        };
        for id in list {
            let here = shared.store.states_of(id).unwrap_or_default();
            if !here.contains(&state) {
                continue;
            }
            if op == "accept" && !valid_rsa(shared, state, id) {
                tracing::error!("Invalid RSA public key: {id}");
                invalid.push((status.clone(), id.clone()));
                continue;
            }
            if seen.insert(id.clone()) {
                ids.push(id.clone());
            }
        }
    }
    let changes = shared.key_changes();
    let report = match op {
        "accept" => changes.accept_many(
            &ids,
            AcceptFrom {
                include_rejected: from.contains(&KeyState::Rejected),
                include_denied: from.contains(&KeyState::Denied),
            },
        ),
        "reject" => changes.reject_many(
            &ids,
            RejectFrom {
                include_accepted: from.contains(&KeyState::Accepted),
                include_denied: from.contains(&KeyState::Denied),
            },
        ),
        _ => changes.delete_many(&ids),
    }
    .map_err(|e| store_error(&e))?;
    for e in &report.errors {
        tracing::warn!("wheel key.{f}: {e}");
    }
    for (id, _) in &report.changed {
        shared
            .events
            .fire("salt/key", json!({"result": true, "act": op, "id": id}));
    }
    if !ids.is_empty() {
        tracing::info!("wheel key.{f}: {} {}", op, ids.join(", "));
    }
    let _ = shared.store.refresh();
    if op != "accept" {
        check_minion_cache(shared);
        if shared.cfg.rotate_aes_key
            && shared.group.is_none()
            && let Err(e) =
                salt_keystore::write_dropfile(&shared.cfg.cachedir, Some(&shared.cfg.id))
        {
            tracing::warn!("wheel key.{f}: cannot request the AES key rotation: {e}");
        }
    }
    for (status, id) in &invalid {
        if let Some((_, v)) = matches.iter_mut().find(|(s, _)| s == status) {
            v.retain(|x| x != id);
        }
    }
    if by_dict {
        Ok(to_json(&dict_match(shared, &matches)))
    } else {
        Ok(to_json(&name_match(shared, a.get("match"), false)?))
    }
}

/// Salt's `get_rsa_pub_key` check before accepting.
fn valid_rsa(shared: &Shared, state: KeyState, id: &str) -> bool {
    match shared.store.read_key(state, id) {
        Ok(Some(pem)) => salt_pki::PublicKey::from_pem(pem.as_bytes()).is_ok(),
        _ => false,
    }
}

/// Salt's `Key.check_minion_cache`: remove `cachedir/minions/<id>` of ids that no longer
/// have a key, unless `preserve_minion_cache`.
fn check_minion_cache(shared: &Shared) {
    if shared.cfg.preserve_minion_cache {
        return;
    }
    let dir = shared.cfg.cachedir.join("minions");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return;
    };
    let known: HashSet<String> = shared.store.list_all().into_values().flatten().collect();
    for entry in rd.flatten() {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if known.contains(&name) {
            continue;
        }
        let path = entry.path();
        if path.is_dir()
            && let Err(e) = std::fs::remove_dir_all(&path)
        {
            tracing::warn!("Key: Delete cache for {name} got OSError/IOError: {e}");
        }
    }
}

/// `key.print(match)`: Salt's `key_str`, each matching key's text by status.
fn key_str(shared: &Shared, m: Option<&Value>) -> Answer {
    let mut out = Map::new();
    for (status, mut ids) in name_match(shared, m, false)? {
        sort_ignorecase(&mut ids);
        let Some(state) = KeyState::from_dir_name(&status) else {
            continue;
        };
        let mut keys = Map::new();
        for id in ids {
            match shared.store.read_key(state, &id) {
                Ok(Some(text)) => {
                    keys.insert(id, json!(text));
                }
                Ok(None) => {}
                Err(e) => return Err(store_error(&e)),
            }
        }
        out.insert(status, Value::Object(keys));
    }
    Ok(Value::Object(out))
}

/// `hash_type`, or the master's.
fn hash(shared: &Shared, a: &Args) -> Result<FingerprintHash, Fail> {
    match a.text("hash_type") {
        None => Ok(shared.cfg.hash_type),
        Some(h) => h
            .parse()
            .map_err(|_| Fail::Raise("ValueError".into(), format!("unsupported hash type {h}"))),
    }
}

fn local_finger(shared: &Shared, name: &str, h: FingerprintHash) -> Result<String, Fail> {
    match shared.store.local_fingerprint(name, h) {
        Ok(Some(f)) => Ok(f),
        // Salt's `pem_finger` of a missing file.
        Ok(None) => Ok(String::new()),
        Err(e) => Err(store_error(&e)),
    }
}

/// `key.finger(match, hash_type)`: fingerprints of the matching keys, the master's own
/// files included (`local`).
fn finger(shared: &Shared, m: Option<&Value>, h: FingerprintHash) -> Answer {
    let mut out = Map::new();
    for (status, ids) in name_match(shared, m, true)? {
        let mut fps = Map::new();
        for id in ids {
            let f = match KeyState::from_dir_name(&status) {
                Some(state) => shared
                    .store
                    .fingerprint(state, &id, h)
                    .map_err(|e| store_error(&e))?
                    .unwrap_or_default(),
                None => local_finger(shared, &id, h)?,
            };
            fps.insert(id, json!(f));
        }
        out.insert(status, Value::Object(fps));
    }
    Ok(Value::Object(out))
}

fn pair(private: String, public: String) -> Value {
    json!({"priv": private, "pub": public})
}

/// Salt's `gen`: a new RSA pair of `max(2048, keysize)` bits, `(private PKCS#1, public SPKI)`
/// PEM texts. Nothing is stored.
/// (`id_` only names Salt's temporary files.)
fn gen_pair(keysize: Option<&Value>) -> Result<(String, String), Fail> {
    let bits = match keysize {
        None => 2048,
        Some(Value::Number(n)) => n.as_i64().unwrap_or(2048),
        Some(Value::String(s)) => s.trim().parse::<i64>().map_err(|_| {
            Fail::Raise(
                "ValueError".into(),
                format!("invalid literal for int() with base 10: '{s}'"),
            )
        })?,
        Some(other) => {
            return Err(Fail::Raise(
                "TypeError".into(),
                format!(
                    "int() argument must be a string, a bytes-like object or a real number, \
                     not '{}'",
                    py_type(other)
                ),
            ));
        }
    };
    let bits = u32::try_from(bits.max(2048)).unwrap_or(u32::MAX);
    let key = salt_pki::PrivateKey::generate(bits)
        .map_err(|e| Fail::Raise("ValueError".into(), e.to_string()))?;
    let private = key
        .to_pem(None)
        .map_err(|e| Fail::Raise("ValueError".into(), e.to_string()))?;
    let private = String::from_utf8_lossy(&private).into_owned();
    Ok((private, key.public_key().to_pem()))
}

/// Salt's `clean.id` (`clean.hostname`): trimmed, only `[a-zA-Z0-9.-]`, dots stripped at
/// both ends; empty is an error.
fn clean_id(id: &str) -> Result<String, Fail> {
    let t = id.trim();
    if t.is_empty() {
        return Err(Fail::Raise(
            "salt.exceptions.CommandExecutionError".into(),
            "Empty value during sanitation".into(),
        ));
    }
    let kept: String = t
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
        .collect();
    Ok(kept.trim_matches('.').to_owned())
}

/// `key.gen_accept(id_, keysize, force)`: a new pair whose public half is stored as `id_`'s
/// accepted key; `{}` when `id_` already has one and not `force`.
fn gen_accept(shared: &Shared, a: &Args) -> Answer {
    let raw = a
        .get("id_")
        .map(salt_compat::py_json_str)
        .unwrap_or_default();
    let id = clean_id(&raw)?;
    let (private, public) = gen_pair(a.get("keysize"))?;
    let accepted = shared
        .store
        .states_of(&id)
        .map_err(|e| store_error(&e))?
        .contains(&KeyState::Accepted);
    if accepted && !a.flag("force", false) {
        return Ok(json!({}));
    }
    shared
        .key_changes()
        .put(KeyState::Accepted, &id, &public)
        .map_err(|e| store_error(&e))?;
    let _ = shared.store.refresh();
    Ok(pair(private, public))
}
