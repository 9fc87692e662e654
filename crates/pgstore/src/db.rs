//! The database side of [`crate::Group`]: catch-up (log → mirror), changes, publish key.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;

use salt_keystore::KeyState;
use tokio_postgres::Transaction;

use crate::mirror::{self, MirrorLock};
use crate::plan::{self, Keys, Op};
use crate::{Error, Inner, schema};

/// `NOTIFY` channel; the payload is `<cluster_id>:<seq>`.
pub(crate) const CHANNEL: &str = "salt_rs_keys";

fn state_name(s: KeyState) -> &'static str {
    match s {
        KeyState::Accepted => "accepted",
        KeyState::Pending => "pending",
        KeyState::Rejected => "rejected",
        KeyState::Denied => "denied",
    }
}

fn parse_state(s: &str) -> Option<KeyState> {
    KeyState::ALL.into_iter().find(|k| state_name(*k) == s)
}

/// Rows of `ids` (all ids when `None`), by id.
async fn read_keys(
    tx: &Transaction<'_>,
    cluster: &str,
    ids: Option<&[String]>,
) -> Result<BTreeMap<String, Keys>, Error> {
    let rows = match ids {
        Some(ids) => {
            tx.query(
                "SELECT minion_id, state, pem FROM salt_minion_keys \
                 WHERE cluster_id = $1 AND minion_id = ANY($2)",
                &[&cluster, &ids],
            )
            .await?
        }
        None => {
            tx.query(
                "SELECT minion_id, state, pem FROM salt_minion_keys WHERE cluster_id = $1",
                &[&cluster],
            )
            .await?
        }
    };
    let mut out: BTreeMap<String, Keys> = BTreeMap::new();
    for row in rows {
        let id: String = row.get(0);
        let state: &str = row.get(1);
        let Some(state) = parse_state(state) else {
            continue;
        };
        out.entry(id).or_default().insert(state, row.get(2));
    }
    Ok(out)
}

impl Inner {
    async fn client(&self) -> Result<deadpool_postgres::Object, Error> {
        let mut client = self.pool.get().await.map_err(|e| {
            self.up.store(false, Ordering::Relaxed);
            self.connector.pool_error(e)
        })?;
        if !self.migrated.load(Ordering::Relaxed) {
            schema::migrate(&mut client).await?;
            client
                .execute(
                    "INSERT INTO salt_groups (cluster_id) VALUES ($1) ON CONFLICT DO NOTHING",
                    &[&self.settings.cluster_id],
                )
                .await?;
            self.migrated.store(true, Ordering::Relaxed);
        }
        self.up.store(true, Ordering::Relaxed);
        Ok(client)
    }

    /// Apply every change after the mirror's last one (or copy everything when the
    /// mirror is new or of another group). Returns the last change applied.
    pub(crate) async fn catch_up(&self) -> Result<i64, Error> {
        let r = self.catch_up_inner().await;
        if r.is_err() {
            self.up.store(false, Ordering::Relaxed);
        }
        r
    }

