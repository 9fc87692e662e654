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
mod compiled;
mod compound;
mod ipcidr;
mod resource;
mod subdict;
mod tree;

pub use basic::*;
pub use compiled::CompiledTarget;
pub use compound::{CompoundError, expand_nodegroup};
pub use ipcidr::ipcidr_match;
pub use resource::{Resource, check_resource};
pub use subdict::Subdict;
pub use tree::{Shape, Tree};

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
/// target type is `Err` naming it. To test one target against many minions, compile it once
/// ([`CompiledTarget`]).
pub fn check(
    facts: Facts<'_>,
    tgt: &Value,
    tgt_type: &str,
    delimiter: Option<&str>,
    nodegroups: &NodeGroups,
) -> Result<Option<bool>, CompoundError> {
    let t = CompiledTarget::new(tgt, tgt_type, delimiter, nodegroups)?;
    Ok(t.eval(facts.id, facts.grains, facts.pillar))
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
