//! The master's side of a master group (docs/group.md): open the group store over the
//! local key mirror, agree on the group's publish key, follow the change log.

use std::sync::{Arc, Weak};

use salt_config::MasterConfig;
use salt_keystore::KeyStore;
use salt_pgstore::{Group, Settings};

use crate::keys::aes::PublishKey;
use crate::keys::master::MasterKeys;
use crate::server::MasterError;
use crate::shared::Shared;

/// With `keys.cache_driver: postgres`: the group, and the publish key to start with (the
/// group's, or a fresh local one when the database cannot be reached now).
pub(crate) async fn open(
    cfg: &MasterConfig,
    keys: &MasterKeys,
    store: &Arc<KeyStore>,
) -> Result<(Option<Arc<Group>>, PublishKey), MasterError> {
    let local = PublishKey::generate(&keys.key)?;
    let Some(c) = cfg.cluster_id.as_ref().filter(|c| c.keys_in_postgres()) else {
        return Ok((None, local));
    };
    let settings = Settings::from_config(c, &cfg.id, cfg.rotate_aes_key);
    let group = Group::new(settings, store.clone()).map_err(|e| MasterError::Io {
        what: "group database".into(),
        source: std::io::Error::other(e),
    })?;
    // A new master serves sign-ins from the keys in memory while its files are written.
    group.defer_first_copy();
    let group = Arc::new(group);
    let key = local.crypticle.key_string().to_owned();
    let g = group.clone();
    let master_key = keys.key.clone();
    let first = tokio::task::spawn_blocking(move || {
        let seq = g.sync()?;
        let (generation, aes) = g.ensure_aes(&key)?;
        Ok::<_, salt_pgstore::Error>((seq, generation, aes))
    })
    .await
    .map_err(|e| MasterError::Io {
        what: "group database".into(),
        source: std::io::Error::other(e),
    })?;
    let publish = match first {
        Ok((seq, generation, aes)) => {
            tracing::info!(
                "group {}: keys up to change {seq}, publish key generation {generation}",
                c.cluster_id
            );
            PublishKey::from_key_string(&master_key, &aes)?
        }
        // TLS that fails (a wrong CA, a host name the certificate does not name) is an
        // error of the configuration: said as such, never a fall-back to plain.
        Err(e @ salt_pgstore::Error::Tls(_)) => {
            tracing::error!(
                "group {}: no connection to the database at start: {e}; serving the keys of \
                 the local mirror, key changes refused until it connects",
                c.cluster_id
            );
            local
        }
        Err(e) => {
            tracing::warn!(
                "group {}: database unreachable at start ({e}); serving the keys of the local \
                 mirror, key changes refused until it returns",
                c.cluster_id
            );
            local
        }
    };
    Ok((Some(group), publish))
}

/// Adopt every new group publish key, and start following the change log.
pub(crate) fn follow(shared: &Arc<Shared>) {
    let Some(group) = &shared.group else {
        return;
    };
    let weak: Weak<Shared> = Arc::downgrade(shared);
    group.on_aes(Box::new(move |generation, key| {
        let Some(s) = weak.upgrade() else {
            return;
        };
        match PublishKey::from_key_string(&s.keys.key, key) {
            Ok(k) => {
                s.aes.rotate(k);
                s.metrics.rotation("group");
                tracing::info!("Rotating master AES key (group generation {generation})");
            }
            Err(e) => tracing::error!("group publish key unusable: {e}"),
        }
    }));
    group.start_follower();
}

/// The job cache of `master_job_cache`: the files of `{cachedir}/jobs`, or (`pgjsonb`) the
/// group's database, connected now when it can be (else writes spool until it returns).
pub(crate) async fn jobs(cfg: &MasterConfig) -> Result<crate::jobs::Jobs, MasterError> {
    let dir = Shared::jobs_dir(cfg);
    let Some(c) = cfg
        .cluster_id
        .as_ref()
        .filter(|c| c.job_driver == salt_config::JobDriver::Pgjsonb)
    else {
        return Ok(crate::jobs::Jobs::files(dir, cfg.hash_type));
    };
    let settings = Settings::from_config(c, &cfg.id, cfg.rotate_aes_key);
    let db =
        salt_pgstore::JobDb::new(settings, cfg.cachedir.join("pgjsonb_spool")).map_err(|e| {
            MasterError::Io {
                what: "group job cache".into(),
                source: std::io::Error::other(e),
            }
        })?;
    let db = Arc::new(db);
    let d = db.clone();
    match tokio::task::spawn_blocking(move || d.connect()).await {
        Ok(Ok(())) => tracing::info!(
            "group {}: job cache in the database (pgjsonb)",
            c.cluster_id
        ),
        Ok(Err(e)) => tracing::warn!(
            "group {}: job cache database unreachable at start ({e}); returns spool to {} until \
             it returns",
            c.cluster_id,
            cfg.cachedir.join("pgjsonb_spool").display()
        ),
        Err(e) => tracing::warn!("group job cache: {e}"),
    }
    Ok(crate::jobs::Jobs::with_store(
        Box::new(crate::jobs::PgJobs::new(db)),
        dir,
    ))
}
