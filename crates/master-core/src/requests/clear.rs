//! Salt's clear commands on the request port (`ClearFuncs` in `salt/master.py`): `publish`,
//! `mk_token`, `get_token`, `runner`, `wheel`, besides `_auth` and `ping`
//! (`requests/mod.rs`). Unauthenticated input: the load is read by `salt_proto::clear`,
//! every decision about who may do what is `salt_eauth`'s (the root key from
//! `cachedir/.root_key` and the other access keys, eauth credentials, tokens), and each
//! reply has Salt's shape:
//!
//! * `publish`: `{enc: clear, load: {jid, minions, missing}}`, sent through the same path as
//!   our own `salt` (`jobs::run::send`); no minion matched: `jid: None` and Salt's error;
//!   refused: `{error: {name: AuthenticationError|AuthorizationError, ...}}`.
//! * `mk_token`: the token's data, or `""`; `get_token`: the data, or `False`.
//! * `runner`: `{tag: salt/run/<jid>, jid}` at once (Salt's `RunnerClient.asynchronous`),
//!   the runner then runs on the master's runtime and fires `salt/run/<jid>/new` and `/ret`.
//! * `wheel`: `{tag, data: {fun, jid, tag, user, _stamp, return, success}}`, the function
//!   run at once on the request worker (`crate::wheel`), with Salt's `salt/wheel/<jid>`
//!   events.
//! * an unknown command: `{}` and Salt's log line "Requested method not exposed: <name>".
//! * a known command whose load lacks what Salt's handler reads: Salt's handler raises and
//!   its request server answers `"Some exception handling minion payload"`.

use std::sync::Weak;

use rmpv::Value;
use salt_proto::clear::{ClearCommand, MasterCall, Publish};
use salt_proto::{InvalidMessage, encode};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::jobs::publish::Job;
use crate::shared::Shared;

/// What the running server lends the clear commands: set once the publisher is bound.
pub(crate) struct Host {
    /// The master's state (weak: `Shared` holds this).
    pub shared: Weak<Shared>,
    /// The publisher (a clear `publish` sends through it).
    pub publisher: salt_transport::Publisher,
    /// The runtime runners run on.
    pub runtime: tokio::runtime::Handle,
    /// The master is stopping.
    pub stop: CancellationToken,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").finish_non_exhaustive()
    }
}

/// Salt's request server's answer when a handler raised.
const HANDLER_RAISED: &str = "Some exception handling minion payload";

fn map(pairs: Vec<(&str, Value)>) -> Value {
    Value::Map(
        pairs
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect(),
    )
}

/// Answer one clear load other than `_auth`/`ping`.
pub(crate) fn handle(shared: &Shared, load: &Value) -> Vec<u8> {
    let cmd = match ClearCommand::from_load(load) {
        Ok(cmd) => cmd,
        Err(InvalidMessage::MissingField { field: "cmd", .. } | InvalidMessage::NotAMap { .. }) => {
            if shared.log_limit.allow("clear-malformed") {
                tracing::error!("Received malformed clear command (missing 'cmd')");
            }
            return encode(&Value::Map(vec![]));
        }
        Err(InvalidMessage::WrongType { field: "cmd", .. }) => {
            if shared.log_limit.allow("clear-unknown") {
                tracing::error!("Requested method not exposed: <not text>");
            }
            return encode(&Value::Map(vec![]));
        }
        Err(e) => {
            if shared.log_limit.allow("clear-invalid") {
                tracing::error!("Error in function clear command: {e}");
            }
            return encode(&Value::from(HANDLER_RAISED));
        }
    };
    let reply = match cmd {
        ClearCommand::MkToken(f) => shared.eauth.mk_token_reply(&f),
        ClearCommand::GetToken(t) => shared.eauth.get_token_reply(t.as_ref()),
        ClearCommand::Publish(p) => publish(shared, &p),
        ClearCommand::Runner(call) => runner(shared, &call),
        ClearCommand::Wheel(call) => wheel(shared, &call),
        ClearCommand::Unknown(name) => {
            if shared.log_limit.allow("clear-unknown") {
                tracing::error!("Requested method not exposed: {name}");
            }
            Value::Map(vec![])
        }
        // `_auth` and `ping` are answered by `requests/mod.rs`; nothing else is left.
        _ => Value::Map(vec![]),
    };
    encode(&reply)
}

