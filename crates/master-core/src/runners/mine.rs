//! Salt's `mine` runner (`salt/runners/mine.py`).
//!
//! * `mine.get tgt fun [tgt_type]`: the mine data of the minions `tgt` matches, read as a
//!   minion's `mine.get` is (`RemoteFuncs._mine_get`, [`crate::requests::mine`]) for the id
//!   `opts["id"]` without its `_master` suffix (the `mine_get` ACL applies to that id);
//! * `mine.update tgt [tgt_type]`: `salt.execute tgt mine.update` (publishes `mine.update`
//!   without arguments and waits the master's `timeout`): `{minion: return}`. Salt passes
//!   `clear` and `mine_functions` to `LocalClient.cmd` as publication options, which never
//!   reach the minion's function; here too they are accepted and not sent.

use salt_client::local::PublishRequest;
use salt_compat::json::{json_to_msgpack, msgpack_to_json};
use salt_proto::msg::MineGet;
use serde_json::{Map, Value};

use super::ctx::{Args, Ctx};

/// Salt's default `timeout` of the master's `LocalClient` (seconds).
const DEFAULT_TIMEOUT: u64 = 5;

/// Run `mine.get` or `mine.update`.
pub(crate) async fn call(ctx: &Ctx, fun: &str, a: &Args) -> Result<Value, String> {
    match fun {
        "mine.get" => Ok(get(ctx, a)),
        _ => update(ctx, a).await,
    }
}

fn get(ctx: &Ctx, a: &Args) -> Value {
    let id = ctx.shared.cfg.id.as_str();
    let id = id.strip_suffix("_master").unwrap_or(id);
    let load = MineGet {
        tgt: a.get("tgt").map_or(rmpv::Value::Nil, json_to_msgpack),
        fun: a.get("fun").map_or(rmpv::Value::Nil, json_to_msgpack),
        tgt_type: a.get("tgt_type").map(json_to_msgpack),
    };
    msgpack_to_json(&crate::requests::mine::get(&ctx.shared, id, &load))
}

async fn update(ctx: &Ctx, a: &Args) -> Result<Value, String> {
    let req = PublishRequest {
        tgt: a
            .get("tgt")
            .map(salt_compat::py_json_str)
            .unwrap_or_default(),
        tgt_type: a.text("tgt_type").unwrap_or_else(|| "glob".into()),
        fun: "mine.update".into(),
        timeout: DEFAULT_TIMEOUT,
        ..Default::default()
    };
    let got = match crate::jobs::run::run_job(&ctx.shared, &ctx.publisher, &ctx.stop, &req).await {
        Ok((_, got, _)) => got,
        // `LocalClient` prints it where the runner runs (`salt-run`); `{}`.
        Err(e) if e.starts_with("No minions matched") => {
            ctx.print(&e);
            Vec::new()
        }
        // Salt's `salt.execute` logs the client error and answers `{}`.
        Err(e) => {
            tracing::error!("Error while executing mine.update on {}: {e}", req.tgt);
            Vec::new()
        }
    };
    let mut out = Map::new();
    for (id, load) in got {
        let load = msgpack_to_json(&load);
        out.insert(id, load.get("return").cloned().unwrap_or(Value::Null));
    }
    Ok(Value::Object(out))
}
