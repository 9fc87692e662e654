//! Salt's `cache` runner over the minion data cache (`cachedir/minions/<id>/data.p`, Salt's
//! `localfs` layout: a msgpack map with `grains` and `pillar`) and the mine
//! (`cachedir/minions/<id>/mine.p`).

use serde_json::{Map, Value};

use super::{Args, Ctx};
use crate::convert::mp_to_json;

/// Run one `cache.*` runner: `{id: grains|pillar|mine}` for the minions matching `tgt`
/// (glob by default; `tgt_type` `list` or `pcre` too).
pub fn call(ctx: &Ctx, fun: &str, a: &Args) -> Result<Value, String> {
    let tgt = a.text(0, "tgt").unwrap_or_else(|| "*".into());
    let tgt_type = a.text(1, "tgt_type").unwrap_or_else(|| "glob".into());
    let kind = crate::target::TargetType::from_name(&tgt_type).ok_or_else(|| {
        format!("cache runners support glob, pcre and list targets, not {tgt_type}")
    })?;
    let target = crate::target::Target::parse(&kind, &tgt).map_err(|e| e.to_string())?;
    let root = ctx.shared.cfg.cachedir.join("minions");
    let (file, key) = match fun {
        "cache.grains" => ("data.p", Some("grains")),
        "cache.pillar" => ("data.p", Some("pillar")),
        _ => ("mine.p", None),
    };
    let mut out = Map::new();
    let mut ids: Vec<String> = std::fs::read_dir(&root)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    for id in ids {
        if target.matches(&id) != Some(true) {
            continue;
        }
        let Ok(bytes) = std::fs::read(root.join(&id).join(file)) else {
            continue;
        };
        let Ok(v) = salt_proto::decode(&bytes) else {
            continue;
        };
        let v = mp_to_json(&v);
        let part = match key {
            Some(k) => v.get(k).cloned().unwrap_or(Value::Object(Map::new())),
            None => v,
        };
        out.insert(id, part);
    }
    Ok(Value::Object(out))
}
