//! `publisher_acl` and `publisher_acl_blacklist` for local `salt` callers who are not root.
//!
//! Mirrors Salt's rules (`salt/acl`, `CkMinions.auth_check`, `salt.utils.stringutils.expr_match`):
//! a name matches an expression if `fnmatch` matches it or the expression, as a regex, matches
//! the whole name. The blacklist (`users`, `modules`) is checked first. Then the user's entries
//! are collected from every `publisher_acl` key that matches the user name; no entry means
//! "not authorised". An entry is a function regex (`re.match`, anchored at the start) allowed
//! on every minion, or `{minion_glob: [function regexes]}` allowed when every targeted minion
//! matches `minion_glob`.

use regex::Regex;

use salt_compat::fnmatch;
use salt_config::MasterConfig;

/// One entry of a user's `publisher_acl` list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AclEntry {
    /// A function regex allowed on all minions.
    Fun(String),
    /// Functions allowed when all targeted minions match the glob.
    Targeted {
        /// Minion glob.
        tgt: String,
        /// Function regexes.
        funs: Vec<String>,
    },
}

/// `publisher_acl`: user expression → entries, in config order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PublisherAcl {
    /// (user expression, allowed entries).
    pub users: Vec<(String, Vec<AclEntry>)>,
}

/// `publisher_acl_blacklist`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AclBlacklist {
    /// User expressions that may not publish.
    pub users: Vec<String>,
    /// Function expressions nobody (but root) may publish.
    pub modules: Vec<String>,
}

/// `publisher_acl` and `publisher_acl_blacklist` as configured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acl {
    /// `publisher_acl` (entries are function regexes).
    pub publishers: PublisherAcl,
    /// `publisher_acl_blacklist`.
    pub blacklist: AclBlacklist,
}

impl Acl {
    /// The publisher ACL of `cfg`.
    pub fn from_config(cfg: &MasterConfig) -> Self {
        Self {
            publishers: PublisherAcl {
                users: cfg
                    .publisher_acl
                    .iter()
                    .map(|(user, funs)| {
                        (
                            user.clone(),
                            funs.iter().cloned().map(AclEntry::Fun).collect(),
                        )
                    })
                    .collect(),
            },
            blacklist: AclBlacklist {
                users: cfg.publisher_acl_blacklist.users.clone(),
                modules: cfg.publisher_acl_blacklist.modules.clone(),
            },
        }
    }

    /// [`check`] against this ACL.
    pub fn check(
        &self,
        user: &str,
        fun: &str,
        minions: Option<&[String]>,
    ) -> Result<(), AclDenied> {
        check(&self.publishers, &self.blacklist, user, fun, minions)
    }
}

/// Why a publish was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AclDenied {
    /// The user or the function is blacklisted.
    #[error("{user} does not have permissions to run {fun}: blacklisted")]
    Blacklisted {
        /// Publishing user.
        user: String,
        /// Function.
        fun: String,
    },
    /// The user has no `publisher_acl` entry.
    #[error("user {0} is not in publisher_acl")]
    NoEntry(String),
    /// The user's entries do not allow this function on these minions.
    #[error("{user} is not authorised to run {fun} on the targeted minions")]
    NotAuthorised {
        /// Publishing user.
        user: String,
        /// Function.
        fun: String,
    },
}

/// Salt's `expr_match`: fnmatch, else full-string regex.
pub fn expr_match(value: &str, expr: &str) -> bool {
    ExprMatch::new(expr).is_match(value)
}

/// [`expr_match`] against one expression many times (the regex compiled once).
#[derive(Debug)]
pub struct ExprMatch {
    expr: String,
    re: Option<Regex>,
}

impl ExprMatch {
    /// Compile `expr` (an expression that is no valid regex matches as a glob only).
    pub fn new(expr: &str) -> Self {
        Self {
            expr: expr.to_owned(),
            re: Regex::new(&format!(r"\A(?:{expr})\z")).ok(),
        }
    }

