//! Salt Resources (3008) in targets: the `T@<type>` and `T@<type>:<id>` engines and `M@<id>`,
//! and which targets address a registered resource on the master.
//!
//! Sources: `salt/matchers/resource_match.py`, `salt/matchers/managing_minion_match.py` (the
//! minion's side), `salt/utils/minions.py` `CkMinions` (the master's side). On the master a
//! target is a set of ids: minions from the key list and resources from the registry. A
//! resource is in the set of
//! * `T@<type>` (every registered resource of the type), `T@<type>:<id>`;
//! * a glob with no wildcard equal to its id (`_check_glob_minions`), a list naming it;
//! * a grain or grain_pcre target its grains (sent by its managing minion) match;
//! * never `not ...`: Salt computes `not X` as `all_minions() - X`, and `all_minions()` is the
//!   accepted keys only;
//! * never a pcre, pillar, ipcidr or `M@` word.
//!
//! A glob with a wildcard addresses the resources of the minions it matches (Salt's
//! `_augment_with_resources`); that needs the registry, so the master does it.

use rmpv::Value;

use crate::compound::{self, CompoundError};
use crate::{NodeGroups, list_match, subdict_match};

/// One registered resource as the master knows it.
#[derive(Clone, Copy, Debug)]
pub struct Resource<'a> {
    /// Its type (`dummy`).
    pub rtype: &'a str,
    /// Its bare id (`dummy-01`).
    pub id: &'a str,
    /// Its grains, when the managing minion sent them and the master keeps them
    /// (`minion_data_cache`).
    pub grains: Option<&'a Value>,
}

/// Does `tgt`/`tgt_type` address the registered resource `res` (the master's expected set)?
///
/// # Errors
/// A compound or node group that does not parse, or a target type salt-rs does not know.
pub fn check_resource(
    res: &Resource<'_>,
    tgt: &Value,
    tgt_type: &str,
    nodegroups: &NodeGroups,
) -> Result<bool, CompoundError> {
    let text = tgt.as_str().unwrap_or_default();
    Ok(match tgt_type {
        "glob" => exact_glob(res, text),
        "list" => list_match(tgt, res.id),
        "grain" | "grain_pcre" => grains_match(res, text, ":", tgt_type == "grain_pcre"),
        "pcre" | "pillar" | "pillar_pcre" | "ipcidr" => false,
        "compound" => {
            let words: Vec<String> = match tgt {
                Value::Array(items) => items.iter().map(salt_compat::py_str).collect(),
                _ => text.split_whitespace().map(str::to_owned).collect(),
            };
            compound_match(res, words, nodegroups)?
        }
        "nodegroup" => {
            let words = compound::expand_nodegroup(text, nodegroups)?;
            compound_match(res, words, nodegroups)?
        }
        other => return Err(CompoundError::UnsupportedType(other.to_owned())),
    })
}

/// A compound (given as words) against a resource: each word by [`word`], `not` false.
fn compound_match(
    res: &Resource<'_>,
    words: Vec<String>,
    nodegroups: &NodeGroups,
) -> Result<bool, CompoundError> {
    let c = compound::parse(words, nodegroups, true)?;
    let hit = c.eval(&mut |i| {
        let w = &c.words[i];
        Some(word(res, w.engine, w.delim.as_deref(), &w.pattern))
    });
    Ok(hit == Some(true))
}

/// `T@<type>` / `T@<type>:<id>` against a resource (Salt's `parse_srn`: an empty type or id
/// is absent; an empty type matches nothing).
fn srn_match(res: &Resource<'_>, pattern: &str) -> bool {
    let (rtype, rid) = match pattern.split_once(':') {
        Some((t, i)) => (t, Some(i).filter(|i| !i.is_empty())),
        None => (pattern, None),
    };
    !rtype.is_empty() && rtype == res.rtype && rid.is_none_or(|i| i == res.id)
}

/// One compound word (`engine`, its delimiter and pattern) against a resource.
fn word(res: &Resource<'_>, engine: Option<char>, delim: Option<&str>, pattern: &str) -> bool {
    match engine {
        None => exact_glob(res, pattern),
        Some('T') => srn_match(res, pattern),
        Some('L') => list_match(&Value::from(pattern), res.id),
        Some(e @ ('G' | 'P')) => grains_match(res, pattern, delim.unwrap_or(":"), e == 'P'),
        _ => false,
    }
}

/// Salt's `_check_glob_minions` adds a bare resource id only for a pattern without `*?[`.
fn exact_glob(res: &Resource<'_>, pattern: &str) -> bool {
    !pattern.contains(['*', '?', '[']) && pattern == res.id
}

fn grains_match(res: &Resource<'_>, expr: &str, delim: &str, regex: bool) -> bool {
    res.grains
        .is_some_and(|g| expr.contains(delim) && subdict_match(g, expr, delim, regex))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::from(v)
    }

    #[test]
    fn resources_in_targets() {
        let g = Value::Map(vec![(s("os"), s("Dummy")), (s("num"), Value::from(1))]);
        let r = Resource {
            rtype: "dummy",
            id: "dummy-01",
            grains: Some(&g),
        };
        let c = |t: &str, ty: &str| check_resource(&r, &s(t), ty, &[]).unwrap();
        assert!(c("T@dummy", "compound"));
        assert!(c("T@dummy:dummy-01", "compound"));
        assert!(!c("T@dummy:dummy-02", "compound"));
        assert!(!c("T@ssh", "compound"));
        assert!(!c("T@:dummy-01", "compound"));
        assert!(c("T@dummy and G@os:Dummy", "compound"));
        assert!(
            !c("T@dummy and not G@os:Other", "compound"),
            "not: minions only"
        );
        assert!(!c("M@dummy-01", "compound"));
        assert!(c("dummy-01 or web*", "compound"));
        assert!(c("L@a,dummy-01", "compound"));
        assert!(c("dummy-01", "glob"));
        assert!(
            !c("dummy-*", "glob"),
            "a wildcard goes through the managing minion"
        );
        assert!(c("x,dummy-01", "list"));
        assert!(c("os:Dummy", "grain"));
        assert!(c("os:^Dum", "grain_pcre"));
        assert!(!c("dummy", "pcre"));
        assert!(!c("os:Dummy", "pillar"));
        let bare = Resource { grains: None, ..r };
        assert!(!check_resource(&bare, &s("os:Dummy"), "grain", &[]).unwrap());
        let groups = vec![("res".to_owned(), s("T@dummy"))];
        assert!(check_resource(&r, &s("res"), "nodegroup", &groups).unwrap());
        assert!(check_resource(&r, &s("x"), "range", &[]).is_err());
    }
}
