//! salt-matcher: Salt's target matching, written once and used by the master (pillar top
//! files, the expected-minion list of a publish) and by the minion (does a publish address
//! me?).
//!
//! Every match here is tri-state: `Some(true)`/`Some(false)` when the facts needed are known,
//! `None` when they are not (the master has no cached grains or pillar for a minion yet).
//! Salt's master treats unknown as "expected" (greedy), the minion always knows its facts.
//!
//! Sources: `salt/matchers/*.py`, `salt/utils/minions.py` (`parse_target`,
//! `nodegroup_comp`), `salt/utils/data.py` (`subdict_match`). Not done: `range` (`R@`) and
//! `data` targets; they match nothing and say so in the log.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod basic;
mod compound;
mod ipcidr;
mod resource;

pub use basic::*;
pub use compound::{CompoundError, expand_nodegroup};
pub use ipcidr::ipcidr_match;
pub use resource::{Resource, check_resource};

use rmpv::Value;

/// What is known about one minion.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// The minion id.
    pub id: &'a str,
    /// Its grains (`None`: not known, e.g. no data cache entry on the master).
    pub grains: Option<&'a Value>,
    /// Its pillar (`None`: not known).
    pub pillar: Option<&'a Value>,
}

/// Node groups (`nodegroups:` config): name -> compound string or list of words.
pub type NodeGroups = [(String, Value)];

/// Decide whether a target addresses a minion.
///
/// `tgt_type` is Salt's `tgt_type` (`glob` when absent); `tgt` a string, or for `list` a
/// list or a comma-separated string. Unknown facts give `None`. An unknown or unsupported
/// target type is `Err` naming it.
pub fn check(
    facts: Facts<'_>,
    tgt: &Value,
    tgt_type: &str,
    delimiter: Option<&str>,
    nodegroups: &NodeGroups,
) -> Result<Option<bool>, CompoundError> {
    let delim = delimiter.unwrap_or(DEFAULT_DELIMITER);
    let text = || tgt.as_str().unwrap_or_default();
    Ok(match tgt_type {
        "glob" => Some(tgt.as_str().is_some_and(|t| fnmatch(facts.id, t))),
        "pcre" => Some(tgt.as_str().is_some_and(|t| pcre_match(t, facts.id))),
        "list" => Some(list_match(tgt, facts.id)),
        "grain" | "grain_pcre" | "pillar" | "pillar_pcre" | "ipcidr" => {
            single(facts, tgt_type, text(), delim)
        }
        "compound" => match tgt {
            Value::Array(items) => {
                let words: Vec<String> = items.iter().map(salt_compat::py_str).collect();
                compound::eval_words(compound::Entity::Minion(facts), words, nodegroups)?
            }
            _ => compound::eval(facts, text(), nodegroups)?,
        },
        "nodegroup" => {
            let words = expand_nodegroup(text(), nodegroups)?;
            compound::eval_words(compound::Entity::Minion(facts), words, nodegroups)?
        }
        other => return Err(CompoundError::UnsupportedType(other.to_owned())),
    })
}

/// One `grain`/`grain_pcre`/`pillar`/`pillar_pcre`/`ipcidr` expression.
pub(crate) fn single(facts: Facts<'_>, kind: &str, tgt: &str, delim: &str) -> Option<bool> {
    match kind {
        "grain" | "grain_pcre" => {
            let grains = facts.grains?;
            Some(tgt.contains(delim) && subdict_match(grains, tgt, delim, kind == "grain_pcre"))
        }
        "pillar" | "pillar_pcre" => {
            let pillar = facts.pillar?;
            Some(tgt.contains(delim) && subdict_match(pillar, tgt, delim, kind == "pillar_pcre"))
        }
        "ipcidr" => Some(ipcidr_match(facts.grains?, tgt)),
        "glob" => Some(fnmatch(facts.id, tgt)),
        "pcre" => Some(pcre_match(tgt, facts.id)),
        "list" => Some(list_match(&Value::from(tgt), facts.id)),
        _ => Some(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::basic::tests::grains;

    fn s(v: &str) -> Value {
        Value::from(v)
    }

    #[test]
    fn grain_matching() {
        let g = grains();
        let f = Facts {
            id: "m1",
            grains: Some(&g),
            pillar: None,
        };
        let m = |t: &str| check(f, &s(t), "grain", None, &[]).unwrap().unwrap();
        assert!(m("os:Debian"));
        assert!(m("os:debian"), "case-insensitive");
        assert!(m("os:Deb*"));
        assert!(!m("os:RedHat"));
        assert!(m("num_cpus:2"));
        assert!(m("ipv4:10.0.0.*"));
        assert!(!m("ipv4:192.*"));
        assert!(m("roles:tier:front"));
        assert!(m("roles:web"), "key present in dict");
        assert!(m("url:http://x"), "delimiter inside value");
        assert!(m("virtual:False"));
        assert!(!m("os"), "no delimiter");
        assert!(!m("missing:x"));
        assert_eq!(
            check(f, &s("os|Debian"), "grain", Some("|"), &[]).unwrap(),
            Some(true)
        );
        assert_eq!(
            check(f, &s("os:^Deb"), "grain_pcre", None, &[]).unwrap(),
            Some(true)
        );
        assert_eq!(
            check(f, &s("os:^ian"), "grain_pcre", None, &[]).unwrap(),
            Some(false)
        );
        assert_eq!(check(f, &s("a:b"), "pillar", None, &[]).unwrap(), None);
    }

    #[test]
    fn dispatch_by_type() {
        let g = grains();
        let f = Facts {
            id: "web1",
            grains: Some(&g),
            pillar: None,
        };
        assert_eq!(check(f, &s("web*"), "glob", None, &[]).unwrap(), Some(true));
        assert_eq!(
            check(f, &Value::from(1), "glob", None, &[]).unwrap(),
            Some(false)
        );
        assert_eq!(check(f, &s("w.b"), "pcre", None, &[]).unwrap(), Some(true));
        assert_eq!(
            check(f, &s("a,web1"), "list", None, &[]).unwrap(),
            Some(true)
        );
        assert_eq!(
            check(f, &s("10.0.0.0/8"), "ipcidr", None, &[]).unwrap(),
            Some(true)
        );
        assert_eq!(
            check(f, &s("G@os:Debian and web*"), "compound", None, &[]).unwrap(),
            Some(true)
        );
        assert!(check(f, &s("x"), "range", None, &[]).is_err());
    }
}
