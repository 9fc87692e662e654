//! Connections to the group database, with libpq's `sslmode` semantics over OpenSSL
//! (`postgres-openssl`, docs/group.md "TLS"):
//!
//! * a Unix-socket host never uses TLS (as libpq);
//! * `disable`: plain; `allow`: plain, then TLS if the server refused the plain connection;
//!   `prefer` (the default): TLS if the server offers it, plain if it does not or refuses
//!   the TLS connection; `require`: TLS, the certificate unchecked unless a root
//!   certificate is given (then as `verify-ca`, like libpq); `verify-ca`: the certificate
//!   chains to `sslrootcert`; `verify-full`: and it names the host (DNS name or IP address).

use std::path::PathBuf;

use openssl::ssl::{SslConnector, SslFiletype, SslMethod, SslVerifyMode};
use postgres_openssl::MakeTlsConnector;
use tokio_postgres::Socket;
use tokio_postgres::config::SslMode as PgMode;

use crate::Error;

/// A connection to the group database (plain or TLS: one type for both).
pub(crate) type Conn = tokio_postgres::Connection<Socket, postgres_openssl::TlsStream<Socket>>;

/// libpq's `sslmode`, read and checked by the configuration.
pub use salt_config::SslMode;

/// The TLS settings (`postgres.sslmode`, `sslrootcert`, `sslcert`, `sslkey`).
#[derive(Clone, Debug, Default, Eq, PartialEq)]
pub struct Tls {
    /// `postgres.sslmode`.
    pub mode: SslMode,
    /// `postgres.sslrootcert` (`system`: the system's store).
    pub rootcert: Option<PathBuf>,
    /// `postgres.sslcert`.
    pub cert: Option<PathBuf>,
    /// `postgres.sslkey`.
    pub key: Option<PathBuf>,
}

impl Tls {
    /// From the configuration (validated there).
    pub fn from_config(c: &salt_config::PostgresConfig) -> Self {
        Self {
            mode: c.sslmode,
            rootcert: c.sslrootcert.clone(),
            cert: c.sslcert.clone(),
            key: c.sslkey.clone(),
        }
    }

    /// The root certificates in force: the configured file, else libpq's default
    /// `~/.postgresql/root.crt` when it exists.
    fn root(&self) -> Option<PathBuf> {
        self.rootcert.clone().or_else(|| {
            let home = std::env::var_os("HOME")?;
            let p = PathBuf::from(home).join(".postgresql/root.crt");
            p.exists().then_some(p)
        })
    }
}

fn tls_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Tls(format!("{what}: {e}"))
}

/// How to reach the database: the connection settings, the OpenSSL connector and
/// libpq's order of attempts.
#[derive(Clone)]
pub(crate) struct Connector {
    config: tokio_postgres::Config,
    tls: MakeTlsConnector,
    /// The `sslmode` of each attempt, in order; the next is tried only when the server
    /// refused the connection or the TLS handshake failed.
    attempts: Vec<PgMode>,
    /// What the errors name: `host:port (sslmode ...)`.
    label: String,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl Connector {
    /// Build the connector: reads the certificate files now (a missing or bad file is an
    /// error naming it).
    pub(crate) fn new(
        config: tokio_postgres::Config,
        host: &str,
        port: u16,
        tls: &Tls,
    ) -> Result<Self, Error> {
        let unix = host.starts_with('/');
        let mut b =
            SslConnector::builder(SslMethod::tls_client()).map_err(|e| tls_err("OpenSSL", e))?;
        let root = tls.root();
        let verify = match tls.mode {
            SslMode::VerifyCa | SslMode::VerifyFull => {
                if root.is_none() && !unix {
                    return Err(Error::Tls(format!(
                        "postgres.sslmode {} needs postgres.sslrootcert (the CA certificates \
                         the server's certificate must chain to; libpq's default \
                         ~/.postgresql/root.crt does not exist)",
                        tls.mode.name()
                    )));
                }
                true
            }
            SslMode::Require => root.is_some(),
            _ => false,
        };
        let full = tls.mode == SslMode::VerifyFull;
        if verify && !unix {
            match root.as_deref() {
                Some(p) if p == std::path::Path::new("system") => b
                    .set_default_verify_paths()
                    .map_err(|e| tls_err("the system's CA certificates", e))?,
                Some(p) => b
                    .set_ca_file(p)
                    .map_err(|e| tls_err(&format!("postgres.sslrootcert {}", p.display()), e))?,
                None => {}
            }
            b.set_verify(SslVerifyMode::PEER);
        } else {
            b.set_verify(SslVerifyMode::NONE);
        }
        if let (Some(cert), Some(key)) = (&tls.cert, &tls.key) {
            b.set_certificate_chain_file(cert)
                .map_err(|e| tls_err(&format!("postgres.sslcert {}", cert.display()), e))?;
            b.set_private_key_file(key, SslFiletype::PEM)
                .map_err(|e| tls_err(&format!("postgres.sslkey {}", key.display()), e))?;
            b.check_private_key().map_err(|e| {
                tls_err(
                    &format!(
                        "postgres.sslkey {} (not the key of postgres.sslcert)",
                        key.display()
                    ),
                    e,
                )
            })?;
        }
        let mut maker = MakeTlsConnector::new(b.build());
        maker.set_callback(move |c, _domain| {
            c.set_verify_hostname(full);
            Ok(())
        });
        let attempts = if unix {
            vec![PgMode::Disable]
        } else {
            match tls.mode {
                SslMode::Disable => vec![PgMode::Disable],
                SslMode::Allow => vec![PgMode::Disable, PgMode::Require],
                SslMode::Prefer => vec![PgMode::Prefer, PgMode::Disable],
                SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                    vec![PgMode::Require]
                }
            }
        };
        let label = if unix {
            format!("{host} (Unix socket, no TLS)")
        } else {
            format!("{host}:{port} (postgres.sslmode {})", tls.mode.name())
        };
        Ok(Self {
            config,
            tls: maker,
            attempts,
            label,
        })
    }

