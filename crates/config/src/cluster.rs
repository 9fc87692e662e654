//! A master group (docs/group.md): `cluster_id`, `keys.cache_driver`, `master_job_cache` and
//! the PostgreSQL connection, in Salt's words (`postgres.*`, with the `pgjsonb` returner's
//! `returner.pgjsonb.*` keys as aliases).

use std::path::PathBuf;

use crate::OptionDoc;
use crate::error::Problem;
use crate::reader::{Reader, path, port, string};
use crate::types::{Secret, invalid};

/// Where the minion keys live (`keys.cache_driver`, Salt 3008's key-cache option).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub enum KeyDriver {
    /// `localfs_key` (Salt's default): the files of `pki_dir`.
    #[default]
    Files,
    /// `postgres`: the group's PostgreSQL database, mirrored into `pki_dir`.
    Postgres,
    /// `mmap_key` (Salt 3008): Salt's index files in `pki_dir` (`.mmap_keys.idx`, ...),
    /// shaped by [`MmapKeyConfig`].
    Mmap,
}

/// The shape of Salt 3008's `mmap_key` index files (`mmap_key_size`,
/// `mmap_key_slot_size`, `mmap_key_id_size`, `mmap_key_max_segment_bytes`); a master and
/// `salt-key` working on one `pki_dir` must agree on the first two.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct MmapKeyConfig {
    /// `mmap_key_size`: slots in the index (default 1,000,000).
    pub size: u64,
    /// `mmap_key_slot_size`: bytes per slot (default 96).
    pub slot_size: usize,
    /// `mmap_key_id_size`: the longest minion id, in bytes (default 64).
    pub id_size: usize,
    /// `mmap_key_max_segment_bytes` (or `mmap_cache_max_segment_bytes`): heap segment cap
    /// (default 1 GiB).
    pub max_segment_bytes: u64,
}

const MMAP_KEYS: [(&str, &str); 4] = [
    ("mmap_key_size", "1000000"),
    ("mmap_key_slot_size", "96"),
    ("mmap_key_id_size", "64"),
    ("mmap_key_max_segment_bytes", "1073741824"),
];

/// `keys.cache_driver: mmap_key`'s geometry; `None` for any other driver (its options are
/// then read and ignored, as Salt does).
pub(crate) fn read_mmap(r: &mut Reader<'_>) -> Option<MmapKeyConfig> {
    let mmap = matches!(
        r.peek("keys.cache_driver").map(|e| &e.node.kind),
        Some(crate::node::Kind::Str(s)) if s == "mmap_key"
    );
    let int = |r: &mut Reader<'_>, key: &'static str, default: u64| {
        r.get(key, default, crate::reader::int_in::<u64>(1, 1 << 48))
    };
    let size = int(r, MMAP_KEYS[0].0, 1_000_000);
    let slot_size = int(r, MMAP_KEYS[1].0, 96);
    let id_size = int(r, MMAP_KEYS[2].0, 64);
    let generic = r.entry("mmap_cache_max_segment_bytes");
    let generic = r.convert(generic, 1 << 30, crate::reader::int_in::<u64>(1, 1 << 48));
    let max_segment_bytes = int(r, MMAP_KEYS[3].0, generic);
    let mmap = mmap.then_some(MmapKeyConfig {
        size,
        slot_size: usize::try_from(slot_size).unwrap_or(usize::MAX),
        id_size: usize::try_from(id_size).unwrap_or(usize::MAX),
        max_segment_bytes,
    })?;
    if mmap.slot_size < mmap.id_size + 21 {
        if let Some(e) = r
            .peek("mmap_key_slot_size")
            .or_else(|| r.peek("mmap_key_id_size"))
        {
            r.fail(
                e,
                invalid(
                    &mmap.slot_size.to_string(),
                    "mmap_key_slot_size must be at least mmap_key_id_size + 21 (Salt's slot \
                     layout)",
                ),
            );
        }
        return None;
    }
    Some(mmap)
}