/// A target as our resolver reads it: text, or a list joined by commas.
fn tgt_text(tgt: &Value) -> String {
    match tgt {
        Value::Array(items) => items
            .iter()
            .filter_map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(","),
        other => other.as_str().unwrap_or_default().to_owned(),
    }
}

/// `ClearFuncs.publish`.
fn publish(shared: &Shared, p: &Publish) -> Value {
    let tgt = tgt_text(&p.tgt);
    let fun_name = match &p.fun {
        salt_proto::clear::Funs::One(f) => Some(f.as_str()),
        salt_proto::clear::Funs::Compound(_) => None,
    };
    let (target, minions) =
        match crate::jobs::run::target_minions(shared, &tgt, &p.tgt_type, fun_name) {
            Ok((t, m)) => (Some(t), m),
            Err(e) => {
                tracing::warn!("clear publish: target {tgt:?}: {e}");
                (None, Vec::new())
            }
        };
    let user = match shared.eauth.authorize_publish(
        p,
        &minions,
        &shared.access_keys,
        &crate::jobs::run::Resolver(shared),
    ) {
        Ok(user) => user,
        Err(refusal) => {
            let wire = refusal.wire();
            if let Some(jid) = &p.jid {
                let mut data = salt_compat::json::msgpack_to_json(&wire);
                if let Some(m) = data.as_object_mut() {
                    m.insert("jid".into(), json!(jid));
                    m.insert("fun".into(), json!(p.fun.names()));
                }
                shared.events.fire(format!("salt/job/{jid}/error"), data);
            }
            return wire;
        }
    };
    let fun = match &p.fun {
        salt_proto::clear::Funs::One(f) => f.clone(),
        salt_proto::clear::Funs::Compound(_) => {
            return map(vec![(
                "error",
                Value::from(
                    "compound commands (a list of functions) are not implemented by salt-rs",
                ),
            )]);
        }
    };
    let Some(target) = target.filter(|_| !minions.is_empty()) else {
        return map(vec![
            ("enc", Value::from("clear")),
            (
                "load",
                map(vec![
                    ("jid", Value::Nil),
                    ("minions", Value::Array(vec![])),
                    (
                        "error",
                        Value::from(format!(
                            "Master could not resolve minions for target {}",
                            salt_eauth::acl::py_str(&p.tgt)
                        )),
                    ),
                ]),
            ),
        ]);
    };
    let Some(host) = shared.host.get() else {
        return map(vec![("error", Value::from("Master failed to assign jid"))]);
    };
    let jid = p.jid.clone().unwrap_or_else(|| shared.jids.next());
    let job = Job {
        fun,
        arg: p.arg.clone(),
        tgt: target.tgt,
        jid: jid.clone(),
        ret: p.ret.as_str().unwrap_or_default().to_owned(),
        tgt_type: target.tgt_type,
        user,
        start_event: false,
    };
    // Salt's old-style event: the jid as the tag, the expected minions.
    shared.events.fire(jid.clone(), json!({"minions": minions}));
    let arg: Vec<serde_json::Value> = p
        .arg
        .iter()
        .map(salt_compat::json::msgpack_to_json)
        .collect();
    if let Err(e) = crate::jobs::run::send(
        shared,
        &host.publisher,
        &job,
        &minions,
        &arg,
        crate::jobs::run::JobFiles::Before,
    ) {
        tracing::error!("clear publish of {jid}: {e}");
        return map(vec![("error", Value::from(e))]);
    }
    let names = |v: &[String]| Value::Array(v.iter().map(|m| Value::from(m.as_str())).collect());
    map(vec![
        ("enc", Value::from("clear")),
        (
            "load",
            map(vec![
                ("jid", Value::from(jid)),
                ("minions", names(&minions)),
                ("missing", Value::Array(vec![])),
            ]),
        ),
    ])
}

