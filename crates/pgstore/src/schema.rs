//! Schema migrations, versioned in `migrations/` and applied at start under an advisory
//! lock (so masters starting together apply each one once).

use tokio_postgres::Client;

/// `(version, sql)`, in order. Never edit a released one: add the next.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("../migrations/0001_keys.sql")),
    (2, include_str!("../migrations/0002_jobs.sql")),
    (3, include_str!("../migrations/0003_tokens.sql")),
];

/// Arbitrary constant: the advisory lock of salt-rs migrations.
const LOCK: i64 = 0x5a17_0001;

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i32 = 3;

/// Apply the missing migrations. A database newer than this build is refused.
pub(crate) async fn migrate(client: &mut Client) -> Result<(), crate::Error> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS salt_rs_schema (
             version    integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now())",
    )
    .await?;
    let row = tx
        .query_one("SELECT coalesce(max(version), 0) FROM salt_rs_schema", &[])
        .await?;
    let have: i32 = row.get(0);
    if have > SCHEMA_VERSION {
        return Err(crate::Error::Schema(format!(
            "the database has schema version {have}, this salt-rs knows up to {SCHEMA_VERSION}: \
             upgrade salt-rs"
        )));
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > have) {
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO salt_rs_schema (version) VALUES ($1)",
            &[version],
        )
        .await?;
        tracing::info!("group database: schema migration {version} applied");
    }
    tx.commit().await?;
    Ok(())
}
