//! The `salt` commands waiting for returns, by jid: each gets a minion's return once,
//! however it arrives.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use rmpv::Value;
use tokio::sync::mpsc;

/// A return delivered to a waiting `salt` command: (minion id, return load).
pub(crate) type ReturnEvent = (String, Value);

struct Waiter {
    tx: mpsc::UnboundedSender<ReturnEvent>,
    had: HashSet<String>,
}

/// The `salt` commands waiting for returns, by jid.
#[derive(Default)]
pub struct Waiters(Mutex<HashMap<String, Waiter>>);

impl std::fmt::Debug for Waiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiters").finish_non_exhaustive()
    }
}

impl Waiters {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiter>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Start listening for returns of `jid`.
    pub(super) fn subscribe(&self, jid: &str) -> mpsc::UnboundedReceiver<ReturnEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().insert(
            jid.to_owned(),
            Waiter {
                tx,
                had: HashSet::new(),
            },
        );
        rx
    }

    /// Stop listening for `jid`.
    pub(super) fn unsubscribe(&self, jid: &str) {
        self.lock().remove(jid);
    }

    /// The jids waited on now.
    pub(super) fn jids(&self) -> HashSet<String> {
        self.lock().keys().cloned().collect()
    }

    /// Hand `load` to the command waiting on `jid`, unless it had `id`'s return already.
    pub fn deliver(&self, jid: &str, id: &str, load: &Value) {
        let mut w = self.lock();
        if let Some(waiter) = w.get_mut(jid)
            && waiter.had.insert(id.to_owned())
        {
            let _ = waiter.tx.send((id.to_owned(), load.clone()));
        }
    }

    /// [`deliver`](Self::deliver) for many returns under one lock: a waiting command is
    /// woken once per batch, not once per return.
    pub fn deliver_many<'a>(&self, returns: impl Iterator<Item = (&'a str, &'a str, &'a Value)>) {
        let mut w = self.lock();
        if w.is_empty() {
            return;
        }
        for (jid, id, load) in returns {
            if let Some(waiter) = w.get_mut(jid)
                && waiter.had.insert(id.to_owned())
            {
                let _ = waiter.tx.send((id.to_owned(), load.clone()));
            }
        }
    }

    /// The waited jids with the minions each has had.
    pub fn waited(&self) -> Vec<(String, Vec<String>)> {
        self.lock()
            .iter()
            .map(|(jid, w)| (jid.clone(), w.had.iter().cloned().collect()))
            .collect()
    }
}