/// Where the job cache lives (`master_job_cache`).
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub enum JobDriver {
    /// `local_cache` (Salt's default): the files of `cachedir/jobs`.
    #[default]
    Files,
    /// `pgjsonb`: Salt's `pgjsonb` tables in the group's database.
    Pgjsonb,
    /// `postgres`: Salt's `postgres` returner tables (`returner.postgres.*`,
    /// [`crate::MasterReturners`]).
    Postgres,
}

/// The PostgreSQL connection (Salt's `postgres.*` keys; defaults of Salt's `pgjsonb`
/// returner).
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct PostgresConfig {
    /// A host name, or a directory holding the server's Unix socket (starts with `/`).
    pub host: String,
    /// TCP port, also the suffix of the socket file (`.s.PGSQL.<port>`).
    pub port: u16,
    /// Role name.
    pub user: String,
    /// Password.
    pub pass: Secret,
    /// Database name.
    pub db: String,
    /// libpq's `sslmode`: `disable`, `allow`, `prefer` (the default), `require`, `verify-ca`
    /// or `verify-full`. A Unix-socket host never uses TLS (as libpq).
    pub sslmode: SslMode,
    /// `postgres.sslrootcert`: the CA certificates (PEM) the server's certificate must chain
    /// to (`verify-ca`, `verify-full`, and `require` when set); `system`: the system's.
    pub sslrootcert: Option<PathBuf>,
    /// `postgres.sslcert`: a client certificate (PEM chain), with `sslkey`.
    pub sslcert: Option<PathBuf>,
    /// `postgres.sslkey`: the client certificate's private key (PEM).
    pub sslkey: Option<PathBuf>,
}

/// A master group: the masters sharing one `cluster_id` and one database.
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct ClusterConfig {
    /// The group's name (`cluster_id`).
    pub cluster_id: String,
    /// `keys.cache_driver`.
    pub keys_driver: KeyDriver,
    /// `master_job_cache`.
    pub job_driver: JobDriver,
    /// The database.
    pub postgres: PostgresConfig,
}

impl ClusterConfig {
    /// True when the keys live in PostgreSQL.
    pub fn keys_in_postgres(&self) -> bool {
        self.keys_driver == KeyDriver::Postgres
    }
}

/// `(salt key, pgjsonb alias, default)`.
const CONN_KEYS: [(&str, &str, &str); 10] = [
    ("postgres.host", "returner.pgjsonb.host", "salt"),
    ("postgres.port", "returner.pgjsonb.port", "5432"),
    ("postgres.user", "returner.pgjsonb.user", "salt"),
    ("postgres.pass", "returner.pgjsonb.pass", "salt"),
    ("postgres.db", "returner.pgjsonb.db", "salt"),
    ("postgres.sslmode", "returner.pgjsonb.sslmode", "prefer"),
    (
        "postgres.sslrootcert",
        "returner.pgjsonb.sslrootcert",
        "None",
    ),
    ("postgres.sslcert", "returner.pgjsonb.sslcert", "None"),
    ("postgres.sslkey", "returner.pgjsonb.sslkey", "None"),
    ("postgres.sslcrl", "returner.pgjsonb.sslcrl", "None"),
];

/// The documentation of each connection key beyond "the group database connection".
fn conn_doc(key: &str) -> &'static str {
    match key {
        "postgres.host" => " A host name or address (TCP), or a directory: the Unix socket's.",
        "postgres.sslmode" => {
            " libpq's: `disable`, `allow` (plain, TLS if the server refuses plain), `prefer` \
             (TLS if the server offers it, else plain), `require` (TLS; the certificate is \
             checked only when `sslrootcert` is set), `verify-ca` (the certificate chains to \
             `sslrootcert`), `verify-full` (and names the host). A Unix-socket host never \
             uses TLS."
        }
        "postgres.sslrootcert" => {
            " CA certificates (PEM file) for `verify-ca`/`verify-full`; `system`: the \
             system's store; unset: `~/.postgresql/root.crt` (as libpq)."
        }
        "postgres.sslcert" => " A client certificate (PEM) to present; needs `sslkey`.",
        "postgres.sslkey" => " The private key (PEM) of `sslcert`.",
        "postgres.sslcrl" => " Not supported by salt-rs: refused when set.",
        _ => "",
    }
}

