//! The `salt` commands waiting for returns, by jid: each gets a minion's return once,
//! however it arrives. Several may wait on one jid (Salt 3008 publishes every slice of a
//! batch under the batch's jid): each gets every return of it.

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
pub struct Waiters(Mutex<HashMap<String, Vec<Waiter>>>);

impl std::fmt::Debug for Waiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiters").finish_non_exhaustive()
    }
}

impl Waiters {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Waiter>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Start listening for returns of `jid`.
    pub(super) fn subscribe(&self, jid: &str) -> mpsc::UnboundedReceiver<ReturnEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().entry(jid.to_owned()).or_default().push(Waiter {
            tx,
            had: HashSet::new(),
        });
        rx
    }

    /// Stop every listener of `jid`.
    pub(super) fn unsubscribe_all(&self, jid: &str) {
        self.lock().remove(jid);
    }

    /// Stop listening for `jid` on `rx` (the other waiters of `jid` keep theirs).
    pub(super) fn unsubscribe(&self, jid: &str, rx: mpsc::UnboundedReceiver<ReturnEvent>) {
        drop(rx);
        let mut w = self.lock();
        if let Some(list) = w.get_mut(jid) {
            list.retain(|waiter| !waiter.tx.is_closed());
            if list.is_empty() {
                w.remove(jid);
            }
        }
    }

    /// The jids waited on now.
    pub(super) fn jids(&self) -> HashSet<String> {
        self.lock().keys().cloned().collect()
    }

    /// Hand `load` to the command waiting on `jid`, unless it had `id`'s return already.
    pub fn deliver(&self, jid: &str, id: &str, load: &Value) {
        let mut w = self.lock();
        if let Some(list) = w.get_mut(jid) {
            send_all(list, id, load);
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
            if let Some(list) = w.get_mut(jid) {
                send_all(list, id, load);
            }
        }
    }

    /// The waited jids with the minions each has had.
    pub fn waited(&self) -> Vec<(String, Vec<String>)> {
        self.lock()
            .iter()
            .map(|(jid, list)| {
                let had: HashSet<&String> = list.iter().flat_map(|w| &w.had).collect();
                (jid.clone(), had.into_iter().cloned().collect())
            })
            .collect()
    }
}

/// `id`'s return to every waiter of a jid that has not had it.
fn send_all(list: &mut [Waiter], id: &str, load: &Value) {
    for waiter in list {
        if waiter.had.insert(id.to_owned()) {
            let _ = waiter.tx.send((id.to_owned(), load.clone()));
        }
    }
}
