//! The master's external-auth options: `publisher_acl_blacklist` read here, the rest kept as
//! written for `salt_eauth`, which checks them when the master starts.

use crate::OptionDoc;
use crate::error::Problem;
use crate::reader::{Reader, string_list_map};
use crate::types::{PublisherAclBlacklist, invalid};

pub(crate) fn acl_blacklist(node: &crate::node::Node) -> Result<PublisherAclBlacklist, Problem> {
    let map = string_list_map(node)?;
    let mut out = PublisherAclBlacklist::default();
    for (k, v) in map {
        match k.as_str() {
            "users" => out.users = v,
            "modules" => out.modules = v,
            other => {
                return Err(invalid(other, "expected the keys `users` and `modules`"));
            }
        }
    }
    Ok(out)
}

/// The options `salt_eauth::EauthConfig::from_opts` reads (besides `cachedir`).
pub const EAUTH_OPTIONS: [&str; 13] = [
    "external_auth",
    "publisher_acl",
    "publisher_acl_blacklist",
    "sudo_acl",
    "token_expire",
    "token_expire_user_override",
    "keep_acl_in_token",
    "permissive_acl",
    "eauth_acl_module",
    "eauth_tokens",
    "sharedsecret",
    "hash_type",
    "user",
];

/// The eauth options that are not fields of [`MasterConfig`] (kept in `eauth_opts` as
/// written and checked by `salt_eauth` when the master starts).
pub(crate) fn eauth_docs() -> Vec<OptionDoc> {
    const CHECKED: &str = "Read and checked by salt-eauth when the master starts (a value it \
                           cannot honour stops the master, naming it); `docs/security.md`.";
    [
        ("external_auth", "{}", "Salt's external authentication: backend (`pam`, `file`, `auto`, `sharedsecret`) -> user, `group%` or regex -> ACL."),
        ("sudo_acl", "False", "Salt's `sudo_acl`: publisher_acl applies to sudo users."),
        ("token_expire", "43200", "Seconds an eauth token lives."),
        ("token_expire_user_override", "False", "Users (or all, with True) who may ask for their token's expiry."),
        ("keep_acl_in_token", "False", "Store the user's ACL in the token when it is made."),
        ("permissive_acl", "False", "Salt's `permissive_acl`."),
        ("eauth_acl_module", "''", "Salt's ACL module; only the default is implemented (others stop the master by name)."),
        ("eauth_tokens", "localfs", "Where tokens are kept: `localfs` (Salt's), or `postgres` (the master group's database, the default with `cluster_id`; docs/group.md); others stop the master by name."),
        ("sharedsecret", "None", "The secret of the `sharedsecret` eauth backend."),
    ]
    .into_iter()
    .map(|(name, default, what)| OptionDoc {
        name,
        default,
        doc: format!("{what} {CHECKED}"),
    })
    .collect()
}

/// The eauth options as written, for `salt_eauth` (which checks them).
pub(crate) fn read_eauth_opts(r: &mut Reader<'_>) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    for key in EAUTH_OPTIONS {
        if let Some(v) = r.opt(key, |n| Ok(n.to_json())) {
            out.insert(key.to_owned(), v);
        }
    }
    out
}