fn key_driver(node: &crate::node::Node) -> Result<KeyDriver, Problem> {
    match string(node)?.as_str() {
        "localfs_key" | "localfs" => Ok(KeyDriver::Files),
        "mmap_key" => Ok(KeyDriver::Mmap),
        "postgres" => Ok(KeyDriver::Postgres),
        other => Err(invalid(
            other,
            "salt-rs supports `localfs_key` (files, the default), `mmap_key` (Salt 3008's \
             index files) and `postgres`",
        )),
    }
}

fn job_cache(node: &crate::node::Node) -> Result<JobDriver, Problem> {
    match string(node)?.as_str() {
        "local_cache" => Ok(JobDriver::Files),
        "pgjsonb" => Ok(JobDriver::Pgjsonb),
        "postgres" => Ok(JobDriver::Postgres),
        other => Err(invalid(
            other,
            "salt-rs supports `local_cache` (files, the default), `pgjsonb` (the group's \
             PostgreSQL, docs/group.md) and `postgres` (Salt's postgres returner tables)",
        )),
    }
}

/// libpq's `sslmode`.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub enum SslMode {
    /// Plain only.
    Disable,
    /// Plain; TLS when the server refuses the plain connection.
    Allow,
    /// TLS when the server offers it; plain otherwise (the default).
    #[default]
    Prefer,
    /// TLS; the certificate is checked only when a root certificate is given.
    Require,
    /// TLS; the certificate chains to the root certificate.
    VerifyCa,
    /// TLS; the certificate chains to the root certificate and names the host.
    VerifyFull,
}

impl SslMode {
    /// From libpq's word; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "disable" => Self::Disable,
            "allow" => Self::Allow,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            _ => return None,
        })
    }

    /// libpq's word.
    pub fn name(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Allow => "allow",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

fn sslmode(node: &crate::node::Node) -> Result<SslMode, Problem> {
    let s = string(node)?;
    SslMode::parse(&s).ok_or_else(|| {
        invalid(
            &s,
            "libpq's sslmode: disable, allow, prefer, require, verify-ca or verify-full",
        )
    })
}

fn one<'a>(
    r: &mut Reader<'a>,
    key: &'static str,
    alias: &'static str,
) -> Option<&'a crate::source::Entry> {
    let main = r.entry(key);
    let alt = r.entry(alias);
    main.or(alt)
}

