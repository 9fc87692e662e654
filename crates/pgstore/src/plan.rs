//! What a key change does to the rows of the ids it names: the same moves as the files
//! store (`salt_keystore::KeyStore`), computed on rows read under the group's lock.

use std::collections::BTreeMap;

use salt_keystore::{AcceptFrom, KeyState, KeyStoreError, RejectFrom, Report, validate_id};

/// A key change.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Put(KeyState, String, String),
    Accept(Vec<String>, AcceptFrom),
    Reject(Vec<String>, RejectFrom),
    Delete(Vec<String>),
}

/// Keys of one minion, by state.
pub(crate) type Keys = BTreeMap<KeyState, String>;

impl Op {
    /// The ids the change reads and may write.
    pub(crate) fn ids(&self) -> Vec<String> {
        match self {
            Op::Put(_, id, _) => vec![id.clone()],
            Op::Accept(ids, _) | Op::Reject(ids, _) | Op::Delete(ids) => ids.clone(),
        }
    }

    /// True when a change that removed a key must rotate the publish key (salt-key's
    /// reject and delete, as Salt's dropfile).
    pub(crate) fn revokes(&self) -> bool {
        matches!(self, Op::Reject(..) | Op::Delete(..))
    }
}

/// Apply `op` to `cur` (rows of its ids); returns what moved (Salt's report shape).
pub(crate) fn apply(op: &Op, cur: &mut BTreeMap<String, Keys>) -> Result<Report, KeyStoreError> {
    for id in op.ids() {
        validate_id(&id)?;
    }
    let mut report = Report::default();
    match op {
        Op::Put(state, id, pem) => {
            let keys = cur.entry(id.clone()).or_default();
            match state {
                KeyState::Denied => {}
                KeyState::Pending => {
                    for s in [KeyState::Accepted, KeyState::Rejected] {
                        if keys.contains_key(&s) {
                            return Err(KeyStoreError::Conflict {
                                id: id.clone(),
                                state: s,
                            });
                        }
                    }
                }
                target => {
                    for s in KeyState::EXCLUSIVE {
                        if s != *target && keys.remove(&s).is_some() {
                            report.changed.push((id.clone(), s));
                        }
                    }
                }
            }
            keys.insert(*state, pem.clone());
        }
        Op::Accept(ids, from) => {
            let mut sources = vec![KeyState::Pending];
            if from.include_rejected {
                sources.push(KeyState::Rejected);
            }
            if from.include_denied {
                sources.push(KeyState::Denied);
            }
            move_many(ids, &sources, KeyState::Accepted, cur, &mut report);
        }
        Op::Reject(ids, from) => {
            let mut sources = vec![KeyState::Pending];
            if from.include_accepted {
                sources.push(KeyState::Accepted);
            }
            if from.include_denied {
                sources.push(KeyState::Denied);
            }
            move_many(ids, &sources, KeyState::Rejected, cur, &mut report);
        }
        Op::Delete(ids) => {
            for id in ids {
                if let Some(keys) = cur.get_mut(id) {
                    for s in KeyState::ALL {
                        if keys.remove(&s).is_some() {
                            report.changed.push((id.clone(), s));
                        }
                    }
                }
            }
        }
    }
    Ok(report)
}

/// The events of a key change for `salt_events` (tag, data JSON text), as Salt fires them:
/// `salt/key` with `act` accept/reject/delete for `salt-key`'s changes, `salt/auth` with
/// `act` pend/accept/reject/denied (and the key) for a master recording a sign-in's key.
pub(crate) fn events(op: &Op, report: &Report) -> (Vec<String>, Vec<String>) {
    let stamp = stamp();
    let mut ids: Vec<&str> = report.changed.iter().map(|(id, _)| id.as_str()).collect();
    ids.dedup();
    let one = |tag: &str, data: serde_json::Value| (tag.to_owned(), data.to_string());
    let mut out: Vec<(String, String)> = Vec::new();
    match op {
        Op::Put(state, id, pem) => {
            let act = match state {
                KeyState::Accepted => "accept",
                KeyState::Pending => "pend",
                KeyState::Rejected => "reject",
                KeyState::Denied => "denied",
            };
            out.push(one(
                "salt/auth",
                serde_json::json!({"act": act, "id": id, "pub": pem, "result": true,
                                   "_stamp": stamp}),
            ));
        }
        Op::Accept(..) | Op::Reject(..) | Op::Delete(..) => {
            let act = match op {
                Op::Accept(..) => "accept",
                Op::Reject(..) => "reject",
                _ => "delete",
            };
            for id in ids {
                out.push(one(
                    "salt/key",
                    serde_json::json!({"act": act, "id": id, "result": true, "_stamp": stamp}),
                ));
            }
        }
    }
    out.into_iter().unzip()
}

/// Salt 3008's event `_stamp` (as the master's event bus).
fn stamp() -> String {
    salt_compat::time::event_stamp_now()
}

fn move_many(
    ids: &[String],
    sources: &[KeyState],
    target: KeyState,
    cur: &mut BTreeMap<String, Keys>,
    report: &mut Report,
) {
    for id in ids {
        let Some(keys) = cur.get_mut(id) else {
            continue;
        };
        for &src in sources {
            if let Some(pem) = keys.remove(&src) {
                keys.insert(target, pem);
                report.changed.push((id.clone(), src));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(KeyState, &str)]) -> Keys {
        pairs.iter().map(|(s, p)| (*s, (*p).to_owned())).collect()
    }

    #[test]
    fn accept_moves_pending_and_denied_replaces_when_asked() {
        let mut cur = BTreeMap::from([(
            "m1".to_owned(),
            keys(&[(KeyState::Pending, "P"), (KeyState::Denied, "D")]),
        )]);
        let r = apply(
            &Op::Accept(vec!["m1".into(), "absent".into()], AcceptFrom::default()),
            &mut cur,
        )
        .expect("accept");
        assert_eq!(r.changed, vec![("m1".to_owned(), KeyState::Pending)]);
        assert_eq!(
            cur["m1"],
            keys(&[(KeyState::Accepted, "P"), (KeyState::Denied, "D")])
        );
        let from = AcceptFrom {
            include_denied: true,
            ..Default::default()
        };
        apply(&Op::Accept(vec!["m1".into()], from), &mut cur).expect("accept denied");
        assert_eq!(cur["m1"], keys(&[(KeyState::Accepted, "D")]));
    }

    #[test]
    fn pending_refused_over_accepted_and_put_accepted_moves() {
        let mut cur = BTreeMap::from([("m1".to_owned(), keys(&[(KeyState::Rejected, "R")]))]);
        let e = apply(
            &Op::Put(KeyState::Pending, "m1".into(), "N".into()),
            &mut cur,
        );
        assert!(matches!(e, Err(KeyStoreError::Conflict { .. })));
        apply(
            &Op::Put(KeyState::Accepted, "m1".into(), "N".into()),
            &mut cur,
        )
        .expect("put accepted");
        assert_eq!(cur["m1"], keys(&[(KeyState::Accepted, "N")]));
    }

    #[test]
    fn delete_removes_every_state_and_revokes() {
        let mut cur = BTreeMap::from([(
            "m1".to_owned(),
            keys(&[(KeyState::Accepted, "A"), (KeyState::Denied, "D")]),
        )]);
        let op = Op::Delete(vec!["m1".into()]);
        let r = apply(&op, &mut cur).expect("delete");
        assert_eq!(r.changed.len(), 2);
        assert!(cur["m1"].is_empty());
        assert!(op.revokes());
        assert!(apply(&Op::Delete(vec!["../x".into()]), &mut cur).is_err());
    }
}
