//! Salt Resources (3008) in AES requests: `_register_resources` (Salt's
//! `AESFuncs._register_resources`) and the `resource_id` of a resource's `_return`.

use rmpv::Value;
use salt_keystore::KeyState;
use salt_proto::{map_remove, map_set};

use crate::shared::Shared;

/// `_register_resources` from minion `id`: `{"resources": {type: [id, ...]},
/// "resource_grains": {"<type>:<id>": {...}}}`. Answers `True`, or `{}` when `resources` is
/// missing (Salt's `__verify_load`). The grains are kept with `minion_data_cache` (Salt's
/// `resource_grains` bank), and then `resource/refresh/<id>` is fired as Salt does
/// (`minion_data_cache_events`, on by default).
pub(super) fn register(shared: &Shared, id: &str, load: &Value) -> Value {
    let Some(resources) = salt_compat::map_get(load, "resources") else {
        if shared.log_limit.allow("register-resources") {
            tracing::warn!("_register_resources from {id} without resources: refused");
        }
        return Value::Map(vec![]);
    };
    let keep_grains = shared.cfg.minion_data_cache;
    let grains = salt_compat::map_get(load, "resource_grains").filter(|_| keep_grains);
    let is_minion = |rid: &str| {
        shared
            .store
            .read_key(KeyState::Accepted, rid)
            .is_ok_and(|k| k.is_some())
    };
    match shared.resources.register(id, resources, grains, is_minion) {
        Ok((put, deleted)) => {
            tracing::debug!("Registered resources for minion '{id}': put={put}, deleted={deleted}")
        }
        Err(e) => tracing::warn!("Failed to register resources for minion '{id}': {e}"),
    }
    if keep_grains {
        shared.events.fire(
            format!("resource/refresh/{id}"),
            serde_json::json!({ "Resource cache refresh": id }),
        );
    }
    Value::Boolean(true)
}

/// The id a return from minion `id` is filed under: a resource's return carries
/// `resource_id`, which Salt's `_return` moves into `id` (after the channel's id check) so
/// that the event and the job cache are keyed by the resource. We take it only for a
/// resource `id` has registered (Salt takes any); `None`: the return is refused (logged).
pub(super) fn return_id(shared: &Shared, id: &str, load: &mut Value) -> Option<String> {
    let Some(rid) = map_remove(load, "resource_id") else {
        return Some(id.to_owned());
    };
    match rid.as_str() {
        Some(rid) if shared.resources.manages(id, rid) => {
            map_set(load, "id", Value::from(rid));
            Some(rid.to_owned())
        }
        _ => {
            if shared.log_limit.allow("resource-return") {
                tracing::warn!(
                    "Return from {id} for resource {:.80} refused: {id} has not registered it",
                    salt_compat::py_str(&rid)
                );
            }
            None
        }
    }
}