/// Reads the group options; `None` unless `cluster_id` or `keys.cache_driver: postgres` is set.
pub(crate) fn read(r: &mut Reader<'_>) -> Option<ClusterConfig> {
    let driver_entry = r.entry("keys.cache_driver");
    let keys_driver = r.convert(driver_entry, KeyDriver::Files, key_driver);
    let job_entry = r.entry("master_job_cache");
    let job_driver = r.convert(job_entry, JobDriver::Files, job_cache);
    let cluster_id = r.opt("cluster_id", string);
    let host = one(r, CONN_KEYS[0].0, CONN_KEYS[0].1);
    let host = r.convert(host, "salt".to_owned(), string);
    let p = one(r, CONN_KEYS[1].0, CONN_KEYS[1].1);
    let port = r.convert(p, 5432, port);
    let u = one(r, CONN_KEYS[2].0, CONN_KEYS[2].1);
    let user = r.convert(u, "salt".to_owned(), string);
    let pw = one(r, CONN_KEYS[3].0, CONN_KEYS[3].1);
    let pass = r.convert(pw, Secret::new("salt".to_owned()), |n| {
        string(n).map(Secret::new)
    });
    let d = one(r, CONN_KEYS[4].0, CONN_KEYS[4].1);
    let db = r.convert(d, "salt".to_owned(), string);
    let s = one(r, CONN_KEYS[5].0, CONN_KEYS[5].1);
    let sslmode = r.convert(s, SslMode::Prefer, sslmode);
    let tls_path = |r: &mut Reader<'_>, i: usize| {
        let e = one(r, CONN_KEYS[i].0, CONN_KEYS[i].1);
        r.convert(e, None, |n| path(n).map(Some))
    };
    let sslrootcert = tls_path(r, 6);
    let sslcert = tls_path(r, 7);
    let sslkey = tls_path(r, 8);
    if let Some(e) = one(r, CONN_KEYS[9].0, CONN_KEYS[9].1) {
        r.fail(
            e,
            invalid(
                "sslcrl",
                "salt-rs does not check certificate revocation lists for the group database \
                 (remove the option)",
            ),
        );
    }
    if sslcert.is_some() != sslkey.is_some() {
        let cert = one(r, CONN_KEYS[7].0, CONN_KEYS[7].1);
        let key = one(r, CONN_KEYS[8].0, CONN_KEYS[8].1);
        if let Some(e) = cert.or(key) {
            r.fail(
                e,
                invalid(
                    &e.key,
                    "`postgres.sslcert` and `postgres.sslkey` go together (a client \
                     certificate and its key)",
                ),
            );
        }
    }
    let cluster_id = match (cluster_id, keys_driver) {
        (Some(_), KeyDriver::Mmap) => {
            if let Some(e) = driver_entry {
                r.fail(
                    e,
                    invalid(
                        "mmap_key",
                        "a master group (`cluster_id`) keeps its keys in `localfs_key` files \
                         or `postgres`; `mmap_key` is for a single master",
                    ),
                );
            }
            return None;
        }
        (Some(c), _) => c,
        (None, KeyDriver::Files | KeyDriver::Mmap) => {
            if let (JobDriver::Pgjsonb, Some(e)) = (job_driver, job_entry) {
                r.fail(
                    e,
                    invalid(
                        "pgjsonb",
                        "`master_job_cache: pgjsonb` needs `cluster_id` (the group's name; \
                         one master is a group of one)",
                    ),
                );
            }
            return None;
        }
        (None, KeyDriver::Postgres) => {
            if let Some(e) = driver_entry {
                r.fail(
                    e,
                    invalid(
                        "postgres",
                        "`keys.cache_driver: postgres` needs `cluster_id` (the group's name)",
                    ),
                );
            }
            return None;
        }
    };
    Some(ClusterConfig {
        cluster_id,
        keys_driver,
        job_driver,
        postgres: PostgresConfig {
            host,
            port,
            user,
            pass,
            db,
            sslmode,
            sslrootcert,
            sslcert,
            sslkey,
        },
    })
}