    async fn catch_up_inner(&self) -> Result<i64, Error> {
        let cluster = self.settings.cluster_id.as_str();
        let mut client = self.client().await?;
        let _apply = self.apply.lock().await;
        let _lock = MirrorLock::acquire(&self.pki_dir)?;
        let on_disk = mirror::read_seq(&self.pki_dir, cluster);
        let last = (*self.applied.lock().unwrap_or_else(|e| e.into_inner())).or(on_disk);
        // One snapshot: the counter, the log and the keys agree.
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await?;
        let head = tx
            .query_one(
                "SELECT seq, aes_generation, aes, log_trimmed_to FROM salt_groups \
                 WHERE cluster_id = $1",
                &[&cluster],
            )
            .await?;
        let seq: i64 = head.get(0);
        let aes_gen: i64 = head.get(1);
        let aes: Option<String> = head.get(2);
        let trimmed: i64 = head.get(3);
        match last {
            Some(l) if l == seq => {}
            // The changes after `l` are all still in the log.
            Some(l) if l < seq && l >= trimmed => {
                let ids: Vec<String> = tx
                    .query(
                        "SELECT DISTINCT minion_id FROM salt_key_log \
                         WHERE cluster_id = $1 AND seq > $2 AND minion_id <> ''",
                        &[&cluster, &l],
                    )
                    .await?
                    .into_iter()
                    .map(|r| r.get(0))
                    .collect();
                let rows = read_keys(&tx, cluster, Some(&ids)).await?;
                let empty = Keys::new();
                for id in &ids {
                    mirror::apply_id(&self.mirror, id, rows.get(id).unwrap_or(&empty))?;
                }
            }
            // A new mirror, another group's, or a database that went back in time.
            _ => {
                let all = read_keys(&tx, cluster, None).await?;
                let defer = self.defer_copy.load(Ordering::Relaxed);
                let count = all.len();
                let n = mirror::full_sync(&self.mirror, all, defer, cluster)?;
                tracing::info!(
                    "group {cluster}: local key mirror copied from the database ({} minions, \
                     {n} changed)",
                    count
                );
            }
        }
        tx.commit().await?;
        *self.applied.lock().unwrap_or_else(|e| e.into_inner()) = Some(seq);
        // `.group_seq` promises every file up to `seq`: not before a background copy
        // ends (the next catch-up, within [`crate::POLL`], writes it then).
        if on_disk != Some(seq) && self.mirror.unwritten() == 0 {
            mirror::write_seq(&self.pki_dir, cluster, seq)?;
        }
        if let Some(aes) = aes {
            self.adopt_aes(aes_gen, aes);
        }
        Ok(seq)
    }

    fn adopt_aes(&self, generation: i64, key: String) {
        let mut cur = self.aes.lock().unwrap_or_else(|e| e.into_inner());
        if cur.as_ref().is_some_and(|(g, _)| *g == generation) {
            return;
        }
        *cur = Some((generation, key.clone()));
        drop(cur);
        if let Some(f) = &*self.on_aes.lock().unwrap_or_else(|e| e.into_inner()) {
            f(generation, &key);
        }
    }

    pub(crate) async fn ensure_aes(&self, key: &str) -> Result<(i64, String), Error> {
        let client = self.client().await?;
        client
            .execute(
                "UPDATE salt_groups SET aes = $2, aes_generation = 1 \
                 WHERE cluster_id = $1 AND aes IS NULL",
                &[&self.settings.cluster_id, &key],
            )
            .await?;
        let row = client
            .query_one(
                "SELECT aes_generation, aes FROM salt_groups WHERE cluster_id = $1",
                &[&self.settings.cluster_id],
            )
            .await?;
        let generation: i64 = row.get(0);
        let aes: Option<String> = row.get(1);
        let aes = aes.unwrap_or_else(|| key.to_owned());
        *self.aes.lock().unwrap_or_else(|e| e.into_inner()) = Some((generation, aes.clone()));
        Ok((generation, aes))
    }

