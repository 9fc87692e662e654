//! What every store of this crate shares: its own runtime, a blocking call into it from any
//! thread (async or not) bounded by [`CALL_TIMEOUT`], background tasks, and the shutdown; and
//! the readers of `(text, text)` rows the job caches return.

use std::future::Future;
use std::sync::Arc;

use tokio_postgres::types::ToSql;

use crate::{CALL_TIMEOUT, Error};

/// A store's runtime over its shared state `I`.
pub(crate) struct Handle<I> {
    rt: Option<tokio::runtime::Runtime>,
    pub(crate) inner: Arc<I>,
    /// Names the store in errors ("job cache runtime stopped").
    what: &'static str,
}

impl<I: Send + Sync + 'static> Handle<I> {
    /// A runtime of `workers` threads named `thread_name`.
    pub(crate) fn new(
        thread_name: &str,
        workers: usize,
        what: &'static str,
        inner: Arc<I>,
    ) -> Result<Self, Error> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name(thread_name)
            .enable_all()
            .build()?;
        Ok(Self {
            rt: Some(rt),
            inner,
            what,
        })
    }

    /// Run `f(inner)` on the runtime and wait for it, for at most [`CALL_TIMEOUT`].
    pub(crate) fn call<T, F>(&self, f: impl FnOnce(Arc<I>) -> F) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        let Some(rt) = &self.rt else {
            return Err(Error::Pool(format!("{} runtime stopped", self.what)));
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let fut = f(self.inner.clone());
        rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv_timeout(CALL_TIMEOUT)
            .map_err(|_| Error::Timeout(CALL_TIMEOUT))?
    }

    /// Run `f(inner)` in the background (nothing once the runtime is stopped).
    pub(crate) fn spawn<F>(&self, f: impl FnOnce(Arc<I>) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if let Some(rt) = &self.rt {
            rt.spawn(f(self.inner.clone()));
        }
    }
}

impl<I> Drop for Handle<I> {
    fn drop(&mut self) {
        // The connections go with the runtime (a session's advisory lock is freed).
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// The rows of `sql` as `(text, text)` pairs: (jid, load) or (minion id, return) JSON text.
pub(crate) async fn text_pairs(
    c: &tokio_postgres::Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<(String, String)>, Error> {
    let rows = c.query(sql, params).await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// The one text column of the row of `sql`, if there is one.
pub(crate) async fn text_opt(
    c: &tokio_postgres::Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<String>, Error> {
    Ok(c.query_opt(sql, params).await?.map(|r| r.get(0)))
}
