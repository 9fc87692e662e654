//! The master's side of a master group (docs/group.md): open the group store over the
//! local key mirror, agree on the group's publish key, and open the job cache of
//! `master_job_cache` (blocking: called from [`Shared::open`](crate::shared::Shared::open)).
//! The server follows the change log once the master's state is open.

use std::path::PathBuf;
use std::sync::Arc;

use salt_config::MasterConfig;
use salt_keystore::KeyStore;
use salt_pgstore::{Group, Settings};

use crate::error::MasterError;
use crate::keys::aes::PublishKey;
use crate::keys::master::MasterKeys;

/// With `keys.cache_driver: postgres`: the group, and the publish key to start with (the
/// group's, or a fresh local one when the database cannot be reached now).
pub(crate) fn open(
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
    let first = group.sync().and_then(|seq| {
        let (generation, aes) = group.ensure_aes(&key)?;
        Ok((seq, generation, aes))
    });
    let publish = match first {
        Ok((seq, generation, aes)) => {
            tracing::info!(
                "group {}: keys up to change {seq}, publish key generation {generation}",
                c.cluster_id
            );
            PublishKey::from_key_string(&keys.key, &aes)?
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

/// The job cache of `master_job_cache`: the files of `{cachedir}/jobs`, or (`pgjsonb`) the
/// group's database, connected now when it can be (else writes spool until it returns).
pub(crate) fn jobs(cfg: &MasterConfig, dir: PathBuf) -> Result<crate::jobs::Jobs, MasterError> {
    if cfg.event_return.job_cache_postgres {
        return postgres_jobs(cfg, dir);
    }
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
    match db.connect() {
        Ok(()) => tracing::info!(
            "group {}: job cache in the database (pgjsonb)",
            c.cluster_id
        ),
        Err(e) => tracing::warn!(
            "group {}: job cache database unreachable at start ({e}); returns spool to {} until \
             it returns",
            c.cluster_id,
            cfg.cachedir.join("pgjsonb_spool").display()
        ),
    }
    Ok(crate::jobs::Jobs::with_store(
        Box::new(crate::jobs::PgJobs::new(db)),
        dir,
    ))
}

/// `master_job_cache: postgres`: Salt's `postgres` returner tables (`returner.postgres.*`),
/// connected now when it can be (else each write tries again and logs its failure).
fn postgres_jobs(cfg: &MasterConfig, dir: PathBuf) -> Result<crate::jobs::Jobs, MasterError> {
    let settings = crate::events::returner::settings(&cfg.event_return, &cfg.id);
    let db = salt_pgstore::PgReturner::new(settings).map_err(|e| MasterError::Io {
        what: "postgres job cache".into(),
        source: std::io::Error::other(e),
    })?;
    let c = &cfg.event_return.postgres;
    match db.connect() {
        Ok(()) => tracing::info!(
            "job cache: Salt's postgres returner tables in database {} on {}",
            c.db,
            c.host
        ),
        Err(e) => tracing::warn!(
            "job cache: postgres returner database {} on {} unreachable at start: {e}",
            c.db,
            c.host
        ),
    }
    Ok(crate::jobs::Jobs::with_store(
        Box::new(crate::jobs::PostgresJobs::new(Arc::new(db))),
        dir,
    ))
}
