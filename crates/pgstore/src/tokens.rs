//! Eauth tokens shared by a master group (`eauth_tokens: postgres`, docs/group.md): a token
//! made on one master (or through one master's salt-api) works on every master of the
//! `cluster_id`, and a logout or expiry on one is seen by all. Salt's own shared store is
//! `rediscluster` (`salt/tokens/rediscluster.py`): the same four calls, the same value
//! (`salt.payload.dumps(tdata)`), on the group's database instead of Redis.
//!
//! The table `salt_rs_tokens` (migration 3) holds the token's sha256 digest, never the
//! token: a copy of the database (a backup) gives no usable token. Lookups are by digest,
//! so a guessed or hostile token is only ever a parameter, never SQL or a path.
//! [`PgTokens::list_tokens`] therefore lists nothing; [`PgTokens::clean_expired`] (Salt's
//! `clean_expired_tokens`, the master's maintenance loop) is one `DELETE`.
//!
//! With the database down every call fails with [`StoreError::Io`]: a login is refused and
//! a token reads as not valid for that request, but nothing is removed.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use salt_eauth::token::{StoreError, TokenData, TokenStore, new_token};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::{Error, Settings, schema};

struct TokInner {
    settings: Settings,
    connector: crate::tls::Connector,
    pool: deadpool_postgres::Pool,
    migrated: AtomicBool,
}

/// The group's token store: see the module docs.
pub struct PgTokens {
    h: crate::handle::Handle<TokInner>,
    hash_type: String,
}

impl std::fmt::Debug for PgTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTokens")
            .field("cluster_id", &self.h.inner.settings.cluster_id)
            .finish_non_exhaustive()
    }
}

/// The digest a token is stored under.
fn digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

fn io(e: Error) -> StoreError {
    StoreError::Io(std::io::Error::other(format!(
        "eauth_tokens postgres (the group's database): {e}"
    )))
}

impl TokInner {
    async fn client(&self) -> Result<deadpool_postgres::Object, Error> {
        let mut client = self
            .pool
            .get()
            .await
            .map_err(|e| self.connector.pool_error(e))?;
        if !self.migrated.load(Ordering::Relaxed) {
            schema::migrate(&mut client).await?;
            self.migrated.store(true, Ordering::Relaxed);
        }
        Ok(client)
    }
}

impl PgTokens {
    /// Set up the pool (no connection yet); tokens are minted with `hash_type`.
    pub fn new(settings: Settings, hash_type: &str) -> Result<Self, Error> {
        let connector = settings.connector()?;
        let pool = connector.pool(2, crate::CONNECT_TIMEOUT)?;
        let inner = Arc::new(TokInner {
            settings,
            connector,
            pool,
            migrated: AtomicBool::new(false),
        });
        Ok(Self {
            h: crate::handle::Handle::new("salt-tokens", 1, "token store", inner)?,
            hash_type: hash_type.to_owned(),
        })
    }

    fn call<T, F>(&self, f: impl FnOnce(Arc<TokInner>) -> F) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        self.h.call(f).map_err(io)
    }
}

impl TokenStore for PgTokens {
    fn mk_token(&self, mut tdata: TokenData) -> Result<TokenData, StoreError> {
        // Stored without the token itself (put back when read).
        tdata.token = String::new();
        let value = salt_proto::encode(&tdata.to_value());
        let expire = tdata.expire;
        loop {
            let token = Zeroizing::new(new_token(&self.hash_type));
            let hash = digest(&token);
            let value = value.clone();
            let inserted = self.call(move |inner| async move {
                let client = inner.client().await?;
                Ok(client
                    .execute(
                        "INSERT INTO salt_rs_tokens (cluster_id, token_hash, expire, tdata) \
                         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                        &[&inner.settings.cluster_id, &hash, &expire, &value],
                    )
                    .await?)
            });
            match inserted {
                Ok(0) => continue,
                Ok(_) => {
                    tdata.token = token.as_str().to_owned();
                    return Ok(tdata);
                }
                Err(e) => {
                    tracing::warn!("Authentication failure: cannot save a token: {e}");
                    return Err(e);
                }
            }
        }
    }

