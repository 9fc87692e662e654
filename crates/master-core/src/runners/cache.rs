//! Salt's `cache` runner over the minion data cache (`cachedir/minions/<id>/data.p`, Salt's
//! `localfs` layout: a msgpack map with `grains` and `pillar`) and the mine
//! (`cachedir/minions/<id>/mine.p`).

use serde_json::{Map, Value};

use super::ctx::{Args, Ctx};
use crate::minions::data::MinionCache;
use salt_compat::json::msgpack_to_json;

/// Run one `cache.*` runner: `{id: grains|pillar|mine}` for the accepted minions matching
/// `tgt` (any target type, `glob` by default) that have data cached.
pub(crate) fn call(ctx: &Ctx, fun: &str, a: &Args) -> Result<Value, String> {
    let tgt = a.text("tgt").unwrap_or_else(|| "*".into());
    let tgt_type = a.text("tgt_type").unwrap_or_else(|| "glob".into());
    let cfg = &ctx.shared.cfg;
    let groups = crate::minions::target::nodegroups(cfg);
    let target =
        crate::minions::target::resolve(&tgt, &tgt_type, &groups).map_err(|e| e.to_string())?;
    let cache = MinionCache::new(&cfg.cachedir);
    let _ = ctx.shared.store.refresh();
    let accepted = ctx.shared.store.list(salt_keystore::KeyState::Accepted);
    let ids = target
        .expected(accepted.iter().map(String::as_str), &cache, &groups, false)
        .map_err(|e| e.to_string())?;
    let mut out = Map::new();
    for id in ids {
        let part = match fun {
            "cache.grains" => cache.facts(&id).0,
            "cache.pillar" => cache.facts(&id).1,
            _ => cache.fetch(&id, "mine"),
        };
        if let Some(v) = part {
            out.insert(id, msgpack_to_json(&v));
        }
    }
    Ok(Value::Object(out))
}