/// Option-table rows for the keys read here but not fields of `MasterConfig`.
pub(crate) fn docs() -> Vec<OptionDoc> {
    let mut v = vec![
        OptionDoc {
            name: "keys.cache_driver",
            default: "localfs_key",
            doc: "Where minion keys live: `localfs_key` (one file per key in `pki_dir`), \
                  `mmap_key` (Salt 3008's index files in `pki_dir`, `.mmap_keys.idx` and \
                  `.mmap_denied.idx`, in Salt's format: a Salt 3008 `salt-key` reads them; \
                  state changes are index updates, not renames) or `postgres` (the group's \
                  database, needs `cluster_id`; docs/group.md). Anything else is refused."
                .to_owned(),
        },
        OptionDoc {
            name: "master_job_cache",
            default: "local_cache",
            doc: "`local_cache` (the files of `cachedir/jobs`), `pgjsonb` (Salt's pgjsonb \
                  tables in the group's database, needs `cluster_id`; docs/group.md) or \
                  `postgres` (Salt's postgres returner tables, `returner.postgres.*`)."
                .to_owned(),
        },
    ];
    for (key, default) in MMAP_KEYS {
        v.push(OptionDoc {
            name: key,
            default,
            doc: format!(
                "`keys.cache_driver: mmap_key` only: Salt 3008's `{key}`.{}",
                match key {
                    "mmap_key_size" =>
                        " Slots in the key index (its size is this times \
                                        `mmap_key_slot_size`; every reader and writer must agree).",
                    "mmap_key_slot_size" => " Bytes per index slot.",
                    "mmap_key_id_size" =>
                        " The longest minion id, in bytes (longer ids are \
                                          refused; Salt would truncate them).",
                    _ => " Heap segment cap; default `mmap_cache_max_segment_bytes`, else 1 GiB.",
                }
            ),
        });
    }
    v.push(OptionDoc {
        name: "mmap_cache_max_segment_bytes",
        default: "1073741824",
        doc: "`keys.cache_driver: mmap_key` only: Salt 3008's generic heap segment cap, used when \
              `mmap_key_max_segment_bytes` is not set."
            .to_owned(),
    });
    for (key, alias, default) in CONN_KEYS {
        v.push(OptionDoc {
            name: key,
            default,
            doc: format!(
                "Group database connection (docs/group.md); alias `{alias}`.{}",
                conn_doc(key)
            ),
        });
        v.push(OptionDoc {
            name: alias,
            default,
            doc: format!("Alias of `{key}` (Salt's pgjsonb returner)."),
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::{KeyDriver, LoadOptions, MasterConfig, SslMode};

    fn load(yaml: &str) -> Result<MasterConfig, crate::ConfigErrors> {
        MasterConfig::from_yaml_str(yaml, &LoadOptions::new("/nonexistent")).map(|l| l.config)
    }

    #[test]
    fn group_in_salts_words_with_pgjsonb_aliases() {
        let c = load(
            "cluster_id: prod\nkeys.cache_driver: postgres\npostgres.host: /run/pg\n\
             returner.pgjsonb.port: 5433\nreturner.pgjsonb.pass: s3\npostgres.db: keys\n\
             master_job_cache: pgjsonb\n",
        )
        .unwrap();
        let g = c.cluster_id.expect("group");
        assert_eq!(g.cluster_id, "prod");
        assert_eq!(g.keys_driver, KeyDriver::Postgres);
        assert_eq!(g.job_driver, crate::JobDriver::Pgjsonb);
        assert_eq!(g.postgres.host, "/run/pg");
        assert_eq!(g.postgres.port, 5433);
        assert_eq!(g.postgres.pass.expose(), "s3");
        assert_eq!(g.postgres.db, "keys");
        assert_eq!(g.postgres.user, "salt");
        assert!(load("").unwrap().cluster_id.is_none());
    }

    #[test]
    fn unsupported_group_options_are_refused_by_name() {
        let e = load("keys.cache_driver: postgres\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs `cluster_id`"), "{e}");
        let e = load("keys.cache_driver: redis\n").unwrap_err().to_string();
        assert!(e.contains("redis"), "{e}");
        let e = load("master_job_cache: pgjsonb\n").unwrap_err().to_string();
        assert!(e.contains("needs `cluster_id`"), "{e}");
        let e = load("master_job_cache: redis\n").unwrap_err().to_string();
        assert!(e.contains("redis"), "{e}");
        let e = load("cluster_id: g\npostgres.sslmode: verify\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("verify-full"), "{e}");
        let e = load("cluster_id: g\nreturner.pgjsonb.sslcrl: /x.crl\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("revocation"), "{e}");
        let e = load("cluster_id: g\npostgres.sslcert: /c.pem\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("go together"), "{e}");
    }

    #[test]
    fn tls_keys_in_salts_words() {
        let c = load(
            "cluster_id: g\npostgres.sslmode: verify-full\nreturner.pgjsonb.sslrootcert: /ca.pem\n\
             postgres.sslcert: /c.pem\npostgres.sslkey: /c.key\n",
        )
        .unwrap();
        let p = c.cluster_id.expect("group").postgres;
        assert_eq!(p.sslmode, SslMode::VerifyFull);
        assert_eq!(
            p.sslrootcert.as_deref(),
            Some(std::path::Path::new("/ca.pem"))
        );
        assert_eq!(p.sslcert.as_deref(), Some(std::path::Path::new("/c.pem")));
        assert_eq!(p.sslkey.as_deref(), Some(std::path::Path::new("/c.key")));
        let p = load("cluster_id: g\n")
            .unwrap()
            .cluster_id
            .unwrap()
            .postgres;
        assert_eq!(p.sslmode, SslMode::Prefer);
        assert_eq!(p.sslrootcert, None);
    }
}