/// A runner's arguments from a clear load's `kwarg` (Salt's `_reformat_low`: `arg` is
/// positional, `kwarg` and every other key are keyword arguments).
fn runner_args(kwarg: &Value) -> Vec<serde_json::Value> {
    let kw = salt_compat::json::msgpack_to_json(kwarg);
    let mut kw = kw.as_object().cloned().unwrap_or_default();
    let mut args: Vec<serde_json::Value> = match kw.remove("arg") {
        Some(serde_json::Value::Array(a)) => a,
        Some(other) => vec![other],
        None => Vec::new(),
    };
    if let Some(serde_json::Value::Object(inner)) = kw.remove("kwarg") {
        kw.extend(inner);
    }
    kw.retain(|k, _| !k.starts_with("__"));
    if !kw.is_empty() {
        kw.insert("__kwarg__".into(), json!(true));
        args.push(serde_json::Value::Object(kw));
    }
    args
}

/// `ClearFuncs.runner`: authorise, answer `{tag, jid}`, run it on the master's runtime.
fn runner(shared: &Shared, call: &MasterCall) -> Value {
    let user = match shared
        .eauth
        .authorize_call(call, "runner", &shared.access_keys)
    {
        Ok(user) => user,
        Err(refusal) => return refusal.wire(),
    };
    let Some(host) = shared.host.get() else {
        return map(vec![("error", Value::from("the master is starting"))]);
    };
    let Some(arc) = host.shared.upgrade() else {
        return map(vec![("error", Value::from("the master is stopping"))]);
    };
    let args = runner_args(&call.kwarg);
    let fun = call.fun.clone();
    let (jid, tag) = crate::runners::announce(shared, &fun, &args, &user);
    let ctx = crate::runners::ctx::Ctx {
        shared: arc,
        publisher: host.publisher.clone(),
        stop: host.stop.clone(),
        console: None,
    };
    let jid2 = jid.clone();
    host.runtime.spawn(async move {
        crate::runners::run_announced(&ctx, &jid2, &fun, args, &user).await;
    });
    map(vec![("tag", Value::from(tag)), ("jid", Value::from(jid))])
}

/// `ClearFuncs.wheel`: authorise, fire `salt/wheel/<jid>/new`, run the function as Salt's
/// `WheelClient.call_func(fun, **load)` (its own jid and events, user `UNKNOWN`, as Salt's),
/// fire `salt/wheel/<jid>/ret`, answer `{tag, data}`. Runs on the request worker's thread
/// (wheel functions block on files), as Salt's runs in its worker process.
fn wheel(shared: &Shared, call: &MasterCall) -> Value {
    let user = match shared
        .eauth
        .authorize_call(call, "wheel", &shared.access_keys)
    {
        Ok(user) => user,
        Err(refusal) => return refusal.wire(),
    };
    let jid = shared.jids.next();
    let tag = format!("salt/wheel/{jid}");
    let mut data = serde_json::Map::new();
    data.insert("fun".into(), json!(format!("wheel.{}", call.fun)));
    data.insert("jid".into(), json!(jid));
    data.insert("tag".into(), json!(tag));
    data.insert("user".into(), json!(user));
    shared.events.fire(
        format!("{tag}/new"),
        serde_json::Value::Object(data.clone()),
    );
    let low = match salt_compat::json::msgpack_to_json(&call.load) {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    let (ret, success) = crate::wheel::call_low(shared, &call.fun, &low, "UNKNOWN");
    data.insert("_stamp".into(), json!(salt_compat::time::event_stamp_now()));
    data.insert("return".into(), ret);
    data.insert("success".into(), json!(success));
    let data = serde_json::Value::Object(data);
    shared.events.fire(format!("{tag}/ret"), data.clone());
    map(vec![
        ("tag", Value::from(tag)),
        ("data", salt_compat::json::json_to_msgpack(&data)),
    ])
}
