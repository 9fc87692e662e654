//! Returns kept until a master acknowledges them (issue #19, docs/group.md): a job's
//! `_return` that no master answered (the master died mid-job, the request timed out, the
//! minion was between masters) is kept here and sent again to the master the minion signs
//! in to next (after a failover: the next master of the list). A master's AES reply is
//! the acknowledgement: it answers once the return is stored (or spooled). A return sent
//! twice is stored once (the group job cache's `(jid, id)` is unique; the files driver
//! rewrites the same file).
//!
//! Kept in memory, at most [`LIMIT`] (the oldest dropped first, with a warning).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rmpv::Value;

/// Most returns kept at once.
pub const LIMIT: usize = 1000;

/// The returns waiting for an acknowledgement (cheap to clone: shared).
#[derive(Clone, Debug, Default)]
pub struct Kept(Arc<Mutex<VecDeque<Value>>>);

fn is_return(load: &Value) -> bool {
    crate::matcher::map_lookup(load, "cmd").and_then(Value::as_str) == Some("_return")
}

impl Kept {
    /// Keep `load` if it is a job return (events are not kept). Returns whether it was.
    pub fn keep(&self, load: Value) -> bool {
        if !is_return(&load) {
            return false;
        }
        let jid = crate::matcher::map_lookup(&load, "jid").map(crate::matcher::py_str);
        let mut q = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() >= LIMIT
            && let Some(old) = q.pop_front()
        {
            let old = crate::matcher::map_lookup(&old, "jid").map(crate::matcher::py_str);
            tracing::warn!(
                "More than {LIMIT} returns wait for a master: dropping the oldest (job {})",
                old.unwrap_or_default()
            );
        }
        q.push_back(load);
        tracing::info!(
            "Keeping the return of job {} until a master acknowledges it ({} kept)",
            jid.unwrap_or_default(),
            q.len()
        );
        true
    }

    /// Everything kept, oldest first (to send to the master just signed in to).
    pub fn take(&self) -> Vec<Value> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect()
    }

    /// How many returns are kept.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ret(jid: &str) -> Value {
        Value::Map(vec![
            ("cmd".into(), "_return".into()),
            ("jid".into(), jid.into()),
        ])
    }

    #[test]
    fn keeps_returns_not_events_oldest_first_bounded() {
        let k = Kept::default();
        assert!(!k.keep(Value::Map(vec![("cmd".into(), "_minion_event".into())])));
        assert!(k.keep(ret("1")));
        assert!(k.clone().keep(ret("2")));
        assert_eq!(k.take(), vec![ret("1"), ret("2")]);
        assert!(k.is_empty());
        for i in 0..LIMIT + 5 {
            k.keep(ret(&i.to_string()));
        }
        let all = k.take();
        assert_eq!(all.len(), LIMIT);
        assert_eq!(all[0], ret("5"));
    }
}