    /// Connect as libpq would; the connection is the caller's to drive.
    pub(crate) async fn connect(&self) -> Result<(tokio_postgres::Client, Conn), Error> {
        self.connect_pg().await.map_err(|e| self.error(e))
    }

    async fn connect_pg(&self) -> Result<(tokio_postgres::Client, Conn), tokio_postgres::Error> {
        let mut i = 0;
        loop {
            let mut c = self.config.clone();
            c.ssl_mode(self.attempts[i]);
            match c.connect(self.tls.clone()).await {
                Ok(pair) => return Ok(pair),
                // Only a refusal or a failed handshake moves to the next mode (a server
                // that is down is down for both).
                Err(e)
                    if i + 1 < self.attempts.len() && (is_tls(&e) || e.as_db_error().is_some()) =>
                {
                    tracing::debug!(
                        "group database {}: {e}; trying the next sslmode step",
                        self.label
                    );
                    i += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A connection error, TLS failures named with the host and `sslmode`.
    pub(crate) fn error(&self, e: tokio_postgres::Error) -> Error {
        if is_tls(&e) {
            // tokio-postgres keeps the handshake's reason (OpenSSL's, with the
            // certificate check's result) in the error's sources.
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                text.push_str(": ");
                text.push_str(&c.to_string());
                cause = c.source();
            }
            Error::Tls(format!("{}: {text}", self.label))
        } else {
            Error::Db(e)
        }
    }

    /// A pool error, TLS failures named as in [`Self::error`].
    pub(crate) fn pool_error(&self, e: deadpool_postgres::PoolError) -> Error {
        match e {
            deadpool_postgres::PoolError::Backend(e) if is_tls(&e) => self.error(e),
            // A connection the server refused: still "unreachable" (the job cache spools),
            // with the server's words.
            deadpool_postgres::PoolError::Backend(e) => Error::Pool(crate::pg_text(&e)),
            e => Error::from(e),
        }
    }

    /// A pool of up to `size` connections over this connector (none opened yet).
    pub(crate) fn pool(
        &self,
        size: usize,
        timeout: std::time::Duration,
    ) -> Result<deadpool_postgres::Pool, Error> {
        let mgr = deadpool_postgres::Manager::from_connect(
            self.config.clone(),
            self.clone(),
            deadpool_postgres::ManagerConfig {
                recycling_method: deadpool_postgres::RecyclingMethod::Fast,
            },
        );
        deadpool_postgres::Pool::builder(mgr)
            .max_size(size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(timeout))
            .create_timeout(Some(timeout))
            .recycle_timeout(Some(timeout))
            .build()
            .map_err(|e| Error::Pool(e.to_string()))
    }
}

/// A failed TLS negotiation or handshake (tokio-postgres names its TLS errors so; its
/// error kinds are not public).
fn is_tls(e: &tokio_postgres::Error) -> bool {
    e.to_string().starts_with("error performing TLS handshake")
}

impl deadpool_postgres::Connect for Connector {
    fn connect(
        &self,
        _pg_config: &tokio_postgres::Config,
    ) -> futures_util::future::BoxFuture<
        '_,
        Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), tokio_postgres::Error>,
    > {
        Box::pin(async move {
            let (client, conn) = self.connect_pg().await?;
            let task = tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!("group database connection ended: {e}");
                }
            });
            Ok((client, task))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connector(host: &str, tls: &Tls) -> Result<Connector, Error> {
        Connector::new(tokio_postgres::Config::new(), host, 5432, tls)
    }

    fn mode(m: SslMode) -> Tls {
        Tls {
            mode: m,
            rootcert: Some(PathBuf::from("/nonexistent/ca.crt")),
            ..Tls::default()
        }
    }

    #[test]
    fn libpq_words_and_attempts() {
        for w in salt_words() {
            assert_eq!(SslMode::parse(w).map(SslMode::name), Some(w));
        }
        assert_eq!(SslMode::parse("verify"), None);
        let plain = |m| {
            connector(
                "db",
                &Tls {
                    mode: m,
                    ..Tls::default()
                },
            )
            .unwrap()
            .attempts
        };
        assert_eq!(plain(SslMode::Disable), [PgMode::Disable]);
        assert_eq!(plain(SslMode::Allow), [PgMode::Disable, PgMode::Require]);
        assert_eq!(plain(SslMode::Prefer), [PgMode::Prefer, PgMode::Disable]);
        assert_eq!(plain(SslMode::Require), [PgMode::Require]);
        // A Unix socket is plain whatever the mode, and reads no certificate file.
        let c = connector("/run/postgresql", &mode(SslMode::VerifyFull)).unwrap();
        assert_eq!(c.attempts, [PgMode::Disable]);
    }

    fn salt_words() -> [&'static str; 6] {
        [
            "disable",
            "allow",
            "prefer",
            "require",
            "verify-ca",
            "verify-full",
        ]
    }

    #[test]
    fn certificate_files_are_named() {
        let e = connector("db", &mode(SslMode::VerifyCa))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("postgres.sslrootcert /nonexistent/ca.crt"),
            "{e}"
        );
        let t = Tls {
            mode: SslMode::Require,
            cert: Some(PathBuf::from("/nonexistent/c.pem")),
            key: Some(PathBuf::from("/nonexistent/c.key")),
            ..Tls::default()
        };
        let e = connector("db", &t).unwrap_err().to_string();
        assert!(e.contains("postgres.sslcert /nonexistent/c.pem"), "{e}");
    }
}
