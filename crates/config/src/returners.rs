//! Returners on the master: Salt's `postgres` returner as the job cache
//! (`master_job_cache: postgres`) and as the event returner (`event_return: postgres`, with
//! `event_return_queue`, `event_return_queue_max_seconds`, `event_return_whitelist` and
//! `event_return_blacklist`), connected with `returner.postgres.*` (Salt's
//! `get_returner_options`: the flat keys, or a `returner.postgres` mapping).

use crate::OptionDoc;
use crate::error::Problem;
use crate::node::Kind;
use crate::reader::{Reader, count, duration, string, string_list};
use crate::types::{Secret, invalid};

/// The event returners salt-rs implements.
pub const EVENT_RETURNERS: [&str; 1] = ["postgres"];

/// The connection of Salt's `postgres` returner (its defaults: `localhost`, `salt`/`salt`,
/// database `salt`, port 5432).
#[derive(Clone, Debug, Eq, PartialEq)]
pub struct PgReturnerConn {
    /// `returner.postgres.host` (a directory: its Unix socket).
    pub host: String,
    /// `returner.postgres.port`.
    pub port: u16,
    /// `returner.postgres.user`.
    pub user: String,
    /// `returner.postgres.passwd`.
    pub passwd: Secret,
    /// `returner.postgres.db`.
    pub db: String,
}

impl Default for PgReturnerConn {
    fn default() -> Self {
        Self {
            host: "localhost".into(),
            port: 5432,
            user: "salt".into(),
            passwd: Secret::new("salt".into()),
            db: "salt".into(),
        }
    }
}

/// The master's returners (see the module docs).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct MasterReturners {
    /// `master_job_cache: postgres`.
    pub job_cache_postgres: bool,
    /// `event_return` (a name or a list; empty: no event returner).
    pub event_return: Vec<String>,
    /// `event_return_queue`: events gathered before a write (0: each at once).
    pub queue: u32,
    /// `event_return_queue_max_seconds`: a queue whose oldest event is this old is written
    /// when the next event comes (0: off).
    pub queue_max_seconds: std::time::Duration,
    /// `event_return_whitelist`: tag globs stored (empty: all).
    pub whitelist: Vec<String>,
    /// `event_return_blacklist`: tag globs never stored.
    pub blacklist: Vec<String>,
    /// `returner.postgres.*`.
    pub postgres: PgReturnerConn,
}

impl MasterReturners {
    /// Whether Salt's `postgres` returner is used at all.
    pub fn uses_postgres(&self) -> bool {
        self.job_cache_postgres || self.event_return.iter().any(|r| r == "postgres")
    }
}

fn event_returners(node: &crate::node::Node) -> Result<Vec<String>, Problem> {
    let names = string_list(node)?;
    for n in &names {
        if !EVENT_RETURNERS.contains(&n.as_str()) {
            return Err(invalid(
                n,
                "salt-rs implements the `postgres` event returner only (Salt's postgres \
                 returner tables); remove the others or run Salt's master",
            ));
        }
    }
    Ok(names)
}

/// `(attr, key)` of Salt's postgres returner options.
const CONN: [(&str, &str); 5] = [
    ("host", "returner.postgres.host"),
    ("port", "returner.postgres.port"),
    ("user", "returner.postgres.user"),
    ("passwd", "returner.postgres.passwd"),
    ("db", "returner.postgres.db"),
];

fn set(conn: &mut PgReturnerConn, attr: &str, node: &crate::node::Node) -> Result<(), Problem> {
    let text = string(node)?;
    match attr {
        "host" => conn.host = text,
        "user" => conn.user = text,
        "passwd" => conn.passwd = Secret::new(text),
        "db" => conn.db = text,
        _ => {
            conn.port = crate::reader::port(node)?;
        }
    }
    Ok(())
}

/// Reads the returner options.
pub(crate) fn read(r: &mut Reader<'_>) -> MasterReturners {
    let job_cache_postgres = matches!(
        r.peek("master_job_cache").map(|e| &e.node.kind),
        Some(Kind::Str(s)) if s == "postgres"
    );
    let event_return = r.get("event_return", Vec::new(), event_returners);
    let queue = r.get("event_return_queue", 0, count);
    let queue_max_seconds = r.get(
        "event_return_queue_max_seconds",
        std::time::Duration::ZERO,
        duration(std::time::Duration::from_secs(1)),
    );
    let whitelist = r.get("event_return_whitelist", Vec::new(), string_list);
    let blacklist = r.get("event_return_blacklist", Vec::new(), string_list);
    let mut postgres = PgReturnerConn::default();
    // `returner.postgres: {host: ...}` first, the flat keys over it (Salt reads the flat key
    // first and the mapping only where it is unset).
    if let Some(e) = r.entry("returner.postgres") {
        match &e.node.kind {
            Kind::Map(items) => {
                for (k, v) in items {
                    let k = k.key_string();
                    if let Some((attr, _)) = CONN.iter().find(|(a, _)| *a == k)
                        && let Err(p) = set(&mut postgres, attr, v)
                    {
                        r.fail(e, p);
                    }
                }
            }
            _ => r.fail(
                e,
                invalid(
                    &e.node.describe(),
                    "expected a mapping {host, port, user, passwd, db}",
                ),
            ),
        }
    }
    for (attr, key) in CONN {
        if let Some(e) = r.entry(key)
            && let Err(p) = set(&mut postgres, attr, &e.node)
        {
            r.fail(e, p);
        }
    }
    MasterReturners {
        job_cache_postgres,
        event_return,
        queue,
        queue_max_seconds,
        whitelist,
        blacklist,
        postgres,
    }
}

/// Option-table rows for the keys read here but not fields of `MasterConfig`.
pub(crate) fn docs() -> Vec<OptionDoc> {
    let mut v = vec![
        OptionDoc {
            name: "event_return_queue",
            default: "0",
            doc: "Events gathered before the event returner writes them (0: each at once); \
                  as Salt, the queue is written when an event arrives and at shutdown."
                .to_owned(),
        },
        OptionDoc {
            name: "event_return_queue_max_seconds",
            default: "0",
            doc: "A queue whose oldest event is this many seconds old is written when the \
                  next event arrives (0: off)."
                .to_owned(),
        },
        OptionDoc {
            name: "event_return_whitelist",
            default: "[]",
            doc: "Tag globs the event returner stores (empty: every tag).".to_owned(),
        },
        OptionDoc {
            name: "event_return_blacklist",
            default: "[]",
            doc: "Tag globs the event returner never stores.".to_owned(),
        },
        OptionDoc {
            name: "returner.postgres",
            default: "{}",
            doc: "Salt's `postgres` returner connection as a mapping \
                  `{host, port, user, passwd, db}` (the flat keys win)."
                .to_owned(),
        },
    ];
    let defaults = ["localhost", "5432", "salt", "salt", "salt"];
    for ((attr, key), default) in CONN.iter().zip(defaults) {
        v.push(OptionDoc {
            name: key,
            default,
            doc: format!(
                "Salt's `postgres` returner (`master_job_cache: postgres`, `event_return: \
                 postgres`): {attr}{}.",
                if *attr == "host" {
                    " (a directory: its Unix socket)"
                } else {
                    ""
                }
            ),
        });
    }
    v
}
