//! Salt 3008's `resource` runner (`salt/runners/resource.py`) over our resource registry
//! (`minions/resources.rs`, whose grains are Salt's `resource_grains` bank).

use serde_json::{Value, json};

use super::ctx::{Args, Ctx};
use salt_compat::json::msgpack_to_json;

/// Run `resource.show_grains`, `resource.list_grains` or `resource.refresh`.
pub(crate) fn call(ctx: &Ctx, fun: &str, a: &Args) -> Value {
    let shared = &ctx.shared;
    match fun {
        // The grains kept for `<type>:<id>`, or None.
        "resource.show_grains" => {
            let (Some(rtype), Some(rid)) = (a.text("type"), a.text("id")) else {
                return Value::Null;
            };
            if rtype.is_empty() || rid.is_empty() {
                return Value::Null;
            }
            shared
                .resources
                .get(&rtype, &rid)
                .and_then(|e| e.grains)
                .map_or(Value::Null, |g| msgpack_to_json(&g))
        }
        // `{srn: {grain_keys: [...] sorted, grain_count: n}}` for every resource with grains.
        "resource.list_grains" => {
            let mut out = serde_json::Map::new();
            for e in shared.resources.all() {
                let Some(rmpv::Value::Map(g)) = &e.grains else {
                    continue;
                };
                let mut keys: Vec<String> = g.iter().map(|(k, _)| salt_compat::py_str(k)).collect();
                keys.sort();
                out.insert(e.srn(), json!({"grain_keys": keys, "grain_count": g.len()}));
            }
            Value::Object(out)
        }
        // Salt fires `minion/<minion>/resource_refresh` on the master's bus and answers True.
        _ => match a.text("minion").filter(|m| !m.is_empty()) {
            Some(minion) => {
                shared.events.fire(
                    format!("minion/{minion}/resource_refresh"),
                    json!({ "minion": minion }),
                );
                Value::Bool(true)
            }
            None => Value::Bool(false),
        },
    }
}
