//! The master's answer to `_pillar` (Salt's `AESFuncs._pillar`): the pillar compiled by
//! `salt-pillar`, its templates' `salt[...]` reaching the minion's execution modules run on
//! the master (`salt-minion-core`), grains and pillar kept in the minion data cache.

use rmpv::Value;

/// Answer a `_pillar` request (Salt's `AESFuncs._pillar`): compile, then keep grains and
/// pillar in the minion data cache.
pub fn answer(
    shared: &crate::shared::Shared,
    id: &str,
    load: &salt_proto::msg::PillarRequest,
) -> Value {
    let mut grains = match &load.grains {
        Value::Map(m) => m.clone(),
        _ => Vec::new(),
    };
    match grains.iter_mut().find(|(k, _)| k.as_str() == Some("id")) {
        Some(slot) => slot.1 = Value::from(id),
        None => grains.push((Value::from("id"), Value::from(id))),
    }
    let grains = Value::Map(grains);
    // Salt's master renders pillar with its minion modules loaded for this minion
    // (`Pillar.__gen_opts`: its grains, its id): ours are salt-minion-core's registry.
    let opts = Value::Map(vec![(Value::from("id"), Value::from(id))]);
    let req = salt_pillar::Request {
        id: id.to_owned(),
        grains: grains.clone(),
        saltenv: load.saltenv_or_env().map(str::to_owned),
        pillarenv: load.pillarenv.clone(),
        pillar_override: load.pillar_override.clone(),
        ext: load.ext.clone(),
        salt: salt_minion_core::modules::state::master_salt_hook(id, grains, opts),
    };
    let mut opts = salt_pillar::Options::from(&shared.cfg);
    opts.git_pillars = shared
        .git_pillars
        .iter()
        .map(|g| g.clone() as std::sync::Arc<dyn salt_pillar::GitPillarSource>)
        .collect();
    let pillar = salt_pillar::compile(&opts, &req);
    if shared.cfg.minion_data_cache {
        let data = Value::Map(vec![
            (Value::from("grains"), req.grains),
            (Value::from("pillar"), pillar.clone()),
        ]);
        let cache = crate::minions::data::MinionCache::new(&shared.cfg.cachedir);
        if let Err(e) = cache.store(id, "data", &data) {
            tracing::warn!("Minion data cache for {id} not written: {e}");
        }
    }
    pillar
}