    pub(crate) async fn rotate_aes(&self) -> Result<(), Error> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let seq = self.next_seq(&tx).await?;
        self.log_rotation(&tx, seq).await?;
        self.notify(&tx, seq).await?;
        tx.commit().await?;
        self.catch_up().await.map(|_| ())
    }

    /// Drop the change-log rows older than `keep` (never the newest change). Returns how
    /// many rows went.
    pub(crate) async fn trim_log(&self, keep: std::time::Duration) -> Result<u64, Error> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let cluster = &self.settings.cluster_id;
        let row = tx
            .query_one(
                "SELECT coalesce(max(seq), 0) FROM salt_key_log WHERE cluster_id = $1 \
                 AND changed_at < now() - make_interval(secs => $2) \
                 AND seq < (SELECT seq FROM salt_groups WHERE cluster_id = $1)",
                &[cluster, &keep.as_secs_f64()],
            )
            .await?;
        let upto: i64 = row.get(0);
        if upto == 0 {
            return Ok(0);
        }
        tx.execute(
            "UPDATE salt_groups SET log_trimmed_to = greatest(log_trimmed_to, $2) \
             WHERE cluster_id = $1",
            &[cluster, &upto],
        )
        .await?;
        let n = tx
            .execute(
                "DELETE FROM salt_key_log WHERE cluster_id = $1 AND seq <= $2",
                &[cluster, &upto],
            )
            .await?;
        tx.commit().await?;
        Ok(n)
    }

    /// Take the next change number; holds the group row's lock until commit.
    async fn next_seq(&self, tx: &Transaction<'_>) -> Result<i64, Error> {
        let row = tx
            .query_one(
                "UPDATE salt_groups SET seq = seq + 1 WHERE cluster_id = $1 RETURNING seq",
                &[&self.settings.cluster_id],
            )
            .await?;
        Ok(row.get(0))
    }

    async fn log_rotation(&self, tx: &Transaction<'_>, seq: i64) -> Result<(), Error> {
        let key = salt_pki::Crypticle::generate().key_string().to_owned();
        tx.execute(
            "UPDATE salt_groups SET aes = $2, aes_generation = aes_generation + 1 \
             WHERE cluster_id = $1",
            &[&self.settings.cluster_id, &key],
        )
        .await?;
        tx.execute(
            "INSERT INTO salt_key_log (cluster_id, seq, minion_id, master) VALUES ($1, $2, '', $3)",
            &[&self.settings.cluster_id, &seq, &self.settings.master],
        )
        .await?;
        Ok(())
    }

    async fn notify(&self, tx: &Transaction<'_>, seq: i64) -> Result<(), Error> {
        let payload = format!("{}:{seq}", self.settings.cluster_id);
        tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
            .await?;
        Ok(())
    }

    /// One key change: a transaction under the group row's lock, then the mirror.
    pub(crate) async fn change(&self, op: Op) -> Result<salt_keystore::Report, Error> {
        let cluster = self.settings.cluster_id.as_str();
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let seq = self.next_seq(&tx).await?;
        let ids = op.ids();
        let mut rows = read_keys(&tx, cluster, Some(&ids)).await?;
        let before = rows.clone();
        let report = plan::apply(&op, &mut rows)?;
        let changed: Vec<String> = rows
            .iter()
            .filter(|(id, keys)| before.get(*id) != Some(*keys))
            .map(|(id, _)| id.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if changed.is_empty() {
            tx.rollback().await?;
            return Ok(report);
        }
        tx.execute(
            "DELETE FROM salt_minion_keys WHERE cluster_id = $1 AND minion_id = ANY($2)",
            &[&cluster, &changed],
        )
        .await?;
        let (mut k_ids, mut k_states, mut k_pems) = (Vec::new(), Vec::new(), Vec::new());
        for id in &changed {
            for (state, pem) in rows.get(id).into_iter().flatten() {
                k_ids.push(id.as_str());
                k_states.push(state_name(*state));
                k_pems.push(pem.as_str());
            }
        }
        tx.execute(
            "INSERT INTO salt_minion_keys (cluster_id, minion_id, state, pem) \
             SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[])",
            &[&cluster, &k_ids, &k_states, &k_pems],
        )
        .await?;
        tx.execute(
            "INSERT INTO salt_key_log (cluster_id, seq, minion_id, master) \
             SELECT $1, $2, unnest($3::text[]), $4",
            &[&cluster, &seq, &changed, &self.settings.master],
        )
        .await?;
        let (tags, data) = plan::events(&op, &report);
        tx.execute(
            "INSERT INTO salt_events (tag, data, master_id) \
             SELECT t, d::jsonb, $3 FROM unnest($1::text[], $2::text[]) AS e(t, d)",
            &[&tags, &data, &self.settings.master],
        )
        .await?;
        if op.revokes() && self.settings.rotate_on_revoke {
            self.log_rotation(&tx, seq).await?;
        }
        self.notify(&tx, seq).await?;
        tx.commit().await?;
        drop(client);
        self.catch_up().await?;
        Ok(report)
    }
}