    fn get_token(&self, token: &str) -> Result<Option<TokenData>, StoreError> {
        let hash = digest(token);
        let row: Option<Vec<u8>> = self.call(move |inner| async move {
            let client = inner.client().await?;
            let row = client
                .query_opt(
                    "SELECT tdata FROM salt_rs_tokens WHERE cluster_id = $1 AND token_hash = $2",
                    &[&inner.settings.cluster_id, &hash],
                )
                .await?;
            Ok(row.map(|r| r.get(0)))
        })?;
        let Some(bytes) = row else {
            return Ok(None);
        };
        let value = salt_proto::decode(&bytes).map_err(|_| StoreError::Corrupt)?;
        let mut tdata = TokenData::from_value(&value).ok_or(StoreError::Corrupt)?;
        tdata.token = token.to_owned();
        Ok(Some(tdata))
    }

    fn rm_token(&self, token: &str) -> Result<(), StoreError> {
        let hash = digest(token);
        self.call(move |inner| async move {
            let client = inner.client().await?;
            client
                .execute(
                    "DELETE FROM salt_rs_tokens WHERE cluster_id = $1 AND token_hash = $2",
                    &[&inner.settings.cluster_id, &hash],
                )
                .await?;
            Ok(())
        })
        .inspect_err(|e| tracing::warn!("Could not remove a token: {e}"))
    }

    /// Nothing: the database holds digests only (see the module docs).
    fn list_tokens(&self) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }

    fn clean_expired(&self, now: f64) -> Result<usize, StoreError> {
        let n = self.call(move |inner| async move {
            let client = inner.client().await?;
            Ok(client
                .execute(
                    "DELETE FROM salt_rs_tokens WHERE cluster_id = $1 AND expire < $2",
                    &[&inner.settings.cluster_id, &now],
                )
                .await?)
        })?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }
}

/// Why [`token_store`] could not make the store.
#[derive(Debug, thiserror::Error)]
pub enum TokenStoreError {
    /// `eauth_tokens` cannot be honoured with this configuration.
    #[error("{0}")]
    Config(salt_eauth::ConfigError),
    /// The group's connection could not be set up (a TLS file, the runtime).
    #[error("eauth_tokens postgres: {0}")]
    Db(Error),
}

/// The token store of a master (or of its salt-api, which removes tokens at `/logout`):
/// `eauth_tokens` as written, else `postgres` when the master is in a group (`cluster_id`),
/// else Salt's `localfs`. `postgres` without a group is refused by name.
pub fn token_store(
    cfg: &salt_config::MasterConfig,
    eauth: &salt_eauth::EauthConfig,
) -> Result<Box<dyn TokenStore>, TokenStoreError> {
    use salt_eauth::TokenBackend;
    let local = || -> Box<dyn TokenStore> {
        Box::new(salt_eauth::LocalFsStore::new(
            eauth.token_dir.clone(),
            &eauth.hash_type,
        ))
    };
    let group = cfg.cluster_id.as_ref();
    match (eauth.eauth_tokens, group) {
        (Some(TokenBackend::Postgres), None) => Err(TokenStoreError::Config(
            salt_eauth::ConfigError::WrongType {
                option: "eauth_tokens".into(),
                expected: "`localfs`: `postgres` needs a master group (`cluster_id`, docs/group.md)",
            },
        )),
        (Some(TokenBackend::LocalFs), Some(c)) => {
            tracing::info!(
                "group {}: eauth_tokens: localfs, so a token works only on the master that made it",
                c.cluster_id
            );
            Ok(local())
        }
        (Some(TokenBackend::LocalFs), None) | (None, None) => Ok(local()),
        (Some(TokenBackend::Postgres) | None, Some(c)) => {
            let settings = Settings::from_config(c, &cfg.id, cfg.rotate_aes_key);
            let store = PgTokens::new(settings, &eauth.hash_type).map_err(TokenStoreError::Db)?;
            Ok(Box::new(store))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_digest_is_stored() {
        let t = "ab".repeat(32);
        let d = digest(&t);
        assert_eq!(d.len(), 64);
        assert_ne!(d, t);
        assert_eq!(d, digest(&t));
    }
}