    /// Whether `value` matches, as `expr_match(value, expr)`.
    pub fn is_match(&self, value: &str) -> bool {
        fnmatch(value, &self.expr) || self.re.as_ref().is_some_and(|re| re.is_match(value))
    }
}

/// `re.match(regex, fun)`: anchored at the start only; an invalid regex matches nothing.
fn fun_match(regex: &str, fun: &str) -> bool {
    Regex::new(&format!("^(?:{regex})")).is_ok_and(|re| re.is_match(fun))
}

/// Check a publish by a non-root `user`. `minions` = expected minions (None when unknown).
pub fn check(
    acl: &PublisherAcl,
    blacklist: &AclBlacklist,
    user: &str,
    fun: &str,
    minions: Option<&[String]>,
) -> Result<(), AclDenied> {
    if blacklist.users.iter().any(|e| expr_match(user, e))
        || blacklist.modules.iter().any(|e| expr_match(fun, e))
    {
        return Err(AclDenied::Blacklisted {
            user: user.into(),
            fun: fun.into(),
        });
    }
    let entries: Vec<&AclEntry> = acl
        .users
        .iter()
        .filter(|(expr, _)| expr_match(user, expr))
        .flat_map(|(_, entries)| entries.iter())
        .collect();
    if entries.is_empty() {
        return Err(AclDenied::NoEntry(user.into()));
    }
    if fun == "saltutil.find_job" {
        return Ok(());
    }
    let allowed = entries.iter().any(|entry| match entry {
        AclEntry::Fun(re) => fun_match(re, fun),
        AclEntry::Targeted { tgt, funs } => {
            let tgt_ok = match minions {
                Some(ms) if !ms.is_empty() => ms.iter().all(|m| fnmatch(m, tgt)),
                _ => false,
            };
            tgt_ok && funs.iter().any(|re| fun_match(re, fun))
        }
    });
    if allowed {
        Ok(())
    } else {
        Err(AclDenied::NotAuthorised {
            user: user.into(),
            fun: fun.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl() -> PublisherAcl {
        PublisherAcl {
            users: vec![
                ("alice".into(), vec![AclEntry::Fun("test.*".into())]),
                (
                    "dev*".into(),
                    vec![AclEntry::Targeted {
                        tgt: "web*".into(),
                        funs: vec!["cmd.run".into()],
                    }],
                ),
            ],
        }
    }

    #[test]
    fn function_regex_entries() {
        let bl = AclBlacklist::default();
        assert!(check(&acl(), &bl, "alice", "test.ping", None).is_ok());
        assert!(matches!(
            check(&acl(), &bl, "alice", "cmd.run", None),
            Err(AclDenied::NotAuthorised { .. })
        ));
        assert!(matches!(
            check(&acl(), &bl, "bob", "test.ping", None),
            Err(AclDenied::NoEntry(_))
        ));
    }

    #[test]
    fn targeted_entries_need_all_minions_to_match() {
        let bl = AclBlacklist::default();
        let web = vec!["web1".to_string(), "web2".to_string()];
        let mixed = vec!["web1".to_string(), "db1".to_string()];
        assert!(check(&acl(), &bl, "devon", "cmd.run", Some(&web)).is_ok());
        assert!(check(&acl(), &bl, "devon", "cmd.run", Some(&mixed)).is_err());
        assert!(check(&acl(), &bl, "devon", "cmd.run", None).is_err());
    }

    #[test]
    fn blacklist_first() {
        let bl = AclBlacklist {
            users: vec!["ali.*".into()],
            modules: vec!["cmd.*".into()],
        };
        assert!(matches!(
            check(&acl(), &bl, "alice", "test.ping", None),
            Err(AclDenied::Blacklisted { .. })
        ));
        let bl = AclBlacklist {
            users: vec![],
            modules: vec!["test.p*".into()],
        };
        assert!(check(&acl(), &bl, "alice", "test.ping", None).is_err());
        assert!(check(&acl(), &bl, "alice", "test.echo", None).is_ok());
    }
}
